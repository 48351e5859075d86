//! Dense search at scale, without Python: ingest with and without vectors,
//! the graph's build, and `similar` / hybrid query latency and recall@10
//! against an exact scan, at one store size.
//!
//! `cargo bench --bench dense` (CF_BENCH_N entries, default 200,000;
//! CF_BENCH_DIM dimensions, default 384; CF_BENCH_VECTORS=random|clustered, or
//! a folder written by `benchmarks/dense_vectors.py` holding real embeddings;
//! CF_BENCH_EXACT_BELOW to move the exact-scan threshold, e.g. 0 to have the
//! graph answer a sample smaller than the default threshold; CF_BENCH_STORE, a
//! folder to keep the store with vectors in, and to reuse on the next run with
//! the same settings, which then skips both ingests: for profiling queries;
//! CF_BENCH_PROFILE_HYBRID=R, only hybrid queries of CF_BENCH_PROFILE_TEXT
//! (default "t17 i42"), R rounds, for a profiler).
//! Prints one table; every number is from this run.

use std::time::Instant;

use _core::{Config, Memory, NewEntry, Query};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    fn gauss(&mut self) -> f32 {
        // Sum of uniforms: close enough to normal for random directions.
        (0..4).map(|_| self.next()).sum::<f32>()
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

fn unit(v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

struct Vectors {
    dim: usize,
    clustered: bool,
    centres: Vec<Vec<f32>>,
    rng: Rng,
    /// Real embeddings (`dense_vectors.py`), served in order, then wrapping.
    file: Vec<Vec<f32>>,
    served: usize,
}

/// Little-endian float32 rows of `dim`.
fn read_rows(path: &std::path::Path, dim: usize) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let floats: Vec<f32> =
        bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    floats.chunks_exact(dim).map(|row| unit(row.to_vec())).collect()
}

impl Vectors {
    fn next(&mut self) -> Vec<f32> {
        if !self.file.is_empty() {
            self.served += 1;
            return self.file[(self.served - 1) % self.file.len()].clone();
        }
        if self.clustered {
            let c = (self.rng.next() + 0.5) * self.centres.len() as f32;
            let centre = self.centres[(c as usize).min(self.centres.len() - 1)].clone();
            unit(centre.iter().map(|x| x + 0.9 * self.rng.gauss() / (self.dim as f32).sqrt()).collect())
        } else {
            unit((0..self.dim).map(|_| self.rng.gauss()).collect())
        }
    }
}

fn text(i: usize) -> String {
    format!("note {i} about topic t{} and item i{} with detail d{}", i % 997, i % 10_007, i % 101)
}

/// Saves `n` entries in calls of 1,000 (scope `s{i % 50}`); entries/s.
fn ingest(engine: &Memory, n: usize, mut vectors: Option<&mut Vectors>) -> (f64, Vec<Vec<f32>>) {
    let mut kept = Vec::new();
    let started = Instant::now();
    for start in (0..n).step_by(1000) {
        let batch = (start..(start + 1000).min(n))
            .map(|i| {
                let mut e = NewEntry::new(text(i)).scope(format!("s{}", i % 50));
                if let Some(v) = vectors.as_deref_mut() {
                    let vector = v.next();
                    kept.push(vector.clone());
                    e.embedding = Some(vector);
                }
                e
            })
            .collect();
        engine.save_many(batch).expect("save");
    }
    // Ends when the last entry can be found: a bulk save is indexed after it returns.
    engine.query(&Query::new(text(n - 1), 64)).expect("query");
    (n as f64 / started.elapsed().as_secs_f64(), kept)
}

fn similar(engine: &Memory, q: &[f32], scope: Option<&str>, k: usize) -> Vec<(i64, f32)> {
    let mut query = Query::new("", 4096);
    query.embedding = Some(q.to_vec());
    query.scopes = scope.map(|s| vec![Some(s.to_owned())]);
    engine.similar(&query, k).expect("similar")
}

fn percentile(mut times: Vec<f64>, p: f64) -> f64 {
    times.sort_by(f64::total_cmp);
    times[((times.len() as f64 * p) as usize).min(times.len() - 1)]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // cargo bench's probe
    }
    let mut n = env("CF_BENCH_N", 200_000);
    let dim = env("CF_BENCH_DIM", 384);
    let exact_below = env("CF_BENCH_EXACT_BELOW", _core::index::EXACT_BELOW);
    let kind = std::env::var("CF_BENCH_VECTORS").unwrap_or_else(|_| "random".into());
    let clustered = kind == "clustered";
    let mut rng = Rng(42);
    let centres = (0..1000).map(|_| unit((0..dim).map(|_| rng.gauss()).collect())).collect();
    let (file, mut real_queries) = if kind == "random" || clustered {
        (Vec::new(), Vec::new())
    } else {
        let dir = std::path::Path::new(&kind);
        (read_rows(&dir.join("entries.f32"), dim), read_rows(&dir.join("queries.f32"), dim))
    };
    if !file.is_empty() {
        n = file.len();
    }
    let mut vectors = Vectors { dim, clustered, centres, rng: Rng(7), file, served: 0 };
    println!("n = {n}, dim = {dim}, vectors = {kind}, exact scan up to {exact_below} vectors");
    let open = |path: std::path::PathBuf| {
        let mut config = Config::new(path.to_string_lossy());
        config.exact_below = exact_below;
        Memory::open(config).expect("open")
    };

    let kept_at = std::env::var("CF_BENCH_STORE").ok().map(std::path::PathBuf::from);
    let reused = kept_at.as_ref().is_some_and(|d| d.join("m.db").exists());
    // A kept store answers only for the settings it was built with.
    let settings = format!("n = {n}, dim = {dim}, vectors = {kind}");
    if let Some(kept) = &kept_at {
        let marker = kept.join("settings.txt");
        if reused {
            let built = std::fs::read_to_string(&marker).unwrap_or_default();
            assert_eq!(built, settings, "the store in {} was built with other settings", kept.display());
        } else {
            std::fs::create_dir_all(kept).expect("store folder");
            std::fs::write(&marker, &settings).expect("settings file");
        }
    }
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = kept_at.unwrap_or_else(|| temp.path().to_owned());
    std::fs::create_dir_all(&dir).expect("store folder");
    let plain_rate = if reused {
        f64::NAN
    } else {
        let plain_dir = tempfile::tempdir().expect("temp dir");
        let plain = open(plain_dir.path().join("m.db"));
        let (plain_rate, _) = ingest(&plain, n, None);
        plain.close().expect("close");
        plain_rate
    };

    let before = rss_mb();
    let engine = open(dir.join("m.db"));
    let (rate, held) = if reused {
        (f64::NAN, (0..n).map(|_| vectors.next()).collect())
    } else {
        ingest(&engine, n, Some(&mut vectors))
    };
    let behind = engine.graph_shape().0;
    let started = Instant::now();
    engine.flush().expect("flush");
    let catch_up = started.elapsed().as_secs_f64();
    let (in_graph, graph_bytes) = engine.graph_shape();
    let after = rss_mb();

    // Real questions when the vectors are real; else drawn as the entries were.
    real_queries.truncate(500);
    let queries: Vec<Vec<f32>> =
        if real_queries.is_empty() { (0..200).map(|_| vectors.next()).collect() } else { real_queries };
    let k = 10;
    let time = |f: &dyn Fn(&[f32])| {
        let times: Vec<f64> = queries
            .iter()
            .map(|q| {
                let t = Instant::now();
                f(q);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        (percentile(times.clone(), 0.5), percentile(times, 0.99))
    };
    let unscoped = time(&|q| drop(similar(&engine, q, None, k)));
    let deep = time(&|q| drop(similar(&engine, q, None, 100)));
    let scoped = time(&|q| drop(similar(&engine, q, Some("s3"), k)));
    // Every text holds "topic" and "detail": a lexical half that ranks a
    // store's worth of postings; "t17 i42" are rare words.
    let hybrid = |text: &str, q: &[f32]| {
        let mut query = Query::new(text, 2048);
        query.embedding = Some(q.to_vec());
        engine.query_timed(&query).expect("query").1
    };
    if let Some(rounds) = std::env::var("CF_BENCH_PROFILE_HYBRID").ok().and_then(|r| r.parse().ok()) {
        // Only hybrid queries, `rounds` times over: for a profiler.
        let text = std::env::var("CF_BENCH_PROFILE_TEXT").unwrap_or_else(|_| "t17 i42".into());
        for _ in 0..rounds {
            let timings: Vec<_> = queries.iter().map(|q| hybrid(&text, q)).collect();
            let ms = |part: fn(&_core::engine::Timings) -> f64| {
                timings.iter().map(|t| part(t) / 1e3).collect::<Vec<f64>>()
            };
            let mean = |part| ms(part).iter().sum::<f64>() / timings.len() as f64;
            let total = ms(|t| t.total_us);
            let (p50, p99) = (percentile(total.clone(), 0.5), percentile(total, 0.99));
            let (sync, search, pack) = (mean(|t| t.sync_us), mean(|t| t.search_us), mean(|t| t.pack_us));
            println!("hybrid p50 / p99 {p50:.3} / {p99:.3} ms; mean sync {sync:.3}, search {search:.3}, pack {pack:.3} ms");
        }
        return;
    }
    let hybrid_rare = time(&|q| {
        hybrid("t17 i42", q);
    });
    let hybrid_common = time(&|q| {
        hybrid("topic t17 detail", q);
    });
    // The exact scan, as the engine did for every query before the graph.
    let exact_top = |q: &[f32]| {
        let mut scored: Vec<(f32, usize)> =
            held.iter().enumerate().map(|(i, v)| (_core::index::dense::dot(v, q), i)).collect();
        scored.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
        scored.truncate(k);
        scored.into_iter().map(|(_, i)| i as i64 + 1).collect::<Vec<i64>>()
    };
    let exact = time(&|q| drop(exact_top(q)));
    let sample = &queries[..queries.len().min(if kind == "random" || clustered { 50 } else { 500 })];
    let found: usize = sample
        .iter()
        .map(|q| {
            let truth = exact_top(q);
            similar(&engine, q, None, k).iter().filter(|(id, _)| truth.contains(id)).count()
        })
        .sum();
    let recall = found as f64 / (k * sample.len()) as f64;

    println!("| measure | value |");
    println!("|---|---|");
    println!("| ingest without vectors (calls of 1,000) | {plain_rate:.0} entries/s |");
    println!("| ingest with vectors | {rate:.0} entries/s ({:.2}x) |", rate / plain_rate);
    println!("| graph held when ingest returned | {behind} of {n} |");
    println!("| flush: graph catch-up | {catch_up:.1} s |");
    println!("| graph | {in_graph} vectors, {:.0} MB |", graph_bytes as f64 / 1e6);
    println!("| RSS growth (store open, all held) | {:.0} MB |", after - before);
    println!("| similar k=10 unscoped p50 / p99 | {:.3} / {:.3} ms |", unscoped.0, unscoped.1);
    println!("| similar k=100 unscoped p50 / p99 | {:.3} / {:.3} ms |", deep.0, deep.1);
    println!("| similar k=10 in one scope (2%) p50 / p99 | {:.3} / {:.3} ms |", scoped.0, scoped.1);
    println!(
        "| hybrid query, words in every entry, p50 / p99 | {:.3} / {:.3} ms |",
        hybrid_common.0, hybrid_common.1
    );
    println!("| hybrid query, rare words, p50 / p99 | {:.3} / {:.3} ms |", hybrid_rare.0, hybrid_rare.1);
    println!(
        "| exact scan of every vector (the engine's kernel, one thread) p50 / p99 | {:.3} / {:.3} ms |",
        exact.0, exact.1
    );
    println!("| recall@10 against the exact scan ({} queries) | {recall:.3} |", sample.len());
    let started = Instant::now();
    engine.close().expect("close");
    let closing = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let engine = open(dir.join("m.db"));
    let opening = started.elapsed().as_secs_f64();
    let read_back = engine.graph_shape().0;
    let first = time(&|q| drop(similar(&engine, q, None, k)));
    println!("| close (saves the graph) | {closing:.1} s |");
    println!("| cold open (vectors and graph read back) | {opening:.1} s, graph {read_back} vectors |");
    println!("| similar k=10 unscoped after reopen p50 / p99 | {:.3} / {:.3} ms |", first.0, first.1);
    engine.close().expect("close");
}
