//! SQL with its parameters written in as literals, for a libSQL server.
//!
//! libSQL's remote client runs a statement with parameters as two HTTP round
//! trips (it asks the server to describe the statement, then opens a cursor),
//! but a batch of SQL text as one, and one batch can hold a whole transaction.
//! So a server connection writes each parameter into the text: integers in
//! decimal, text and blobs in hexadecimal (`X'..'`), which no content can
//! break out of.

use std::fmt::Write;

use libsql::params::{IntoParams, Params};
use libsql::Value;

use crate::error::{Error, Result};

/// `sql` with each placeholder (`?` or `?NNN`, outside quotes) replaced by
/// its parameter as a literal.
pub(super) fn inline(sql: &str, params: impl IntoParams) -> Result<String> {
    let values = match params.into_params()? {
        Params::None => Vec::new(),
        Params::Positional(values) => values,
        Params::Named(_) => return Err(Error::Internal("named parameters are not inlined".into())),
    };
    let mut out = String::with_capacity(sql.len() + values.len() * 8);
    let mut quote: Option<char> = None;
    let mut highest = 0usize;
    let mut chars = sql.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(c),
            (None, '?') => {
                let mut number = String::new();
                while let Some(&(_, d)) = chars.peek().filter(|(_, d)| d.is_ascii_digit()) {
                    number.push(d);
                    chars.next();
                }
                let index = if number.is_empty() {
                    highest + 1
                } else {
                    number.parse::<usize>().map_err(|_| placeholder(sql))?
                };
                highest = highest.max(index);
                let value =
                    index.checked_sub(1).and_then(|i| values.get(i)).ok_or_else(|| placeholder(sql))?;
                push_literal(&mut out, value);
                continue;
            }
            (None, _) => {}
        }
        out.push(c);
    }
    Ok(out)
}

fn placeholder(sql: &str) -> Error {
    Error::Internal(format!("a placeholder of {sql:?} has no parameter"))
}

/// Appends `value` as an SQL literal of the same type.
fn push_literal(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("NULL"),
        // i64::MIN has no literal of its own: its magnitude overflows before
        // the minus applies.
        Value::Integer(i64::MIN) => out.push_str("(-9223372036854775807 - 1)"),
        Value::Integer(n) => {
            let _ = write!(out, "{n}");
        }
        // SQLite stores a NaN as NULL; an infinity is the overflow of a literal.
        Value::Real(x) if x.is_nan() => out.push_str("NULL"),
        Value::Real(x) if x.is_infinite() => out.push_str(if *x > 0.0 { "9e999" } else { "-9e999" }),
        Value::Real(x) => {
            let _ = write!(out, "{x:?}");
        }
        Value::Text(s) => {
            out.push_str("CAST(");
            push_hex(out, s.as_bytes());
            out.push_str(" AS TEXT)");
        }
        Value::Blob(b) => push_hex(out, b),
    }
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    out.reserve(bytes.len() * 2 + 3);
    out.push_str("X'");
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_take_their_parameters_and_quoted_text_is_left_alone() {
        let sql = inline(
            "SELECT '?1', ?2, ?, \"a?\" FROM t WHERE x = ?1",
            vec![Value::Integer(-5), Value::Text("it's".into()), Value::Null],
        )
        .unwrap();
        assert_eq!(sql, "SELECT '?1', CAST(X'69742773' AS TEXT), NULL, \"a?\" FROM t WHERE x = -5");
    }

    #[test]
    fn every_value_type_has_a_literal() {
        let mut out = String::new();
        for v in [
            Value::Integer(i64::MIN),
            Value::Integer(i64::MAX),
            Value::Real(0.1),
            Value::Real(f64::NAN),
            Value::Blob(vec![0, 255]),
        ] {
            push_literal(&mut out, &v);
            out.push(' ');
        }
        assert_eq!(out, "(-9223372036854775807 - 1) 9223372036854775807 0.1 NULL X'00FF' ");
    }

    #[test]
    fn a_missing_parameter_is_an_error_not_a_guess() {
        assert!(inline("SELECT ?3", vec![Value::Integer(1)]).is_err());
        assert!(inline("SELECT ?0", vec![Value::Integer(1)]).is_err());
    }

    #[test]
    fn the_literals_read_back_as_the_values_on_sqlite() {
        let values = vec![
            Value::Integer(i64::MIN),
            Value::Text("quote ' \" ? emoji \u{1F600}, newline\n".into()),
            Value::Blob(vec![1, 2, 3]),
            Value::Real(-2.5e-300),
            Value::Null,
        ];
        let sql = inline("SELECT ?1, ?2, ?3, ?4, ?5", values.clone()).unwrap();
        let got = crate::runtime::block_on(async {
            let db = libsql::Builder::new_local(":memory:").build().await?;
            let conn = db.connect()?;
            let mut rows = conn.query(&sql, ()).await?;
            let row = rows.next().await?.expect("one row");
            (0..5).map(|i| row.get_value(i)).collect::<std::result::Result<Vec<Value>, _>>()
        })
        .unwrap();
        assert_eq!(got, values);
    }
}
