//! What every candidate is measured on: unscoped and scoped top-k against the
//! exact answers, and the exact scan's own latency.

use crate::args::Args;
use crate::data::{ScopeBlock, Workload};
use crate::exact::{self, Scratch};
use std::time::Instant;

use crate::report::{recall, stamp, Latencies, QueryRow, Sink};

pub struct Ctx<'a> {
    pub w: &'a Workload,
    pub truth: &'a Truth,
    pub args: &'a Args,
    pub sink: &'a mut Sink,
}

/// Exact top-k of every query: unscoped, in the biggest scope, in the mid scope.
pub struct Truth {
    pub all: Vec<Vec<u32>>,
    pub big: Vec<Vec<u32>>,
    pub mid: Vec<Vec<u32>>,
}

impl Truth {
    pub fn compute(w: &Workload, k: usize, threads: usize) -> Truth {
        let scoped = |s: &ScopeBlock| exact::truth(&s.block, w.dim, Some(&s.members), &w.queries, k, threads);
        Truth {
            all: exact::truth(&w.data, w.dim, None, &w.queries, k, threads),
            big: scoped(&w.big),
            mid: scoped(&w.mid),
        }
    }

    /// Mean cosine between each query and its `rank`-th exact neighbour.
    pub fn mean_cosine(&self, w: &Workload, rank: usize) -> f64 {
        let sum: f64 = self
            .all
            .iter()
            .enumerate()
            .filter_map(|(q, ids)| {
                ids.get(rank).map(|&i| exact::dot(w.query(q), w.vector(i as usize)) as f64)
            })
            .sum();
        sum / self.all.len().max(1) as f64
    }
}

/// The query kinds measured, with their truth and (for scoped ones) the scope.
pub fn query_kinds<'a>(ctx: &Ctx<'a>) -> [(&'static str, &'a [Vec<u32>], Option<u16>); 3] {
    [
        ("unscoped", &ctx.truth.all, None),
        ("scope10", &ctx.truth.big, Some(ctx.w.big.label)),
        ("scope1", &ctx.truth.mid, Some(ctx.w.mid.label)),
    ]
}

/// An index under test.
pub trait Ann {
    /// The keys of the (about) `k` nearest, best first; with `scope`, only
    /// vectors of that scope (the crate's in-search filter).
    fn search(&self, query: &[f32], k: usize, scope: Option<u16>) -> Vec<u64>;
}

/// Runs the queries in order against `ann` until all are done or the series
/// has used `budget_s` seconds (after at least `MIN_QUERIES`). With `rerank`,
/// fetches that many and re-ranks them to k with the f32 vectors.
/// Returns the mean recall and the latencies (one per query run).
pub fn series(
    ctx: &Ctx,
    ann: &dyn Ann,
    truth: &[Vec<u32>],
    scope: Option<u16>,
    rerank: Option<usize>,
) -> (f64, Latencies) {
    let (w, k) = (ctx.w, ctx.args.k);
    let mut lat = Latencies::with_capacity(w.nq());
    let mut total = 0.0;
    let began = Instant::now();
    for (q, truth) in truth.iter().enumerate() {
        if q >= MIN_QUERIES && began.elapsed().as_secs_f64() > ctx.args.query_budget {
            break;
        }
        let query = w.query(q);
        let start = stamp();
        let found: Vec<u32> = match rerank {
            Some(fetch) => exact::rerank(&w.data, w.dim, query, &ann.search(query, fetch, scope), k),
            None => ann.search(query, k, scope).into_iter().map(|key| key as u32).collect(),
        };
        lat.push(start);
        total += recall(&found, truth);
    }
    (total / lat.wall.len().max(1) as f64, lat)
}

/// The fewest queries a series runs, whatever its time budget.
pub const MIN_QUERIES: usize = 100;

/// The search modes: plain top-k, then top-k' re-ranked to k for each k' > k
/// in `rerank`.
pub fn modes(rerank: &[usize], k: usize) -> Vec<Option<usize>> {
    std::iter::once(None).chain(rerank.iter().filter(|&&r| r > k).map(|&r| Some(r))).collect()
}

/// Runs every query kind against `ann` in every mode of `rerank` (re-ranking
/// unscoped queries only, unless `--rerank-scoped`).
pub fn evaluate(ctx: &mut Ctx, ann: &dyn Ann, candidate: &str, config: &str, search: &str, rerank: &[usize]) {
    let w = ctx.w;
    for (query, truth, scope) in query_kinds(ctx) {
        let rerank = if scope.is_none() || ctx.args.rerank_scoped { rerank } else { &[] };
        let modes = modes(rerank, ctx.args.k);
        for mode in modes {
            let (recall, lat) = series(ctx, ann, truth, scope, mode);
            let mode_name = mode.map_or("plain".to_owned(), |fetch| format!("rerank{fetch}"));
            ctx.sink.query(QueryRow {
                set: w.kind.name(),
                n: w.n(),
                candidate,
                config,
                search,
                query,
                mode: &mode_name,
                recall,
                lat: &lat,
            });
        }
    }
}

/// The exact scan: over everything, over each test scope's contiguous block, and
/// over blocks of growing size (to find where a graph starts to win).
pub fn exact(ctx: &mut Ctx) {
    let (w, k, nq) = (ctx.w, ctx.args.k, ctx.args.exact_queries.min(ctx.w.nq()));
    let mut scratch = Scratch::default();
    let mut time = |block: &[f32], keys: Option<&[u32]>| {
        let mut lat = Latencies::with_capacity(nq);
        for q in 0..nq {
            let start = stamp();
            let found = exact::top_k(block, w.dim, keys, w.query(q), k, &mut scratch);
            lat.push(start);
            std::hint::black_box(found);
        }
        lat
    };
    let runs: Vec<(String, Latencies)> = {
        let mut runs = vec![
            ("unscoped".to_owned(), time(&w.data, None)),
            ("scope10".to_owned(), time(&w.big.block, Some(&w.big.members))),
            ("scope1".to_owned(), time(&w.mid.block, Some(&w.mid.members))),
        ];
        for &size in ctx.args.exact_sizes.iter().filter(|&&s| s <= w.n()) {
            runs.push((format!("block{size}"), time(&w.data[..size * w.dim], None)));
        }
        runs
    };
    for (query, lat) in &runs {
        ctx.sink.query(QueryRow {
            set: w.kind.name(),
            n: w.n(),
            candidate: "exact",
            config: "scan",
            search: "-",
            query,
            mode: "plain",
            recall: 1.0,
            lat,
        });
    }
}
