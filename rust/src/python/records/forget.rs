//! `ForgetRecord` (what `forget` selects) and `ReceiptRecord` (what it removed).

use pyo3::prelude::*;

use super::text::Text;
use crate::engine::Receipt;
use crate::entry::Micros;
use crate::store::Forget;

/// A dict (`_convert.ForgetRecord`): `ids` is always there (`None`: no
/// criterion); another key left out is no criterion; `scope` present and
/// `None` selects global entries.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct ForgetRecord {
    ids: Option<Vec<i64>>,
    #[pyo3(default, from_py_with = super::item::given)]
    scope: Option<Option<Text>>,
    #[pyo3(default)]
    session_id: Option<Text>,
    #[pyo3(default)]
    key: Option<Text>,
    /// JSON text.
    #[pyo3(default)]
    metadata: Option<Text>,
    #[pyo3(default)]
    source: Option<super::item::SourceRecord>,
    #[pyo3(default)]
    cascade: bool,
}

impl From<ForgetRecord> for Forget {
    fn from(r: ForgetRecord) -> Self {
        Forget {
            ids: r.ids,
            scope: r.scope.map(|s| s.map(String::from)),
            session_id: r.session_id.map(String::from),
            key: r.key.map(String::from),
            metadata: r.metadata.map(String::from),
            source: r.source.map(|s| crate::entry::Source::from(s).of),
            cascade: r.cascade,
        }
    }
}

/// What a forget removed (`_core._Receipt` in the stub), a dict.
#[derive(Debug, Clone, IntoPyObject)]
pub struct ReceiptRecord {
    id: String,
    at: Micros,
    ids: Vec<i64>,
    vectors: usize,
    reindexed: usize,
    segments: usize,
    storage_scrubbed: bool,
}

impl From<Receipt> for ReceiptRecord {
    fn from(r: Receipt) -> Self {
        Self {
            id: r.id,
            at: r.at,
            ids: r.ids,
            vectors: r.vectors,
            reindexed: r.reindexed,
            segments: r.segments,
            storage_scrubbed: r.storage_scrubbed,
        }
    }
}
