//! Ranked candidates for a query: BM25 with a recency boost, over the committed
//! index and the tail, with the scope filter applied inside the index.

use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

use tantivy::collector::TopDocs;
use tantivy::query::{
    BooleanQuery, ConstScoreQuery, Occur, Query, RangeQuery, TermQuery, TermSetQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{SegmentReader, Term};

use super::stats::CombinedStats;
use super::tail::{bm25, idf, recency_boost, Tail};
use super::{schema, SearchIndex};
use crate::entry::Micros;
use crate::error::Result;

/// Queries longer than this many distinct terms keep the first ones.
const MAX_QUERY_TERMS: usize = 1024;

#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub text: String,
    /// Scope keys to search (`schema::GLOBAL_SCOPE` for global entries); `None`
    /// searches every scope.
    pub scopes: Option<Vec<String>>,
    pub kinds: Option<Vec<String>>,
    pub session_id: Option<String>,
    pub since: Option<Micros>,
    pub until: Option<Micros>,
    /// Metadata equality filters as `metadata_term`s; all must hold.
    pub metadata: Vec<String>,
    pub depth: usize,
    pub now: Micros,
    pub recency_weight: f32,
    pub half_life_us: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub id: i64,
    /// `relevance * recency`.
    pub score: f32,
    pub tokens: u32,
    /// The recency multiplier, in `[1, 1 + weight]`.
    pub recency: f32,
}

impl SearchIndex {
    pub fn search(&self, req: &SearchRequest) -> Result<Vec<Candidate>> {
        let terms = query_terms(&req.text);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let view = self.view.read();
        let stats = CombinedStats { searcher: &view.searcher, tail: &view.tail };

        let query = self.build_query(&terms, req);
        let score_fn = ScoreFn {
            tombstones: view.tail.tombstones.clone(),
            now: req.now,
            weight: req.recency_weight,
            half_life_us: req.half_life_us,
        };
        let collector = TopDocs::with_limit(req.depth)
            .tweak_score(move |segment: &SegmentReader| score_fn.for_segment(segment));
        let committed = view.searcher.search_with_statistics_provider(&query, &collector, &stats)?;

        let mut out: Vec<Candidate> = committed
            .into_iter()
            .filter(|((score, _, _, _), _)| score.is_finite())
            .map(|((score, id, tokens, recency), _)| Candidate { id, score, tokens, recency })
            .collect();
        out.extend(search_tail(&view.tail, &stats, &terms, req, self.fields.text));
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.id.cmp(&a.id)));
        out.truncate(req.depth);
        Ok(out)
    }

    fn build_query(&self, terms: &[String], req: &SearchRequest) -> Box<dyn Query> {
        let text: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let term = Term::from_field_text(self.fields.text, t);
                let q: Box<dyn Query> = Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs));
                (Occur::Should, q)
            })
            .collect();
        let mut clauses: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Must, Box::new(BooleanQuery::new(text)))];
        let mut filter = |q: Box<dyn Query>| {
            clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(q, 0.0))));
        };
        if let Some(scopes) = &req.scopes {
            let keys = scopes.iter().map(|s| Term::from_field_text(self.fields.scope, s));
            filter(Box::new(TermSetQuery::new(keys)));
        }
        if let Some(kinds) = &req.kinds {
            let keys = kinds.iter().map(|k| Term::from_field_text(self.fields.kind, k));
            filter(Box::new(TermSetQuery::new(keys)));
        }
        if let Some(session) = &req.session_id {
            let term = Term::from_field_text(self.fields.session, session);
            filter(Box::new(TermQuery::new(term, IndexRecordOption::Basic)));
        }
        for term in &req.metadata {
            let term = Term::from_field_text(self.fields.meta, term);
            filter(Box::new(TermQuery::new(term, IndexRecordOption::Basic)));
        }
        if req.since.is_some() || req.until.is_some() {
            let bound = |ts: Option<Micros>, inclusive: bool| match ts {
                None => Bound::Unbounded,
                Some(ts) if inclusive => Bound::Included(Term::from_field_i64(self.fields.ts, ts)),
                Some(ts) => Bound::Excluded(Term::from_field_i64(self.fields.ts, ts)),
            };
            filter(Box::new(RangeQuery::new(bound(req.since, true), bound(req.until, false))));
        }
        Box::new(BooleanQuery::new(clauses))
    }
}

impl SearchRequest {
    /// The same filters as `build_query`, for entries in the tail.
    fn admits(&self, entry: &crate::entry::Entry) -> bool {
        let scope = schema::scope_key(entry.scope.as_deref());
        self.scopes.as_ref().is_none_or(|s| s.iter().any(|x| x == scope))
            && self.kinds.as_ref().is_none_or(|k| k.contains(&entry.kind))
            && self.session_id.as_ref().is_none_or(|s| entry.session_id.as_ref() == Some(s))
            && self.since.is_none_or(|since| entry.timestamp >= since)
            && self.until.is_none_or(|until| entry.timestamp < until)
            && entry.alive_at(self.now)
            && (self.metadata.is_empty() || {
                let terms = schema::metadata_terms(entry.metadata.as_deref());
                self.metadata.iter().all(|t| terms.contains(t))
            })
    }
}

/// The distinct analysed terms of a query, in first-seen order. The text is
/// data, never query syntax.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut analyzer = schema::analyzer();
    let mut seen = HashSet::new();
    schema::terms(&mut analyzer, text)
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .take(MAX_QUERY_TERMS)
        .collect()
}

fn search_tail(
    tail: &Tail,
    stats: &CombinedStats<'_>,
    terms: &[String],
    req: &SearchRequest,
    text_field: tantivy::schema::Field,
) -> Vec<Candidate> {
    if tail.docs.is_empty() {
        return Vec::new();
    }
    let num_docs = stats.num_docs();
    let avg_len = stats.avg_len(text_field);
    let idfs: HashMap<&str, f32> = terms
        .iter()
        .map(|t| {
            let df = tantivy::query::Bm25StatisticsProvider::doc_freq(
                stats,
                &Term::from_field_text(text_field, t),
            )
            .unwrap_or(0);
            (t.as_str(), idf(df, num_docs))
        })
        .collect();
    tail.docs
        .values()
        .filter(|doc| req.admits(&doc.entry))
        .filter_map(|doc| {
            let relevance: f32 = idfs
                .iter()
                .filter_map(|(term, idf)| {
                    doc.terms.get(*term).map(|&tf| bm25(*idf, tf, doc.len, avg_len))
                })
                .sum();
            (relevance > 0.0).then(|| {
                let recency =
                    recency_boost(doc.entry.timestamp, req.now, req.recency_weight, req.half_life_us);
                Candidate { id: doc.entry.id, score: relevance * recency, tokens: doc.entry.tokens, recency }
            })
        })
        .collect()
}

/// Folds recency into the committed documents' scores and sinks stale ones.
#[derive(Clone)]
struct ScoreFn {
    tombstones: Arc<HashMap<i64, i64>>,
    now: Micros,
    weight: f32,
    half_life_us: f64,
}

/// (final score, entry id, tokens, recency multiplier): the id and token count
/// come from fast fields, so ranking and packing need no stored documents.
type SortKey = (f32, i64, u32, f32);

impl ScoreFn {
    fn for_segment(&self, segment: &SegmentReader) -> impl Fn(tantivy::DocId, f32) -> SortKey + 'static {
        let fast = segment.fast_fields();
        let ids = fast.i64("id").ok().map(|c| c.first_or_default_col(0));
        let ts = fast.i64("ts").ok().map(|c| c.first_or_default_col(0));
        let tokens = fast.u64("tokens").ok().map(|c| c.first_or_default_col(0));
        let expires = fast.i64("expires").ok().map(|c| c.first_or_default_col(i64::MAX));
        let this = self.clone();
        move |doc, score| {
            let (Some(ids), Some(ts), Some(tokens), Some(expires)) = (&ids, &ts, &tokens, &expires)
            else {
                return (f32::NEG_INFINITY, 0, 0, 1.0);
            };
            let id = ids.get_val(doc);
            if this.tombstones.contains_key(&id) || expires.get_val(doc) <= this.now {
                return (f32::NEG_INFINITY, id, 0, 1.0);
            }
            let boost = recency_boost(ts.get_val(doc), this.now, this.weight, this.half_life_us);
            (score * boost, id, u32::try_from(tokens.get_val(doc)).unwrap_or(u32::MAX), boost)
        }
    }
}
