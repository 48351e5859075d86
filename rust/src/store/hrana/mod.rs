//! A small client for the hot batches sent to a libSQL server: a save, a bulk
//! save's two requests, and a query's fetch. Everything else goes through
//! libSQL's own client.
//!
//! libSQL's client parses every batch's SQL to split it into statements and
//! prints each one again, and decodes the JSON answer through serde's generic
//! values: about a fifth of a bulk save's time and a quarter of a query's, on
//! our side of the wire. This one sends statements already split, with their
//! arguments as values (no SQL parsing, nothing written into the SQL), and
//! speaks Hrana's protobuf encoding (`/v3-protobuf/pipeline`), which both ends
//! read without a text pass, on the calling thread (`wire.rs`). Its calls
//! block: they run where libSQL's local calls run.
//!
//! Each step of a batch runs only if the step before it succeeded, so a batch
//! that begins a transaction and ends with COMMIT writes all or nothing; a
//! last step rolls back whatever did not commit (`Batch::push_rollback`), and
//! the stream, kept for the next request, is closed if it is still found
//! inside a transaction (`send.rs`). A transaction over two requests
//! (`begin`, then `finish`) keeps the stream's baton between them.

mod proto;
#[cfg(feature = "remote")]
mod send;
#[cfg(feature = "remote")]
mod wire;

use std::collections::HashMap;

use libsql::Value;

use super::rows::Cells;
use crate::error::{Error, Result};

/// Statements to run in order, each only if the one before it succeeded.
#[derive(Default, Clone)]
pub(crate) struct Batch {
    steps: Vec<proto::BatchStep>,
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `sql` with its positional arguments (`?`, `?N`); its step number.
    pub fn push(&mut self, sql: impl Into<String>, args: impl IntoIterator<Item = Value>) -> usize {
        let step = self.steps.len();
        let condition = step.checked_sub(1).map(|before| proto::BatchCond {
            cond: Some(proto::Cond::Ok(u32::try_from(before).unwrap_or(u32::MAX))),
        });
        self.steps.push(proto::BatchStep {
            condition,
            stmt: proto::Stmt {
                sql: Some(sql.into()),
                args: args.into_iter().map(cell).collect(),
                want_rows: Some(true),
            },
        });
        step
    }

    /// Appends a ROLLBACK that runs only if the steps before it left a
    /// transaction open (one failed after its BEGIN), so that the request
    /// hands its stream back outside any transaction whatever becomes of its
    /// answer.
    pub fn push_rollback(&mut self) {
        self.steps.push(proto::BatchStep {
            condition: Some(proto::BatchCond {
                cond: Some(proto::Cond::Not(proto::NotCond { is_autocommit: Some(proto::Empty {}) })),
            }),
            stmt: proto::Stmt { sql: Some("ROLLBACK".into()), args: Vec::new(), want_rows: Some(false) },
        });
    }

    /// How many steps the batch holds.
    pub fn steps(&self) -> usize {
        self.steps.len()
    }

    fn into_request(self) -> proto::StreamRequest {
        proto::StreamRequest {
            request: Some(proto::Request::Batch(proto::BatchRequest {
                batch: proto::Batch { steps: self.steps },
            })),
        }
    }
}

fn cell(value: Value) -> proto::Value {
    proto::Value {
        cell: Some(match value {
            Value::Null => proto::Cell::Null(proto::Empty {}),
            Value::Integer(i) => proto::Cell::Integer(i),
            Value::Real(f) => proto::Cell::Float(f),
            Value::Text(s) => proto::Cell::Text(s),
            Value::Blob(b) => proto::Cell::Blob(b),
        }),
    }
}

/// What every step of a batch returned; every step ran without error.
pub(crate) struct Outcome {
    results: HashMap<u32, proto::StmtResult>,
}

impl Outcome {
    /// `result`, or the error of its first failed step (a step after a failed
    /// one did not run).
    fn of(result: proto::BatchResult) -> Result<Self> {
        if let Some((_, err)) = result.step_errors.into_iter().min_by_key(|(step, _)| *step) {
            return Err(Error::hrana(format!("api error: `{}`", err.message)));
        }
        Ok(Self { results: result.step_results })
    }

    /// The rows step `step` returned (none for a statement without rows).
    pub fn rows(&mut self, step: usize) -> Result<Vec<Row>> {
        let result = u32::try_from(step)
            .ok()
            .and_then(|step| self.results.remove(&step))
            .ok_or_else(|| Error::Internal(format!("step {step} of a batch returned no result")))?;
        Ok(result.rows.into_iter().map(|row| Row(row.values)).collect())
    }

    /// The first column of the first row step `step` returned, if any.
    pub fn first_integer(&mut self, step: usize) -> Result<Option<i64>> {
        match self.rows(step)?.first() {
            Some(row) => Ok(Some(row.get(0)?)),
            None => Ok(None),
        }
    }
}

/// A row a batch step returned.
pub(crate) struct Row(Vec<proto::Value>);

impl Cells for Row {
    fn value(&self, column: i32) -> Result<Value> {
        let cell = usize::try_from(column)
            .ok()
            .and_then(|i| self.0.get(i))
            .ok_or_else(|| Error::Internal(format!("no column {column} in a row of {}", self.0.len())))?;
        Ok(match &cell.cell {
            None | Some(proto::Cell::Null(_)) => Value::Null,
            Some(proto::Cell::Integer(i)) => Value::Integer(*i),
            Some(proto::Cell::Float(f)) => Value::Real(*f),
            Some(proto::Cell::Text(s)) => Value::Text(s.clone()),
            Some(proto::Cell::Blob(b)) => Value::Blob(b.clone()),
        })
    }
}

#[cfg(feature = "remote")]
pub(crate) use send::{Client, Started};

/// Without server support there is no server to send to.
#[cfg(not(feature = "remote"))]
pub(crate) enum Client {}

#[cfg(not(feature = "remote"))]
pub(crate) enum Open {}

#[cfg(not(feature = "remote"))]
pub(crate) enum Started {}

#[cfg(not(feature = "remote"))]
impl Client {
    pub fn new(url: &str, _token: Option<&str>) -> Result<Self> {
        Err(Error::invalid(format!("{url:?} is a server URL, but this build has no libSQL server support")))
    }

    pub fn run(&self, _batch: Batch) -> Result<Outcome> {
        match *self {}
    }

    pub fn start(&self, _batch: Batch) -> Result<Started> {
        match *self {}
    }

    pub fn outcome(&self, started: Started) -> Result<Outcome> {
        match started {}
    }

    pub fn begin(&self, _batch: Batch) -> Result<(Outcome, Open)> {
        match *self {}
    }

    pub fn finish(&self, open: Open, _batch: Batch) -> Result<Outcome> {
        match open {}
    }

    pub fn abandon(&self, open: Open) {
        match open {}
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    #[test]
    fn each_step_runs_only_after_the_one_before_it() {
        let mut batch = Batch::new();
        assert_eq!(batch.push("BEGIN", []), 0);
        assert_eq!(batch.push("SELECT ?1", [Value::Integer(7)]), 1);
        assert_eq!(batch.push("COMMIT", []), 2);
        let conditions: Vec<_> =
            batch.steps.iter().map(|s| s.condition.clone().and_then(|c| c.cond)).collect();
        assert_eq!(conditions, [None, Some(proto::Cond::Ok(0)), Some(proto::Cond::Ok(1))]);
    }

    #[test]
    fn the_last_rollback_runs_only_inside_a_transaction() {
        let mut batch = Batch::new();
        batch.push("BEGIN IMMEDIATE", []);
        batch.push("COMMIT", []);
        batch.push_rollback();
        let step = batch.steps.last().expect("a step");
        assert_eq!(step.stmt.sql.as_deref(), Some("ROLLBACK"));
        // `not` (field 3) around `is_autocommit` (field 6, empty), as the
        // server's `BatchCond` reads them.
        let condition = step.condition.clone().expect("a condition").encode_to_vec();
        assert_eq!(condition, [0x1a, 0x02, 0x32, 0x00]);
    }

    #[test]
    fn values_round_trip_through_the_encoding() {
        let values = [
            Value::Null,
            Value::Integer(i64::MIN),
            Value::Real(-0.5),
            Value::Text("it's \"quoted\" ?1 😀".into()),
            Value::Blob(vec![0, 255, 39]),
        ];
        let row = proto::Row { values: values.iter().cloned().map(cell).collect() };
        let decoded = proto::Row::decode(row.encode_to_vec().as_slice()).expect("decodes");
        let row = Row(decoded.values);
        for (i, value) in values.iter().enumerate() {
            assert_eq!(&row.value(i as i32).expect("a column"), value);
        }
        assert!(row.value(5).is_err());
    }

    #[test]
    fn the_first_failed_step_is_the_batch_error() {
        let mut result = proto::BatchResult::default();
        result.step_errors.insert(
            2,
            proto::ServerError {
                message: "SQLite error: database is locked".into(),
                code: "SQLITE_BUSY".into(),
            },
        );
        result.step_errors.insert(3, proto::ServerError { message: "later".into(), code: String::new() });
        let err = Outcome::of(result).err().expect("an error");
        assert!(err.is_locked(), "{err}");
    }
}
