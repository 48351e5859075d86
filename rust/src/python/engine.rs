//! `_core.Engine`: a thin handle over the engine. Each method owns its
//! arguments, calls one engine function off the event loop, converts the result.

use std::sync::Arc;

use numpy::{PyReadonlyArray2, PyUntypedArrayMethods};
use parking_lot::RwLock;
use pyo3::prelude::*;

use super::bridge::{awaitable, awaitable_on, paths, quick, Answer, Paths, Wait};
use super::context::Context;
use super::errors::{to_py, ClosedError};
use super::hit::Hit;
use super::records::{
    strings, ConfigRecord, ForgetRecord, ItemRecord, KeyBytes, LinkedRecord, ListRecord, LoggedRecord,
    PatchRecord, QueryRecord, ReadRecord, ReceiptRecord, Record, ScopeFilter, Text, TimingsRecord,
};
use crate::config::Config;
use crate::distill::{ExtractOptions, Message};
use crate::engine::Memory as Core;
use crate::entry::{Micros, NewEntry};
use crate::error::Error;

#[pyclass(frozen, module = "contextforge._core")]
pub struct Engine {
    core: RwLock<Option<Arc<Core>>>,
    /// The bridge's shortcuts for saves and for queries: a call that always
    /// crosses the network is not waited for awake.
    writes: Paths,
    reads: Paths,
}

impl Engine {
    fn core(&self) -> PyResult<Arc<Core>> {
        self.core.read().clone().ok_or_else(|| ClosedError::new_err(Error::Closed.to_string()))
    }
}

type ChunkTuple = (Vec<usize>, String, u32, Option<(usize, usize)>);

/// The items of `save_many`, each with its row of `embeddings` when given.
pub(super) fn new_entries(
    items: Vec<ItemRecord>,
    embeddings: Option<Vec<Vec<f32>>>,
) -> PyResult<Vec<NewEntry>> {
    if let Some(rows) = &embeddings {
        if rows.len() != items.len() {
            return Err(to_py(Error::invalid(format!(
                "embeddings has {} rows for {} items",
                rows.len(),
                items.len()
            ))));
        }
    }
    let mut rows = embeddings.map(Vec::into_iter);
    Ok(items.into_iter().map(|item| item.entry(rows.as_mut().and_then(Iterator::next))).collect())
}

/// The rows of a float32 matrix.
pub(super) fn matrix_rows(matrix: Option<PyReadonlyArray2<'_, f32>>) -> Option<Vec<Vec<f32>>> {
    let matrix = matrix?;
    let view = matrix.as_array();
    Some(view.rows().into_iter().map(|row| row.to_vec()).collect())
}

/// The engine's messages from `(speaker, text)` pairs.
fn messages(pairs: Vec<(Option<Text>, Text)>) -> Vec<Message> {
    pairs
        .into_iter()
        .map(|(speaker, text)| Message { speaker: speaker.map(String::from), text: text.0 })
        .collect()
}

fn hits(found: Vec<Option<crate::entry::Hit>>) -> Vec<Option<Hit>> {
    found.into_iter().map(|h| h.map(Hit::lookup)).collect()
}

#[pymethods]
impl Engine {
    /// Opens a store from a `contextforge.Config` (read by attribute).
    #[staticmethod]
    fn open(py: Python<'_>, config: Record<ConfigRecord>) -> PyResult<Bound<'_, PyAny>> {
        let config = Config::try_from(config.0).map_err(to_py)?;
        awaitable(py, move || {
            let core = Core::open(config)?;
            let (remote_writes, remote_reads) = core.over_network();
            let pick = |networked: bool| if networked { paths().networked() } else { paths() };
            Ok(Engine {
                core: RwLock::new(Some(Arc::new(core))),
                writes: pick(remote_writes),
                reads: pick(remote_reads),
            })
        })
    }

    /// Starts a bulk save fed a chunk at a time (`BulkSave.add`), all in one
    /// transaction: for a `save_many` too large to cross at once.
    fn bulk_save(&self) -> PyResult<super::bulk::BulkSave> {
        let core = crate::engine::BulkSave::start(self.core()?).map_err(to_py)?;
        Ok(super::bulk::BulkSave::new(core, self.writes))
    }

    /// Whether saves scrub personal data (`scrub_pii` as resolved on open).
    #[getter]
    fn scrub_pii(&self) -> PyResult<bool> {
        Ok(self.core()?.scrubs_pii())
    }

    /// What the store scrubbed before this open that this one does not.
    #[getter]
    fn scrub_dropped(&self) -> PyResult<Vec<String>> {
        Ok(self.core()?.scrub_dropped().to_vec())
    }

    /// Saves items in one transaction, returning `(id, created)` per item;
    /// `embeddings` is an (n, d) float32 matrix, one row per item.
    #[pyo3(signature = (items, embeddings=None))]
    fn save_detailed<'py>(
        &self,
        py: Python<'py>,
        items: Record<Vec<ItemRecord>>,
        embeddings: Option<PyReadonlyArray2<'py, f32>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let entries = new_entries(items.0, matrix_rows(embeddings))?;
        awaitable_on(py, self.writes, move || core.save_detailed(entries))
    }

    /// The tokens each text holds by the store's tokenizer, counted without
    /// the GIL (a long text takes a while).
    fn count_tokens(&self, py: Python<'_>, texts: Vec<Text>) -> PyResult<Vec<u32>> {
        let core = self.core()?;
        let texts = strings(texts);
        Ok(py.detach(move || texts.iter().map(|t| core.count_tokens(t)).collect()))
    }

    /// Content as it would be stored: secrets (and PII when configured) redacted.
    fn scrub<'py>(&self, py: Python<'py>, texts: Vec<Text>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let texts = strings(texts);
        awaitable(py, move || Ok(texts.into_iter().map(|t| core.scrub_content(t)).collect::<Vec<_>>()))
    }

    /// `(name, dim)` of the embedder recorded in the store, or `None`.
    fn embedder<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || Ok(core.embedder()?.map(|e| (e.name, e.dim))))
    }

    /// Records the store's embedder; with `replace`, drops vectors of another.
    fn set_embedder<'py>(
        &self,
        py: Python<'py>,
        name: Text,
        dim: usize,
        replace: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let name = name.0;
        awaitable(py, move || core.set_embedder(&name, dim, replace))
    }

    fn set_vectors<'py>(
        &self,
        py: Python<'py>,
        ids: Vec<i64>,
        vectors: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        if vectors.shape()[0] != ids.len() {
            return Err(to_py(Error::invalid("one vector per id")));
        }
        let pairs: Vec<(i64, Vec<f32>)> =
            ids.into_iter().zip(matrix_rows(Some(vectors)).unwrap_or_default()).collect();
        awaitable(py, move || core.set_vectors(pairs))
    }

    /// `(id, content)` of up to `limit` entries without a vector, after id `after`.
    fn missing_vectors<'py>(&self, py: Python<'py>, after: i64, limit: usize) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.missing_vectors(after, limit))
    }

    fn vector_count<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.vector_count())
    }

    /// Scrubs and chunks a transcript of `(speaker, text)` pairs; returns the
    /// scrubbed pairs and `(message indices, text, tokens, part)` per chunk.
    fn distill_chunks<'py>(
        &self,
        py: Python<'py>,
        pairs: Vec<(Option<Text>, Text)>,
        max_tokens: u32,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let messages = messages(pairs);
        awaitable(py, move || {
            let clean = core.scrub_transcript(&messages)?;
            let chunks = core.chunk_transcript(&clean, max_tokens)?;
            let pairs: Vec<(Option<String>, String)> =
                clean.into_iter().map(|m| (m.speaker, m.text)).collect();
            let chunks: Vec<ChunkTuple> =
                chunks.into_iter().map(|c| (c.messages, c.text, c.tokens, c.part)).collect();
            Ok((pairs, chunks))
        })
    }

    /// The offline extractor over scrubbed pairs: `(summary, [(kind, text, score, message)])`.
    fn distill_extract<'py>(
        &self,
        py: Python<'py>,
        pairs: Vec<(Option<Text>, Text)>,
        max_facts: usize,
        max_fact_chars: usize,
        summary_sentences: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let messages = messages(pairs);
        let options = ExtractOptions { max_facts, max_fact_chars, summary_sentences };
        awaitable(py, move || {
            let out = core.extract_facts(&messages, options)?;
            let facts: Vec<(String, String, f32, usize)> = out
                .facts
                .into_iter()
                .map(|f| (f.kind.as_str().to_owned(), f.text, f.score, f.message))
                .collect();
            Ok((out.summary, facts))
        })
    }

    /// Answers a `_convert.query_record`: `(hits, timings)`, the timings with `explain`.
    fn query<'py>(&self, py: Python<'py>, query: Record<QueryRecord<'py>>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let (query, _) = query.0.query();
        quick(py, self.reads, move |wait| {
            let answer = match wait {
                Wait::Allowed => Answer::Ready(core.query_timed(&query)?),
                Wait::Never => Answer::from(core.try_query_timed(&query)?),
            };
            let now = query.now.unwrap_or_else(crate::store::now_micros);
            Ok(answer.map(|(hits, timings)| {
                let hits: Vec<Hit> = hits.into_iter().map(|h| Hit::from(h).read_at(now)).collect();
                (hits, query.explain.then(|| TimingsRecord::from(timings)))
            }))
        })
    }

    /// Renders the hits of a `_convert.query_record` (with its `order`) as a `Context`.
    fn context<'py>(&self, py: Python<'py>, query: Record<QueryRecord<'py>>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let (query, order) = query.0.query();
        quick(py, self.reads, move |wait| {
            let context = match wait {
                Wait::Allowed => Answer::Ready(core.context(&query, order)?),
                Wait::Never => Answer::from(core.try_context(&query, order)?),
            };
            Ok(context.map(Context::from))
        })
    }

    /// Entries by id; those that do not hold at `as_of` (now by default) are
    /// `None`, unless `include_superseded`.
    #[pyo3(signature = (ids, *, as_of=None, include_superseded=false))]
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        ids: Vec<i64>,
        as_of: Option<Micros>,
        include_superseded: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || {
            let valid_at = (!include_superseded).then(|| as_of.unwrap_or_else(crate::store::now_micros));
            Ok(hits(core.get_many(&ids, valid_at)?))
        })
    }

    /// The versions of `key` in `scope`, oldest first.
    fn history<'py>(&self, py: Python<'py>, key: Text, scope: Option<Text>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let (key, scope) = (key.0, scope.map(String::from));
        awaitable(py, move || {
            Ok(core.history(&key, scope.as_deref())?.into_iter().map(Hit::from).collect::<Vec<_>>())
        })
    }

    /// Up to `limit` changes of the log after `after`, oldest first (the audit trail).
    fn changes<'py>(
        &self,
        py: Python<'py>,
        after: i64,
        limit: usize,
        scope: ScopeFilter,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let scope: Option<Option<String>> = scope.into();
        awaitable(py, move || {
            let page = core.logged(after, limit, scope.as_ref().map(Option::as_deref))?;
            Ok(page.into_iter().map(LoggedRecord::from).collect::<Vec<_>>())
        })
    }

    /// What `id` rests on (`up`), or what was derived from it, to `depth` links.
    fn linked<'py>(&self, py: Python<'py>, id: i64, up: bool, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || {
            Ok(core.linked(id, up, depth)?.into_iter().map(LinkedRecord::from).collect::<Vec<_>>())
        })
    }

    /// The direct sources of each of `ids`, by entry.
    fn direct_sources<'py>(&self, py: Python<'py>, ids: Vec<i64>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || {
            Ok(core.direct_sources(&ids)?.into_iter().map(LinkedRecord::from).collect::<Vec<_>>())
        })
    }

    /// Up to `limit` audited reads after `after`, oldest first.
    fn reads<'py>(&self, py: Python<'py>, after: i64, limit: usize) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || {
            Ok(core.reads(after, limit)?.into_iter().map(ReadRecord::from).collect::<Vec<_>>())
        })
    }

    /// Forgets what a `_convert.ForgetRecord` selects; returns its receipt.
    fn forget<'py>(&self, py: Python<'py>, what: Record<ForgetRecord>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let what = what.0.into();
        awaitable(py, move || Ok(ReceiptRecord::from(core.forget(what)?)))
    }

    /// The keys `scope` holds, in order, at most `limit`.
    fn keys<'py>(&self, py: Python<'py>, scope: Option<Text>, limit: usize) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let scope = scope.map(String::from);
        awaitable(py, move || core.keys(scope.as_deref(), limit))
    }

    /// The entries linked to `id` by supersession, oldest first.
    fn versions<'py>(&self, py: Python<'py>, id: i64) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || Ok(core.versions(id)?.into_iter().map(Hit::from).collect::<Vec<_>>()))
    }

    /// Applies a `_convert.PatchRecord` and returns the entry as stored.
    fn update<'py>(
        &self,
        py: Python<'py>,
        id: i64,
        patch: Record<PatchRecord<'py>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let patch = patch.0.into();
        awaitable(py, move || Ok(Hit::from(core.update(id, patch)?)))
    }

    fn delete_many<'py>(&self, py: Python<'py>, ids: Vec<i64>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.delete_many(&ids))
    }

    #[pyo3(signature = (now=None))]
    fn purge_expired<'py>(&self, py: Python<'py>, now: Option<Micros>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.purge_expired(now))
    }

    fn clear_scope<'py>(&self, py: Python<'py>, scope: Text) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let scope = scope.0;
        awaitable(py, move || core.clear_scope(&scope))
    }

    fn clear_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.clear_all())
    }

    fn count<'py>(&self, py: Python<'py>, filter: Record<ListRecord>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let filter = filter.0.filter().map_err(to_py)?;
        awaitable(py, move || core.count(&filter))
    }

    #[pyo3(signature = (prefix=None))]
    fn scopes<'py>(&self, py: Python<'py>, prefix: Option<Text>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.scopes(prefix.as_ref().map(|p| p.0.as_str())))
    }

    /// Deletes what a `_convert.ListRecord` selects; returns how many.
    fn delete_where<'py>(&self, py: Python<'py>, filter: Record<ListRecord>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let filter = filter.0.filter().map_err(to_py)?;
        awaitable(py, move || core.delete_selected(&filter))
    }

    /// One page, newest first, after the (timestamp_us, id) cursor.
    fn list_page<'py>(
        &self,
        py: Python<'py>,
        filter: Record<ListRecord>,
        after: Option<(Micros, i64)>,
        limit: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let filter = filter.0.filter().map_err(to_py)?;
        awaitable(py, move || {
            let page = core.list(&filter, after, limit)?;
            let cursor = page.last().map(|e| (e.timestamp, e.id));
            Ok((page.into_iter().map(Hit::from).collect::<Vec<_>>(), cursor))
        })
    }

    fn sync<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.sync())
    }

    fn rekey<'py>(&self, py: Python<'py>, key: KeyBytes) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let key = crate::store::EncryptionKey::new(key.0.to_vec()).map_err(to_py)?;
        awaitable(py, move || core.rekey(key))
    }

    #[getter]
    fn encrypted(&self) -> PyResult<bool> {
        Ok(self.core()?.is_encrypted())
    }

    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.flush())
    }

    /// Flushes and releases the store; closing twice is harmless.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core.write().take();
        awaitable(py, move || match core {
            Some(core) => core.close(),
            None => Ok(()),
        })
    }

    #[getter]
    fn closed(&self) -> bool {
        self.core.read().is_none()
    }
}

/// The engine's defaults, as a dict of `Config`'s names, so the Python config can be checked against them.
#[pyfunction]
pub fn default_config(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    Ok(ConfigRecord::defaults().into_pyobject(py)?.into_any())
}
