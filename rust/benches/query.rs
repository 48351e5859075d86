//! The engine's own query time, without Python: the baseline that
//! `benchmarks/overhead.py` compares the Python-visible time against.
//!
//! `cargo bench --bench query` (set CF_BENCH_N for the store size, default 100k).
//! It also times the same queries from two threads at once: what a second core
//! adds to the engine alone on this machine.

use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};

use _core::{Config, Memory, NewEntry, Query};

/// A deterministic chat-like store: Zipf-ish words, 1,000 scopes.
fn store(n: usize) -> (Memory, Vec<(String, String)>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let engine = Memory::open(Config::new(dir.path().join("bench.db").to_string_lossy())).expect("open");
    let mut seed: u64 = 42;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let word = |next: &mut dyn FnMut() -> u64| {
        // Rank r with probability ~ 1/r: a cheap Zipf over 50k words.
        let u = (next() % 1_000_000) as f64 / 1_000_000.0;
        let rank = (50_000f64.powf(u)) as u64;
        format!("w{rank}")
    };
    let mut queries = Vec::new();
    for chunk in 0..n / 10_000 {
        let batch: Vec<NewEntry> = (0..10_000)
            .map(|i| {
                let words: Vec<String> = (0..30).map(|_| word(&mut next)).collect();
                let scope = format!("s{}", (chunk * 10_000 + i) % 1000);
                if queries.len() < 1000 && i % 10 == 0 {
                    let q = format!("{} {} {} w1", words[0], words[5], words[9]);
                    queries.push((q, scope.clone()));
                }
                NewEntry { dedupe: false, ..NewEntry::new(words.join(" ")).scope(scope) }
            })
            .collect();
        engine.save_many(batch).expect("save");
    }
    engine.flush().expect("flush");
    (engine, queries, dir)
}

/// One scoped query with a 2,048-token budget.
fn ask(engine: &Memory, (text, scope): &(String, String)) {
    let hits = engine.query(&Query::new(text.clone(), 2048).in_scope(scope.clone()));
    std::hint::black_box(hits.expect("query"));
}

fn bench(c: &mut Criterion) {
    let n: usize = std::env::var("CF_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let (engine, queries, _dir) = store(n.max(10_000));
    let mut i = 0;
    c.bench_function(&format!("query_scoped_n{n}"), |b| {
        b.iter(|| {
            ask(&engine, &queries[i % queries.len()]);
            i += 1;
        });
    });
    // The same queries from two threads at once, timed per query over both: the
    // one-thread time above divided by this is what a second core adds to the
    // engine alone. Two asyncio tasks cannot gain more, since they also run
    // their Python on one thread.
    c.bench_function(&format!("query_scoped_two_threads_n{n}"), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            std::thread::scope(|s| {
                for first in 0..2 {
                    let (engine, queries) = (&engine, &queries);
                    s.spawn(move || {
                        for k in (first..iters).step_by(2) {
                            ask(engine, &queries[k as usize % queries.len()]);
                        }
                    });
                }
            });
            start.elapsed()
        });
    });
    c.bench_function(&format!("save_n{n}"), |b| {
        b.iter(|| {
            i += 1;
            std::hint::black_box(engine.save(NewEntry::new(format!("fresh entry {i} w7 w9"))).expect("save"));
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
