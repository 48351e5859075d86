//! Dense search at a size where the approximate graph answers (more vectors
//! than `Config::exact_below`, lowered here from its default so the tests
//! stay quick): what it returns, and the graph's life on disk.

use _core::{Config, Memory, NewEntry, Query};

const DIM: usize = 24;
const EXACT_BELOW: usize = 6_000;
const BIG: usize = EXACT_BELOW + 3_000;
const SMALL: usize = 2_000;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    /// Near one of 50 centres, as sentence embeddings cluster by topic.
    fn vector(&mut self, centres: &[Vec<f32>]) -> Vec<f32> {
        let centre =
            &centres[(self.next() + 0.5).mul_add(centres.len() as f32, 0.0) as usize % centres.len()];
        centre.iter().map(|c| c + 0.6 * self.next()).collect()
    }
}

fn centres(rng: &mut Rng) -> Vec<Vec<f32>> {
    (0..50).map(|_| (0..DIM).map(|_| rng.next()).collect()).collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

struct Store {
    engine: Memory,
    /// (id, scope, vector) of every entry.
    held: Vec<(i64, &'static str, Vec<f32>)>,
}

fn config(dir: &std::path::Path) -> Config {
    let mut config = Config::new(dir.join("memory.db").to_string_lossy());
    config.flush_ms = 50;
    config.exact_below = EXACT_BELOW;
    config
}

/// A store of `BIG` vectors in scope "big" and `SMALL` in "small".
fn build(dir: &std::path::Path, seed: u64) -> Store {
    let engine = Memory::open(config(dir)).unwrap();
    let mut rng = Rng(seed);
    let centres = centres(&mut rng);
    let mut held = Vec::new();
    for (scope, n) in [("big", BIG), ("small", SMALL)] {
        let vectors: Vec<Vec<f32>> = (0..n).map(|_| rng.vector(&centres)).collect();
        let entries = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let mut e = NewEntry::new(format!("entry {i} of {scope}")).scope(scope);
                e.embedding = Some(v.clone());
                e
            })
            .collect();
        let ids = engine.save_many(entries).unwrap();
        held.extend(ids.into_iter().zip(vectors).map(|(id, v)| (id, scope, v)));
    }
    Store { engine, held }
}

fn similar(engine: &Memory, vector: &[f32], scope: Option<&str>, k: usize) -> Vec<(i64, f32)> {
    let mut q = Query::new("", 4096);
    q.embedding = Some(vector.to_vec());
    q.scopes = scope.map(|s| vec![Some(s.to_owned())]);
    engine.similar(&q, k).unwrap()
}

/// The exact top `k` among `held` in `scope` (all scopes for `None`).
fn exact(held: &[(i64, &str, Vec<f32>)], vector: &[f32], scope: Option<&str>, k: usize) -> Vec<i64> {
    let mut scored: Vec<(f32, i64)> = held
        .iter()
        .filter(|(_, s, _)| scope.is_none_or(|want| want == *s))
        .map(|(id, _, v)| (cosine(vector, v), *id))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(k).map(|(_, id)| id).collect()
}

/// Mean recall@10 over `queries`, asserting every hit is in `scope` with its exact cosine.
fn recall(store: &Store, queries: &[Vec<f32>], scope: Option<&str>) -> f64 {
    let scope_of: std::collections::HashMap<i64, (&str, &Vec<f32>)> =
        store.held.iter().map(|(id, s, v)| (*id, (*s, v))).collect();
    let mut found = 0;
    for q in queries {
        let got = similar(&store.engine, q, scope, 10);
        assert_eq!(got.len(), 10);
        for (id, cos) in &got {
            let (s, v) = scope_of[id];
            assert!(scope.is_none_or(|want| want == s), "entry {id} of {s} in a query of {scope:?}");
            assert!((cos - cosine(q, v)).abs() < 1e-4, "a hit scored with its exact vector");
        }
        let truth = exact(&store.held, q, scope, 10);
        found += got.iter().filter(|(id, _)| truth.contains(id)).count();
    }
    found as f64 / (10 * queries.len()) as f64
}

/// `n` queries drawn as the store's vectors were (`store_seed`).
fn queries(store_seed: u64, seed: u64, n: usize) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed);
    let centres = centres(&mut Rng(store_seed));
    (0..n).map(|_| rng.vector(&centres)).collect()
}

#[test]
fn the_graph_answers_a_large_store_as_the_exact_scan_does_within_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let store = build(dir.path(), 7);
    store.engine.flush().unwrap();
    assert_eq!(store.engine.graph_shape().0, BIG + SMALL, "flush builds the whole graph");
    let qs = queries(7, 99, 60);
    let unscoped = recall(&store, &qs, None);
    let big = recall(&store, &qs, Some("big"));
    assert!(unscoped >= 0.95, "recall@10 unscoped {unscoped}");
    assert!(big >= 0.95, "recall@10 in the large scope {big}");
    // A scope below the threshold is scanned: exact.
    assert_eq!(recall(&store, &qs, Some("small")), 1.0);
    // An entry of "big" is never found from "small", even as its own exact match.
    let (_, _, own) = store.held.iter().find(|(_, s, _)| *s == "big").unwrap();
    let hits = similar(&store.engine, own, Some("small"), 50);
    let small: std::collections::HashSet<i64> =
        store.held.iter().filter(|(_, s, _)| *s == "small").map(|(id, ..)| *id).collect();
    assert!(hits.iter().all(|(id, _)| small.contains(id)));
}

#[test]
fn vectors_not_yet_in_the_graph_and_changed_ones_are_found_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = build(dir.path(), 11);
    store.engine.flush().unwrap();
    // A new vector, and a new vector for an old entry, found before any flush.
    let (old, _, _) = store.held[5];
    let fresh: Vec<f32> = (0..DIM).map(|i| if i == 3 { 1.0 } else { 0.0 }).collect();
    let moved: Vec<f32> = (0..DIM).map(|i| if i == 4 { 1.0 } else { 0.0 }).collect();
    let mut entry = NewEntry::new("a new one").scope("big");
    entry.embedding = Some(fresh.clone());
    let new = store.engine.save(entry).unwrap();
    store.engine.set_vectors(vec![(old, moved.clone())]).unwrap();
    assert_eq!(similar(&store.engine, &fresh, Some("big"), 1)[0].0, new);
    assert_eq!(similar(&store.engine, &moved, None, 1)[0].0, old);
    // Deleted: never returned, though the graph may still hold its vector.
    store.engine.delete_many(&[new]).unwrap();
    assert!(similar(&store.engine, &fresh, None, 20).iter().all(|(id, _)| *id != new));
}

#[test]
fn a_hybrid_query_of_a_large_store_finds_both_halves_within_its_scope() {
    // The lexical half and the dense half each bring their match: before a
    // flush (the graph may lack some vectors yet; those are scanned), and
    // after the flush has built it whole.
    let dir = tempfile::tempdir().unwrap();
    let store = build(dir.path(), 13);
    // `held` is in the order saved: "entry {i} of big", then of "small".
    let (by_word, in_small) = (store.held[1234].0, store.held[BIG + 1234].0);
    let (by_vector, _, vector) = &store.held[4321];
    let mut query = Query::new("1234", 4096);
    query.embedding = Some(vector.clone());
    for flushed in [false, true] {
        for scopes in [None, Some(vec![Some("big".to_owned())])] {
            query.scopes = scopes.clone();
            let hits: Vec<i64> = store.engine.query(&query).unwrap().iter().map(|h| h.entry.id).collect();
            assert!(hits.contains(&by_word), "the lexical match, scopes {scopes:?}, flushed {flushed}");
            assert!(hits.contains(by_vector), "the dense match, scopes {scopes:?}, flushed {flushed}");
            assert_eq!(hits.contains(&in_small), scopes.is_none(), "scopes {scopes:?}, flushed {flushed}");
        }
        store.engine.flush().unwrap(); // the graph answers the second round
    }
}

fn graph_files(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let index = dir.join("memory.db.index");
    (index.join("vectors.graph"), index.join("vectors.graph.json"))
}

#[test]
fn the_graph_is_saved_at_a_clean_close_and_read_back_only_when_it_checks_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = build(dir.path(), 13);
    let total = BIG + SMALL;
    store.engine.flush().unwrap();
    store.engine.close().unwrap();
    let (graph, check) = graph_files(dir.path());
    assert!(graph.exists() && check.exists());
    let qs = queries(13, 5, 40);

    // Read back whole at open: building it again takes far longer than this.
    let engine = Memory::open(config(dir.path())).unwrap();
    assert_eq!(engine.graph_shape().0, total, "the saved graph is read back");
    // Changed behind its back (a crash after these writes, before a close):
    // the stale vectors are found by comparing, and replaced.
    let (changed, _, _) = store.held[10];
    let (deleted, _, _) = store.held[11];
    let moved: Vec<f32> = (0..DIM).map(|i| if i == 2 { 1.0 } else { 0.0 }).collect();
    engine.set_vectors(vec![(changed, moved.clone())]).unwrap();
    engine.delete_many(&[deleted]).unwrap();
    std::mem::forget(engine);
    let engine = Memory::open(config(dir.path())).unwrap();
    assert_eq!(similar(&engine, &moved, None, 1)[0].0, changed);
    engine.flush().unwrap();
    assert_eq!(similar(&engine, &moved, None, 1)[0].0, changed);
    let held: Vec<_> =
        store.held.iter().filter(|(id, ..)| *id != deleted && *id != changed).cloned().collect();
    let check_store = Store { engine, held };
    let after = recall(&check_store, &qs, None);
    assert!(after >= 0.95, "recall@10 after the changes {after}");
    check_store.engine.close().unwrap();

    // Damaged: not read, deleted, built again; answers stay right meanwhile.
    let mut bytes = std::fs::read(&graph).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    std::fs::write(&graph, bytes).unwrap();
    let engine = Memory::open(config(dir.path())).unwrap();
    assert!(engine.graph_shape().0 < total, "a damaged graph is not read");
    let store = Store { engine, held: check_store.held };
    assert!(recall(&store, &qs, None) >= 0.95);
    store.engine.flush().unwrap();
    assert_eq!(store.engine.graph_shape().0, total - 1);
    store.engine.close().unwrap();

    // Another store's graph, of the same dimension, beside this database.
    let other = tempfile::tempdir().unwrap();
    let foreign = build(other.path(), 17);
    foreign.engine.flush().unwrap();
    foreign.engine.close().unwrap();
    let (foreign_graph, foreign_check) = graph_files(other.path());
    std::fs::copy(foreign_graph, &graph).unwrap();
    std::fs::copy(foreign_check, &check).unwrap();
    let engine = Memory::open(config(dir.path())).unwrap();
    assert!(engine.graph_shape().0 < total, "another database's graph is not read");
    let store = Store { engine, held: store.held };
    assert!(recall(&store, &qs, Some("big")) >= 0.95);
}

#[test]
fn the_graph_can_be_measured_while_it_is_built() {
    // `graph_shape` beside the builder's adds read a half-added node and
    // crashed the process (found by the million-vector benchmark).
    let dir = tempfile::tempdir().unwrap();
    let store = build(dir.path(), 13);
    let building = std::sync::atomic::AtomicBool::new(true);
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut largest = 0;
            while building.load(std::sync::atomic::Ordering::Relaxed) {
                let (held, bytes) = store.engine.graph_shape();
                assert!(held == 0 || bytes > 0);
                largest = largest.max(held);
            }
            largest
        });
        store.engine.flush().unwrap();
        building.store(false, std::sync::atomic::Ordering::Relaxed);
        assert!(watcher.join().unwrap() <= BIG + SMALL);
    });
    assert_eq!(store.engine.graph_shape().0, BIG + SMALL);
}
