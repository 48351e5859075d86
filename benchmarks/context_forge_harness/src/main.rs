//! Runs the benchmark protocol of `benchmarks/measure.py` against the crates.io
//! `context-forge` crate and prints one JSON object with the same keys.
//!
//!     context_forge_harness WORKLOAD.json STORE_DIR {load|cold} [SAVE_SECONDS]
//!
//! The crate ranks with the wall clock and stamps entries itself, so the harness
//! builds entries through `ContextEngine` + `ContextStorage::save_batch` (the
//! crate's documented lower-level path) to keep the workload's timestamps,
//! shifted so the workload's `now` is the real now. Content is scrubbed as
//! `ContextForge::save` would. Token counts are the crate's own estimate.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use context_forge::engine::estimate_tokens;
use context_forge::{
    kind, open_storage, scrub_secrets, Config, ContextEngine, ContextEntry, SaveOptions,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};

const WARMUP: usize = 20;
const CONCURRENT_TASKS: usize = 2;

type Row = (String, Option<String>, f64);

#[derive(Deserialize)]
struct Workload {
    budget: usize,
    now: f64,
    entries: Vec<Row>,
    saves: Vec<Row>,
    queries: Vec<(String, Option<String>, usize)>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn percentile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let pos = (v.len() - 1) as f64 * q / 100.0;
    let low = pos.floor() as usize;
    let high = (low + 1).min(v.len() - 1);
    v[low] + (v[high] - v[low]) * (pos - low as f64)
}

fn latency_summary(out: &mut Map<String, Value>, prefix: &str, seconds: &[f64]) {
    let ms: Vec<f64> = seconds.iter().map(|s| s * 1000.0).collect();
    out.insert(format!("{prefix}_p50_ms"), json!(percentile(&ms, 50.0)));
    out.insert(format!("{prefix}_p99_ms"), json!(percentile(&ms, 99.0)));
    let mean = ms.iter().sum::<f64>() / ms.len().max(1) as f64;
    out.insert(format!("{prefix}_mean_ms"), json!(mean));
}

/// (VmRSS, VmHWM) in KiB.
fn memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn disk_bytes(path: &Path) -> u64 {
    let Ok(dir) = std::fs::read_dir(path) else {
        return 0;
    };
    dir.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

async fn open(store: &Path) -> Result<ContextEngine, BoxError> {
    std::fs::create_dir_all(store)?;
    let mut config = Config::default();
    config.db_path = store.join("memory.db");
    config.max_entries = usize::MAX; // no eviction: every system keeps everything
    let (storage, searcher) = open_storage(&config.db_path, config.max_entries).await?;
    Ok(ContextEngine::new(
        Box::new(storage),
        Box::new(searcher),
        config,
    ))
}

fn entry_from(row: &Row, shift: f64, scrub: &context_forge::ScrubConfig) -> ContextEntry {
    let content = scrub_secrets(&row.0, scrub).into_owned();
    ContextEntry {
        id: uuid::Uuid::now_v7().to_string(),
        token_count: Some(estimate_tokens(&content)),
        content,
        timestamp: (row.2 + shift) as i64,
        kind: kind::SNAPSHOT.to_owned(),
        scope: row.1.clone(),
        ..ContextEntry::default()
    }
}

async fn load_phase(
    wl: &Workload,
    store: &Path,
    save_seconds: f64,
) -> Result<Map<String, Value>, BoxError> {
    let mut out = Map::new();
    reset_peak();
    let baseline = memory_kib().0;
    let t = Instant::now();
    let engine = Arc::new(open(store).await?);
    out.insert(
        "open_empty_ms".into(),
        json!(t.elapsed().as_secs_f64() * 1000.0),
    );

    let shift = unix_now() - wl.now;
    let scrub = context_forge::ScrubConfig::default();
    let t = Instant::now();
    let entries: Vec<ContextEntry> = wl
        .entries
        .iter()
        .map(|r| entry_from(r, shift, &scrub))
        .collect();
    engine.storage().save_batch(&entries).await?;
    let ingest = t.elapsed().as_secs_f64();
    out.insert("ingest_s".into(), json!(ingest));
    out.insert("ingest_per_s".into(), json!(entries.len() as f64 / ingest));
    let ids: Vec<String> = entries.into_iter().map(|e| e.id).collect();

    for (text, scope, _) in wl.queries.iter().take(WARMUP) {
        engine.assemble(text, scope.as_deref(), wl.budget).await?;
    }
    let (mut latencies, mut found, mut hits_total, mut tokens_total) =
        (Vec::new(), 0usize, 0usize, 0usize);
    for (text, scope, target) in &wl.queries {
        let t = Instant::now();
        let hits = engine.assemble(text, scope.as_deref(), wl.budget).await?;
        latencies.push(t.elapsed().as_secs_f64());
        found += usize::from(hits.iter().any(|h| h.id == ids[*target]));
        hits_total += hits.len();
        tokens_total += hits
            .iter()
            .map(|h| h.token_count.unwrap_or(0))
            .sum::<usize>();
    }
    let n = wl.queries.len() as f64;
    latency_summary(&mut out, "query", &latencies);
    out.insert("qps_1".into(), json!(n / latencies.iter().sum::<f64>()));
    out.insert("target_recall".into(), json!(found as f64 / n));
    out.insert("hits_per_query".into(), json!(hits_total as f64 / n));
    out.insert("tokens_per_query".into(), json!(tokens_total as f64 / n));

    let t = Instant::now();
    let mut tasks = Vec::new();
    for part in 0..CONCURRENT_TASKS {
        let engine = Arc::clone(&engine);
        let queries: Vec<(String, Option<String>)> = wl
            .queries
            .iter()
            .skip(part)
            .step_by(CONCURRENT_TASKS)
            .map(|(text, scope, _)| (text.clone(), scope.clone()))
            .collect();
        let budget = wl.budget;
        tasks.push(tokio::spawn(async move {
            for (text, scope) in queries {
                engine.assemble(&text, scope.as_deref(), budget).await?;
            }
            Ok::<(), context_forge::Error>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    out.insert("qps_2".into(), json!(n / t.elapsed().as_secs_f64()));

    let (mut save_latencies, mut visible) = (Vec::new(), None);
    let started = Instant::now();
    for (content, scope, _) in &wl.saves {
        let opts = SaveOptions {
            scope: scope.clone(),
            ..SaveOptions::default()
        };
        let t = Instant::now();
        let id = engine
            .save_snapshot(&scrub_secrets(content, &scrub), kind::SNAPSHOT, &opts)
            .await?;
        save_latencies.push(t.elapsed().as_secs_f64());
        if visible.is_none() {
            let hits = engine
                .assemble(content, scope.as_deref(), wl.budget)
                .await?;
            visible = Some(hits.iter().any(|h| h.id == id));
        }
        if started.elapsed().as_secs_f64() > save_seconds {
            break;
        }
    }
    latency_summary(&mut out, "save", &save_latencies);
    out.insert("saves".into(), json!(save_latencies.len()));
    out.insert("save_visible".into(), json!(visible.unwrap_or(false)));

    drop(engine);
    let peak = memory_kib().1;
    out.insert("rss_baseline_mb".into(), json!(baseline as f64 / 1024.0));
    out.insert("rss_peak_mb".into(), json!(peak as f64 / 1024.0));
    out.insert(
        "rss_delta_mb".into(),
        json!((peak.saturating_sub(baseline)) as f64 / 1024.0),
    );
    out.insert("disk_mb".into(), json!(disk_bytes(store) as f64 / 1e6));
    Ok(out)
}

async fn cold_phase(wl: &Workload, store: &Path) -> Result<Map<String, Value>, BoxError> {
    let (text, scope, _) = &wl.queries[0];
    let t = Instant::now();
    let engine = open(store).await?;
    let opened = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let hits = engine.assemble(text, scope.as_deref(), wl.budget).await?;
    let queried = t.elapsed().as_secs_f64();
    if hits.is_empty() {
        return Err("the first query after a cold open found nothing".into());
    }
    let mut out = Map::new();
    out.insert("cold_open_ms".into(), json!(opened * 1000.0));
    out.insert("cold_first_query_ms".into(), json!(queried * 1000.0));
    out.insert("cold_total_ms".into(), json!((opened + queried) * 1000.0));
    Ok(out)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err(
            "usage: context_forge_harness WORKLOAD.json STORE_DIR {load|cold} [SAVE_SECONDS]"
                .into(),
        );
    }
    let wl: Workload = serde_json::from_slice(&std::fs::read(&args[1])?)?;
    let store = PathBuf::from(&args[2]);
    let save_seconds: f64 = args.get(4).map_or(Ok(30.0), |s| s.parse())?;
    let out = match args[3].as_str() {
        "load" => load_phase(&wl, &store, save_seconds).await?,
        "cold" => cold_phase(&wl, &store).await?,
        other => return Err(format!("unknown phase {other:?}").into()),
    };
    println!("{}", Value::Object(out));
    Ok(())
}
