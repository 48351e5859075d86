//! Changes applied since the last index commit, searchable at once.
//!
//! A tantivy commit per save would cost milliseconds and a segment each; instead
//! saves land here and a background flusher commits them in batches. Queries
//! search the committed index and the tail together with shared BM25 statistics,
//! and skip committed documents that the tail has replaced or deleted.

use std::collections::HashMap;
use std::sync::Arc;

use super::schema::Extra;
use crate::entry::{Entry, Micros};

/// The scored fields, in `schema::field_terms` order.
pub const TEXT: usize = 0;
pub const CONTEXT: usize = 1;
pub const DATE: usize = 2;
pub const SCORED_FIELDS: usize = 3;

/// One field of a document: analysed terms with their frequencies, and length.
#[derive(Debug, Clone, Default)]
pub struct FieldTerms {
    pub terms: HashMap<String, u32>,
    pub len: u32,
}

#[derive(Debug, Clone)]
pub struct TailDoc {
    pub entry: Entry,
    pub extra: Extra,
    pub seq: i64,
    pub fields: [FieldTerms; SCORED_FIELDS],
}

#[derive(Debug, Default, Clone)]
pub struct Tail {
    pub docs: HashMap<i64, TailDoc>,
    /// Ids whose committed document is stale (updated or deleted), with the
    /// change that made it so. Shared copy-on-write with running queries.
    pub tombstones: Arc<HashMap<i64, i64>>,
    doc_freq: [HashMap<String, u64>; SCORED_FIELDS],
    total_len: [u64; SCORED_FIELDS],
}

impl Tail {
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty() && self.tombstones.is_empty()
    }

    pub fn len(&self) -> usize {
        self.docs.len() + self.tombstones.len()
    }

    pub fn num_docs(&self) -> u64 {
        self.docs.len() as u64
    }

    pub fn total_len(&self, field: usize) -> u64 {
        self.total_len[field]
    }

    pub fn doc_freq(&self, field: usize, term: &str) -> u64 {
        self.doc_freq[field].get(term).copied().unwrap_or(0)
    }

    /// Adds or replaces an entry, given the analysed terms of each scored field.
    /// `replaces_committed` marks an update of an entry that the committed index
    /// may hold.
    pub fn upsert(
        &mut self,
        entry: Entry,
        extra: Extra,
        seq: i64,
        terms: [Vec<String>; SCORED_FIELDS],
        replaces_committed: bool,
    ) {
        self.remove_doc(entry.id);
        if replaces_committed {
            Arc::make_mut(&mut self.tombstones).insert(entry.id, seq);
        }
        let fields = terms.map(|terms| {
            let len = u32::try_from(terms.len()).unwrap_or(u32::MAX);
            let mut freqs: HashMap<String, u32> = HashMap::new();
            for term in terms {
                *freqs.entry(term).or_default() += 1;
            }
            FieldTerms { terms: freqs, len }
        });
        for (f, field) in fields.iter().enumerate() {
            for term in field.terms.keys() {
                *self.doc_freq[f].entry(term.clone()).or_default() += 1;
            }
            self.total_len[f] += u64::from(field.len);
        }
        self.docs.insert(entry.id, TailDoc { entry, extra, seq, fields });
    }

    pub fn delete(&mut self, id: i64, seq: i64) {
        self.remove_doc(id);
        Arc::make_mut(&mut self.tombstones).insert(id, seq);
    }

    /// Forgets everything a commit up to `seq` made durable in the index.
    pub fn trim(&mut self, seq: i64) {
        let done: Vec<i64> =
            self.docs.values().filter(|doc| doc.seq <= seq).map(|doc| doc.entry.id).collect();
        for id in done {
            self.remove_doc(id);
        }
        if self.tombstones.values().any(|&s| s <= seq) {
            Arc::make_mut(&mut self.tombstones).retain(|_, s| *s > seq);
        }
    }

    fn remove_doc(&mut self, id: i64) {
        let Some(doc) = self.docs.remove(&id) else { return };
        for (f, field) in doc.fields.iter().enumerate() {
            for term in field.terms.keys() {
                if let Some(df) = self.doc_freq[f].get_mut(term) {
                    *df -= 1;
                    if *df == 0 {
                        self.doc_freq[f].remove(term);
                    }
                }
            }
            self.total_len[f] -= u64::from(field.len);
        }
    }
}

/// BM25 as tantivy computes it (k1 = 1.2, b = 0.75), so tail and index scores
/// are comparable.
pub fn bm25(idf: f32, tf: u32, len: u32, avg_len: f32) -> f32 {
    const K1: f32 = 1.2;
    const B: f32 = 0.75;
    let tf = tf as f32;
    let norm = K1 * (1.0 - B + B * len as f32 / avg_len.max(1.0));
    idf * (1.0 + K1) * tf / (tf + norm)
}

pub fn idf(doc_freq: u64, num_docs: u64) -> f32 {
    let df = doc_freq.min(num_docs) as f32;
    let x = (num_docs as f32 - df + 0.5) / (df + 0.5);
    (1.0 + x).ln()
}

/// `1 + weight * 0.5^(age / half_life)`, with future timestamps treated as now.
pub fn recency_boost(ts: Micros, now: Micros, weight: f32, half_life_us: f64) -> f32 {
    let age = (now.saturating_sub(ts)).max(0) as f64;
    1.0 + weight * (-age / half_life_us).exp2() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: i64) -> Entry {
        crate::entry::sample(id, "")
    }

    fn text(terms: &[&str]) -> [Vec<String>; SCORED_FIELDS] {
        [terms.iter().map(|t| (*t).to_owned()).collect(), vec!["x".into()], Vec::new()]
    }

    #[test]
    fn statistics_follow_upserts_and_deletes() {
        let mut tail = Tail::default();
        let extra = Extra::default;
        tail.upsert(entry(1), extra(), 1, text(&["a", "b", "a"]), false);
        tail.upsert(entry(2), extra(), 2, text(&["a"]), false);
        assert_eq!(tail.doc_freq(TEXT, "a"), 2);
        assert_eq!(tail.doc_freq(CONTEXT, "a"), 0);
        assert_eq!(tail.doc_freq(CONTEXT, "x"), 2);
        assert_eq!(tail.total_len(TEXT), 4);
        tail.upsert(entry(1), extra(), 3, text(&["c"]), true);
        assert_eq!(tail.doc_freq(TEXT, "a"), 1);
        assert_eq!(tail.doc_freq(TEXT, "c"), 1);
        assert_eq!(tail.tombstones.get(&1), Some(&3));
        tail.delete(2, 4);
        assert_eq!(tail.doc_freq(TEXT, "a"), 0);
        assert_eq!(tail.total_len(TEXT), 1);
        assert_eq!(tail.total_len(CONTEXT), 1);
        tail.trim(3);
        assert!(tail.docs.is_empty());
        assert_eq!(tail.tombstones.len(), 1);
        tail.trim(4);
        assert!(tail.is_empty());
    }

    #[test]
    fn recency_boost_is_bounded_and_decays() {
        let day = 86_400_000_000_i64;
        let hl = 30.0 * day as f64;
        assert!((recency_boost(0, 0, 0.2, hl) - 1.2).abs() < 1e-6);
        assert!((recency_boost(0, 30 * day, 0.2, hl) - 1.1).abs() < 1e-6);
        assert!(recency_boost(0, 3650 * day, 0.2, hl) >= 1.0);
        assert!((recency_boost(10 * day, 0, 0.2, hl) - 1.2).abs() < 1e-6);
    }
}
