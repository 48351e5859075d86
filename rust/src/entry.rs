//! The entry model shared by the store, the index and the bindings.

use crate::error::{Error, Result};

/// Microseconds since the Unix epoch (UTC).
pub type Micros = i64;

/// The UTC calendar date of a timestamp: `(year, month 1-12, day 1-31)`
/// (Howard Hinnant's `civil_from_days`).
pub fn civil_date(ts: Micros) -> (i64, i64, i64) {
    let days = ts.div_euclid(86_400_000_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Timestamps are limited to years 1..=9999, the range every caller can represent.
pub const MIN_TIMESTAMP: Micros = -62_135_596_800_000_000;
pub const MAX_TIMESTAMP: Micros = 253_402_300_799_999_999;

const MAX_LABEL_BYTES: usize = 512;

/// An entry as the caller hands it to `save`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEntry {
    pub content: String,
    pub kind: String,
    /// `None` is the global scope, visible to queries that ask for it.
    pub scope: Option<String>,
    pub session_id: Option<String>,
    /// A JSON object, already serialised.
    pub metadata: Option<String>,
    pub timestamp: Option<Micros>,
    /// When the entry expires: it is never returned after this, and is purged.
    pub expires_at: Option<Micros>,
    /// Return the existing id instead of saving a second copy of content that is
    /// identical after normalisation in the same scope.
    pub dedupe: bool,
    /// The content's embedding, for hybrid retrieval.
    pub embedding: Option<Vec<f32>>,
    /// Store the entry with exactly this id (restoring a backup); `None` takes
    /// the next one. An entry with an id is never deduplicated.
    pub id: Option<i64>,
    /// Redact secrets (and PII, when the store is configured for it) from the
    /// content and metadata; `false` stores them as given.
    pub scrub: bool,
    /// The slot this entry fills within its scope (`"user.city"`): saving it
    /// supersedes the key's version current at `valid_from` (see `store::timeline`).
    pub key: Option<String>,
    /// When the fact starts to hold; `None`: at its timestamp.
    pub valid_from: Option<Micros>,
    /// When the fact stops holding; `None`: until superseded.
    pub valid_to: Option<Micros>,
    /// The id of an entry of the same scope that this one corrects.
    pub supersedes: Option<i64>,
    /// Where it came from: entries of this store, or external references.
    pub sources: Vec<Source>,
    /// Allow entry sources in other scopes (their content is never shown).
    pub cross_scope_sources: bool,
}

/// One source of an entry: what it rests on, and optionally where in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub of: SourceRef,
    /// A character span `[start, end)` in the source.
    pub span: Option<(i64, i64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceRef {
    /// An entry of this store.
    Entry(i64),
    /// A URL, a message id (`slack:C123/1700000000.1234`), any caller's reference.
    External(String),
}

/// The longest external reference kept.
pub const MAX_REF_BYTES: usize = 2048;
/// The most sources one entry may have.
pub const MAX_SOURCES: usize = 1000;

impl Source {
    pub fn validate(&self) -> Result<()> {
        match &self.of {
            SourceRef::Entry(id) if *id < 1 => {
                return Err(Error::invalid("a source entry id must be positive"))
            }
            SourceRef::External(r) if r.trim().is_empty() => {
                return Err(Error::invalid("a source reference must not be empty"))
            }
            SourceRef::External(r) if r.len() > MAX_REF_BYTES => {
                return Err(Error::invalid(format!(
                    "a source reference is longer than {MAX_REF_BYTES} bytes"
                )))
            }
            SourceRef::External(r) if r.chars().any(char::is_control) => {
                return Err(Error::invalid("a source reference must not contain control characters"))
            }
            SourceRef::External(r) => {
                if let Some(rule) = crate::scrub::label_secret(r) {
                    return Err(Error::invalid(format!(
                        "a source reference must not hold a secret (found: {rule})"
                    )));
                }
            }
            SourceRef::Entry(_) => {}
        }
        if let Some((start, end)) = self.span {
            if start < 0 || end <= start {
                return Err(Error::invalid("a source span must be (start, end) with 0 <= start < end"));
            }
        }
        Ok(())
    }
}

impl NewEntry {
    pub fn new(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            kind: "note".to_owned(),
            scope: None,
            session_id: None,
            metadata: None,
            timestamp: None,
            expires_at: None,
            dedupe: true,
            embedding: None,
            id: None,
            scrub: true,
            key: None,
            valid_from: None,
            valid_to: None,
            supersedes: None,
            sources: Vec::new(),
            cross_scope_sources: false,
        }
    }

    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    pub fn at(mut self, timestamp: Micros) -> Self {
        self.timestamp = Some(timestamp);
        self
    }

    pub fn validate(&self) -> Result<()> {
        if self.content.trim().is_empty() {
            return Err(Error::invalid("content must not be empty"));
        }
        validate_label("kind", &self.kind)?;
        if let Some(scope) = &self.scope {
            validate_label("scope", scope)?;
        }
        if let Some(session) = &self.session_id {
            validate_label("session_id", session)?;
        }
        if let Some(metadata) = &self.metadata {
            let value: serde_json::Value = serde_json::from_str(metadata)
                .map_err(|err| Error::invalid(format!("metadata is not valid JSON: {err}")))?;
            if !value.is_object() {
                return Err(Error::invalid("metadata must be a JSON object"));
            }
        }
        if let Some(ts) = self.timestamp {
            validate_timestamp("timestamp", ts)?;
        }
        if let Some(ts) = self.expires_at {
            validate_timestamp("expires_at", ts)?;
        }
        if let Some(vector) = &self.embedding {
            validate_vector("embedding", vector)?;
        }
        if self.id.is_some_and(|id| id < 1) {
            return Err(Error::invalid("id must be a positive integer"));
        }
        if let Some(key) = &self.key {
            validate_label("key", key)?;
        }
        for (name, ts) in [("valid_from", self.valid_from), ("valid_to", self.valid_to)] {
            if let Some(ts) = ts {
                validate_timestamp(name, ts)?;
            }
        }
        if let (Some(to), from) = (self.valid_to, self.valid_from.or(self.timestamp)) {
            if from.is_some_and(|from| to <= from) {
                return Err(Error::invalid("valid_to must be later than valid_from"));
            }
        }
        if self.supersedes.is_some_and(|id| id < 1) {
            return Err(Error::invalid("supersedes must be a positive integer"));
        }
        if self.sources.len() > MAX_SOURCES {
            return Err(Error::invalid(format!("an entry may have at most {MAX_SOURCES} sources")));
        }
        for source in &self.sources {
            source.validate()?;
        }
        Ok(())
    }
}

/// A key as stored: NFC, so that the same word typed two ways is one key.
pub fn normalize_key(key: String) -> String {
    use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};
    if key.is_ascii() || is_nfc_quick(key.chars()) == IsNormalized::Yes {
        key
    } else {
        key.nfc().collect()
    }
}

/// The most dimensions an embedding may have.
pub const MAX_DIMENSIONS: usize = 65_536;

/// An embedding is non-empty, not absurdly long, finite and not all zeros.
pub fn validate_vector(name: &str, vector: &[f32]) -> Result<()> {
    if vector.is_empty() || vector.len() > MAX_DIMENSIONS {
        return Err(Error::invalid(format!("{name} must have 1 to {MAX_DIMENSIONS} dimensions")));
    }
    if !vector.iter().all(|x| x.is_finite()) {
        return Err(Error::invalid(format!("{name} must hold finite numbers only")));
    }
    if vector.iter().all(|x| *x == 0.0) {
        return Err(Error::invalid(format!("{name} must not be all zeros")));
    }
    Ok(())
}

/// Labels (kind, scope, session) are short, non-empty and free of control characters.
pub fn validate_label(name: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(format!("{name} must not be empty")));
    }
    if value.len() > MAX_LABEL_BYTES {
        return Err(Error::invalid(format!("{name} is longer than {MAX_LABEL_BYTES} bytes")));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(format!("{name} must not contain control characters")));
    }
    // Labels are stored and shown as given, never redacted.
    if let Some(rule) = crate::scrub::label_secret(value) {
        return Err(Error::invalid(format!("{name} must not hold a secret (found: {rule})")));
    }
    Ok(())
}

pub fn validate_timestamp(name: &str, ts: Micros) -> Result<()> {
    if (MIN_TIMESTAMP..=MAX_TIMESTAMP).contains(&ts) {
        Ok(())
    } else {
        Err(Error::invalid(format!("{name} is outside the years 1 to 9999")))
    }
}

/// A stored entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: i64,
    pub content: String,
    pub kind: String,
    pub scope: Option<String>,
    pub session_id: Option<String>,
    pub metadata: Option<String>,
    pub timestamp: Micros,
    pub tokens: u32,
    pub expires_at: Option<Micros>,
    /// When `update` last changed the entry; `None` if it never did.
    pub updated_at: Option<Micros>,
    /// The prompt-injection check stored with the entry when it was written
    /// (`safety::injection::stamp`); `None` for entries written before stores
    /// kept one.
    pub risk_stamp: Option<i64>,
    /// Its key, validity interval and successor.
    pub validity: Validity,
}

/// Where an entry stands in time: the interval in which it holds, and for a
/// version of a key or a corrected entry, what replaced it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validity {
    pub key: Option<String>,
    /// When it starts to hold. `None` for an entry outside any timeline (no
    /// key, no interval, no supersession), which holds at every time and shows
    /// its timestamp as its start; a timeline's entries always have one.
    pub valid_from: Option<Micros>,
    /// When it stops holding; `None`: open.
    pub valid_to: Option<Micros>,
    /// The entry that superseded this one.
    pub superseded_by: Option<i64>,
}

impl Entry {
    /// Whether the entry is still alive at `now`.
    pub fn alive_at(&self, now: Micros) -> bool {
        self.expires_at.is_none_or(|at| at > now)
    }

    /// When the entry starts to hold.
    pub fn valid_from(&self) -> Micros {
        self.validity.valid_from.unwrap_or(self.timestamp)
    }

    /// Whether the entry holds at `at`. An entry saved without a key or an
    /// interval, and never superseded, holds at every time; one in a timeline
    /// holds over `[valid_from, valid_to)`.
    pub fn valid_at(&self, at: Micros) -> bool {
        self.validity.valid_from.is_none_or(|from| from <= at)
            && self.validity.valid_to.is_none_or(|to| to > at)
    }
}

/// A ranked entry returned by a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub entry: Entry,
    pub score: f32,
    /// Prompt-injection risks found in the content (labels, sorted).
    pub risks: Vec<&'static str>,
    /// How the score was made, when the query asked.
    pub explain: Option<Explain>,
}

/// The parts of a hit's score: `score = relevance * recency`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Explain {
    /// BM25 alone, or fused with the dense similarity in a hybrid query.
    pub relevance: f32,
    /// BM25 over the entry's content alone, with statistics of the whole
    /// store; 0 when no query word is in it.
    pub bm25: f32,
    /// What the other fields add to `bm25` as ranked: the previous turns of the
    /// entry's session (at `context_weight`) and its date as words (at
    /// `date_weight`). Both are 0 when only the dense side found the entry.
    pub bm25_context: f32,
    /// Cosine similarity of the entry's embedding to the query's, in a hybrid
    /// query, when the entry has one.
    pub dense: Option<f32>,
    /// What maximal marginal relevance took off for likeness to better hits.
    pub diversity: f32,
    /// The recency multiplier, between 1 and `1 + recency_weight`.
    pub recency: f32,
    /// Position among the ranked candidates, from 0, before packing.
    pub rank: usize,
}

impl Hit {
    pub fn new(entry: Entry, score: f32) -> Self {
        use crate::safety::injection::{detect, from_stamp};
        // The check made when the entry was written stands, unless the rules
        // have changed since.
        let risks = entry
            .risk_stamp
            .and_then(from_stamp)
            .unwrap_or_else(|| detect(&entry.content))
            .iter()
            .map(|r| r.label())
            .collect();
        Self { entry, score, risks, explain: None }
    }
}

/// An entry for tests: a note with `content`, id `id`, one token, no scope,
/// session or dates; tests set what they need on it.
#[cfg(test)]
pub fn sample(id: i64, content: &str) -> Entry {
    Entry {
        id,
        content: content.to_owned(),
        kind: "note".to_owned(),
        scope: None,
        session_id: None,
        metadata: None,
        timestamp: 0,
        tokens: 1,
        expires_at: None,
        updated_at: None,
        risk_stamp: None,
        validity: Validity::default(),
    }
}
