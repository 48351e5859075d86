//! Dense search: the exact vectors (`dense.rs`) and, for large stores, the
//! approximate graph (`graph.rs`) that proposes candidates for them.
//!
//! A query whose scopes hold at most `EXACT_BELOW` vectors, or less than a
//! `SELECTIVE`th of the store's, is scanned exactly: there a scan is as fast as
//! the graph and has nothing to miss. Otherwise the graph's filtered search
//! (scopes and every other condition checked inside the search) proposes
//! candidates, which are scored again exactly, together with the vectors the
//! graph does not hold yet. The graph is built
//! in the background (`Grapher`), saved at a clean close and read back on open.

use std::collections::HashMap;

use super::dense::{unit, Neighbour};
use super::graph::{quantize, Graph};
use super::{graph_file, SearchIndex, SearchRequest};
use crate::error::Result;
use crate::store::{Change, Store};

/// Queries that may see at most this many vectors scan them exactly; a store
/// with no more has no graph (the default of `Config::exact_below`).
pub const EXACT_BELOW: usize = 20_000;
/// The graph proposes at least this many candidates to score exactly.
const MIN_CANDIDATES: usize = 40;
/// A query whose scopes hold less than one vector in this many is scanned
/// exactly at any size: a filtered graph search walks past the vectors it may
/// not return, and inside a small part of the graph that costs more than
/// scanning the part (benchmarks/ann/RESULTS.md: a scope of 1% of a million
/// vectors, 16-35 ms through the graph, 0.35 ms scanned).
const SELECTIVE: usize = 20;
/// Vectors added to the graph per step by `catch_up_graph`.
const BATCH: usize = 4096;
/// Per step in the background: the builder runs at a low priority, and a
/// `flush` waits for the step it is in.
pub const BACKGROUND_BATCH: usize = 512;

impl SearchIndex {
    /// Loads every stored vector. Changes after the index's commit are applied
    /// again by the catch-up that follows, which is harmless: each carries the
    /// entry's current state.
    pub(super) fn load_vectors(&self, store: &Store) -> Result<()> {
        let vectors = store.vectors()?;
        let mut dense = self.dense.write();
        for (entry, vector) in &vectors {
            dense.apply(entry.id, Some(entry), Some(vector));
        }
        Ok(())
    }

    /// Reads the graph saved beside the index, if it checks out against this
    /// database and the vectors just loaded.
    pub(super) fn load_graph(&self) {
        let Some(dir) = self.graph_dir() else { return };
        let dir = &dir;
        let mut dense = self.dense.write();
        if dense.len() <= self.exact_below() {
            graph_file::remove(dir);
            return;
        }
        let Some(graph) = graph_file::load(dir, &self.database, dense.dim()) else { return };
        let strays = dense.adopt(&graph);
        // Vectors of entries gone since cannot be found to remove: past a
        // quarter of the graph, building it again costs less than searching them.
        if strays * 4 > graph.len() {
            log::warn!("rebuilding the vector graph: {strays} of its {} vectors are stale", graph.len());
            dense.forget_graph();
            graph_file::remove(dir);
            return;
        }
        *self.graph.write() = Some(graph);
    }

    /// Where the graph is saved: beside the index, but never for an encrypted
    /// store (usearch writes its vectors in clear), whose graph is built again
    /// in the background after each open.
    fn graph_dir(&self) -> Option<std::path::PathBuf> {
        self.dir.clone().filter(|_| !self.store.is_encrypted())
    }

    /// Builds the graph until it holds every vector (when the store has one).
    pub fn catch_up_graph(&self) -> Result<()> {
        let threads = crate::runtime::cores().clamp(1, 2);
        while self.graph_step(threads, BATCH)? > 0 {}
        Ok(())
    }

    /// Saves the graph beside the index (at a clean close).
    pub(super) fn save_graph(&self) {
        let Some(dir) = self.graph_dir() else { return };
        let dir = &dir;
        // Not beside a step of a `flush` on another thread: usearch reads
        // every node to save it.
        let _between_steps = self.graph_steps.lock();
        let graph = self.graph.read();
        match graph.as_ref() {
            Some(graph) => {
                if let Err(err) = graph_file::save(dir, &self.database, graph) {
                    log::warn!("cannot save the vector graph at {}: {err}", dir.display());
                    graph_file::remove(dir);
                }
            }
            None => graph_file::remove(dir),
        }
    }

    /// The `k` entries whose vectors are nearest `vector` among those `req` admits.
    pub fn nearest(&self, req: &SearchRequest, vector: &[f32], k: usize) -> Vec<Neighbour> {
        let dense = self.dense.read();
        let reach = dense.reach(req);
        if through_graph(reach, dense.len(), self.exact_below()) && vector.len() == dense.dim() && k > 0 {
            // While the builder adds to the graph it holds it alone: scan then.
            let graph = self.graph.try_read();
            if let Some(graph) = graph.as_ref().and_then(|g| g.as_ref()).filter(|g| g.dim() == dense.dim()) {
                let query = quantize(&unit(vector));
                match graph.search(&query, k.max(MIN_CANDIDATES), |id| dense.graphed_admits(req, id)) {
                    Ok(ids) if ids.len() >= k.min(reach) => return dense.rescore(req, vector, &ids, k),
                    // Fewer than asked: the conditions admit too few for the
                    // graph to find them all; the scan below does.
                    Ok(_) => {}
                    Err(err) => log::debug!("graph search failed, scanning instead: {err}"),
                }
            }
        }
        dense.search(req, vector, k)
    }

    /// The unit vector held for `id`.
    pub fn vector(&self, id: i64) -> Option<Vec<f32>> {
        self.dense.read().vector(id).map(<[f32]>::to_vec)
    }

    /// The unit vectors held for `ids` (entries without one are left out).
    pub fn vectors(&self, ids: &[i64]) -> HashMap<i64, Vec<f32>> {
        let dense = self.dense.read();
        ids.iter().filter_map(|&id| Some((id, dense.vector(id)?.to_vec()))).collect()
    }

    /// The dimension of the vectors held, and how many there are.
    pub fn vector_shape(&self) -> (usize, usize) {
        let dense = self.dense.read();
        (dense.dim(), dense.len())
    }

    /// What the graph holds and costs: (vectors, bytes); (0, 0) without one.
    /// Waits for a building step in progress: usearch cannot measure its
    /// memory beside an add (it reads a node being added).
    pub fn graph_shape(&self) -> (usize, usize) {
        let _between_steps = self.graph_steps.lock();
        self.graph.read().as_ref().map_or((0, 0), |g| (g.len(), g.memory()))
    }

    pub(super) fn apply_vectors(&self, changes: &[Change]) {
        if changes.iter().all(|c| c.vector.is_none()) && self.dense.read().is_empty() {
            return;
        }
        let mut dense = self.dense.write();
        for c in changes {
            dense.apply(c.entry_id, c.entry.as_ref(), c.vector.as_deref());
        }
    }

    fn exact_below(&self) -> usize {
        self.exact_below.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the graph has work: vectors to add or to remove.
    pub fn graph_backlog(&self) -> usize {
        let dense = self.dense.read();
        let graph = self.graph.read();
        match graph.as_ref() {
            None if dense.len() <= self.exact_below() => 0,
            Some(_) if dense.is_empty() => 1, // to drop
            _ => dense.backlog(),
        }
    }

    /// One step of building the graph: creates it when the store has grown
    /// past `exact_below` vectors (or its vectors changed dimension), drops it when
    /// the store has no vectors, removes stale vectors and adds up to `most`
    /// new ones on `threads` threads. Returns what is left to do.
    pub fn graph_step(&self, threads: usize, most: usize) -> Result<usize> {
        let _one_at_a_time = self.graph_steps.lock();
        let (added, unlinked, batch) = {
            let mut dense = self.dense.write();
            let mut graph = self.graph.write();
            let wanted = dense.len() > self.exact_below() || (graph.is_some() && !dense.is_empty());
            if !wanted {
                if graph.take().is_some() {
                    dense.forget_graph();
                }
                return Ok(0);
            }
            if graph.as_ref().is_none_or(|g| g.dim() != dense.dim()) {
                *graph = Some(Graph::new(dense.dim())?);
                dense.forget_graph();
            }
            let batch = dense.pending_batch(most);
            let added: Vec<(i64, u64)> = batch.iter().map(|(id, gen, _)| (*id, *gen)).collect();
            (added, dense.take_unlinked(), batch)
        };
        {
            let mut guard = self.graph.write();
            let Some(graph) = guard.as_mut() else { return Ok(0) };
            // A pending id may still hold an older vector in the graph.
            for id in unlinked.iter().chain(added.iter().map(|(id, _)| id)) {
                graph.remove(*id)?;
            }
            graph.reserve(batch.len())?;
        }
        let vectors: Vec<(i64, Vec<i8>)> = batch.into_iter().map(|(id, _, v)| (id, v)).collect();
        {
            // Alone: a search beside usearch's adds read a node being added and
            // crashed the process (`tests/dense.rs`, one run in about 250). A
            // query meanwhile scans instead (`nearest`).
            let guard = self.graph.write();
            let Some(graph) = guard.as_ref() else { return Ok(0) };
            if graph.dim() != vectors.first().map_or(graph.dim(), |(_, v)| v.len()) {
                return Ok(self.dense.read().backlog()); // replaced meanwhile: start again
            }
            graph.add(&vectors, threads)?;
        }
        let mut dense = self.dense.write();
        dense.mark_graphed(&added);
        Ok(dense.backlog())
    }
}

/// Whether a query that may see `reach` of a store's `total` vectors asks the
/// graph (or else scans them).
fn through_graph(reach: usize, total: usize, exact_below: usize) -> bool {
    reach > exact_below && reach * SELECTIVE >= total
}

#[cfg(test)]
mod tests {
    use super::through_graph;

    #[test]
    fn small_and_selective_queries_scan() {
        assert!(!through_graph(20_000, 20_000, 20_000), "no more than the threshold");
        assert!(through_graph(20_001, 20_001, 20_000));
        assert!(through_graph(100_000, 1_000_000, 20_000), "a tenth of a million");
        assert!(!through_graph(40_000, 1_000_000, 20_000), "a 25th of a million");
        assert!(!through_graph(10, 1_000_000, 0));
    }
}
