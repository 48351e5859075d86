//! `_core.Engine`: a thin handle over the engine. Each method owns its
//! arguments, calls one engine function off the event loop, converts the result.

use std::sync::Arc;

use parking_lot::RwLock;
use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use super::bridge::{awaitable, quick};
use super::errors::{to_py, ClosedError};
use super::hit::Hit;
use crate::config::{Config, Eviction, Fusion, Hybrid, Mmr, Recency, Retrieval, Scrub, TokenizerSpec};
use super::context::Context;
use crate::engine::{Engine as Core, InjectionPolicy, ListFilter, Patch, Query};
use crate::render::Order;
use crate::distill::{ExtractOptions, Message};
use crate::entry::{Micros, NewEntry};
use crate::error::Error;

/// One item for `save_many`, read from a dict with these keys (Python's
/// `_convert.SaveItem`).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Item {
    content: String,
    kind: String,
    scope: Option<String>,
    session_id: Option<String>,
    /// JSON text.
    metadata: Option<String>,
    timestamp: Option<Micros>,
    expires_at: Option<Micros>,
    dedupe: bool,
    id: Option<i64>,
    scrub: bool,
}

/// A `list`/`count` filter: (scope given?, scope, kind, session_id, since, until).
type Filter = (bool, Option<String>, Option<String>, Option<String>, Option<Micros>, Option<Micros>);

#[pyclass(frozen, module = "contextforge._core")]
pub struct Engine {
    core: RwLock<Option<Arc<Core>>>,
}

impl Engine {
    fn core(&self) -> PyResult<Arc<Core>> {
        self.core.read().clone().ok_or_else(|| ClosedError::new_err(Error::Closed.to_string()))
    }
}

/// The filters `query` and `context` share, as the bindings receive them.
struct Filters {
    kinds: Option<Vec<String>>,
    session_id: Option<String>,
    since: Option<Micros>,
    until: Option<Micros>,
    metadata: Option<String>,
}

impl Filters {
    #[allow(clippy::too_many_arguments)]
    fn query(
        self,
        text: String,
        scopes: Option<Vec<Option<String>>>,
        budget: u64,
        limit: Option<usize>,
        now: Option<Micros>,
        depth: Option<usize>,
        injection: InjectionPolicy,
        explain: bool,
        embedding: Option<Vec<f32>>,
    ) -> Query {
        let Filters { kinds, session_id, since, until, metadata } = self;
        Query {
            text, scopes, budget, limit, now, depth, kinds, session_id, since, until, metadata, injection, explain,
            embedding,
        }
    }
}

type ChunkTuple = (Vec<usize>, String, u32, Option<(usize, usize)>);

/// The items of `save_many`, each with its row of `embeddings` when given.
fn new_entries(items: Vec<Item>, embeddings: Option<Vec<Vec<f32>>>) -> PyResult<Vec<NewEntry>> {
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
    Ok(items
        .into_iter()
        .map(|i| {
            let embedding = rows.as_mut().and_then(Iterator::next);
            NewEntry {
                content: i.content,
                kind: i.kind,
                scope: i.scope,
                session_id: i.session_id,
                metadata: i.metadata,
                timestamp: i.timestamp,
                expires_at: i.expires_at,
                dedupe: i.dedupe,
                embedding,
                id: i.id,
                scrub: i.scrub,
            }
        })
        .collect())
}

/// The rows of a float32 matrix.
fn matrix_rows(matrix: Option<PyReadonlyArray2<'_, f32>>) -> Option<Vec<Vec<f32>>> {
    let matrix = matrix?;
    let view = matrix.as_array();
    Some(view.rows().into_iter().map(|row| row.to_vec()).collect())
}

fn vector(v: Option<PyReadonlyArray1<'_, f32>>) -> Option<Vec<f32>> {
    v.map(|v| v.as_array().to_vec())
}

fn hits(found: Vec<Option<crate::entry::Hit>>) -> Vec<Option<Hit>> {
    found.into_iter().map(|h| h.map(Hit::lookup)).collect()
}

fn list_filter((has_scope, scope, kind, session_id, since, until): Filter) -> ListFilter {
    ListFilter { scope: has_scope.then_some(scope), kind, session_id, since, until, alive_at: None }
}

#[pymethods]
impl Engine {
    #[staticmethod]
    #[pyo3(signature = (path, *, auth_token, index_dir, tokenizer, recency_weight, recency_half_life_days, depth, flush_entries, flush_ms, busy_timeout_ms, scrub, scrub_pii, scrub_metadata, max_entries_per_scope, eviction, stopword_weight=None, context_weight=None, date_weight=None, reply_weight=None, session_weight=None, min_relevance=None, min_relative_relevance=None, fusion=None, dense_weight=None, rrf_k=None, mmr_lambda=None, duplicate_similarity=None, mmr_window=None, read_only=false))]
    #[allow(clippy::too_many_arguments)]
    fn open(
        py: Python<'_>,
        path: String,
        auth_token: Option<String>,
        index_dir: Option<String>,
        tokenizer: String,
        recency_weight: f32,
        recency_half_life_days: f32,
        depth: usize,
        flush_entries: usize,
        flush_ms: u64,
        busy_timeout_ms: u64,
        scrub: bool,
        scrub_pii: Option<bool>,
        scrub_metadata: bool,
        max_entries_per_scope: Option<usize>,
        eviction: String,
        stopword_weight: Option<f32>,
        context_weight: Option<f32>,
        date_weight: Option<f32>,
        reply_weight: Option<f32>,
        session_weight: Option<f32>,
        min_relevance: Option<f32>,
        min_relative_relevance: Option<f32>,
        fusion: Option<String>,
        dense_weight: Option<f32>,
        rrf_k: Option<f32>,
        mmr_lambda: Option<f32>,
        duplicate_similarity: Option<f32>,
        mmr_window: Option<usize>,
        read_only: bool,
    ) -> PyResult<Bound<'_, PyAny>> {
        let h = Hybrid::default();
        let hybrid = Hybrid {
            fusion: fusion.as_deref().map(Fusion::parse).transpose().map_err(to_py)?.unwrap_or(h.fusion),
            dense_weight: dense_weight.unwrap_or(h.dense_weight),
            rrf_k: rrf_k.unwrap_or(h.rrf_k),
        };
        let m = Mmr::default();
        let mmr = Mmr {
            lambda: mmr_lambda.unwrap_or(m.lambda),
            duplicate_similarity: duplicate_similarity.unwrap_or(m.duplicate_similarity),
            window: mmr_window.unwrap_or(m.window),
        };
        let d = Retrieval::default();
        let retrieval = Retrieval {
            stopword_weight: stopword_weight.unwrap_or(d.stopword_weight),
            context_weight: context_weight.unwrap_or(d.context_weight),
            date_weight: date_weight.unwrap_or(d.date_weight),
            reply_weight: reply_weight.unwrap_or(d.reply_weight),
            session_weight: session_weight.unwrap_or(d.session_weight),
            min_relevance: min_relevance.unwrap_or(d.min_relevance),
            min_relative_relevance: min_relative_relevance.unwrap_or(d.min_relative_relevance),
        };
        let eviction = Eviction::parse(&eviction).map_err(to_py)?;
        let tokenizer = TokenizerSpec::parse(&tokenizer).map_err(to_py)?;
        let config = Config {
            path,
            auth_token,
            index_dir: index_dir.map(Into::into),
            tokenizer,
            recency: Recency { weight: recency_weight, half_life_days: recency_half_life_days },
            retrieval,
            hybrid,
            mmr,
            depth,
            flush_entries,
            flush_ms,
            busy_timeout_ms,
            scrub: Scrub { secrets: scrub, pii: scrub_pii.unwrap_or(false), metadata: scrub_metadata },
            scrub_pii_from_store: scrub_pii.is_none(),
            max_entries_per_scope,
            eviction,
            read_only,
        };
        awaitable(py, move || {
            let core = Core::open(config)?;
            Ok(Engine { core: RwLock::new(Some(Arc::new(core))) })
        })
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
        items: Vec<Item>,
        embeddings: Option<PyReadonlyArray2<'py, f32>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let entries = new_entries(items, matrix_rows(embeddings))?;
        awaitable(py, move || core.save_detailed(entries))
    }

    /// Content as it would be stored: secrets (and PII when configured) redacted.
    fn scrub<'py>(&self, py: Python<'py>, texts: Vec<String>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
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
        name: String,
        dim: usize,
        replace: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
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
        let pairs: Vec<(i64, Vec<f32>)> = ids.into_iter().zip(matrix_rows(Some(vectors)).unwrap_or_default()).collect();
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
        pairs: Vec<(Option<String>, String)>,
        max_tokens: u32,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let messages: Vec<Message> =
            pairs.into_iter().map(|(speaker, text)| Message { speaker, text }).collect();
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
        pairs: Vec<(Option<String>, String)>,
        max_facts: usize,
        max_fact_chars: usize,
        summary_sentences: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let messages: Vec<Message> =
            pairs.into_iter().map(|(speaker, text)| Message { speaker, text }).collect();
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

    #[pyo3(signature = (text, scopes, budget, *, limit=None, now=None, depth=None, kinds=None, session_id=None, since=None, until=None, metadata=None, on_injection="flag", explain=false, embedding=None))]
    #[allow(clippy::too_many_arguments)]
    fn query<'py>(
        &self,
        py: Python<'py>,
        text: String,
        scopes: Option<Vec<Option<String>>>,
        budget: u64,
        limit: Option<usize>,
        now: Option<Micros>,
        depth: Option<usize>,
        kinds: Option<Vec<String>>,
        session_id: Option<String>,
        since: Option<Micros>,
        until: Option<Micros>,
        metadata: Option<String>,
        on_injection: &str,
        explain: bool,
        embedding: Option<PyReadonlyArray1<'py, f32>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let injection = InjectionPolicy::parse(on_injection).map_err(to_py)?;
        let filters = Filters { kinds, session_id, since, until, metadata };
        let query = filters.query(text, scopes, budget, limit, now, depth, injection, explain, vector(embedding));
        quick(py, move |may_wait| {
            let answer = if may_wait { core.query_timed(&query).map(Some) } else { core.try_query_timed(&query) };
            answer.transpose().map(|answer| {
                let (hits, t) = answer?;
                let hits: Vec<Hit> = hits.into_iter().map(Hit::from).collect();
                let timings = explain.then(|| {
                    [("sync_us", t.sync_us), ("search_us", t.search_us), ("pack_us", t.pack_us), ("total_us", t.total_us)]
                        .into_iter()
                        .collect::<std::collections::HashMap<_, _>>()
                });
                Ok((hits, timings))
            })
        })
    }

    #[pyo3(signature = (text, scopes, budget, *, order="score", limit=None, now=None, depth=None, kinds=None, session_id=None, since=None, until=None, metadata=None, on_injection="flag", embedding=None))]
    #[allow(clippy::too_many_arguments)]
    fn context<'py>(
        &self,
        py: Python<'py>,
        text: String,
        scopes: Option<Vec<Option<String>>>,
        budget: u64,
        order: &str,
        limit: Option<usize>,
        now: Option<Micros>,
        depth: Option<usize>,
        kinds: Option<Vec<String>>,
        session_id: Option<String>,
        since: Option<Micros>,
        until: Option<Micros>,
        metadata: Option<String>,
        on_injection: &str,
        embedding: Option<PyReadonlyArray1<'py, f32>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let order = Order::parse(order).map_err(to_py)?;
        let injection = InjectionPolicy::parse(on_injection).map_err(to_py)?;
        let filters = Filters { kinds, session_id, since, until, metadata };
        let query = filters.query(text, scopes, budget, limit, now, depth, injection, false, vector(embedding));
        quick(py, move |may_wait| {
            let context = if may_wait { core.context(&query, order).map(Some) } else { core.try_context(&query, order) };
            context.transpose().map(|context| context.map(Context::from))
        })
    }

    fn get_many<'py>(&self, py: Python<'py>, ids: Vec<i64>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || Ok(hits(core.get_many(&ids)?)))
    }

    /// `metadata`/`scope`/`expires_at` take (given?, value) so that `None` can
    /// mean "remove".
    #[pyo3(signature = (id, *, content, kind, metadata, scope, expires_at=(false, None), scrub=true, embedding=None))]
    #[allow(clippy::too_many_arguments)]
    fn update<'py>(
        &self,
        py: Python<'py>,
        id: i64,
        content: Option<String>,
        kind: Option<String>,
        metadata: (bool, Option<String>),
        scope: (bool, Option<String>),
        expires_at: (bool, Option<Micros>),
        scrub: bool,
        embedding: Option<PyReadonlyArray1<'py, f32>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let patch = Patch {
            content,
            kind,
            metadata: metadata.0.then_some(metadata.1),
            scope: scope.0.then_some(scope.1),
            embedding: vector(embedding),
            expires_at: expires_at.0.then_some(expires_at.1),
            scrub,
        };
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

    fn clear_scope<'py>(&self, py: Python<'py>, scope: String) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.clear_scope(&scope))
    }

    fn clear_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.clear_all())
    }

    fn count<'py>(&self, py: Python<'py>, filter: Filter) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.count(&list_filter(filter)))
    }

    fn scopes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.scopes())
    }

    /// One page, newest first, after the (timestamp_us, id) cursor.
    fn list_page<'py>(
        &self,
        py: Python<'py>,
        filter: Filter,
        after: Option<(Micros, i64)>,
        limit: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || {
            let page = core.list(&list_filter(filter), after, limit)?;
            let cursor = page.last().map(|e| (e.timestamp, e.id));
            Ok((page.into_iter().map(Hit::from).collect::<Vec<_>>(), cursor))
        })
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

/// The engine's defaults, so the Python config can be checked against them.
#[pyfunction]
pub fn default_config(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    use pyo3::types::PyDictMethods;
    let c = Config::default();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("path", &c.path)?;
    d.set_item("auth_token", &c.auth_token)?;
    d.set_item("tokenizer", "o200k")?;
    d.set_item("recency_weight", c.recency.weight)?;
    d.set_item("recency_half_life_days", c.recency.half_life_days)?;
    d.set_item("stopword_weight", c.retrieval.stopword_weight)?;
    d.set_item("context_weight", c.retrieval.context_weight)?;
    d.set_item("date_weight", c.retrieval.date_weight)?;
    d.set_item("reply_weight", c.retrieval.reply_weight)?;
    d.set_item("session_weight", c.retrieval.session_weight)?;
    d.set_item("min_relevance", c.retrieval.min_relevance)?;
    d.set_item("min_relative_relevance", c.retrieval.min_relative_relevance)?;
    d.set_item("fusion", c.hybrid.fusion.name())?;
    d.set_item("dense_weight", c.hybrid.dense_weight)?;
    d.set_item("rrf_k", c.hybrid.rrf_k)?;
    d.set_item("mmr_lambda", c.mmr.lambda)?;
    d.set_item("duplicate_similarity", c.mmr.duplicate_similarity)?;
    d.set_item("mmr_window", c.mmr.window)?;
    d.set_item("depth", c.depth)?;
    d.set_item("flush_entries", c.flush_entries)?;
    d.set_item("flush_ms", c.flush_ms)?;
    d.set_item("busy_timeout_ms", c.busy_timeout_ms)?;
    d.set_item("scrub", c.scrub.secrets)?;
    // Python's default: `None`, the store's recorded setting (off for a new store).
    d.set_item("scrub_pii", None::<bool>)?;
    d.set_item("scrub_metadata", c.scrub.metadata)?;
    d.set_item("max_entries_per_scope", c.max_entries_per_scope)?;
    d.set_item("eviction", "oldest")?;
    Ok(d)
}
