//! usearch (C++ HNSW through cxx): the sweep over scalar kind, connectivity,
//! expansion_add and expansion_search.

use std::time::Instant;

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use crate::bench::{evaluate, modes, series, Ann, Ctx};
use crate::data::Workload;
use crate::exact;
use crate::report::{process_cpu, rss_bytes, thread_cpu, BuildRow, QueryRow};

fn scalar_kind(name: &str) -> Option<ScalarKind> {
    match name {
        "f32" => Some(ScalarKind::F32),
        "f16" => Some(ScalarKind::F16),
        "bf16" => Some(ScalarKind::BF16),
        "i8" => Some(ScalarKind::I8),
        _ => None,
    }
}

struct Usearch<'a> {
    index: Index,
    scope_of: &'a [u16],
}

impl Ann for Usearch<'_> {
    fn search(&self, query: &[f32], k: usize, scope: Option<u16>) -> Vec<u64> {
        let matches = match scope {
            None => self.index.search(query, k),
            Some(label) => self.index.filtered_search(query, k, |key| self.scope_of[key as usize] == label),
        };
        matches.expect("usearch search").keys
    }
}

/// Adds vectors `0..n` one call at a time, on `threads` threads (keys
/// interleaved). Returns the index, wall seconds and process CPU seconds.
fn build(w: &Workload, n: usize, options: &IndexOptions, threads: usize) -> (Index, f64, f64) {
    let index = Index::new(options).expect("usearch index");
    index.reserve_capacity_and_threads(n, threads.max(1)).expect("usearch reserve");
    let (start, cpu0) = (Instant::now(), process_cpu());
    std::thread::scope(|s| {
        for t in 0..threads.max(1) {
            let index = &index;
            s.spawn(move || {
                for i in (t..n).step_by(threads.max(1)) {
                    index.add(i as u64, w.vector(i)).expect("usearch add");
                }
            });
        }
    });
    (index, start.elapsed().as_secs_f64(), process_cpu() - cpu0)
}

/// How many keys the remove/re-add measurement churns.
const CHURN: usize = 1000;

/// Removes `count` spread-out keys one at a time, then adds them back: the
/// per-operation thread CPU time of each, in microseconds.
fn remove_and_readd(w: &Workload, index: &Index, count: usize) -> (f64, f64) {
    let step = (w.n() / count.max(1)).max(1);
    let keys: Vec<usize> = (0..w.n()).step_by(step).take(count).collect();
    let cpu0 = thread_cpu();
    for &key in &keys {
        index.remove(key as u64).expect("usearch remove");
    }
    let cpu1 = thread_cpu();
    for &key in &keys {
        index.add(key as u64, w.vector(key)).expect("usearch add");
    }
    let cpu2 = thread_cpu();
    let per = |s: f64| s * 1e6 / keys.len().max(1) as f64;
    (per(cpu1 - cpu0), per(cpu2 - cpu1))
}

/// Saves to a file, loads it back into a new index; checks the answers agree.
fn save_and_load(ctx: &Ctx, index: &Index, options: &IndexOptions) -> (f64, f64, u64) {
    let path = ctx.args.tmp.join(format!("ann_bench_usearch_{}.usearch", std::process::id()));
    let path_str = path.to_str().expect("utf-8 temp path");
    let start = Instant::now();
    index.save(path_str).expect("usearch save");
    let save_ms = start.elapsed().as_secs_f64() * 1e3;
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let start = Instant::now();
    let loaded = Index::new(options).expect("usearch index");
    loaded.load(path_str).expect("usearch load");
    let load_ms = start.elapsed().as_secs_f64() * 1e3;
    let _ = std::fs::remove_file(&path);
    for q in 0..ctx.w.nq().min(20) {
        let a = index.search(ctx.w.query(q), ctx.args.k).expect("search").keys;
        let b = loaded.search(ctx.w.query(q), ctx.args.k).expect("search").keys;
        assert_eq!(a, b, "usearch: a loaded index answers differently");
    }
    (save_ms, load_ms, bytes)
}

fn candidate_name() -> &'static str {
    if cfg!(feature = "numkong") {
        "usearch+numkong"
    } else {
        "usearch"
    }
}

fn options(
    dim: usize,
    kind: ScalarKind,
    connectivity: usize,
    expansion_add: usize,
    expansion_search: usize,
) -> IndexOptions {
    IndexOptions {
        dimensions: dim,
        metric: MetricKind::Cos,
        quantization: kind,
        connectivity,
        expansion_add,
        expansion_search,
        multi: false,
    }
}

/// One graph per block of the first m vectors, as a per-scope index would be,
/// queried unscoped: the graph side of the exact-scan threshold.
pub fn blocks(ctx: &mut Ctx) {
    let (w, args) = (ctx.w, ctx.args);
    let scalar = args.scalars.first().map_or("i8", String::as_str);
    let Some(kind) = scalar_kind(scalar) else { return };
    let connectivity = args.connectivity.first().copied().unwrap_or(16);
    let expansion_add = args.expansion_add.first().copied().unwrap_or(128);
    let threads = args.build_threads.last().copied().unwrap_or(1);
    let config = format!("{scalar} c{connectivity} ea{expansion_add}");
    let candidate = format!("{}-block", candidate_name());
    for &m in args.blocks.iter().filter(|&&m| m <= w.n()) {
        let opts = options(w.dim, kind, connectivity, expansion_add, 64);
        let (index, seconds, cpu_seconds) = build(w, m, &opts, threads);
        ctx.sink.build(BuildRow {
            set: w.kind.name(),
            n: m,
            candidate: &candidate,
            config: &config,
            threads,
            seconds,
            cpu_seconds,
            crate_mem: Some(index.memory_usage() as u64),
            rss_growth: 0,
            save_ms: None,
            load_ms: None,
            file_bytes: None,
        });
        let truth = exact::truth(&w.data[..m * w.dim], w.dim, None, &w.queries, args.k, args.truth_threads);
        let ann = Usearch { index, scope_of: &w.scope_of };
        let query = format!("block{m}");
        for &es in &args.expansion_search {
            ann.index.change_expansion_search(es);
            let rerank: &[usize] = if scalar == "f32" { &[] } else { &args.rerank };
            for mode in modes(rerank, args.k) {
                let (recall, lat) = series(ctx, &ann, &truth, None, mode);
                let mode_name = mode.map_or("plain".to_owned(), |fetch| format!("rerank{fetch}"));
                ctx.sink.query(QueryRow {
                    set: w.kind.name(),
                    n: w.n(),
                    candidate: &candidate,
                    config: &config,
                    search: &format!("es{es}"),
                    query: &query,
                    mode: &mode_name,
                    recall,
                    lat: &lat,
                });
            }
        }
    }
}

pub fn run(ctx: &mut Ctx) {
    let w = ctx.w;
    let args = ctx.args;
    let candidate = candidate_name();
    let mut noted = false;
    for scalar in &args.scalars {
        let Some(kind) = scalar_kind(scalar) else {
            ctx.sink.note(&format!("usearch: unknown scalar kind {scalar}; skipped"));
            continue;
        };
        for &connectivity in &args.connectivity {
            for &expansion_add in &args.expansion_add {
                let es = args.expansion_search.first().copied().unwrap_or(64);
                let options = options(w.dim, kind, connectivity, expansion_add, es);
                let config = format!("{scalar} c{connectivity} ea{expansion_add}");
                let mut kept = None;
                for &threads in &args.build_threads {
                    drop(kept.take()); // free the previous build before the next
                    let rss0 = rss_bytes();
                    let (index, seconds, cpu_seconds) = build(w, w.n(), &options, threads);
                    let rss_growth = rss_bytes().saturating_sub(rss0);
                    if !noted {
                        ctx.sink.note(&format!(
                            "usearch {}: hardware acceleration of the built index: {}",
                            usearch::version(),
                            index.hardware_acceleration()
                        ));
                        noted = true;
                    }
                    let (save_ms, load_ms, file_bytes) = if args.save {
                        let (s, l, b) = save_and_load(ctx, &index, &options);
                        (Some(s), Some(l), Some(b))
                    } else {
                        (None, None, None)
                    };
                    ctx.sink.build(BuildRow {
                        set: w.kind.name(),
                        n: w.n(),
                        candidate,
                        config: &config,
                        threads,
                        seconds,
                        cpu_seconds,
                        crate_mem: Some(index.memory_usage() as u64),
                        rss_growth,
                        save_ms,
                        load_ms,
                        file_bytes,
                    });
                    kept = Some(index);
                }
                let index = kept.expect("at least one build");
                let ann = Usearch { index, scope_of: &w.scope_of };
                let rerank: &[usize] = if scalar == "f32" { &[] } else { &args.rerank };
                for &es in &args.expansion_search {
                    ann.index.change_expansion_search(es);
                    evaluate(ctx, &ann, candidate, &config, &format!("es{es}"), rerank);
                }
                let churn = remove_and_readd(w, &ann.index, CHURN);
                ctx.sink.note(&format!(
                    "{candidate} {config}: remove {CHURN} keys {:.1} us each, add them back {:.0} us each (thread CPU); size after {}",
                    churn.0,
                    churn.1,
                    ann.index.size()
                ));
            }
        }
    }
}
