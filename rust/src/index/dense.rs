//! Exact nearest-neighbour search over entry embeddings, in memory.
//!
//! Vectors are grouped by scope in contiguous row-major blocks, so a scoped
//! query reads one block front to back. They are stored unit-length, so cosine
//! similarity is a dot product. Like the tail, this follows the change log; it
//! is loaded from the database on open.
//!
//! For large stores an approximate graph (`graph.rs`) proposes candidates;
//! this keeps what the graph needs to be checked against: each vector's
//! generation, whether the graph holds that very vector (`graphed`), the
//! vectors it does not hold yet (`pending`) and the ids whose vector in the
//! graph is no longer theirs (`unlinked`).

use foldhash::{HashMap, HashSet};

use super::graph::{quantize, Graph};
use super::schema::{scope_key, session_key};
use super::search::SearchRequest;
use crate::entry::{Entry, Micros};

#[derive(Default)]
pub struct Dense {
    /// The dimension of every vector held; 0 before the first.
    dim: usize,
    /// One block per scope that holds vectors, and empty ones (their memory
    /// given back) waiting in `free` for the next new scope.
    blocks: Vec<Block>,
    /// Each scope key's place in `blocks`.
    block_of: HashMap<String, u32>,
    /// Places in `blocks` whose scope's vectors all went.
    free: Vec<u32>,
    slots: HashMap<i64, Slot>,
    /// The generation the next vector set gets.
    next_gen: u64,
    /// Ids whose vector the graph does not hold yet.
    pending: HashSet<i64>,
    /// Ids whose vector in the graph is stale (replaced or deleted).
    unlinked: Vec<i64>,
}

/// Where an entry's vector is (its block, by place, and row), and whether the
/// graph holds it. A graph search checks one of these for every node it
/// visits: it is small, and reaching the block takes no hashing.
struct Slot {
    block: u32,
    row: usize,
    /// Changes every time the entry's vector is set.
    gen: u64,
    graphed: bool,
}

/// One scope's vectors and the entries they belong to (without content).
#[derive(Default)]
struct Block {
    /// The scope's key (`schema::scope_key`).
    key: String,
    entries: Vec<Entry>,
    /// `session_key` of each entry, computed once.
    sessions: Vec<u64>,
    data: Vec<f32>,
}

/// A dense match: the entry's cosine similarity to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbour {
    pub id: i64,
    pub cosine: f32,
    pub timestamp: Micros,
    pub tokens: u32,
    /// `schema::session_key` of the entry (0 for none).
    pub session: u64,
}

impl Dense {
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Sets (or with `None`, removes) the vector of `entry`.
    pub fn apply(&mut self, id: i64, entry: Option<&Entry>, vector: Option<&[f32]>) {
        self.remove(id);
        let (Some(entry), Some(vector)) = (entry, vector) else { return };
        if vector.is_empty() {
            return;
        }
        if self.dim == 0 {
            self.dim = vector.len();
        } else if vector.len() != self.dim {
            log::warn!(
                "entry {id}: a {}-dimensional vector among {}-dimensional ones is ignored",
                vector.len(),
                self.dim
            );
            return;
        }
        let key = scope_key(entry.scope.as_deref());
        let at = match self.block_of.get(key) {
            Some(&at) => at,
            None => {
                let block = Block { key: key.to_owned(), ..Block::default() };
                let at = match self.free.pop() {
                    Some(at) => {
                        self.blocks[at as usize] = block;
                        at
                    }
                    None => {
                        self.blocks.push(block);
                        u32::try_from(self.blocks.len() - 1).expect("fewer than 2^32 scopes hold vectors")
                    }
                };
                self.block_of.insert(key.to_owned(), at);
                at
            }
        };
        let block = &mut self.blocks[at as usize];
        block.data.extend(unit(vector));
        block.entries.push(Entry { content: String::new(), ..entry.clone() });
        block.sessions.push(session_key(entry));
        let row = block.entries.len() - 1;
        self.next_gen += 1;
        self.slots.insert(id, Slot { block: at, row, gen: self.next_gen, graphed: false });
        self.pending.insert(id);
    }

    fn remove(&mut self, id: i64) {
        let Some(slot) = self.slots.remove(&id) else { return };
        if slot.graphed {
            self.unlinked.push(id);
        }
        self.pending.remove(&id);
        let row = slot.row;
        let Some(block) = self.blocks.get_mut(slot.block as usize) else { return };
        let last = block.entries.len() - 1;
        block.entries.swap_remove(row);
        block.sessions.swap_remove(row);
        if row != last {
            let (from, to) = (last * self.dim, row * self.dim);
            block.data.copy_within(from..from + self.dim, to);
            if let Some(moved) = self.slots.get_mut(&block.entries[row].id) {
                moved.row = row;
            }
        }
        block.data.truncate(last * self.dim);
        if block.entries.is_empty() {
            // No slot names this block now: its memory goes, its place waits.
            self.block_of.remove(&block.key);
            *block = Block::default();
            self.free.push(slot.block);
        }
        if self.slots.is_empty() {
            self.dim = 0;
            self.blocks.clear();
            self.block_of.clear();
            self.free.clear();
        }
    }

    /// The block of the scope with this key.
    fn block(&self, key: &str) -> Option<&Block> {
        self.block_of.get(key).map(|&at| &self.blocks[at as usize])
    }

    /// The unit vector held for `id`.
    pub fn vector(&self, id: i64) -> Option<&[f32]> {
        let slot = self.slots.get(&id)?;
        let block = self.blocks.get(slot.block as usize)?;
        Some(&block.data[slot.row * self.dim..(slot.row + 1) * self.dim])
    }

    /// The entry and session key of `id`, when it has a vector.
    fn entry(&self, id: i64) -> Option<(&Entry, u64, &[f32])> {
        let slot = self.slots.get(&id)?;
        let block = self.blocks.get(slot.block as usize)?;
        let vector = &block.data[slot.row * self.dim..(slot.row + 1) * self.dim];
        Some((&block.entries[slot.row], block.sessions[slot.row], vector))
    }

    /// At most how many vectors `req` may admit: those of its scopes (or
    /// every one), or of its allowed ids.
    pub fn reach(&self, req: &SearchRequest) -> usize {
        let in_scopes = match &req.scopes {
            Some(keys) => keys.iter().filter_map(|key| self.block(key)).map(|b| b.entries.len()).sum(),
            None => self.len(),
        };
        req.allowed.as_ref().map_or(in_scopes, |ids| in_scopes.min(ids.len()))
    }

    /// `id` scored against `query` (unit), when `req` admits it.
    fn score(&self, req: &SearchRequest, query: &[f32], id: i64) -> Option<Neighbour> {
        let (entry, session, vector) = self.entry(id)?;
        req.admits(entry).then(|| Neighbour {
            id,
            cosine: dot(query, vector),
            timestamp: entry.timestamp,
            tokens: entry.tokens,
            session,
        })
    }

    /// Whether the graph's vector for `id` is the entry's own and `req` admits it.
    pub fn graphed_admits(&self, req: &SearchRequest, id: i64) -> bool {
        let Some(slot) = self.slots.get(&id).filter(|s| s.graphed) else { return false };
        self.blocks.get(slot.block as usize).is_some_and(|block| req.admits(&block.entries[slot.row]))
    }

    /// `ids` (from the graph) and every vector the graph does not hold yet,
    /// scored exactly: the `k` best that `req` admits.
    pub fn rescore(&self, req: &SearchRequest, query: &[f32], ids: &[i64], k: usize) -> Vec<Neighbour> {
        let query = unit(query);
        let found = ids.iter().chain(&self.pending).filter_map(|&id| self.score(req, &query, id)).collect();
        best(found, k)
    }

    /// Vectors waiting for the graph: ids to remove from it, and ids to add.
    pub fn backlog(&self) -> usize {
        self.pending.len() + self.unlinked.len()
    }

    /// The ids whose vector in the graph is stale, to remove from it.
    pub fn take_unlinked(&mut self) -> Vec<i64> {
        std::mem::take(&mut self.unlinked)
    }

    /// Up to `max` vectors the graph lacks: id, generation, quantized vector.
    pub fn pending_batch(&self, max: usize) -> Vec<(i64, u64, Vec<i8>)> {
        let mut ids: Vec<i64> = self.pending.iter().copied().collect();
        if ids.len() > max {
            ids.select_nth_unstable(max - 1);
            ids.truncate(max);
        }
        ids.sort_unstable();
        let quantized = |id| Some((id, self.slots.get(&id)?.gen, quantize(self.vector(id)?)));
        ids.into_iter().filter_map(quantized).collect()
    }

    /// Records that the graph now holds these vectors; one that changed or
    /// went meanwhile is stale in the graph at once.
    pub fn mark_graphed(&mut self, added: &[(i64, u64)]) {
        for &(id, gen) in added {
            match self.slots.get_mut(&id) {
                Some(slot) if slot.gen == gen => {
                    slot.graphed = true;
                    self.pending.remove(&id);
                }
                _ => self.unlinked.push(id),
            }
        }
        if self.pending.is_empty() && self.pending.capacity() > 4096 {
            self.pending.shrink_to_fit(); // the memory of a large build, given back
        }
    }

    /// The graph is gone (or new): every vector is pending again.
    pub fn forget_graph(&mut self) {
        self.unlinked.clear();
        for (id, slot) in &mut self.slots {
            slot.graphed = false;
            self.pending.insert(*id);
        }
    }

    /// Takes over a graph read from disk: each vector it holds exactly as this
    /// holds it counts as graphed; any other it holds for a known id is stale.
    /// Returns how many it holds for no known id (stale beyond reach).
    pub fn adopt(&mut self, graph: &Graph) -> usize {
        self.forget_graph();
        let mut known = 0;
        let ids: Vec<i64> = self.slots.keys().copied().collect();
        for id in ids {
            let Some(held) = graph.held(id) else { continue };
            known += 1;
            let Some(vector) = self.vector(id) else { continue };
            if held == quantize(vector) {
                if let Some(slot) = self.slots.get_mut(&id) {
                    slot.graphed = true;
                }
                self.pending.remove(&id);
            } else {
                self.unlinked.push(id);
            }
        }
        graph.len().saturating_sub(known)
    }

    /// The `k` entries most similar to `query` among those `req` admits, best
    /// first. A query of another dimension matches nothing.
    pub fn search(&self, req: &SearchRequest, query: &[f32], k: usize) -> Vec<Neighbour> {
        if self.dim == 0 || query.len() != self.dim || k == 0 {
            return Vec::new();
        }
        let query = unit(query);
        if let Some(ids) = req.allowed.as_ref().filter(|ids| ids.len() * 4 < self.len()) {
            return best(ids.iter().filter_map(|&id| self.score(req, &query, id)).collect(), k);
        }
        // Only the request's scopes' blocks: each row is in one of them.
        let blocks: Vec<&Block> = match &req.scopes {
            Some(keys) => keys.iter().filter_map(|key| self.block(key)).collect(),
            None => self.blocks.iter().collect(),
        };
        // Cut back to the best `k` whenever it holds `keep`: the memory of a
        // scan stays bounded at any store size.
        let keep = (4 * k).max(1024);
        let mut found: Vec<Neighbour> = Vec::with_capacity(keep);
        for block in blocks {
            let rows = block.entries.iter().zip(&block.sessions).zip(block.data.chunks_exact(self.dim));
            for ((entry, &session), row) in rows {
                if !req.admits_in_scope(entry) {
                    continue;
                }
                found.push(Neighbour {
                    id: entry.id,
                    cosine: dot(&query, row),
                    timestamp: entry.timestamp,
                    tokens: entry.tokens,
                    session,
                });
                if found.len() == keep {
                    found = best(found, k);
                }
            }
        }
        best(found, k)
    }
}

/// The `k` best of `found`, best first (ties: the newer id first).
fn best(mut found: Vec<Neighbour>, k: usize) -> Vec<Neighbour> {
    let by_score = |a: &Neighbour, b: &Neighbour| b.cosine.total_cmp(&a.cosine).then(b.id.cmp(&a.id));
    if k == 0 {
        return Vec::new();
    }
    if found.len() > k {
        found.select_nth_unstable_by(k - 1, by_score);
        found.truncate(k);
    }
    found.sort_by(by_score);
    found
}

/// The dot product of the first `min(a.len(), b.len())` elements: cosine
/// similarity for unit vectors. Every dense score, graph candidate rescored,
/// near-duplicate check and exact scan goes through it. On x86-64 with AVX2
/// and FMA (checked once per process) it runs on 256-bit lanes, 32 elements a
/// step; elsewhere on eight scalar accumulators, which the compiler vectorises.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has both features, checked just above.
        return unsafe { dot_avx2(a, b) };
    }
    dot_portable(a, b)
}

fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    // Eight accumulators let the compiler vectorise without reassociating floats.
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `dot` on AVX2 lanes with fused multiply-adds: four accumulators of eight
/// lanes, so that consecutive steps do not wait on each other.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::{
        _mm256_add_ps, _mm256_castps256_ps128, _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
        _mm256_setzero_ps, _mm_add_ps, _mm_add_ss, _mm_cvtss_f32, _mm_movehl_ps, _mm_shuffle_ps,
    };
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [_mm256_setzero_ps(); 4];
    let (blocks, rest) = (a.chunks_exact(32), n - n % 32);
    for (x, y) in blocks.zip(b.chunks_exact(32)) {
        for (lane, acc) in acc.iter_mut().enumerate() {
            // SAFETY: `x` and `y` hold 32 elements; lane 3 reads the last 8.
            let (x, y) = unsafe {
                (_mm256_loadu_ps(x.as_ptr().add(8 * lane)), _mm256_loadu_ps(y.as_ptr().add(8 * lane)))
            };
            *acc = _mm256_fmadd_ps(x, y, *acc);
        }
    }
    let (a, b) = (&a[rest..], &b[rest..]);
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        // SAFETY: `x` and `y` hold 8 elements.
        let (x, y) = unsafe { (_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(y.as_ptr())) };
        acc[0] = _mm256_fmadd_ps(x, y, acc[0]);
    }
    let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let half = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps::<1>(sum));
    let quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
    let total = _mm_cvtss_f32(_mm_add_ss(quarter, _mm_shuffle_ps::<1>(quarter, quarter)));
    let tail = a.len() - a.len() % 8;
    total + a[tail..].iter().zip(&b[tail..]).map(|(x, y)| x * y).sum::<f32>()
}

/// `v` scaled to unit length (a zero vector stays zero).
pub fn unit(v: &[f32]) -> Vec<f32> {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter().map(|x| x / norm).collect()
    } else {
        vec![0.0; v.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Retrieval;

    #[test]
    fn dot_matches_a_double_precision_sum_at_every_length() {
        let mut seed = 0x9e37_79b9_u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed as f32 / u32::MAX as f32 - 0.5
        };
        for n in (0..=80).chain([383, 384, 385, 1536]) {
            let a: Vec<f32> = (0..n).map(|_| next()).collect();
            let b: Vec<f32> = (0..n + 3).map(|_| next()).collect(); // the extra three are ignored
            let exact: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            let scale: f64 = a.iter().zip(&b).map(|(x, y)| f64::from((x * y).abs())).sum::<f64>() + 1e-9;
            for (name, got) in
                [("dot", dot(&a, &b)), ("portable", dot_portable(&a, &b)), ("swapped", dot(&b, &a))]
            {
                assert!(
                    (f64::from(got) - exact).abs() <= 1e-5 * scale,
                    "{name}, n = {n}: {got} against {exact}"
                );
            }
        }
        assert_eq!(dot(&[], &[1.0]), 0.0);
    }

    fn entry(id: i64, scope: &str) -> Entry {
        Entry { scope: Some(scope.into()), ..crate::entry::sample(id, "x") }
    }

    fn request(scopes: Option<Vec<&str>>) -> SearchRequest {
        SearchRequest {
            text: String::new(),
            scopes: scopes.map(|s| s.into_iter().map(str::to_owned).collect()),
            kinds: None,
            session_id: None,
            since: None,
            until: None,
            metadata: Vec::new(),
            scope_prefix: None,
            metadata_filter: None,
            allowed: None,
            depth: 10,
            now: 0,
            valid_at: None,
            recency_weight: 0.0,
            half_life_us: 1.0,
            retrieval: Retrieval::default(),
        }
    }

    #[test]
    fn nearest_within_scope_and_removal_keeps_rows_consistent() {
        let mut dense = Dense::default();
        dense.apply(1, Some(&entry(1, "a")), Some(&[1.0, 0.0]));
        dense.apply(2, Some(&entry(2, "a")), Some(&[0.6, 0.8]));
        dense.apply(3, Some(&entry(3, "b")), Some(&[2.0, 0.0]));
        dense.apply(4, Some(&entry(4, "a")), Some(&[0.0, 3.0]));
        let ids = |n: Vec<Neighbour>| n.into_iter().map(|n| n.id).collect::<Vec<_>>();
        assert_eq!(ids(dense.search(&request(Some(vec!["a"])), &[0.0, 1.0], 2)), vec![4, 2]);
        assert_eq!(ids(dense.search(&request(None), &[1.0, 0.0], 2)), vec![3, 1]);
        dense.apply(1, None, None); // deleted: row 0 of "a" is refilled by the last row
        assert_eq!(dense.vector(4), Some(&[0.0, 1.0][..]));
        assert_eq!(ids(dense.search(&request(Some(vec!["a"])), &[1.0, 0.0], 5)), vec![2, 4]);
        assert!(dense.search(&request(None), &[1.0, 0.0, 0.0], 5).is_empty(), "wrong dimension");
        dense.apply(2, Some(&entry(2, "b")), Some(&[1.0, 0.0])); // moved scope
        assert_eq!(ids(dense.search(&request(Some(vec!["a"])), &[1.0, 0.0], 5)), vec![4]);
        assert_eq!(dense.len(), 3);
    }

    #[test]
    fn a_scope_emptied_gives_its_block_to_the_next_new_scope() {
        let mut dense = Dense::default();
        let ids = |n: Vec<Neighbour>| n.into_iter().map(|n| n.id).collect::<Vec<_>>();
        let scoped = |scope: &str| request(Some(vec![scope]));
        dense.apply(1, Some(&entry(1, "a")), Some(&[1.0, 0.0]));
        dense.apply(2, Some(&entry(2, "b")), Some(&[0.0, 1.0]));
        dense.apply(5, Some(&entry(5, "b")), Some(&[0.6, 0.8]));
        // The first row of the second block goes: its last row moves up.
        dense.apply(2, None, None);
        assert_eq!(dense.vector(5), Some(&[0.6, 0.8][..]));
        assert_eq!(ids(dense.search(&scoped("b"), &[0.6, 0.8], 5)), vec![5]);
        dense.apply(1, None, None); // "a" holds nothing now
        assert_eq!(dense.reach(&scoped("a")), 0);
        assert!(dense.search(&scoped("a"), &[1.0, 0.0], 5).is_empty());
        assert_eq!(ids(dense.search(&request(None), &[1.0, 0.0], 5)), vec![5]);
        // A new scope takes the emptied block; "a" stays empty.
        dense.apply(3, Some(&entry(3, "c")), Some(&[1.0, 0.0]));
        assert_eq!(dense.blocks.len(), 2, "the emptied block is used again");
        assert!(dense.search(&scoped("a"), &[1.0, 0.0], 5).is_empty());
        assert_eq!(ids(dense.search(&scoped("c"), &[1.0, 0.0], 5)), vec![3]);
        assert_eq!(dense.vector(3), Some(&[1.0, 0.0][..]));
        dense.apply(4, Some(&entry(4, "a")), Some(&[0.0, 1.0]));
        assert_eq!(dense.reach(&request(Some(vec!["a", "b", "c"]))), 3);
        assert_eq!(ids(dense.search(&scoped("a"), &[0.0, 1.0], 5)), vec![4]);
        assert!(!dense.graphed_admits(&request(None), 3), "not in the graph yet");
        // Every vector gone: the next one may have another dimension.
        for id in [3, 4, 5] {
            dense.apply(id, None, None);
        }
        assert!(dense.is_empty() && dense.dim() == 0 && dense.blocks.is_empty());
        dense.apply(6, Some(&entry(6, "b")), Some(&[0.0, 0.0, 2.0]));
        assert_eq!(dense.vector(6), Some(&[0.0, 0.0, 1.0][..]));
        assert_eq!(ids(dense.search(&scoped("b"), &[0.0, 0.0, 1.0], 5)), vec![6]);
        assert!(dense.search(&scoped("a"), &[0.0, 0.0, 1.0], 5).is_empty());
    }
}
