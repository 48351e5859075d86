//! hnsw_rs (pure Rust HNSW): filtered search through its `FilterT` trait,
//! dump and reload. It has no delete.

use std::time::Instant;

use hnsw_rs::prelude::*;

use crate::bench::{evaluate, Ann, Ctx};
use crate::data::Workload;
use crate::exact::dot;
use crate::report::{process_cpu, rss_bytes, BuildRow};

/// Cosine distance of unit vectors with the exact scan's kernel (hnsw_rs's own
/// `DistDot` folds serially unless built with its `simdeez_f` feature).
#[derive(Default, Clone, Copy)]
pub struct UnitDot;

impl Distance<f32> for UnitDot {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).max(0.0)
    }
}

type Graph<'b> = Hnsw<'b, f32, UnitDot>;

struct HnswRs<'a, 'b> {
    hnsw: &'a Graph<'b>,
    ef_search: usize,
    scope_of: &'a [u16],
}

impl Ann for HnswRs<'_, '_> {
    fn search(&self, query: &[f32], k: usize, scope: Option<u16>) -> Vec<u64> {
        let ef = self.ef_search.max(k);
        let found = match scope {
            None => self.hnsw.search(query, k, ef),
            Some(label) => {
                let filter = |id: &usize| self.scope_of[*id] == label;
                self.hnsw.search_filter(query, k, ef, Some(&filter as &dyn FilterT))
            }
        };
        found.iter().map(|n| n.d_id as u64).collect()
    }
}

/// Inserts every vector one call at a time, on `threads` threads. Returns the
/// graph, wall seconds and process CPU seconds.
fn build<'b>(w: &'b Workload, m: usize, ef_construction: usize, threads: usize) -> (Graph<'b>, f64, f64) {
    let hnsw = Graph::new(m, w.n(), 16, ef_construction, UnitDot);
    let threads = threads.max(1);
    let (start, cpu0) = (Instant::now(), process_cpu());
    std::thread::scope(|s| {
        for t in 0..threads {
            let hnsw = &hnsw;
            s.spawn(move || {
                for i in (t..w.n()).step_by(threads) {
                    hnsw.insert_slice((w.vector(i), i));
                }
            });
        }
    });
    (hnsw, start.elapsed().as_secs_f64(), process_cpu() - cpu0)
}

/// Dumps to two files, reloads; checks the answers agree.
fn dump_and_reload(ctx: &Ctx, hnsw: &Graph) -> (f64, f64, u64) {
    let dir = ctx.args.tmp.join(format!("ann_bench_hnsw_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("hnsw dump dir");
    let start = Instant::now();
    let basename = hnsw.file_dump(&dir, "index").expect("hnsw dump");
    let save_ms = start.elapsed().as_secs_f64() * 1e3;
    let bytes: u64 = ["graph", "data"]
        .iter()
        .filter_map(|ext| std::fs::metadata(dir.join(format!("{basename}.hnsw.{ext}"))).ok())
        .map(|m| m.len())
        .sum();
    let load_ms;
    {
        let mut io = HnswIo::new(&dir, &basename);
        let start = Instant::now();
        let loaded: Graph = io.load_hnsw::<f32, UnitDot>().expect("hnsw reload");
        load_ms = start.elapsed().as_secs_f64() * 1e3;
        for q in 0..ctx.w.nq().min(20) {
            let a: Vec<usize> = hnsw.search(ctx.w.query(q), ctx.args.k, 64).iter().map(|n| n.d_id).collect();
            let b: Vec<usize> =
                loaded.search(ctx.w.query(q), ctx.args.k, 64).iter().map(|n| n.d_id).collect();
            assert_eq!(a, b, "hnsw_rs: a reloaded index answers differently");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    (save_ms, load_ms, bytes)
}

pub fn run(ctx: &mut Ctx) {
    let (w, args) = (ctx.w, ctx.args);
    let m = args.hnsw_m;
    for &ef_construction in &args.hnsw_ef_construction {
        let config = format!("f32 m{m} efc{ef_construction}");
        let mut kept = None;
        for &threads in &args.build_threads {
            drop(kept.take()); // free the previous build before the next
            let rss0 = rss_bytes();
            let (mut hnsw, seconds, cpu_seconds) = build(w, m, ef_construction, threads);
            hnsw.set_searching_mode(true);
            let rss_growth = rss_bytes().saturating_sub(rss0);
            let (save_ms, load_ms, file_bytes) = if args.save {
                let (s, l, b) = dump_and_reload(ctx, &hnsw);
                (Some(s), Some(l), Some(b))
            } else {
                (None, None, None)
            };
            ctx.sink.build(BuildRow {
                set: w.kind.name(),
                n: w.n(),
                candidate: "hnsw_rs",
                config: &config,
                threads,
                seconds,
                cpu_seconds,
                crate_mem: None,
                rss_growth,
                save_ms,
                load_ms,
                file_bytes,
            });
            kept = Some(hnsw);
        }
        let hnsw = kept.expect("at least one build");
        for &ef_search in &args.expansion_search {
            let ann = HnswRs { hnsw: &hnsw, ef_search, scope_of: &w.scope_of };
            evaluate(ctx, &ann, "hnsw_rs", &config, &format!("ef{ef_search}"), &[]);
        }
    }
}
