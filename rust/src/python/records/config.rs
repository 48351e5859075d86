//! `ConfigRecord`: the attributes of Python's `contextforge.Config` that the
//! engine reads, and the engine's defaults in the same shape (`default_config`).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::choice::Parsed;
use super::text::Text;
use crate::config::{Audit, Config, Eviction, Fusion, Hybrid, Mmr, Recency, Retrieval, Scrub, TokenizerSpec};
use crate::store::EncryptionKey;

/// Read by attribute from a `Config` (its `embedder` and `embed_batch_size`
/// stay in Python); written as a dict by `default_config`.
#[derive(FromPyObject, IntoPyObject)]
pub struct ConfigRecord {
    path: Text,
    auth_token: Option<Text>,
    /// Resolved by Python (a callable is called there): `bytes` or `str`.
    encryption_key: Option<KeyBytes>,
    replica: Option<Text>,
    /// Seconds.
    sync_interval: Option<f64>,
    index_dir: Option<Text>,
    tokenizer: Parsed<TokenizerSpec>,
    recency_weight: f32,
    recency_half_life_days: f32,
    stopword_weight: f32,
    context_weight: f32,
    date_weight: f32,
    reply_weight: f32,
    session_weight: f32,
    min_relevance: f32,
    min_relative_relevance: f32,
    fusion: Parsed<Fusion>,
    dense_weight: f32,
    rrf_k: f32,
    mmr_lambda: f32,
    duplicate_similarity: f32,
    mmr_window: usize,
    depth: usize,
    flush_entries: usize,
    flush_ms: u64,
    busy_timeout_ms: u64,
    scrub: bool,
    /// `None`: the setting the store recorded.
    scrub_pii: Option<bool>,
    scrub_metadata: bool,
    max_entries_per_scope: Option<usize>,
    eviction: Parsed<Eviction>,
    audit_reads: bool,
    audit_query_text: bool,
    audit_retention_days: u32,
    read_only: bool,
}

impl TryFrom<ConfigRecord> for Config {
    type Error = crate::error::Error;

    fn try_from(r: ConfigRecord) -> crate::error::Result<Self> {
        let sync_interval = r
            .sync_interval
            .map(|seconds| {
                std::time::Duration::try_from_secs_f64(seconds).map_err(|_| {
                    crate::error::Error::invalid("sync_interval must be a positive number of seconds")
                })
            })
            .transpose()?;
        Ok(Config {
            path: r.path.0,
            auth_token: r.auth_token.map(String::from),
            encryption_key: r.encryption_key.map(|k| EncryptionKey::new(k.0.to_vec())).transpose()?,
            replica: r.replica.map(|path| path.0.into()),
            sync_interval,
            index_dir: r.index_dir.map(|dir| dir.0.into()),
            tokenizer: r.tokenizer.0,
            recency: Recency { weight: r.recency_weight, half_life_days: r.recency_half_life_days },
            retrieval: Retrieval {
                stopword_weight: r.stopword_weight,
                context_weight: r.context_weight,
                date_weight: r.date_weight,
                reply_weight: r.reply_weight,
                session_weight: r.session_weight,
                min_relevance: r.min_relevance,
                min_relative_relevance: r.min_relative_relevance,
            },
            hybrid: Hybrid { fusion: r.fusion.0, dense_weight: r.dense_weight, rrf_k: r.rrf_k },
            mmr: Mmr {
                lambda: r.mmr_lambda,
                duplicate_similarity: r.duplicate_similarity,
                window: r.mmr_window,
            },
            depth: r.depth,
            flush_entries: r.flush_entries,
            flush_ms: r.flush_ms,
            busy_timeout_ms: r.busy_timeout_ms,
            scrub: Scrub { secrets: r.scrub, pii: r.scrub_pii.unwrap_or(false), metadata: r.scrub_metadata },
            scrub_pii_from_store: r.scrub_pii.is_none(),
            max_entries_per_scope: r.max_entries_per_scope,
            eviction: r.eviction.0,
            audit: Audit {
                reads: r.audit_reads,
                query_text: r.audit_query_text,
                retention_days: r.audit_retention_days,
            },
            read_only: r.read_only,
            exact_below: crate::index::EXACT_BELOW,
        })
    }
}

impl From<Config> for ConfigRecord {
    fn from(c: Config) -> Self {
        ConfigRecord {
            path: Text(c.path),
            auth_token: c.auth_token.map(Text),
            encryption_key: None, // never handed back
            replica: c.replica.map(|path| Text(path.display().to_string())),
            sync_interval: c.sync_interval.map(|d| d.as_secs_f64()),
            index_dir: c.index_dir.map(|dir| Text(dir.display().to_string())),
            tokenizer: Parsed(c.tokenizer),
            recency_weight: c.recency.weight,
            recency_half_life_days: c.recency.half_life_days,
            stopword_weight: c.retrieval.stopword_weight,
            context_weight: c.retrieval.context_weight,
            date_weight: c.retrieval.date_weight,
            reply_weight: c.retrieval.reply_weight,
            session_weight: c.retrieval.session_weight,
            min_relevance: c.retrieval.min_relevance,
            min_relative_relevance: c.retrieval.min_relative_relevance,
            fusion: Parsed(c.hybrid.fusion),
            dense_weight: c.hybrid.dense_weight,
            rrf_k: c.hybrid.rrf_k,
            mmr_lambda: c.mmr.lambda,
            duplicate_similarity: c.mmr.duplicate_similarity,
            mmr_window: c.mmr.window,
            depth: c.depth,
            flush_entries: c.flush_entries,
            flush_ms: c.flush_ms,
            busy_timeout_ms: c.busy_timeout_ms,
            scrub: c.scrub.secrets,
            scrub_pii: (!c.scrub_pii_from_store).then_some(c.scrub.pii),
            scrub_metadata: c.scrub.metadata,
            max_entries_per_scope: c.max_entries_per_scope,
            eviction: Parsed(c.eviction),
            audit_reads: c.audit.reads,
            audit_query_text: c.audit.query_text,
            audit_retention_days: c.audit.retention_days,
            read_only: c.read_only,
        }
    }
}

impl ConfigRecord {
    /// The engine's defaults as Python's `Config` spells them: `scrub_pii` is
    /// `None` there (the store's recorded setting, off for a new store).
    pub fn defaults() -> Self {
        Self { scrub_pii: None, ..Config::default().into() }
    }
}

/// An encryption key as Python gives it: `bytes`, or a `str` (its UTF-8 bytes).
pub struct KeyBytes(pub zeroize::Zeroizing<Vec<u8>>);

impl<'a, 'py> FromPyObject<'a, 'py> for KeyBytes {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(bytes) = obj.cast::<PyBytes>() {
            return Ok(Self(zeroize::Zeroizing::new(bytes.as_bytes().to_vec())));
        }
        let text = obj.cast::<PyString>()?;
        match text.to_str() {
            Ok(text) => Ok(Self(zeroize::Zeroizing::new(text.as_bytes().to_vec()))),
            Err(err) => Err(super::text::unencodable(obj.py(), "encryption_key", err)),
        }
    }
}

impl<'py> IntoPyObject<'py> for KeyBytes {
    type Target = PyBytes;
    type Output = Bound<'py, PyBytes>;
    type Error = std::convert::Infallible;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        Ok(PyBytes::new(py, &self.0))
    }
}
