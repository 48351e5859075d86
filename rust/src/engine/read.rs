//! query, get, list, count and scopes.

use super::admit::Admit;
use super::probe::Probe;
use super::select::Selection;
use super::Memory;
use std::collections::HashMap;
use std::time::Instant;

use crate::config::Retrieval;
use crate::entry::{validate_label, validate_timestamp, Entry, Explain, Hit, Micros};
use crate::error::{Error, Result};
use crate::index::schema::scope_key;
use crate::index::tail::recency_boost;
use crate::index::{Candidate, SearchRequest};
use crate::pack::pack_checked;
use crate::rank::{
    boost_sessions, fuse, jaccard, lend_to_previous, session_best, word_set, Duplicates, Floor, Judge,
    QueryWords, Ranked,
};
use crate::render::{render, Context, Known, Order};
use crate::store::{now_micros, ListFilter};

const MICROS_PER_DAY: f64 = 86_400_000_000.0;
pub(super) const MAX_DEPTH: usize = 10_000;

/// What a query asks for. Every filter is applied inside the index, so a
/// filtered query returns what the same query would on a store holding only the
/// matching entries.
#[derive(Debug, Clone, Default)]
pub struct Query {
    pub text: String,
    /// `None` searches every scope; otherwise the listed scopes, where `None`
    /// in the list stands for global entries.
    pub scopes: Option<Vec<Option<String>>>,
    pub budget: u64,
    /// At most this many hits, beside the budget; `None` for no such cap.
    pub limit: Option<usize>,
    /// The clock for recency; defaults to now.
    pub now: Option<Micros>,
    /// Ranked candidates to consider before packing; defaults to the config's.
    pub depth: Option<usize>,
    pub kinds: Option<Vec<String>>,
    pub session_id: Option<String>,
    /// Entries at or after this time.
    pub since: Option<Micros>,
    /// Entries strictly before this time.
    pub until: Option<Micros>,
    /// Only this scope and the scopes beneath it (`scope_path`); `scopes`
    /// must then be `None`.
    pub scope_prefix: Option<String>,
    /// A metadata filter's JSON text (`crate::filter`).
    pub metadata: Option<String>,
    /// Hits to skip, in rank order, before the budget and the limit apply.
    pub offset: usize,
    /// Whether hits flagged for prompt injection are returned (flagged) or dropped.
    pub injection: InjectionPolicy,
    /// Attach each hit's score parts.
    pub explain: bool,
    /// The query's embedding: BM25 and dense matches are then fused.
    pub embedding: Option<Vec<f32>>,
    /// What was true at this time: the entries whose validity interval holds
    /// it. Defaults to `now`.
    pub as_of: Option<Micros>,
    /// Every version, superseded or not (`as_of` is then ignored).
    pub all_versions: bool,
}

/// Where a query's time went, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    /// Catching up with other processes' writes.
    pub sync_us: f64,
    /// Ranking candidates in the index and the tail.
    pub search_us: f64,
    /// Packing the budget and fetching the entries.
    pub pack_us: f64,
    pub total_us: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InjectionPolicy {
    /// Return flagged hits with their `risks` listed.
    #[default]
    Flag,
    /// Leave flagged hits out and pack the budget with the next best.
    Drop,
}

impl InjectionPolicy {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "flag" => Ok(Self::Flag),
            "drop" => Ok(Self::Drop),
            other => Err(Error::invalid(format!("on_injection must be \"flag\" or \"drop\", not {other:?}"))),
        }
    }
}

impl Query {
    pub fn new(text: impl Into<String>, budget: u64) -> Self {
        Self { text: text.into(), budget, ..Self::default() }
    }

    pub fn in_scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes = Some(vec![Some(scope.into())]);
        self
    }

    /// The time whose truth the query reads (`None`: every version).
    pub fn valid_at(&self, now: Micros) -> Option<Micros> {
        (!self.all_versions).then(|| self.as_of.unwrap_or(now))
    }

    fn validate(&self) -> Result<()> {
        if self.budget == 0 {
            return Err(Error::invalid("budget must be a positive number of tokens"));
        }
        for (name, ts) in
            [("now", self.now), ("since", self.since), ("until", self.until), ("as_of", self.as_of)]
        {
            if let Some(ts) = ts {
                validate_timestamp(name, ts)?;
            }
        }
        if self.limit == Some(0) {
            return Err(Error::invalid("limit must be at least 1"));
        }
        if self.depth.is_some_and(|d| d == 0 || d > MAX_DEPTH) {
            return Err(Error::invalid(format!("depth must be between 1 and {MAX_DEPTH}")));
        }
        for scope in self.scopes.iter().flatten().flatten() {
            validate_label("scope", scope)?;
        }
        if self.scope_prefix.is_some() && self.scopes.is_some() {
            return Err(Error::invalid("give scope or scope_prefix, not both"));
        }
        for kind in self.kinds.iter().flatten() {
            validate_label("kind", kind)?;
        }
        if let Some(session) = &self.session_id {
            validate_label("session_id", session)?;
        }
        if let Some(vector) = &self.embedding {
            crate::entry::validate_vector("query embedding", vector)?;
        }
        Ok(())
    }
}

impl Memory {
    /// Ranks entries for `query` and packs the best into its token budget.
    pub fn query(&self, query: &Query) -> Result<Vec<Hit>> {
        self.query_timed(query).map(|(hits, _)| hits)
    }

    /// `query`, also reporting where the time went.
    pub fn query_timed(&self, query: &Query) -> Result<(Vec<Hit>, Timings)> {
        let started = Instant::now();
        self.check_open()?;
        query.validate()?;
        if self.store.reads_remote() {
            // On a server, the index is searched as it is and the log's head
            // read with the first entries: one round trip when nothing changed.
            let applied = self.index.applied();
            let probe = Probe::default();
            let answer = self.answer(query, started, Some(&probe))?;
            let current = match probe.finish() {
                Some(head) => head <= applied,
                None => {
                    self.follow()?;
                    self.index.applied() == applied
                }
            };
            if current {
                return Ok(self.noted(query, answer));
            }
        }
        self.follow()?;
        let answer = self.answer(query, started, None)?;
        Ok(self.noted(query, answer))
    }

    /// Records that `answer` was returned for `query` (eviction, the read log).
    fn noted(&self, query: &Query, answer: (Vec<Hit>, Timings)) -> (Vec<Hit>, Timings) {
        self.note_returned(answer.0.iter().map(|h| h.entry.id), now_micros());
        self.note_read(query, &answer.0, now_micros());
        answer
    }

    /// Entries by id for an answer. With `probe` (on a server), the first
    /// read also reads the change log's head into it.
    /// Over the network or from a replica, entries the index's cache holds are
    /// not read again (`index/entries.rs`).
    fn fetch(&self, ids: &[i64], probe: Option<&Probe>) -> Result<Vec<Option<Entry>>> {
        let Some(cache) = self.index.entry_cache() else { return self.fetch_stored(ids, probe) };
        let epoch = cache.epoch();
        let mut found = cache.get_many(ids);
        let missing: Vec<i64> =
            ids.iter().zip(&found).filter(|(_, e)| e.is_none()).map(|(id, _)| *id).collect();
        if missing.is_empty() {
            return Ok(found);
        }
        let read = self.fetch_stored(&missing, probe)?;
        cache.fill(epoch, read.iter().flatten().cloned());
        let mut read = read.into_iter();
        for slot in found.iter_mut().filter(|e| e.is_none()) {
            *slot = read.next().flatten();
        }
        Ok(found)
    }

    /// Entries by id from the store; with `probe`, the first read also reads
    /// the change log's head into it.
    fn fetch_stored(&self, ids: &[i64], probe: Option<&Probe>) -> Result<Vec<Option<Entry>>> {
        if let Some(probe) = probe.filter(|p| p.wants_head() && !ids.is_empty()) {
            if let Some((entries, head)) = self.store.fetch_with_head(ids)? {
                probe.set(head);
                return Ok(entries);
            }
        }
        self.store.fetch(ids)
    }

    /// `query_timed` for a caller that must not wait, such as an event loop's
    /// own thread: `None`, having changed nothing, when answering would first
    /// wait for another thread or the network, or catch up on more than a few
    /// changes (see `follow_now`).
    pub fn try_query_timed(&self, query: &Query) -> Result<Option<(Vec<Hit>, Timings)>> {
        let started = Instant::now();
        self.check_open()?;
        query.validate()?;
        if !self.follow_now()? {
            return Ok(None);
        }
        let answer = self.answer(query, started, None)?;
        Ok(Some(self.noted(query, answer)))
    }

    /// What the index searches for `query`.
    fn request(&self, query: &Query, selection: &Selection, now: Micros) -> SearchRequest {
        SearchRequest {
            metadata: selection.terms.clone(),
            scope_prefix: selection.prefix.clone(),
            metadata_filter: selection.filter.clone(),
            allowed: selection.allowed.clone(),
            text: query.text.clone(),
            scopes: query
                .scopes
                .as_ref()
                .map(|scopes| scopes.iter().map(|s| scope_key(s.as_deref()).to_owned()).collect()),
            kinds: query.kinds.clone(),
            session_id: query.session_id.clone(),
            since: query.since,
            until: query.until,
            depth: (query.depth.unwrap_or(self.config.depth) + query.offset).min(MAX_DEPTH),
            now,
            valid_at: query.valid_at(now),
            recency_weight: self.config.recency.weight,
            half_life_us: f64::from(self.config.recency.half_life_days) * MICROS_PER_DAY,
            retrieval: self.config.retrieval,
        }
    }

    /// The `k` entries whose vectors are nearest `query.embedding` among those
    /// the query's conditions admit, nearest first, with their cosine
    /// similarity: dense retrieval alone, without BM25, fusion or packing.
    pub fn similar(&self, query: &Query, k: usize) -> Result<Vec<(i64, f32)>> {
        self.check_open()?;
        query.validate()?;
        let Some(vector) = query.embedding.as_deref() else {
            return Err(Error::invalid("similar needs the query's embedding"));
        };
        self.follow()?;
        let now = query.now.unwrap_or_else(now_micros);
        let selection = self.selection(query)?;
        let request = self.request(query, &selection, now);
        Ok(self.index.nearest(&request, vector, k).into_iter().map(|n| (n.id, n.cosine)).collect())
    }

    /// Ranks and packs `query` over the index as it is (see `fetch` for
    /// `probe`). The caller notes what it returns (`noted`).
    fn answer(&self, query: &Query, started: Instant, probe: Option<&Probe>) -> Result<(Vec<Hit>, Timings)> {
        let since = |t: Instant| t.elapsed().as_secs_f64() * 1e6;
        let synced = Instant::now();
        let now = query.now.unwrap_or_else(now_micros);
        let selection = self.selection(query)?;
        if query.text.trim().is_empty() {
            let hits = self.browse(query, &selection, now)?;
            let total_us = since(started);
            return Ok((
                hits,
                Timings { sync_us: (synced - started).as_secs_f64() * 1e6, total_us, ..Timings::default() },
            ));
        }
        // Alive at the query's clock, as the index judges it.
        let admit = Admit::new(query, &selection, now);
        let request = self.request(query, &selection, now);
        let ranked = self.rank(query, &request)?;
        let searched = Instant::now();
        let drop_flagged = query.injection == InjectionPolicy::Drop;
        let mut prefetched = HashMap::new();
        if self.store.reads_remote() {
            // Over the network every read is a round trip: every candidate and
            // the turn before each are read at once (with the log's head, when
            // probed), for the diversity pass, packing and the relevance floor.
            let mut ids: Vec<i64> = ranked.iter().flat_map(|r| [r.id, r.prev]).filter(|&id| id > 0).collect();
            ids.sort_unstable();
            ids.dedup();
            // All of them cached: the head is read while the query packs.
            if let (Some(probe), Some(cache)) = (probe, self.index.entry_cache()) {
                if cache.holds_all(&ids) {
                    probe.start(|| self.store.start_head());
                }
            }
            for (id, entry) in ids.iter().zip(self.fetch(&ids, probe)?) {
                if let Some(entry) = entry {
                    prefetched.insert(*id, entry);
                }
            }
        }
        let ordered = self.diversify(&ranked, &mut prefetched, probe)?;
        let candidates: Vec<Candidate> = ordered
            .iter()
            .map(|(r, _)| Candidate {
                id: r.id,
                score: r.score,
                tokens: r.tokens,
                recency: r.recency,
                prev: r.prev,
                session: r.session,
            })
            .collect();
        let mut duplicates = Duplicates::new(self.config.mmr.duplicate_similarity);
        let retrieval = self.config.retrieval;
        let floor = Floor { absolute: retrieval.min_relevance, relative: retrieval.min_relative_relevance };
        let mut judge = (!floor.is_off())
            .then(|| Judge::new(floor, QueryWords::new(&query.text, retrieval.stopword_weight), &ranked));
        // An entry deleted by another process since the index last looked comes
        // back as `None` and is refused like a flagged one: its budget is reused.
        // So is one below the relevance floor.
        // With an offset, the first `offset` hits are taken (checked, and
        // without a budget) to be skipped, and the budget applies after them.
        let limit = query.limit.unwrap_or(usize::MAX);
        let (budget, taken) = if query.offset > 0 {
            (u64::MAX, limit.saturating_add(query.offset))
        } else {
            (query.budget, limit)
        };
        let packed = pack_checked(
            &candidates,
            budget,
            taken,
            |ids| {
                let missing: Vec<i64> =
                    ids.iter().copied().filter(|id| !prefetched.contains_key(id)).collect();
                let mut fetched = self.fetch(&missing, probe)?.into_iter();
                let entries: Vec<Option<Entry>> = ids
                    .iter()
                    .map(|id| match prefetched.remove(id) {
                        Some(entry) => Some(entry),
                        None => fetched.next().flatten(),
                    })
                    .collect();
                let relevant = match judge.as_mut() {
                    Some(judge) => {
                        judge.admit(&entries, |prevs| self.entries(prevs, &prefetched, &entries))?
                    }
                    None => vec![true; entries.len()],
                };
                Ok(entries
                    .into_iter()
                    .zip(relevant)
                    .map(|(e, ok)| e.map(|e| (Hit::new(e, 0.0), ok)))
                    .collect())
            },
            |(hit, relevant)| {
                *relevant
                    && admit.check(&hit.entry)
                    && (!drop_flagged || hit.risks.is_empty())
                    && duplicates.admit(|| self.index.vector(hit.entry.id), &hit.entry.content)
            },
        )?;
        let packed = if query.offset > 0 { after_offset(packed, query.offset, query.budget) } else { packed };
        let content_bm25 = if query.explain { self.content_bm25(&request)? } else { HashMap::new() };
        let hits: Vec<Hit> = packed
            .into_iter()
            .map(|(c, (hit, _))| {
                let explain = query.explain.then(|| {
                    let (r, diversity) =
                        ordered.iter().find(|(r, _)| r.id == c.id).copied().unwrap_or_default();
                    let content = content_bm25.get(&c.id).copied().unwrap_or(0.0).min(r.bm25);
                    Explain {
                        relevance: r.relevance(),
                        bm25: content,
                        bm25_context: r.bm25 - content,
                        dense: r.dense,
                        diversity,
                        recency: r.recency,
                        rank: ranked.iter().position(|x| x.id == c.id).unwrap_or(0),
                    }
                });
                Hit { score: c.score, explain, ..hit }
            })
            .collect();
        let timings = Timings {
            sync_us: (synced - started).as_secs_f64() * 1e6,
            search_us: (searched - synced).as_secs_f64() * 1e6,
            pack_us: since(searched),
            total_us: since(started),
        };
        Ok((hits, timings))
    }

    /// Entries by id, from `cached` or `window` where they hold them, else
    /// from the store.
    fn entries(
        &self,
        ids: &[i64],
        cached: &HashMap<i64, Entry>,
        window: &[Option<Entry>],
    ) -> Result<Vec<Option<Entry>>> {
        let known = |id: &i64| cached.get(id).or_else(|| window.iter().flatten().find(|e| e.id == *id));
        let missing: Vec<i64> = ids.iter().copied().filter(|id| known(id).is_none()).collect();
        let mut fetched = self.fetch(&missing, None)?.into_iter();
        Ok(ids.iter().map(|id| known(id).cloned().or_else(|| fetched.next().flatten())).collect())
    }

    /// For `explain`: BM25 over the content field alone, by id, for the
    /// candidates of `request` (a second search that weighs the previous turns
    /// and the date at 0, as deep as a query may go).
    fn content_bm25(&self, request: &SearchRequest) -> Result<HashMap<i64, f32>> {
        let content_only = SearchRequest {
            depth: MAX_DEPTH,
            retrieval: Retrieval { context_weight: 0.0, date_weight: 0.0, ..request.retrieval },
            ..request.clone()
        };
        Ok(self.index.search(&content_only)?.iter().map(|c| (c.id, c.score / c.recency)).collect())
    }

    /// BM25 candidates, fused with dense neighbours when the query carries an
    /// embedding and the store holds vectors; best first.
    fn rank(&self, query: &Query, request: &SearchRequest) -> Result<Vec<Ranked>> {
        let lexical = self.index.search(request)?;
        let (dim, held) = self.index.vector_shape();
        let Some(vector) = query.embedding.as_deref().filter(|_| held > 0) else {
            let mut ranked: Vec<Ranked> = lexical.iter().map(Ranked::lexical).collect();
            self.lend(&mut ranked);
            return Ok(ranked);
        };
        if vector.len() != dim {
            return Err(Error::invalid(format!(
                "the query embedding has {} dimensions; the store's vectors have {dim}",
                vector.len()
            )));
        }
        let dense = self.index.nearest(request, vector, request.depth);
        let ids: Vec<i64> = lexical.iter().map(|c| c.id).collect();
        let vectors = self.index.vectors(&ids);
        let unit = crate::index::dense::unit(vector);
        let recency = |ts| recency_boost(ts, request.now, request.recency_weight, request.half_life_us);
        let mut fused = fuse(&lexical, &dense, &vectors, &unit, &self.config.hybrid, recency);
        self.lend(&mut fused);
        fused.truncate(request.depth);
        Ok(fused)
    }

    /// Replies lend to the turns they answer, and sessions to their turns, each
    /// from the candidates' own relevance; best first again.
    fn lend(&self, ranked: &mut [Ranked]) {
        let retrieval = self.config.retrieval;
        let sessions = if retrieval.session_weight > 0.0 { session_best(ranked) } else { HashMap::new() };
        lend_to_previous(ranked, retrieval.reply_weight);
        boost_sessions(ranked, &sessions, retrieval.session_weight);
    }

    /// Maximal marginal relevance over the best candidates (with `mmr_lambda`
    /// below 1): cosine where both entries have vectors, the Jaccard similarity
    /// of their words otherwise. The entries read for it are left in `fetched`
    /// for packing. Near duplicates are refused while packing.
    fn diversify(
        &self,
        ranked: &[Ranked],
        fetched: &mut HashMap<i64, Entry>,
        probe: Option<&Probe>,
    ) -> Result<Vec<(Ranked, f32)>> {
        let mmr = self.config.mmr;
        let window = mmr.window.min(ranked.len());
        if window < 2 || mmr.lambda >= 1.0 {
            return Ok(ranked.iter().map(|r| (*r, 0.0)).collect());
        }
        let ids: Vec<i64> = ranked[..window].iter().map(|r| r.id).collect();
        let vectors = self.index.vectors(&ids);
        let missing: Vec<i64> = ids.iter().copied().filter(|id| !fetched.contains_key(id)).collect();
        for (id, entry) in missing.iter().zip(self.fetch(&missing, probe)?) {
            if let Some(entry) = entry {
                fetched.insert(*id, entry);
            }
        }
        let terms: Vec<Vec<u64>> =
            ids.iter().map(|id| fetched.get(id).map_or_else(Vec::new, |e| word_set(&e.content))).collect();
        let similarity = |i: usize, j: usize| match (vectors.get(&ids[i]), vectors.get(&ids[j])) {
            (Some(a), Some(b)) => crate::index::dense::dot(a, b).max(0.0),
            _ => jaccard(&terms[i], &terms[j]),
        };
        Ok(crate::rank::mmr(ranked, similarity, mmr.lambda, mmr.duplicate_similarity, window))
    }

    /// A prompt-ready block of the best hits for `query`, wrapper included within
    /// `query.budget` tokens.
    pub fn context(&self, query: &Query, order: Order) -> Result<Context> {
        let hits = self.query(query)?;
        Ok(render(hits, order, query.budget, &self.tokens, self.fence_key, known(query)))
    }

    /// `context` for a caller that must not wait: `None` when
    /// `try_query_timed` would say so.
    pub fn try_context(&self, query: &Query, order: Order) -> Result<Option<Context>> {
        let Some((hits, _)) = self.try_query_timed(query)? else { return Ok(None) };
        Ok(Some(render(hits, order, query.budget, &self.tokens, self.fence_key, known(query))))
    }

    /// Entries by id, in the order asked; `None` for ids that do not exist,
    /// and for entries that do not hold at `valid_at` (`None`: any version).
    pub fn get_many(&self, ids: &[i64], valid_at: Option<Micros>) -> Result<Vec<Option<Hit>>> {
        self.check_open()?;
        let now = now_micros();
        Ok(self
            .store
            .fetch(ids)?
            .into_iter()
            .map(|e| {
                e.filter(|e| e.alive_at(now) && valid_at.is_none_or(|at| e.valid_at(at)))
                    .map(|e| Hit::new(e, 0.0))
            })
            .collect())
    }

    /// The versions of `key` in `scope`, oldest first, whatever their validity.
    pub fn history(&self, key: &str, scope: Option<&str>) -> Result<Vec<Entry>> {
        self.check_open()?;
        validate_label("key", key)?;
        if let Some(scope) = scope {
            validate_label("scope", scope)?;
        }
        let key = crate::entry::normalize_key(key.to_owned());
        let now = now_micros();
        Ok(self.store.history(&key, scope)?.into_iter().filter(|e| e.alive_at(now)).collect())
    }

    /// Up to `limit` changes of the log after `after`, oldest first, without
    /// content; with `scope`, only that scope's (`Some(None)`: global entries).
    pub fn logged(
        &self,
        after: i64,
        limit: usize,
        scope: Option<Option<&str>>,
    ) -> Result<Vec<crate::store::Logged>> {
        self.check_open()?;
        if let Some(Some(scope)) = scope {
            validate_label("scope", scope)?;
        }
        self.store.logged(after.max(0), limit.clamp(1, MAX_DEPTH), scope)
    }

    /// What `id` rests on (`up`), or what was derived from it, to `depth`
    /// links, nearest first: ids and references, never another scope's content.
    pub fn linked(&self, id: i64, up: bool, depth: usize) -> Result<Vec<crate::store::Linked>> {
        self.check_open()?;
        self.store.linked(id, up, depth)
    }

    /// The direct sources of each of `ids` (a query's hits), in one read.
    pub fn direct_sources(&self, ids: &[i64]) -> Result<Vec<crate::store::Linked>> {
        self.check_open()?;
        self.store.direct_sources(ids)
    }

    /// The keys `scope` holds, in order, at most `limit` (up to `MAX_DEPTH`).
    pub fn keys(&self, scope: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.check_open()?;
        if let Some(scope) = scope {
            validate_label("scope", scope)?;
        }
        self.store.keys(scope, limit.clamp(1, MAX_DEPTH))
    }

    /// The entries linked to `id` by supersession, both ways, oldest first
    /// (the entry itself included); empty when there is no entry `id`.
    pub fn versions(&self, id: i64) -> Result<Vec<Entry>> {
        self.check_open()?;
        let now = now_micros();
        Ok(self.store.versions(id)?.into_iter().filter(|e| e.alive_at(now)).collect())
    }

    /// One page of entries, newest first, after the `(timestamp, id)` cursor.
    pub fn list(
        &self,
        filter: &ListFilter,
        after: Option<(Micros, i64)>,
        limit: usize,
    ) -> Result<Vec<Entry>> {
        self.check_open()?;
        validate_filter(filter)?;
        let filter = current(filter);
        self.store.list(&filter, after, limit.clamp(1, MAX_DEPTH))
    }

    pub fn count(&self, filter: &ListFilter) -> Result<i64> {
        self.check_open()?;
        validate_filter(filter)?;
        self.store.count(&current(filter))
    }

    /// Every scope with its number of live entries; `None` is the global scope.
    /// With `prefix`, only that scope and those beneath it (`scope_path`).
    pub fn scopes(&self, prefix: Option<&str>) -> Result<Vec<(Option<String>, i64)>> {
        self.check_open()?;
        let prefix = prefix.map(crate::scope_path::normalize_prefix).transpose()?;
        self.store.scopes(now_micros(), prefix.as_deref())
    }
}

/// What a query tells the reader of its block: its one scope and one kind.
fn known(query: &Query) -> Known<'_> {
    Known {
        scope: match query.scopes.as_deref() {
            Some([scope]) => Some(scope.as_deref()),
            _ => None,
        },
        kind: match query.kinds.as_deref() {
            Some([kind]) => Some(kind.as_str()),
            _ => None,
        },
    }
}

/// What follows the first `offset` of `packed`, taken in order while it fits
/// `budget`.
fn after_offset<T>(packed: Vec<(Candidate, T)>, offset: usize, budget: u64) -> Vec<(Candidate, T)> {
    let mut left = budget;
    packed
        .into_iter()
        .skip(offset)
        .filter(|(c, _)| {
            let fits = u64::from(c.tokens) <= left;
            if fits {
                left -= u64::from(c.tokens);
            }
            fits
        })
        .collect()
}

/// `filter` as the engine reads it: alive now, and holding at its `valid_at`
/// (now by default) unless it asks for every version.
fn current(filter: &ListFilter) -> ListFilter {
    let now = now_micros();
    let valid_at = if filter.all_versions { None } else { Some(filter.valid_at.unwrap_or(now)) };
    ListFilter { alive_at: Some(now), valid_at, ..filter.clone() }
}

fn validate_filter(filter: &ListFilter) -> Result<()> {
    for scope in filter.scopes.iter().flatten().flatten() {
        validate_label("scope", scope)?;
    }
    for (name, ts) in [("since", filter.since), ("until", filter.until), ("as_of", filter.valid_at)] {
        if let Some(ts) = ts {
            validate_timestamp(name, ts)?;
        }
    }
    Ok(())
}
