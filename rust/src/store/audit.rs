//! The change log, read as an audit trail: every write in order, with when it
//! was made, in which scope, and for a forget's deletions, which forget.

use libsql::Value;

use super::rows::opt_text;
use super::{ChangeOp, Store};
use crate::entry::Micros;
use crate::error::Result;
use crate::runtime::block_on;

/// One change, as the audit trail shows it (no content).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// Its place in the log: the cursor to resume after it.
    pub seq: i64,
    pub entry_id: i64,
    pub op: ChangeOp,
    /// When it was made; `None` for changes logged before the store kept it.
    pub at: Option<Micros>,
    /// The entry's scope when the change was made.
    pub scope: Option<String>,
    /// The entry's key, while the entry exists.
    pub key: Option<String>,
    /// The forget a deletion belongs to.
    pub forget: Option<String>,
}

impl Store {
    /// Up to `limit` changes after `after`, oldest first; with `scope`, only
    /// those of that scope (`Some(None)`: global entries). Changes logged
    /// before the log kept scopes are in the unfiltered trail only.
    pub fn logged(&self, after: i64, limit: usize, scope: Option<Option<&str>>) -> Result<Vec<Logged>> {
        let (filter, mut params) = match scope {
            None => (String::new(), vec![]),
            Some(scope) => ("AND c.at IS NOT NULL AND c.scope IS ?2".to_owned(), vec![opt_text(scope)]),
        };
        params.insert(0, Value::Integer(after));
        let sql = format!(
            "SELECT c.seq, c.entry_id, c.op, c.at, c.scope, e.key, c.forget \
             FROM changes c LEFT JOIN entries e ON e.id = c.entry_id \
             WHERE c.seq > ?1 {filter} ORDER BY c.seq LIMIT {limit}"
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query(&sql, params.clone()).await?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().await? {
                    let op = ChangeOp::from_code(row.get::<i64>(2)?)?;
                    let forget: Option<String> = row.get(6)?;
                    out.push(Logged {
                        seq: row.get(0)?,
                        entry_id: row.get(1)?,
                        op,
                        at: row.get(3)?,
                        scope: row.get(4)?,
                        key: if op == ChangeOp::Delete { None } else { row.get(5)? },
                        forget,
                    });
                }
                Ok(out)
            })
        })
    }
}
