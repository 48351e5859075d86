//! libSQL's own vector index (DiskANN in the database file): an `F32_BLOB`
//! column, `libsql_vector_idx`, `vector_top_k`. It cannot filter by scope, so
//! only unscoped queries are measured, on the first `--libsql-n` vectors.

use std::time::Instant;

use libsql::{params, Builder, Connection};

use crate::bench::Ctx;
use crate::exact;
use crate::report::{process_cpu, recall, rss_bytes, stamp, BuildRow, Latencies, QueryRow};

const ROWS_PER_TRANSACTION: usize = 1000;

fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A fresh database at `path` with one vector table and its index.
async fn open(path: &str, dim: usize, options: &[String]) -> libsql::Result<Connection> {
    let db = Builder::new_local(path).build().await?;
    let conn = db.connect()?;
    conn.query("PRAGMA journal_mode = WAL", ()).await?;
    conn.execute("PRAGMA synchronous = NORMAL", ()).await?;
    conn.execute(&format!("CREATE TABLE v (id INTEGER PRIMARY KEY, emb F32_BLOB({dim}))"), ()).await?;
    let options: String = options.iter().map(|o| format!(", '{}'", o.replace('\'', "''"))).collect();
    conn.execute(&format!("CREATE INDEX v_idx ON v (libsql_vector_idx(emb{options}))"), ()).await?;
    Ok(conn)
}

pub fn run(ctx: &mut Ctx) {
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("tokio runtime");
    let n = ctx.args.libsql_n.min(ctx.w.n());
    // Ground truth over the same prefix.
    let truth = exact::truth(
        &ctx.w.data[..n * ctx.w.dim],
        ctx.w.dim,
        None,
        &ctx.w.queries,
        ctx.args.k,
        ctx.args.truth_threads,
    );
    for options in &ctx.args.libsql_index {
        if let Err(err) = rt.block_on(run_one(ctx, n, options, &truth)) {
            ctx.sink.note(&format!("libsql ({}): failed: {err}", options.join(",")));
        }
    }
}

async fn run_one(ctx: &mut Ctx<'_>, n: usize, options: &[String], truth: &[Vec<u32>]) -> libsql::Result<()> {
    let (w, args) = (ctx.w, ctx.args);
    let dir = args.tmp.join(format!("ann_bench_libsql_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("libsql dir");
    let path = dir.join("vectors.db");
    let path_str = path.to_str().expect("utf-8 temp path");
    let config = options.join(",");

    let rss0 = rss_bytes();
    let conn = open(path_str, w.dim, options).await?;
    let insert = conn.prepare("INSERT INTO v (id, emb) VALUES (?1, vector32(?2))").await?;
    let (start, cpu0) = (Instant::now(), process_cpu());
    for chunk_start in (0..n).step_by(ROWS_PER_TRANSACTION) {
        conn.execute("BEGIN", ()).await?;
        for i in chunk_start..(chunk_start + ROWS_PER_TRANSACTION).min(n) {
            insert.execute(params![i as i64, blob(w.vector(i))]).await?;
            insert.reset();
        }
        conn.execute("COMMIT", ()).await?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu() - cpu0;
    let rss_growth = rss_bytes().saturating_sub(rss0);
    let file_bytes: u64 = std::fs::read_dir(&dir)
        .map(|entries| entries.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0);
    ctx.sink.build(BuildRow {
        set: w.kind.name(),
        n,
        candidate: "libsql",
        config: &config,
        threads: 1,
        seconds,
        cpu_seconds,
        crate_mem: None,
        rss_growth,
        save_ms: None,
        load_ms: None,
        file_bytes: Some(file_bytes),
    });

    let sql = format!("SELECT id FROM vector_top_k('v_idx', vector32(?1), {})", args.k);
    let select = conn.prepare(&sql).await?;
    let mut lat = Latencies::with_capacity(w.nq());
    let mut total = 0.0;
    for (q, truth) in truth.iter().enumerate() {
        let query = blob(w.query(q));
        let start = stamp();
        let mut rows = select.query(params![query]).await?;
        let mut found = Vec::with_capacity(args.k);
        while let Some(row) = rows.next().await? {
            found.push(row.get::<i64>(0)? as u32);
        }
        select.reset();
        lat.push(start);
        total += recall(&found, truth);
    }
    ctx.sink.query(QueryRow {
        set: w.kind.name(),
        n,
        candidate: "libsql",
        config: &config,
        search: "-",
        query: "unscoped",
        mode: "plain",
        recall: total / w.nq() as f64,
        lat: &lat,
    });
    drop(select);
    drop(insert);
    drop(conn);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
