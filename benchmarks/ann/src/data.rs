//! The generated workload: unit vectors, their scopes and the queries.

use crate::exact::unit_in_place;

/// xoshiro256** seeded through splitmix64: deterministic and dependency-free.
pub struct Rng {
    s: [u64; 4],
    spare: Option<f64>,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng { s: [next(), next(), next(), next()], spare: None }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        let r = (-2.0 * u1.ln()).sqrt();
        let theta = std::f64::consts::TAU * u2;
        self.spare = Some(r * theta.sin());
        r * theta.cos()
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// I.i.d. normal components, normalised: the hardest case for a graph index.
    Random,
    /// 1,000 random centres; each vector is a centre plus Gaussian noise with
    /// cosine ~0.7 to its centre, normalised. Closer to sentence embeddings.
    Clustered,
}

impl Kind {
    pub fn parse(s: &str) -> Result<Kind, String> {
        match s {
            "random" => Ok(Kind::Random),
            "clustered" => Ok(Kind::Clustered),
            other => Err(format!("unknown vector set {other:?} (random, clustered)")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Random => "random",
            Kind::Clustered => "clustered",
        }
    }
}

pub const CENTRES: usize = 1000;
pub const TARGET_COSINE: f64 = 0.7;

/// One scope under test: its label, members (ascending ids) and their vectors
/// copied into one contiguous block, as the engine's exact index keeps them.
pub struct ScopeBlock {
    pub label: u16,
    pub members: Vec<u32>,
    pub block: Vec<f32>,
}

pub struct Workload {
    pub kind: Kind,
    pub dim: usize,
    /// `n * dim` unit vectors; vector `i` has key `i`.
    pub data: Vec<f32>,
    /// The scope label of each vector.
    pub scope_of: Vec<u16>,
    /// The size of each scope, by label; label 0 is the biggest.
    pub scope_sizes: Vec<usize>,
    /// `queries * dim` unit vectors drawn like the data, not members of it.
    pub queries: Vec<f32>,
    /// The biggest scope (~10% of n).
    pub big: ScopeBlock,
    /// The scope whose size is nearest 1% of n.
    pub mid: ScopeBlock,
    /// The Zipf exponent that gives the biggest scope its share.
    pub zipf_s: f64,
}

impl Workload {
    pub fn n(&self) -> usize {
        self.scope_of.len()
    }

    pub fn nq(&self) -> usize {
        self.queries.len() / self.dim
    }

    pub fn vector(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    pub fn query(&self, q: usize) -> &[f32] {
        &self.queries[q * self.dim..(q + 1) * self.dim]
    }

    pub fn generate(kind: Kind, n: usize, dim: usize, nq: usize, scopes: usize, seed: u64) -> Workload {
        let mut rng = Rng::new(seed ^ kind as u64);
        // Noise per component so that cos(centre, centre + noise) ~ TARGET_COSINE:
        // |noise|^2 ~ dim * sigma^2 and cos ~ 1 / sqrt(1 + dim * sigma^2).
        let sigma = ((1.0 / (TARGET_COSINE * TARGET_COSINE) - 1.0) / dim as f64).sqrt();
        let centres: Vec<f32> = match kind {
            Kind::Random => Vec::new(),
            Kind::Clustered => {
                let mut c = vec![0f32; CENTRES * dim];
                for row in c.chunks_exact_mut(dim) {
                    row.iter_mut().for_each(|x| *x = rng.normal() as f32);
                    unit_in_place(row);
                }
                c
            }
        };
        let draw = |rng: &mut Rng, out: &mut [f32]| {
            match kind {
                Kind::Random => out.iter_mut().for_each(|x| *x = rng.normal() as f32),
                Kind::Clustered => {
                    let c = rng.below(CENTRES);
                    let centre = &centres[c * dim..(c + 1) * dim];
                    for (x, m) in out.iter_mut().zip(centre) {
                        *x = m + (sigma * rng.normal()) as f32;
                    }
                }
            }
            unit_in_place(out);
        };
        let mut data = vec![0f32; n * dim];
        for row in data.chunks_exact_mut(dim) {
            draw(&mut rng, row);
        }
        // Queries from their own stream, so the data do not depend on their count.
        let mut qrng = Rng::new(seed.wrapping_mul(31).wrapping_add(7) ^ kind as u64);
        let mut queries = vec![0f32; nq * dim];
        for row in queries.chunks_exact_mut(dim) {
            draw(&mut qrng, row);
        }

        let (scope_sizes, zipf_s) = zipf_sizes(n, scopes, 0.10);
        let mut scope_of: Vec<u16> = Vec::with_capacity(n);
        for (label, &size) in scope_sizes.iter().enumerate() {
            scope_of.extend(std::iter::repeat(label as u16).take(size));
        }
        // Scopes interleave in arrival order, as real writes do.
        let mut srng = Rng::new(seed ^ 0x5C0E);
        srng.shuffle(&mut scope_of);

        let mid_label =
            (0..scope_sizes.len()).min_by_key(|&s| scope_sizes[s].abs_diff(n / 100)).unwrap_or(0) as u16;
        let block_of = |label: u16| {
            let members: Vec<u32> = (0..n as u32).filter(|&i| scope_of[i as usize] == label).collect();
            let mut block = Vec::with_capacity(members.len() * dim);
            for &i in &members {
                block.extend_from_slice(&data[i as usize * dim..(i as usize + 1) * dim]);
            }
            ScopeBlock { label, members, block }
        };
        let big = block_of(0);
        let mid = block_of(mid_label);
        Workload { kind, dim, data, scope_of, scope_sizes, queries, big, mid, zipf_s }
    }
}

/// Sizes of `scopes` scopes summing to `n`, proportional to 1 / rank^s, with `s`
/// chosen so that the biggest holds `top_share` of `n`. Every scope has at least one.
pub fn zipf_sizes(n: usize, scopes: usize, top_share: f64) -> (Vec<usize>, f64) {
    let share = |s: f64| 1.0 / (1..=scopes).map(|r| (r as f64).powf(-s)).sum::<f64>();
    // share(s) rises with s; bisect.
    let (mut lo, mut hi) = (0.0f64, 4.0f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if share(mid) < top_share {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let s = (lo + hi) / 2.0;
    let total: f64 = (1..=scopes).map(|r| (r as f64).powf(-s)).sum();
    let mut sizes: Vec<usize> =
        (1..=scopes).map(|r| ((n as f64 * (r as f64).powf(-s) / total).round() as usize).max(1)).collect();
    let sum: usize = sizes.iter().sum();
    if sum > n {
        sizes[0] -= (sum - n).min(sizes[0] - 1);
    } else {
        sizes[0] += n - sum;
    }
    (sizes, s)
}
