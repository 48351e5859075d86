//! The exact baseline, as rust/src/index/dense.rs does it: unit vectors, a dot
//! product with four accumulators, `select_nth_unstable` for the top k, one thread.

/// Cosine of two unit vectors. The same kernel as dense.rs.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..4 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

pub fn unit_in_place(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Reusable scratch for [`top_k`], so a query allocates nothing.
#[derive(Default)]
pub struct Scratch {
    scored: Vec<(f32, u32)>,
}

/// The `k` rows of `block` (row-major, `dim` wide) most similar to `query`, best
/// first, as keys: `keys[row]` when given, else the row number.
pub fn top_k(
    block: &[f32],
    dim: usize,
    keys: Option<&[u32]>,
    query: &[f32],
    k: usize,
    scratch: &mut Scratch,
) -> Vec<u32> {
    let found = &mut scratch.scored;
    found.clear();
    for (row, v) in block.chunks_exact(dim).enumerate() {
        let key = keys.map_or(row as u32, |keys| keys[row]);
        found.push((dot(query, v), key));
    }
    let by_score = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if found.len() > k {
        found.select_nth_unstable_by(k - 1, by_score);
        found.truncate(k);
    }
    found.sort_by(by_score);
    found.iter().map(|&(_, key)| key).collect()
}

/// The `k` of `candidates` most similar to `query` by their f32 vectors in
/// `data` (the re-rank after a quantised search).
pub fn rerank(data: &[f32], dim: usize, query: &[f32], candidates: &[u64], k: usize) -> Vec<u32> {
    let mut scored: Vec<(f32, u32)> = candidates
        .iter()
        .map(|&c| {
            let c = c as usize;
            (dot(query, &data[c * dim..(c + 1) * dim]), c as u32)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(k);
    scored.into_iter().map(|(_, key)| key).collect()
}

/// Exact top-k of every query, over `threads` threads (ground truth, untimed).
pub fn truth(
    block: &[f32],
    dim: usize,
    keys: Option<&[u32]>,
    queries: &[f32],
    k: usize,
    threads: usize,
) -> Vec<Vec<u32>> {
    let nq = queries.len() / dim;
    let threads = threads.max(1).min(nq.max(1));
    let per = nq.div_ceil(threads);
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); nq];
    std::thread::scope(|s| {
        for (t, chunk) in out.chunks_mut(per).enumerate() {
            s.spawn(move || {
                let mut scratch = Scratch::default();
                for (j, slot) in chunk.iter_mut().enumerate() {
                    let q = t * per + j;
                    *slot = top_k(block, dim, keys, &queries[q * dim..(q + 1) * dim], k, &mut scratch);
                }
            });
        }
    });
    out
}
