//! An approximate nearest-neighbour graph (HNSW, by usearch) over the dense
//! vectors, for stores too large to scan.
//!
//! The graph only proposes candidates. Which of them a query may see, and how
//! similar each is, is decided by `Dense` (the exact vectors and their entries,
//! which follow the change log): the search's filter admits a key only when
//! `Dense` holds that entry with the very vector the graph was given, in a
//! scope and under conditions the query allows, and every candidate is scored
//! again with its exact vector. A stale, foreign or damaged graph can therefore
//! cost recall, never show an entry the query may not see.
//!
//! Vectors are held as 8-bit integers (a unit vector times 127), which keeps
//! the graph at about a quarter of the exact vectors' memory.

use std::path::Path;

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use crate::error::{Error, Result};

/// Neighbours kept per node (HNSW's M): 16 falls short of recall 0.95 at a
/// million clustered vectors unless searches explore four times as many
/// candidates (benchmarks/ann/RESULTS.md).
const CONNECTIVITY: usize = 32;
/// Candidates explored while adding a vector (HNSW's efConstruction).
const EXPANSION_ADD: usize = 128;
/// Candidates explored while searching (HNSW's ef); a search for more than
/// this many explores as many as it asks for. A graph of `LARGE` vectors or
/// more explores `EXPANSION_SEARCH_LARGE`.
const EXPANSION_SEARCH: usize = 64;
const EXPANSION_SEARCH_LARGE: usize = 96;
const LARGE: usize = 500_000;
/// Searches and adds that may run at once; one more waits for none: it falls
/// back to the exact scan (`Graph::search` errs).
const CONTEXTS: usize = 32;

pub struct Graph {
    index: Index,
}

/// A vector as the graph holds it: `unit` times 127, rounded.
pub fn quantize(unit: &[f32]) -> Vec<i8> {
    unit.iter().map(|x| (x * 127.0).round().clamp(-127.0, 127.0) as i8).collect()
}

fn failed(what: &str, err: impl std::fmt::Display) -> Error {
    Error::Internal(format!("vector graph: {what}: {err}"))
}

impl Graph {
    pub fn new(dim: usize) -> Result<Self> {
        let options = IndexOptions {
            dimensions: dim,
            metric: MetricKind::Cos,
            quantization: ScalarKind::I8,
            connectivity: CONNECTIVITY,
            expansion_add: EXPANSION_ADD,
            expansion_search: EXPANSION_SEARCH,
            multi: false,
        };
        let index = Index::new(&options).map_err(|e| failed("create", e))?;
        index.reserve_capacity_and_threads(1024, CONTEXTS).map_err(|e| failed("reserve", e))?;
        Ok(Self { index })
    }

    pub fn dim(&self) -> usize {
        self.index.dimensions()
    }

    /// Vectors in the graph, removed ones excluded.
    pub fn len(&self) -> usize {
        self.index.size()
    }

    /// Bytes the graph holds in memory. Not to run beside an add.
    pub fn memory(&self) -> usize {
        self.index.memory_usage()
    }

    pub fn contains(&self, id: i64) -> bool {
        self.index.contains(key(id))
    }

    /// The vector held for `id`, as quantized.
    pub fn held(&self, id: i64) -> Option<Vec<i8>> {
        let mut out = vec![0i8; self.dim()];
        match self.index.get(key(id), &mut out) {
            Ok(1) => Some(out),
            _ => None,
        }
    }

    /// Makes room for `more` vectors, and sets how widely searches explore for
    /// the size the graph will have. Not to run beside a search or an add.
    pub fn reserve(&mut self, more: usize) -> Result<()> {
        let needed = self.index.size() + more;
        if needed > self.index.capacity() {
            let capacity = needed.max(self.index.capacity() * 2);
            self.index.reserve_capacity_and_threads(capacity, CONTEXTS).map_err(|e| failed("reserve", e))?;
        }
        self.index.change_expansion_search(expansion_search(needed));
        Ok(())
    }

    /// Removes `id`'s vector, if held. Not to run beside a search or an add.
    pub fn remove(&mut self, id: i64) -> Result<()> {
        if self.index.contains(key(id)) {
            self.index.remove(key(id)).map_err(|e| failed("remove", e))?;
        }
        Ok(())
    }

    /// Adds `vectors` (quantized, of ids the graph does not hold), on up to
    /// `threads` threads. Not to run beside a search: one read a node being
    /// added and crashed. Capacity must be reserved.
    pub fn add(&self, vectors: &[(i64, Vec<i8>)], threads: usize) -> Result<()> {
        let threads = threads.clamp(1, CONTEXTS);
        if threads == 1 || vectors.len() < 64 {
            return vectors.iter().try_for_each(|(id, v)| self.add_one(*id, v));
        }
        let chunk = vectors.len().div_ceil(threads);
        std::thread::scope(|s| {
            let workers: Vec<_> = vectors
                .chunks(chunk)
                .map(|part| s.spawn(move || part.iter().try_for_each(|(id, v)| self.add_one(*id, v))))
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().unwrap_or_else(|_| Err(failed("add", "a thread panicked"))))
        })
    }

    fn add_one(&self, id: i64, vector: &[i8]) -> Result<()> {
        self.index.add(key(id), vector).map_err(|e| failed("add", e))
    }

    /// Up to `k` ids near `query` (quantized) among those `admit` accepts,
    /// nearest first by the quantized vectors.
    pub fn search(&self, query: &[i8], k: usize, admit: impl Fn(i64) -> bool) -> Result<Vec<i64>> {
        let found = self
            .index
            .filtered_search(query, k, |key| i64::try_from(key).is_ok_and(&admit))
            .map_err(|e| failed("search", e))?;
        Ok(found.keys.into_iter().filter_map(|k| i64::try_from(k).ok()).collect())
    }

    /// Writes the graph to `path` (usearch's own format).
    pub fn save(&self, path: &Path) -> Result<()> {
        let path = path.to_str().ok_or_else(|| failed("save", "the path is not UTF-8"))?;
        self.index.save(path).map_err(|e| failed("save", e))
    }

    /// Reads a graph written by `save`, expecting `dim` dimensions.
    pub fn load(path: &Path, dim: usize) -> Result<Self> {
        let graph = Self::new(dim)?;
        let path = path.to_str().ok_or_else(|| failed("load", "the path is not UTF-8"))?;
        let meta = Index::metadata(path).map_err(|e| failed("load", e))?;
        if meta.dimensions != dim as u64
            || meta.metric != MetricKind::Cos
            || meta.quantization != ScalarKind::I8
            || meta.multi
        {
            return Err(failed("load", "another kind of graph"));
        }
        graph.index.load(path).map_err(|e| failed("load", e))?;
        graph.index.change_expansion_search(expansion_search(graph.index.size()));
        graph
            .index
            .reserve_capacity_and_threads(graph.index.size() + 1024, CONTEXTS)
            .map_err(|e| failed("reserve", e))?;
        Ok(graph)
    }
}

/// How many candidates a search of a graph of `len` vectors explores.
fn expansion_search(len: usize) -> usize {
    if len >= LARGE {
        EXPANSION_SEARCH_LARGE
    } else {
        EXPANSION_SEARCH
    }
}

/// Entry ids are positive; a key is the id's bits.
fn key(id: i64) -> u64 {
    id as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<i8> {
        quantize(&crate::index::dense::unit(v))
    }

    #[test]
    fn finds_near_vectors_within_the_filter_and_after_removal() {
        let mut graph = Graph::new(3).unwrap();
        graph.reserve(4).unwrap();
        let vectors = vec![
            (1, unit(&[1.0, 0.0, 0.0])),
            (2, unit(&[0.9, 0.1, 0.0])),
            (3, unit(&[0.0, 1.0, 0.0])),
            (4, unit(&[0.0, 0.0, 1.0])),
        ];
        graph.add(&vectors, 1).unwrap();
        let q = unit(&[1.0, 0.05, 0.0]);
        assert_eq!(graph.search(&q, 2, |_| true).unwrap(), vec![1, 2]);
        assert_eq!(graph.search(&q, 2, |id| id != 1).unwrap()[0], 2);
        graph.remove(1).unwrap();
        assert!(!graph.contains(1));
        assert_eq!(graph.search(&q, 1, |_| true).unwrap(), vec![2]);
        assert_eq!(graph.held(3), Some(unit(&[0.0, 1.0, 0.0])));
        assert_eq!(graph.held(1), None);
    }

    #[test]
    fn saved_and_loaded_it_holds_the_same_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g");
        let mut graph = Graph::new(2).unwrap();
        graph.reserve(2).unwrap();
        graph.add(&[(7, unit(&[1.0, 0.0])), (9, unit(&[0.0, 1.0]))], 1).unwrap();
        graph.save(&path).unwrap();
        let loaded = Graph::load(&path, 2).unwrap();
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded.held(9), Some(unit(&[0.0, 1.0])));
        assert!(Graph::load(&path, 3).is_err(), "another dimension");
    }
}
