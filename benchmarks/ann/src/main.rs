//! Compares approximate nearest-neighbour indexes for contextforge's dense
//! search on one generated workload: usearch, hnsw_rs, libSQL's vector index
//! and the exact scan the engine does today. `--help` lists the flags.

mod args;
mod bench;
mod data;
mod exact;
mod report;

#[cfg(feature = "hnsw")]
mod hnsw;
#[cfg(feature = "libsql")]
mod libsql_index;
#[cfg(feature = "usearch")]
mod usearch_index;

use std::time::Instant;

use args::Args;
use bench::{Ctx, Truth};
use data::Workload;
use report::Sink;

fn main() {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(msg) => {
            eprintln!("{msg}\n\n{}", args::USAGE);
            std::process::exit(2);
        }
    };
    let mut sink = Sink::new(args.out.clone());
    sink.note(&format!("# ann_bench {}", args.describe()));
    sink.note(&format!("features: {}", compiled_features()));
    for &kind in &args.sets {
        let t = Instant::now();
        let w = Workload::generate(kind, args.n, args.dim, args.queries, args.scopes, args.seed);
        let smallest = w.scope_sizes.iter().min().copied().unwrap_or(0);
        sink.note(&format!(
            "\n## set {}: n {} dim {} queries {}; {} scopes (Zipf s = {:.3}): biggest {} ({:.1}%), mid (label {}) {} ({:.2}%), smallest {}; generated in {:.1} s",
            kind.name(),
            w.n(),
            w.dim,
            w.nq(),
            w.scope_sizes.len(),
            w.zipf_s,
            w.big.members.len(),
            100.0 * w.big.members.len() as f64 / w.n() as f64,
            w.mid.label,
            w.mid.members.len(),
            100.0 * w.mid.members.len() as f64 / w.n() as f64,
            smallest,
            t.elapsed().as_secs_f64()
        ));
        let t = Instant::now();
        let truth = Truth::compute(&w, args.k, args.truth_threads);
        sink.note(&format!(
            "ground truth (exact top-{}, {} threads) in {:.1} s; mean cosine of the 1st/10th neighbour {:.3}/{:.3}",
            args.k,
            args.truth_threads,
            t.elapsed().as_secs_f64(),
            truth.mean_cosine(&w, 0),
            truth.mean_cosine(&w, args.k - 1)
        ));
        let mut ctx = Ctx { w: &w, truth: &truth, args: &args, sink: &mut sink };
        for candidate in &args.candidates {
            match candidate.as_str() {
                "exact" => bench::exact(&mut ctx),
                #[cfg(feature = "usearch")]
                "usearch" => usearch_index::run(&mut ctx),
                #[cfg(feature = "usearch")]
                "usearch-blocks" => usearch_index::blocks(&mut ctx),
                #[cfg(feature = "hnsw")]
                "hnsw" => hnsw::run(&mut ctx),
                #[cfg(feature = "libsql")]
                "libsql" => libsql_index::run(&mut ctx),
                other => ctx
                    .sink
                    .note(&format!("candidate {other} is not compiled in (see Cargo features); skipped")),
            }
        }
    }
}

fn compiled_features() -> String {
    let mut f = Vec::new();
    if cfg!(feature = "usearch") {
        f.push("usearch");
    }
    if cfg!(feature = "numkong") {
        f.push("numkong");
    }
    if cfg!(feature = "hnsw") {
        f.push("hnsw");
    }
    if cfg!(feature = "libsql") {
        f.push("libsql");
    }
    f.join(",")
}
