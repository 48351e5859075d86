//! Latency percentiles, recall, RSS, and the result rows (printed as markdown
//! tables and, with `--out DIR`, appended to CSV files).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

fn clock(id: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer; both clocks exist on Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// CPU time of the calling thread, seconds.
pub fn thread_cpu() -> f64 {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time of the whole process (all threads), seconds.
pub fn process_cpu() -> f64 {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// The start of one timed operation: wall clock and this thread's CPU clock.
pub struct Stamp(Instant, f64);

pub fn stamp() -> Stamp {
    Stamp(Instant::now(), thread_cpu())
}

/// Per-query latencies in microseconds: wall time, and the CPU time of the
/// querying thread (which a busy shared machine does not inflate).
pub struct Latencies {
    pub wall: Vec<f64>,
    pub cpu: Vec<f64>,
}

pub fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[rank.min(v.len() - 1)]
}

impl Latencies {
    pub fn with_capacity(n: usize) -> Self {
        Latencies { wall: Vec::with_capacity(n), cpu: Vec::with_capacity(n) }
    }

    pub fn push(&mut self, start: Stamp) {
        let cpu = thread_cpu();
        self.wall.push(start.0.elapsed().as_secs_f64() * 1e6);
        self.cpu.push((cpu - start.1) * 1e6);
    }

    pub fn mean(&self) -> f64 {
        self.wall.iter().sum::<f64>() / self.wall.len().max(1) as f64
    }
}

/// The share of `truth` found in `found` (recall@|truth|).
pub fn recall(found: &[u32], truth: &[u32]) -> f64 {
    if truth.is_empty() {
        return 1.0;
    }
    let hits = truth.iter().filter(|t| found.contains(t)).count();
    hits as f64 / truth.len() as f64
}

/// Resident set size of this process, in bytes (0 where /proc is missing).
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// `field` as one CSV field (quoted when it holds a comma or a quote).
fn csv_field(field: &str) -> String {
    if field.contains([',', '"']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// One timed query series.
pub struct QueryRow<'a> {
    pub set: &'a str,
    pub n: usize,
    pub candidate: &'a str,
    pub config: &'a str,
    pub search: &'a str,
    pub query: &'a str,
    pub mode: &'a str,
    pub recall: f64,
    pub lat: &'a Latencies,
}

/// One index build.
pub struct BuildRow<'a> {
    pub set: &'a str,
    pub n: usize,
    pub candidate: &'a str,
    pub config: &'a str,
    pub threads: usize,
    pub seconds: f64,
    /// CPU seconds of the whole process while building (all threads).
    pub cpu_seconds: f64,
    /// The crate's own memory report, bytes (None where it has none).
    pub crate_mem: Option<u64>,
    pub rss_growth: u64,
    pub save_ms: Option<f64>,
    pub load_ms: Option<f64>,
    pub file_bytes: Option<u64>,
}

pub struct Sink {
    out: Option<PathBuf>,
    /// The table stdout is in the middle of ("" for none), so a header is
    /// printed whenever the kind of row changes.
    table: &'static str,
}

impl Sink {
    pub fn new(out: Option<PathBuf>) -> Self {
        if let Some(dir) = &out {
            std::fs::create_dir_all(dir).expect("create --out directory");
        }
        Sink { out, table: "" }
    }

    fn append(&self, file: &str, header: &str, line: &str) {
        let Some(dir) = &self.out else { return };
        let path = dir.join(file);
        let fresh = !path.exists();
        let mut f = OpenOptions::new().create(true).append(true).open(&path).expect("open csv");
        if fresh {
            writeln!(f, "{header}").unwrap();
        }
        writeln!(f, "{line}").unwrap();
    }

    pub fn query(&mut self, r: QueryRow) {
        if self.table != "query" {
            println!("\n| set | n | candidate | config | search | query | mode | q | recall@10 | p50 us | p99 us | cpu p50 us | cpu p99 us |");
            println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
            self.table = "query";
        }
        let (p50, p99) = (percentile(&r.lat.wall, 50.0), percentile(&r.lat.wall, 99.0));
        let (cpu50, cpu99) = (percentile(&r.lat.cpu, 50.0), percentile(&r.lat.cpu, 99.0));
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.3} | {:.0} | {:.0} | {:.0} | {:.0} |",
            r.set,
            r.n,
            r.candidate,
            r.config,
            r.search,
            r.query,
            r.mode,
            r.lat.wall.len(),
            r.recall,
            p50,
            p99,
            cpu50,
            cpu99
        );
        self.append(
            "queries.csv",
            "set,n,candidate,config,search,query,mode,recall,p50_us,p99_us,mean_us,cpu_p50_us,cpu_p99_us,queries",
            &format!(
                "{},{},{},{},{},{},{},{:.4},{:.1},{:.1},{:.1},{:.1},{:.1},{}",
                r.set,
                r.n,
                r.candidate,
                csv_field(r.config),
                r.search,
                r.query,
                r.mode,
                r.recall,
                p50,
                p99,
                r.lat.mean(),
                cpu50,
                cpu99,
                r.lat.wall.len()
            ),
        );
    }

    pub fn build(&mut self, r: BuildRow) {
        if self.table != "build" {
            println!("\n| set | n | candidate | config | threads | build s | vectors/s | vectors/cpu-s | crate MiB | RSS growth MiB | save ms | load ms | file MiB |");
            println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
            self.table = "build";
        }
        let opt = |v: Option<f64>, prec: usize| v.map_or("-".to_owned(), |v| format!("{v:.prec$}"));
        let rate = r.n as f64 / r.seconds;
        println!(
            "| {} | {} | {} | {} | {} | {:.1} | {:.0} | {:.0} | {} | {:.0} | {} | {} | {} |",
            r.set,
            r.n,
            r.candidate,
            r.config,
            r.threads,
            r.seconds,
            rate,
            r.n as f64 / r.cpu_seconds,
            opt(r.crate_mem.map(mib), 0),
            mib(r.rss_growth),
            opt(r.save_ms, 0),
            opt(r.load_ms, 0),
            opt(r.file_bytes.map(mib), 0),
        );
        let csv_opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.1}"));
        self.append(
            "builds.csv",
            "set,n,candidate,config,threads,build_s,vectors_per_s,cpu_s,vectors_per_cpu_s,crate_mem_bytes,rss_growth_bytes,save_ms,load_ms,file_bytes",
            &format!(
                "{},{},{},{},{},{:.2},{:.0},{:.2},{:.0},{},{},{},{},{}",
                r.set,
                r.n,
                r.candidate,
                csv_field(r.config),
                r.threads,
                r.seconds,
                rate,
                r.cpu_seconds,
                r.n as f64 / r.cpu_seconds,
                r.crate_mem.map_or(String::new(), |v| v.to_string()),
                r.rss_growth,
                csv_opt(r.save_ms),
                csv_opt(r.load_ms),
                r.file_bytes.map_or(String::new(), |v| v.to_string()),
            ),
        );
    }

    /// A free-form note (printed, and kept in notes.txt).
    pub fn note(&mut self, text: &str) {
        self.table = "";
        println!("{text}");
        if let Some(dir) = &self.out {
            let mut f =
                OpenOptions::new().create(true).append(true).open(dir.join("notes.txt")).expect("open notes");
            writeln!(f, "{text}").unwrap();
        }
    }
}
