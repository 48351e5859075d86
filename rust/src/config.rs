//! Engine configuration: plain Rust, validated once when a store opens.

#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// The order in which a scope over its cap loses entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// The oldest entries by timestamp go first.
    Oldest,
    /// Entries no query has returned for the longest go first (never returned
    /// counts as returned when saved).
    LeastRecentlyReturned,
}

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

/// How queries are analysed and which indexed fields count toward relevance.
///
/// Relevance is `bm25(text) + context_weight * bm25(context) + date_weight *
/// bm25(date)`, each field with its own BM25 statistics (the same in the
/// committed index and the in-memory tail). `context` holds the previous turns
/// of the entry's session; `date` its timestamp's UTC date as words
/// ("8 may 2023"). A weight of 0 leaves the field out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retrieval {
    /// How much English function words ("what", "did", "the", ...) in a query
    /// count, from 0 (dropped) to 1 (like any word). A query made only of
    /// function words counts them fully.
    pub stopword_weight: f32,
    pub context_weight: f32,
    pub date_weight: f32,
    /// The share of a candidate's relevance lent to the previous turn of its
    /// session (the one it replies to), when that turn is a candidate too.
    pub reply_weight: f32,
    /// Each candidate with a session gains this times the best relevance (before
    /// replies lend) among the candidates of its scope and session.
    pub session_weight: f32,
    /// The relevance floor (`rank::Floor`): a hit's own relevance (its
    /// relevance as ranked when its content or date holds a word of the query,
    /// else only what its vector scored) must reach `min_relevance`, and
    /// `min_relative_relevance` times the best candidate's; the immediate reply
    /// to a hit that clears it comes through too. 0 and 0 turn it off.
    pub min_relevance: f32,
    pub min_relative_relevance: f32,
}

impl Default for Retrieval {
    fn default() -> Self {
        Self {
            stopword_weight: 0.3,
            context_weight: 0.4,
            date_weight: 0.8,
            reply_weight: 0.2,
            session_weight: 0.5,
            min_relevance: 0.0,
            min_relative_relevance: 0.1,
        }
    }
}

/// How dense (embedding) matches are combined with BM25 matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fusion {
    /// Reciprocal-rank fusion: each list adds `weight / (rrf_k + rank)`.
    Rrf,
    /// A weighted sum of BM25 scaled min-max over the BM25 matches (the best 1,
    /// the weakest 0) and cosine similarity.
    Weighted,
}

impl Fusion {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "rrf" => Ok(Self::Rrf),
            "weighted" => Ok(Self::Weighted),
            other => Err(Error::invalid(format!("fusion must be \"rrf\" or \"weighted\", not {other:?}"))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Rrf => "rrf",
            Self::Weighted => "weighted",
        }
    }
}

/// Hybrid retrieval: used by queries that carry an embedding.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hybrid {
    pub fusion: Fusion,
    /// The dense side's share of the fused score, from 0 (BM25 only) to 1.
    pub dense_weight: f32,
    /// The rank offset of reciprocal-rank fusion.
    pub rrf_k: f32,
}

impl Default for Hybrid {
    fn default() -> Self {
        Self { fusion: Fusion::Weighted, dense_weight: 0.5, rrf_k: 60.0 }
    }
}

/// Maximal marginal relevance over the best candidates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mmr {
    /// Relevance against novelty: 1 ranks by relevance alone.
    pub lambda: f32,
    /// Candidates at least this similar to a better one are left out, so near
    /// duplicates never fill the budget twice; above 1 keeps them.
    pub duplicate_similarity: f32,
    /// How many of the best candidates are re-ranked.
    pub window: usize,
}

impl Default for Mmr {
    fn default() -> Self {
        Self { lambda: 1.0, duplicate_similarity: 0.9, window: 30 }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// A database file, `":memory:"`, or the URL of a libSQL server
    /// (`http://`, `https://`, `libsql://`).
    pub path: String,
    /// The token a libSQL server authenticates with; unused for local files.
    pub auth_token: Option<String>,
    /// Encrypts a database file at rest (`store/encryption.rs`); its search
    /// index is then sealed too (`index/sealed.rs`).
    pub encryption_key: Option<crate::store::EncryptionKey>,
    /// With a server `path`: a local libSQL file kept in sync with the server
    /// (an embedded replica). Reads come from it; writes go to the server.
    pub replica: Option<PathBuf>,
    /// How often the replica pulls the server's changes in the background;
    /// `None`: only when asked (`Memory::sync`) and after this handle's writes.
    pub sync_interval: Option<std::time::Duration>,
    /// The search index directory; `None` puts it beside the database file
    /// (`<path>.index`), or in RAM for `":memory:"` and for a server. For a
    /// server, the index lives in a subdirectory named by a hash of the URL, so
    /// one cache directory can serve several servers.
    pub index_dir: Option<PathBuf>,
    pub tokenizer: TokenizerSpec,
    pub recency: Recency,
    /// Query analysis and field weights for ranking.
    pub retrieval: Retrieval,
    pub hybrid: Hybrid,
    pub mmr: Mmr,
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
    /// Take `scrub.pii` from the store: on when the store recorded that it
    /// scrubs personal data (a new store: off). What tools that open a store
    /// without a PII setting of their own use, so they honour the application's.
    pub scrub_pii_from_store: bool,
    /// Recording what queries returned (`engine/audit.rs`).
    pub audit: Audit,
    /// Open a database file read-only: queries and reads work, writes fail
    /// with a typed error, and the search index is kept in RAM. A file this
    /// process may not write is opened read-only without being asked.
    pub read_only: bool,
    /// Dense search scans a query's vectors exactly when its scopes hold at
    /// most this many, and a store with no more keeps no graph
    /// (`index/vectors.rs`). Not a Python setting: for benchmarks and tests.
    pub exact_below: usize,
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
        if parts.is_empty() {
            "off".to_owned()
        } else {
            parts.join("+")
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            path: MEMORY_PATH.to_owned(),
            auth_token: None,
            encryption_key: None,
            index_dir: None,
            tokenizer: TokenizerSpec::O200k,
            recency: Recency::default(),
            retrieval: Retrieval::default(),
            hybrid: Hybrid::default(),
            mmr: Mmr::default(),
            depth: 100,
            flush_entries: 2048,
            flush_ms: 1000,
            busy_timeout_ms: 10_000,
            scrub: Scrub::default(),
            max_entries_per_scope: None,
            eviction: Eviction::Oldest,
            scrub_pii_from_store: false,
            audit: Audit::default(),
            read_only: false,
            exact_below: crate::index::EXACT_BELOW,
            replica: None,
            sync_interval: None,
        }
    }
}

/// The read audit: what every `query` and `context` returned, kept for
/// `retention_days` (off by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Audit {
    pub reads: bool,
    /// Keep the query's text, not only its keyed hash.
    pub query_text: bool,
    pub retention_days: u32,
}

impl Default for Audit {
    fn default() -> Self {
        Self { reads: false, query_text: false, retention_days: 30 }
    }
}

impl Config {
    pub fn new(path: impl Into<String>) -> Self {
        Self { path: path.into(), ..Self::default() }
    }

    pub fn is_memory(&self) -> bool {
        self.path == MEMORY_PATH
    }

    /// Whether `path` names a libSQL server rather than a file.
    pub fn is_remote(&self) -> bool {
        let lower = self.path.to_ascii_lowercase();
        REMOTE_SCHEMES.iter().any(|scheme| lower.starts_with(scheme))
    }

    pub fn validate(&self) -> Result<()> {
        if self.path.is_empty() {
            return Err(Error::invalid("path must not be empty (use \":memory:\" for RAM)"));
        }
        if self.is_remote() && !cfg!(feature = "remote") {
            return Err(Error::invalid("this build has no libSQL server support (cargo feature \"remote\")"));
        }
        if self.is_remote() && self.path.split_once("://").is_none_or(|(_, host)| host.is_empty()) {
            return Err(Error::invalid(format!("{:?} names no server", self.path)));
        }
        if let Some(replica) = &self.replica {
            let text = replica.to_string_lossy();
            if !self.is_remote() {
                return Err(Error::invalid("replica needs the URL of a libSQL server as the path"));
            }
            if text.is_empty() || text == MEMORY_PATH || text.contains("://") {
                return Err(Error::invalid(format!(
                    "replica must be the path of a local file, not {text:?}"
                )));
            }
        }
        if let Some(interval) = self.sync_interval {
            if self.replica.is_none() {
                return Err(Error::invalid("sync_interval needs a replica"));
            }
            if interval < std::time::Duration::from_millis(10)
                || interval > std::time::Duration::from_secs(86_400)
            {
                return Err(Error::invalid("sync_interval must be between 0.01 and 86400 seconds"));
            }
        }
        if self.audit.retention_days == 0 {
            return Err(Error::invalid("audit_retention_days must be at least 1"));
        }
        let stop = self.retrieval.stopword_weight;
        if !(stop.is_finite() && (0.0..=1.0).contains(&stop)) {
            return Err(Error::invalid("stopword_weight must be a number between 0 and 1"));
        }
        for (name, w) in [
            ("context_weight", self.retrieval.context_weight),
            ("date_weight", self.retrieval.date_weight),
            ("reply_weight", self.retrieval.reply_weight),
            ("session_weight", self.retrieval.session_weight),
        ] {
            if !(w.is_finite() && (0.0..=10.0).contains(&w)) {
                return Err(Error::invalid(format!("{name} must be a number between 0 and 10")));
            }
        }
        if !(self.retrieval.min_relevance.is_finite() && self.retrieval.min_relevance >= 0.0) {
            return Err(Error::invalid("min_relevance must be a finite number >= 0"));
        }
        let share = self.retrieval.min_relative_relevance;
        if !(share.is_finite() && (0.0..=1.0).contains(&share)) {
            return Err(Error::invalid("min_relative_relevance must be a number between 0 and 1"));
        }
        if !(self.recency.weight.is_finite() && self.recency.weight >= 0.0) {
            return Err(Error::invalid("recency weight must be a finite number >= 0"));
        }
        if !(self.recency.half_life_days.is_finite() && self.recency.half_life_days > 0.0) {
            return Err(Error::invalid("recency half-life must be a finite number of days > 0"));
        }
        for (name, x) in [("dense_weight", self.hybrid.dense_weight), ("mmr_lambda", self.mmr.lambda)] {
            if !(x.is_finite() && (0.0..=1.0).contains(&x)) {
                return Err(Error::invalid(format!("{name} must be a number between 0 and 1")));
            }
        }
        if !(self.hybrid.rrf_k.is_finite() && self.hybrid.rrf_k >= 0.0) {
            return Err(Error::invalid("rrf_k must be a finite number >= 0"));
        }
        let dup = self.mmr.duplicate_similarity;
        if !(dup.is_finite() && dup > 0.0) {
            return Err(Error::invalid(
                "duplicate_similarity must be a number > 0 (above 1 keeps near duplicates)",
            ));
        }
        if self.mmr.window > 10_000 {
            return Err(Error::invalid("mmr_window must be at most 10000"));
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
        if self.encryption_key.is_some() {
            if self.is_remote() || self.is_memory() {
                return Err(Error::invalid(
                    "encryption_key applies to a database file: a server encrypts (or not) on its \
                     side, and \":memory:\" is never written",
                ));
            }
            if !cfg!(feature = "encryption") {
                return Err(Error::invalid(
                    "this build has no encryption at rest (feature \"encryption\"): encryption_key \
                     would be ignored",
                ));
            }
        }
        Ok(())
    }

    /// The directory of the persistent index, or `None` for an in-RAM index.
    pub fn resolved_index_dir(&self) -> Option<PathBuf> {
        match (&self.index_dir, self.is_memory(), self.is_remote()) {
            // An index names no database: keying it by the URL keeps one server's
            // index from being read as another's.
            (Some(dir), _, true) => Some(dir.join(format!("remote-{:016x}", url_hash(&self.path)))),
            (Some(dir), _, false) => Some(dir.clone()),
            (None, true, _) | (None, _, true) => None,
            (None, false, false) => Some(PathBuf::from(format!("{}.index", self.path))),
        }
    }
}

/// URL schemes that name a libSQL server.
const REMOTE_SCHEMES: [&str; 3] = ["http://", "https://", "libsql://"];

/// FNV-1a of the URL without its query string (where tokens may sit): stable
/// across processes and versions, unlike `std`'s hasher.
fn url_hash(url: &str) -> u64 {
    let base = url.split(['?', '#']).next().unwrap_or(url).trim_end_matches('/');
    base.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_paths() {
        let mut c = Config::new("http://127.0.0.1:8080");
        assert!(c.is_remote() && !c.is_memory());
        assert_eq!(c.resolved_index_dir(), None);
        c.index_dir = Some(PathBuf::from("/cache"));
        let dir = c.resolved_index_dir().unwrap();
        assert!(dir.starts_with("/cache") && dir != Path::new("/cache"));
        let other = Config { path: "libsql://db.example.com".into(), ..c.clone() };
        assert_ne!(other.resolved_index_dir(), Some(dir));
        assert!(!Config::new("./http.db").is_remote());
        assert!(Config::new("http://").validate().is_err());
    }
}
