//! Command-line flags (`--name value`; lists are comma-separated).

use std::path::PathBuf;

use crate::data::Kind;

pub const USAGE: &str = "\
usage: ann_bench [--flag value]...
  --n 100000                    vectors per set
  --dim 384                     dimensions
  --queries 1000                queries per set
  --scopes 200                  scopes (Zipf sizes, biggest ~10% of n)
  --k 10                        neighbours per query
  --seed 42
  --sets clustered,random       vector sets
  --candidates exact,usearch,usearch-blocks,hnsw,libsql
  --scalars i8,f16,f32          usearch scalar kinds
  --connectivity 16,32          usearch connectivity (M)
  --expansion-add 64,128        usearch expansion_add (ef_construction)
  --expansion-search 32,64,128  usearch expansion_search (ef); also hnsw_rs ef_search
  --build-threads 2             build each index once per entry, e.g. 1,2 (queries use the last)
  --rerank 40                   k' for search-then-re-rank on i8/f16, a list (empty or 0: off)
  --rerank-scoped false         also re-rank the scoped (filtered) searches
  --query-budget 4              seconds per query series, after its first 100 queries
  --blocks 5000,10000,20000,50000
                                the `usearch-blocks` candidate: one graph per block of the
                                first m vectors (a per-scope index), with the first
                                scalar/connectivity/expansion-add given, vs exact over it
  --hnsw-m 16                   hnsw_rs max_nb_connection
  --hnsw-ef-construction 128    hnsw_rs ef_construction (list)
  --libsql-n 10000              libSQL gets the first libsql-n vectors (it is slow to insert)
  --libsql-index metric=cosine  libsql_vector_idx settings: ','-separated options,
                                ';' between variants (each gets its own table)
  --exact-sizes 1000,2000,5000,10000,20000,50000,100000
                                block sizes for the exact-scan latency curve (<= n)
  --exact-queries 300           queries per exact-scan latency measurement
  --truth-threads 2             threads for the (untimed) ground truth
  --save true                   time save + load (files under --tmp, removed after)
  --tmp DIR                     scratch directory (default: the system temp dir)
  --out DIR                     append queries.csv, builds.csv and notes.txt there
";

pub struct Args {
    pub n: usize,
    pub dim: usize,
    pub queries: usize,
    pub scopes: usize,
    pub k: usize,
    pub seed: u64,
    pub sets: Vec<Kind>,
    pub candidates: Vec<String>,
    pub scalars: Vec<String>,
    pub connectivity: Vec<usize>,
    pub expansion_add: Vec<usize>,
    pub expansion_search: Vec<usize>,
    pub build_threads: Vec<usize>,
    pub rerank: Vec<usize>,
    pub rerank_scoped: bool,
    pub query_budget: f64,
    pub blocks: Vec<usize>,
    pub hnsw_m: usize,
    pub hnsw_ef_construction: Vec<usize>,
    pub libsql_n: usize,
    pub libsql_index: Vec<Vec<String>>,
    pub exact_sizes: Vec<usize>,
    pub exact_queries: usize,
    pub truth_threads: usize,
    pub save: bool,
    pub tmp: PathBuf,
    pub out: Option<PathBuf>,
    raw: Vec<String>,
}

fn list<T: std::str::FromStr>(flag: &str, v: &str) -> Result<Vec<T>, String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().parse::<T>().map_err(|_| format!("{flag}: cannot parse {s:?}")))
        .collect()
}

fn one<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.trim().parse::<T>().map_err(|_| format!("{flag}: cannot parse {v:?}"))
}

impl Args {
    pub fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
        let mut a = Args {
            n: 100_000,
            dim: 384,
            queries: 1000,
            scopes: 200,
            k: 10,
            seed: 42,
            sets: vec![Kind::Clustered, Kind::Random],
            candidates: ["exact", "usearch", "usearch-blocks", "hnsw", "libsql"].map(String::from).to_vec(),
            scalars: ["i8", "f16", "f32"].map(String::from).to_vec(),
            connectivity: vec![16, 32],
            expansion_add: vec![64, 128],
            expansion_search: vec![32, 64, 128],
            build_threads: vec![2],
            rerank: vec![40],
            rerank_scoped: false,
            query_budget: 4.0,
            blocks: vec![5000, 10_000, 20_000, 50_000],
            hnsw_m: 16,
            hnsw_ef_construction: vec![128],
            libsql_n: 10_000,
            libsql_index: vec![vec!["metric=cosine".into()]],
            exact_sizes: vec![1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000],
            exact_queries: 300,
            truth_threads: 2,
            save: true,
            tmp: std::env::temp_dir(),
            out: None,
            raw: Vec::new(),
        };
        while let Some(flag) = it.next() {
            if flag == "--help" || flag == "-h" {
                println!("{USAGE}");
                std::process::exit(0);
            }
            let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            a.raw.push(format!("{flag} {v}"));
            match flag.as_str() {
                "--n" => a.n = one(&flag, &v)?,
                "--dim" => a.dim = one(&flag, &v)?,
                "--queries" => a.queries = one(&flag, &v)?,
                "--scopes" => a.scopes = one(&flag, &v)?,
                "--k" => a.k = one(&flag, &v)?,
                "--seed" => a.seed = one(&flag, &v)?,
                "--sets" => a.sets = v.split(',').map(Kind::parse).collect::<Result<_, _>>()?,
                "--candidates" => a.candidates = list(&flag, &v)?,
                "--scalars" => a.scalars = list(&flag, &v)?,
                "--connectivity" => a.connectivity = list(&flag, &v)?,
                "--expansion-add" => a.expansion_add = list(&flag, &v)?,
                "--expansion-search" => a.expansion_search = list(&flag, &v)?,
                "--build-threads" => a.build_threads = list(&flag, &v)?,
                "--rerank" => a.rerank = list(&flag, &v)?,
                "--rerank-scoped" => a.rerank_scoped = one(&flag, &v)?,
                "--query-budget" => a.query_budget = one(&flag, &v)?,
                "--blocks" => a.blocks = list(&flag, &v)?,
                "--hnsw-m" => a.hnsw_m = one(&flag, &v)?,
                "--hnsw-ef-construction" => a.hnsw_ef_construction = list(&flag, &v)?,
                "--libsql-n" => a.libsql_n = one(&flag, &v)?,
                "--libsql-index" => {
                    a.libsql_index = v
                        .split(';')
                        .map(|variant| list::<String>(&flag, variant))
                        .collect::<Result<_, _>>()?
                }
                "--exact-sizes" => a.exact_sizes = list(&flag, &v)?,
                "--exact-queries" => a.exact_queries = one(&flag, &v)?,
                "--truth-threads" => a.truth_threads = one(&flag, &v)?,
                "--save" => a.save = one(&flag, &v)?,
                "--tmp" => a.tmp = PathBuf::from(v),
                "--out" => a.out = Some(PathBuf::from(v)),
                _ => return Err(format!("unknown flag {flag}")),
            }
        }
        if a.k == 0 || a.dim == 0 || a.n < a.scopes || a.queries == 0 {
            return Err("need k, dim, queries > 0 and n >= scopes".into());
        }
        if a.build_threads.is_empty() {
            a.build_threads = vec![1];
        }
        Ok(a)
    }

    /// The flags as given, for the record.
    pub fn describe(&self) -> String {
        if self.raw.is_empty() {
            "(defaults)".into()
        } else {
            self.raw.join(" ")
        }
    }
}
