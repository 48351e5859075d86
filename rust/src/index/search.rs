//! Ranked candidates for a query: BM25 with a recency boost, over the committed
//! index and the tail, with the scope filter applied inside the index.

use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, RangeQuery, TermQuery, TermSetQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{Searcher, Term};

use super::candidate::Candidate;
use super::collect::{BoostedTopK, SegmentColumns};
use super::health::shielded;
use super::stats::CombinedStats;
use super::tail::{bm25, idf, recency_boost, Tail, CONTEXT, DATE, SCORED_FIELDS, TEXT};
use super::{schema, SearchIndex};
use crate::config::Retrieval;
use crate::entry::Micros;
use crate::error::Result;

/// Queries longer than this many distinct terms keep the first ones.
const MAX_QUERY_TERMS: usize = 1024;

/// In a store of at least this many entries, a word in at least `COMMON_SHARE`
/// of them is common: when the query also has rarer words, it adds to the
/// score of entries that match those but no longer makes an entry a match by
/// itself (Lucene's "common terms" query). Such an entry says nothing the query
/// asked for beyond that word; ranking the best of tens of thousands of them by
/// recency would walk the word's whole posting list, and pack the budget with
/// noise. The floor is on the live entries, so that an index holding deleted
/// documents and one rebuilt without them decide alike; smaller stores match
/// every word.
const COMMON_MIN_DOCS: u64 = 10_000;
const COMMON_SHARE: f64 = 0.2;

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
    /// Only this scope and those beneath it (`scope_path`).
    pub scope_prefix: Option<String>,
    /// Metadata equality filters as `metadata_term`s; all must hold.
    pub metadata: Vec<String>,
    /// The whole metadata filter, when the terms do not decide it.
    pub metadata_filter: Option<Arc<crate::filter::Filter>>,
    /// Only these entries (the ids a metadata filter selects in the store).
    pub allowed: Option<Arc<HashSet<i64>>>,
    pub depth: usize,
    pub now: Micros,
    /// Only entries whose validity interval holds this time (`Entry::valid_at`);
    /// `None`: every version.
    pub valid_at: Option<Micros>,
    pub recency_weight: f32,
    pub half_life_us: f64,
    /// Query analysis and field weights.
    pub retrieval: Retrieval,
}

impl SearchRequest {
    /// Each scored field's weight in the relevance sum, by tail slot.
    fn weights(&self) -> [f32; SCORED_FIELDS] {
        let mut w = [0.0; SCORED_FIELDS];
        w[TEXT] = 1.0;
        w[CONTEXT] = self.retrieval.context_weight.max(0.0);
        w[DATE] = self.retrieval.date_weight.max(0.0);
        w
    }
}

/// An analysed query term.
#[derive(Debug, Clone)]
struct QueryTerm {
    text: String,
    weight: f32,
    /// Scores only entries that a rarer term matched (see `COMMON_MIN_DOCS`).
    common: bool,
}

impl SearchIndex {
    /// The best candidates for `req`. The committed index is searched only once
    /// its files have passed their check (this waits for it). A search that
    /// panics or fails inside tantivy marks the index damaged: it is rebuilt
    /// from the store and the search runs again; what fails then is an error.
    pub fn search(&self, req: &SearchRequest) -> Result<Vec<Candidate>> {
        self.ready(&self.store)?;
        let health = self.health();
        match shielded("a search", || self.search_view(req)) {
            Ok(found) => Ok(found),
            Err(err) => {
                health.damaged(format!("a search failed: {err}"));
                self.ready(&self.store)?;
                shielded("a search", || self.search_view(req))
            }
        }
    }

    fn search_view(&self, req: &SearchRequest) -> Result<Vec<Candidate>> {
        let terms = query_terms(&req.text, req.retrieval.stopword_weight);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let view = self.view.read();
        let stats = CombinedStats { searcher: &view.searcher, tail: &view.tail, fields: &self.fields };
        let mut terms = self.mark_common(terms, &stats);
        let search = |terms: &[QueryTerm]| -> Result<Vec<Candidate>> {
            let query = self.build_query(terms, req);
            let mut out =
                committed(&view.searcher, &view.columns, query.as_ref(), &stats, req, &view.tail.tombstones)?;
            out.extend(search_tail(&view.tail, &stats, terms, req, &self.scored_fields()));
            Ok(out)
        };
        let mut out = search(&terms)?;
        if out.is_empty() && terms.iter().any(|t| t.common) {
            // The rarer words match nothing here (they are in other scopes, or
            // filtered out): the common ones are all the query has.
            for t in &mut terms {
                t.common = false;
            }
            out = search(&terms)?;
        }
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.id.cmp(&a.id)));
        out.truncate(req.depth);
        Ok(out)
    }

    /// The scored fields by tail slot.
    fn scored_fields(&self) -> [tantivy::schema::Field; SCORED_FIELDS] {
        let mut f = [self.fields.text; SCORED_FIELDS];
        f[CONTEXT] = self.fields.context;
        f[DATE] = self.fields.date;
        f
    }

    /// The query's terms with whether each is common (see `COMMON_MIN_DOCS`).
    /// None is unless some other term is rarer and found in the store: a word
    /// the store lacks cannot stand in for the common ones.
    fn mark_common(&self, terms: Vec<(String, f32)>, stats: &CombinedStats<'_>) -> Vec<QueryTerm> {
        let large = stats.live_docs() >= COMMON_MIN_DOCS;
        let floor = (COMMON_SHARE * stats.num_docs() as f64).ceil() as u64;
        let df = |field, text: &str| {
            tantivy::query::Bm25StatisticsProvider::doc_freq(stats, &Term::from_field_text(field, text))
                .unwrap_or(0)
        };
        let mut rarer_found = false;
        let mut marked: Vec<QueryTerm> = terms
            .into_iter()
            .map(|(text, weight)| {
                let in_text = df(self.fields.text, &text);
                let common = large && in_text >= floor;
                rarer_found |= !common && (in_text > 0 || df(self.fields.context, &text) > 0);
                QueryTerm { text, weight, common }
            })
            .collect();
        if !rarer_found {
            for t in &mut marked {
                t.common = false;
            }
        }
        marked
    }

    fn build_query(&self, terms: &[QueryTerm], req: &SearchRequest) -> Box<dyn Query> {
        // Relevance = sum over fields of weight * BM25 of the field, each field
        // with its own statistics; `search_tail` mirrors this.
        let weights = req.weights();
        let filters = self.filters(req);
        let mut text: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        let mut common: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for (slot, (field, weight)) in self.scored_fields().into_iter().zip(weights).enumerate() {
            if weight <= 0.0 {
                continue;
            }
            for QueryTerm { text: t, weight: term_weight, common: is_common } in
                terms.iter().filter(|t| slot != DATE || schema::is_date_term(&t.text))
            {
                let clauses = if *is_common { &mut common } else { &mut text };
                let term = Term::from_field_text(field, t);
                let q: Box<dyn Query> = Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs));
                let boost = weight * term_weight;
                let q = if boost == 1.0 { q } else { Box::new(BoostQuery::new(q, boost)) };
                if filters.is_empty() {
                    clauses.push((Occur::Should, q));
                } else {
                    // Each term intersected with the filters, then the union: every
                    // intersection is driven by its shorter posting list, where
                    // filtering one union of all terms would walk a common word's
                    // whole posting list for a small scope.
                    let mut filtered: Vec<(Occur, Box<dyn Query>)> =
                        filters.iter().map(|f| (Occur::Must, f.box_clone())).collect();
                    filtered.push((Occur::Must, q));
                    clauses.push((Occur::Should, Box::new(BooleanQuery::new(filtered))));
                }
            }
        }
        // Unfiltered, the disjunction alone lets tantivy prune with block-max WAND.
        let matching: Box<dyn Query> = Box::new(BooleanQuery::new(text));
        if common.is_empty() {
            return matching;
        }
        // Common terms score only where a rarer one matched.
        common.insert(0, (Occur::Must, matching));
        Box::new(BooleanQuery::new(common))
    }

    /// The request's filters as zero-scoring queries, all of which must match.
    fn filters(&self, req: &SearchRequest) -> Vec<Box<dyn Query>> {
        let mut out: Vec<Box<dyn Query>> = Vec::new();
        let mut filter = |q: Box<dyn Query>| out.push(Box::new(ConstScoreQuery::new(q, 0.0)));
        if let Some(scopes) = &req.scopes {
            let mut keys: Vec<Term> =
                scopes.iter().map(|s| Term::from_field_text(self.fields.scope, s)).collect();
            // One scope, the common case, filters through its posting list.
            if keys.len() == 1 {
                let key = keys.swap_remove(0);
                filter(Box::new(TermQuery::new(key, IndexRecordOption::Basic)));
            } else {
                filter(Box::new(TermSetQuery::new(keys)));
            }
        }
        if let Some(prefix) = &req.scope_prefix {
            let term = Term::from_field_text(self.fields.scope_path, prefix);
            filter(Box::new(TermQuery::new(term, IndexRecordOption::Basic)));
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
        out
    }
}

impl SearchRequest {
    /// The same filters as `build_query`, for entries in the tail.
    pub(super) fn admits(&self, entry: &crate::entry::Entry) -> bool {
        let scope = schema::scope_key(entry.scope.as_deref());
        self.scopes.as_ref().is_none_or(|s| s.iter().any(|x| x == scope)) && self.admits_in_scope(entry)
    }

    /// `admits` for an entry already known to be in one of the request's
    /// scopes: every other condition. Reads the entry's strings only for the
    /// conditions that need them, so a scan of a scope's block touches no
    /// memory beyond the block when the request has no other filter.
    pub(super) fn admits_in_scope(&self, entry: &crate::entry::Entry) -> bool {
        self.scope_prefix
            .as_ref()
            .is_none_or(|p| entry.scope.as_deref().is_some_and(|s| crate::scope_path::under(s, p)))
            && self.allowed.as_ref().is_none_or(|ids| ids.contains(&entry.id))
            && self.metadata_filter.as_ref().is_none_or(|f| f.matches_json(entry.metadata.as_deref()))
            && self.kinds.as_ref().is_none_or(|k| k.contains(&entry.kind))
            && self.session_id.as_ref().is_none_or(|s| entry.session_id.as_ref() == Some(s))
            && self.since.is_none_or(|since| entry.timestamp >= since)
            && self.until.is_none_or(|until| entry.timestamp < until)
            && entry.alive_at(self.now)
            && self.valid_at.is_none_or(|at| entry.valid_at(at))
            && (self.metadata.is_empty() || {
                let terms = schema::metadata_terms(entry.metadata.as_deref());
                self.metadata.iter().all(|t| terms.contains(t))
            })
    }
}

/// The distinct analysed terms of a query, in first-seen order, each with its
/// weight: `stopword_weight` for English function words (`schema::QUERY_STOPWORDS`,
/// matched before stemming), 1 for every other word. A query made only of
/// function words weighs them all 1. The text is data, never query syntax.
pub fn query_terms(text: &str, stopword_weight: f32) -> Vec<(String, f32)> {
    let mut words = schema::lowercase_words();
    let mut analyzer = schema::analyzer();
    let mut out: Vec<(String, f32)> = Vec::new();
    for word in schema::terms(&mut words, text) {
        let weight =
            if schema::QUERY_STOPWORDS.contains(&word.as_str()) { stopword_weight.max(0.0) } else { 1.0 };
        for term in schema::terms(&mut analyzer, &word) {
            if let Some((_, w)) = out.iter_mut().find(|(t, _)| *t == term) {
                *w = w.max(weight);
            } else if out.len() < MAX_QUERY_TERMS {
                out.push((term, weight));
            }
        }
    }
    if out.iter().all(|(_, w)| *w == 0.0) {
        for (_, w) in &mut out {
            *w = 1.0;
        }
    }
    out.retain(|(_, w)| *w > 0.0);
    out
}

/// One scored field of a tail search: (slot, weight, average length,
/// [(term, idf, common)]).
type FieldTerms<'a> = (usize, f32, f32, Vec<(&'a str, f32, bool)>);

fn search_tail(
    tail: &Tail,
    stats: &CombinedStats<'_>,
    terms: &[QueryTerm],
    req: &SearchRequest,
    fields: &[tantivy::schema::Field; SCORED_FIELDS],
) -> Vec<Candidate> {
    if tail.docs.is_empty() {
        return Vec::new();
    }
    let num_docs = stats.num_docs();
    let weights = req.weights();
    let per_field: Vec<FieldTerms<'_>> = (0..SCORED_FIELDS)
        .filter(|&slot| weights[slot] > 0.0)
        .map(|slot| {
            let field = fields[slot];
            let idfs = terms
                .iter()
                .filter(|t| slot != DATE || schema::is_date_term(&t.text))
                .map(|t| {
                    let df = tantivy::query::Bm25StatisticsProvider::doc_freq(
                        stats,
                        &Term::from_field_text(field, &t.text),
                    )
                    .unwrap_or(0);
                    (t.text.as_str(), t.weight * idf(df, num_docs), t.common)
                })
                .collect();
            (slot, weights[slot], stats.avg_len(field), idfs)
        })
        .collect();
    tail.docs
        .values()
        .filter(|doc| req.admits(&doc.entry))
        .filter_map(|doc| {
            // As `build_query`: a common term scores only beside a rarer one.
            let mut matched = false;
            let relevance: f32 = per_field
                .iter()
                .map(|(slot, weight, avg_len, idfs)| {
                    let field = &doc.fields[*slot];
                    let sum: f32 = idfs
                        .iter()
                        .filter_map(|(term, idf, common)| {
                            let tf = *field.terms.get(*term)?;
                            matched |= !common;
                            Some(bm25(*idf, tf, field.len, *avg_len))
                        })
                        .sum();
                    weight * sum
                })
                .sum();
            (matched && relevance > 0.0).then(|| {
                let recency =
                    recency_boost(doc.entry.timestamp, req.now, req.recency_weight, req.half_life_us);
                Candidate {
                    id: doc.entry.id,
                    score: relevance * recency,
                    tokens: doc.entry.tokens,
                    recency,
                    prev: doc.extra.prev,
                    session: schema::session_key(&doc.entry),
                }
            })
        })
        .collect()
}

/// Ranks the committed index: the exact top `depth` by BM25 times recency, in
/// one pass with tantivy's pruning (see `collect::BoostedTopK`).
fn committed(
    searcher: &Searcher,
    columns: &SegmentColumns,
    query: &dyn Query,
    stats: &CombinedStats<'_>,
    req: &SearchRequest,
    tombstones: &HashMap<i64, i64>,
) -> Result<Vec<Candidate>> {
    let collector = BoostedTopK {
        k: req.depth,
        now: req.now,
        recency_weight: req.recency_weight,
        half_life_us: req.half_life_us,
        valid_at: req.valid_at,
        tombstones,
        allowed: req.allowed.clone(),
        columns,
        carried: Default::default(),
    };
    Ok(searcher.search_with_statistics_provider(query, &collector, stats)?)
}
