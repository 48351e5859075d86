//! Engine configuration: plain Rust, validated once when a store opens.

use std::path::PathBuf;

use crate::error::{Error, Result};
pub use crate::store::Eviction;

impl Eviction {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "oldest" => Ok(Self::Oldest),
            "least_recently_returned" => Ok(Self::LeastRecentlyReturned),
            other => Err(Error::invalid(format!(
                "eviction must be \"oldest\" or \"least_recently_returned\", not {other:?}"
            ))),
        }
    }
}

/// Where the database lives. `":memory:"` keeps everything in RAM.
pub const MEMORY_PATH: &str = ":memory:";

#[derive(Debug, Clone, PartialEq)]
pub enum TokenizerSpec {
    /// OpenAI's o200k_base vocabulary (GPT-4o and later), embedded in the crate.
    O200k,
    /// OpenAI's cl100k_base vocabulary (GPT-4, GPT-3.5).
    Cl100k,
    /// A Hugging Face `tokenizer.json` file.
    File(PathBuf),
}

impl TokenizerSpec {
    pub fn parse(spec: &str) -> Result<Self> {
        match spec {
            "o200k" | "o200k_base" => Ok(Self::O200k),
            "cl100k" | "cl100k_base" => Ok(Self::Cl100k),
            path if path.ends_with(".json") => Ok(Self::File(PathBuf::from(path))),
            other => Err(Error::invalid(format!(
                "unknown tokenizer {other:?}: expected \"o200k\", \"cl100k\" or a path to a tokenizer.json"
            ))),
        }
    }
}

/// How much a fresh entry is preferred over an old one of equal relevance.
///
/// The final score is `relevance * (1 + weight * 0.5^(age / half_life))`, so the
/// boost is bounded by `1 + weight`: recency breaks ties and near-ties but never
/// buries a strong old match under a weak fresh one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recency {
    pub weight: f32,
    pub half_life_days: f32,
}

impl Default for Recency {
    fn default() -> Self {
        Self { weight: 0.2, half_life_days: 30.0 }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub path: String,
    /// The search index directory; `None` puts it beside the database file
    /// (`<path>.index`), or in RAM for `":memory:"`.
    pub index_dir: Option<PathBuf>,
    pub tokenizer: TokenizerSpec,
    pub recency: Recency,
    /// How many ranked candidates a query considers before packing.
    pub depth: usize,
    /// Saves are searchable at once from an in-memory tail; the tail is committed
    /// to the on-disk index when it holds this many changes, or after `flush_ms`.
    pub flush_entries: usize,
    pub flush_ms: u64,
    /// How long a write waits for another writer's lock before failing.
    pub busy_timeout_ms: u64,
    /// What is redacted from content (and metadata) before it is stored.
    pub scrub: Scrub,
    /// At most this many entries per scope; `None` keeps everything.
    pub max_entries_per_scope: Option<usize>,
    /// Which entries a full scope gives up first.
    pub eviction: Eviction,
}

/// Scrubbing settings; secrets are redacted by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scrub {
    pub secrets: bool,
    /// E-mail addresses, phone numbers, payment cards, IBANs: opt-in.
    pub pii: bool,
    /// Scrub metadata strings too.
    pub metadata: bool,
}

impl Default for Scrub {
    fn default() -> Self {
        Self { secrets: true, pii: false, metadata: true }
    }
}

impl Scrub {
    /// How the setting is recorded in the database.
    pub fn describe(&self) -> String {
        let parts: Vec<&str> = [
            (self.secrets, "secrets"),
            (self.pii, "pii"),
            (self.metadata && (self.secrets || self.pii), "metadata"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect();
        if parts.is_empty() { "off".to_owned() } else { parts.join("+") }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            path: MEMORY_PATH.to_owned(),
            index_dir: None,
            tokenizer: TokenizerSpec::O200k,
            recency: Recency::default(),
            depth: 100,
            flush_entries: 2048,
            flush_ms: 1000,
            busy_timeout_ms: 10_000,
            scrub: Scrub::default(),
            max_entries_per_scope: None,
            eviction: Eviction::Oldest,
        }
    }
}

impl Config {
    pub fn new(path: impl Into<String>) -> Self {
        Self { path: path.into(), ..Self::default() }
    }

    pub fn is_memory(&self) -> bool {
        self.path == MEMORY_PATH
    }

    pub fn validate(&self) -> Result<()> {
        if self.path.is_empty() {
            return Err(Error::invalid("path must not be empty (use \":memory:\" for RAM)"));
        }
        if !(self.recency.weight.is_finite() && self.recency.weight >= 0.0) {
            return Err(Error::invalid("recency weight must be a finite number >= 0"));
        }
        if !(self.recency.half_life_days.is_finite() && self.recency.half_life_days > 0.0) {
            return Err(Error::invalid("recency half-life must be a finite number of days > 0"));
        }
        if self.depth == 0 || self.depth > 10_000 {
            return Err(Error::invalid("depth must be between 1 and 10000"));
        }
        if self.max_entries_per_scope == Some(0) {
            return Err(Error::invalid("max_entries_per_scope must be at least 1"));
        }
        if self.flush_entries == 0 {
            return Err(Error::invalid("flush_entries must be at least 1"));
        }
        Ok(())
    }

    /// The directory of the persistent index, or `None` for an in-RAM index.
    pub fn resolved_index_dir(&self) -> Option<PathBuf> {
        match (&self.index_dir, self.is_memory()) {
            (Some(dir), _) => Some(dir.clone()),
            (None, true) => None,
            (None, false) => Some(PathBuf::from(format!("{}.index", self.path))),
        }
    }
}
