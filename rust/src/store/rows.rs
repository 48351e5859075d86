//! Row <-> value conversions.

use libsql::Value;

use super::PreparedEntry;
use crate::entry::{Entry, Micros, Validity};
use crate::error::{Error, Result};

/// A row's columns, whether libSQL's client read it or ours (`hrana`).
pub trait Cells {
    /// Column `column`'s value.
    fn value(&self, column: i32) -> Result<Value>;

    /// Column `column` as a `T`.
    fn get<T: FromCell>(&self, column: i32) -> Result<T> {
        T::from_cell(self.value(column)?).ok_or_else(|| {
            Error::Internal(format!("column {column} does not hold a {}", std::any::type_name::<T>()))
        })
    }
}

impl Cells for libsql::Row {
    fn value(&self, column: i32) -> Result<Value> {
        Ok(self.get_value(column)?)
    }
}

/// A Rust value a column converts to; `None` when it holds another type.
pub trait FromCell: Sized {
    fn from_cell(value: Value) -> Option<Self>;
}

impl FromCell for i64 {
    fn from_cell(value: Value) -> Option<Self> {
        match value {
            Value::Integer(i) => Some(i),
            _ => None,
        }
    }
}

impl FromCell for u32 {
    fn from_cell(value: Value) -> Option<Self> {
        i64::from_cell(value).and_then(|i| u32::try_from(i).ok())
    }
}

impl FromCell for String {
    fn from_cell(value: Value) -> Option<Self> {
        match value {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl<T: FromCell> FromCell for Option<T> {
    fn from_cell(value: Value) -> Option<Self> {
        match value {
            Value::Null => Some(None),
            value => T::from_cell(value).map(Some),
        }
    }
}

pub const ENTRY_COLUMNS: &str = "id, content, kind, scope, session_id, metadata, ts, tokens, expires_at, \
     risks, updated_at, key, valid_from, valid_to, superseded_by";

/// How many columns `ENTRY_COLUMNS` names: a column selected after them is at
/// this offset from the first.
pub const ENTRY_WIDTH: i32 = 15;

/// `ENTRY_COLUMNS` qualified with a table alias.
pub fn prefixed(alias: &str) -> String {
    ENTRY_COLUMNS.split(", ").map(|c| format!("{alias}.{c}")).collect::<Vec<_>>().join(", ")
}

/// Reads an entry from `ENTRY_COLUMNS` starting at column `at`.
pub fn entry(row: &impl Cells, at: i32) -> Result<Entry> {
    Ok(Entry {
        id: row.get(at)?,
        content: row.get(at + 1)?,
        kind: row.get(at + 2)?,
        scope: row.get(at + 3)?,
        session_id: row.get(at + 4)?,
        metadata: row.get(at + 5)?,
        timestamp: row.get(at + 6)?,
        tokens: row.get(at + 7)?,
        expires_at: row.get(at + 8)?,
        risk_stamp: row.get(at + 9)?,
        updated_at: row.get(at + 10)?,
        validity: Validity {
            key: row.get(at + 11)?,
            valid_from: row.get(at + 12)?,
            valid_to: row.get(at + 13)?,
            superseded_by: row.get(at + 14)?,
        },
    })
}

/// The columns an entry insert writes, in `entry_values`' order.
macro_rules! inserted_columns {
    () => {
        "(id, content, kind, scope, session_id, metadata, ts, tokens, created_at, content_key, \
         expires_at, risks, key, valid_from, valid_to)"
    };
}
pub const ENTRY_COLUMNS_INSERTED: &str = inserted_columns!();
/// An entry insert, up to its rows.
pub const INSERT_ENTRY: &str = concat!("INSERT INTO entries ", inserted_columns!(), " VALUES");
/// One row's placeholders for `INSERT_ENTRY`.
pub const ENTRY_ROW: &str = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

/// An entry's values for `INSERT_ENTRY`, with its duplicate key. A `NULL` id
/// takes the next one.
pub fn entry_values(e: &PreparedEntry, key: i64, created_at: Micros) -> [Value; 15] {
    [
        e.id.map_or(Value::Null, Value::Integer),
        text(&e.content),
        text(&e.kind),
        opt_text(e.scope.as_deref()),
        opt_text(e.session_id.as_deref()),
        opt_text(e.metadata.as_deref()),
        Value::Integer(e.timestamp),
        Value::Integer(i64::from(e.tokens)),
        Value::Integer(created_at),
        Value::Integer(key),
        e.expires_at.map_or(Value::Null, Value::Integer),
        Value::Integer(e.risk_stamp),
        opt_text(e.key.as_deref()),
        e.stored_start().map_or(Value::Null, Value::Integer),
        e.valid_to.map_or(Value::Null, Value::Integer),
    ]
}

/// `IN (?, ...)` for `values` padded to `width` by repeating the last one, with
/// its parameters: a list of a few fixed lengths keeps few statements prepared.
pub fn padded_in(values: &[i64], width: usize) -> (String, Vec<Value>) {
    let last = values.last().copied().unwrap_or(0);
    let params =
        values.iter().copied().chain(std::iter::repeat(last)).take(width).map(Value::Integer).collect();
    (format!("IN ({})", vec!["?"; width].join(",")), params)
}

pub fn opt_text(value: Option<&str>) -> Value {
    value.map_or(Value::Null, |s| Value::Text(s.to_owned()))
}

pub fn text(value: &str) -> Value {
    Value::Text(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_width_counts_the_entry_columns() {
        assert_eq!(ENTRY_COLUMNS.split(", ").count(), ENTRY_WIDTH as usize);
    }
}
