//! The dense kernels of the forward pass: linear layers (sgemm from
//! `matrixmultiply`), layer norm, exact GELU, softmax.

/// `out[n, d_out] = x[n, d_in] @ w^T + b`, with `w` stored `[d_out, d_in]` as in
/// PyTorch checkpoints.
pub fn linear(x: &[f32], n: usize, w: &[f32], b: &[f32], out: &mut [f32]) {
    let d_out = b.len();
    let d_in = w.len() / d_out;
    debug_assert_eq!(x.len(), n * d_in);
    debug_assert_eq!(out.len(), n * d_out);
    for row in out.chunks_exact_mut(d_out) {
        row.copy_from_slice(b);
    }
    // SAFETY: the slices hold exactly the n*d_in, d_out*d_in and n*d_out elements
    // the strides address (checked above and by the callers' shapes).
    unsafe {
        matmul_strided(
            (n, d_in, d_out),
            (x.as_ptr(), d_in, 1),
            (w.as_ptr(), 1, d_in),
            (out.as_mut_ptr(), d_out, 1),
            1.0,
            1.0,
        );
    }
}

/// Rows per thread below which splitting a linear layer costs more than it saves.
const MIN_ROWS_PER_THREAD: usize = 8;

/// `linear` with the rows split over up to `threads` parts on the crate's
/// pool, so that a lone short batch still uses every core. Each row's arithmetic is unchanged.
pub fn linear_par(x: &[f32], n: usize, w: &[f32], b: &[f32], out: &mut [f32], threads: usize) {
    let parts = threads.min(n / MIN_ROWS_PER_THREAD);
    if parts <= 1 {
        return linear(x, n, w, b, out);
    }
    let (d_in, d_out) = (w.len() / b.len(), b.len());
    let rows = n.div_ceil(parts);
    crate::runtime::pool().scope(|scope| {
        for (x, out) in x.chunks(rows * d_in).zip(out.chunks_mut(rows * d_out)) {
            scope.spawn(move |_| linear(x, x.len() / d_in, w, b, out));
        }
    });
}

/// `c = alpha * a @ b + beta * c` for `(m, k, n)`, each matrix given as
/// (pointer, row stride, column stride).
///
/// # Safety
/// Every element the dimensions and strides address must be in bounds, and `c`
/// must not overlap `a` or `b`.
pub unsafe fn matmul_strided(
    (m, k, n): (usize, usize, usize),
    a: (*const f32, usize, usize),
    b: (*const f32, usize, usize),
    c: (*mut f32, usize, usize),
    alpha: f32,
    beta: f32,
) {
    let s = |v: usize| isize::try_from(v).unwrap_or(isize::MAX);
    matrixmultiply::sgemm(
        m,
        k,
        n,
        alpha,
        a.0,
        s(a.1),
        s(a.2),
        b.0,
        s(b.1),
        s(b.2),
        beta,
        c.0,
        s(c.1),
        s(c.2),
    );
}

/// In place over each row of width `gamma.len()`; statistics in f64.
pub fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f64) {
    let width = gamma.len();
    for row in x.chunks_exact_mut(width) {
        let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / width as f64;
        let var = row.iter().map(|&v| (f64::from(v) - mean).powi(2)).sum::<f64>() / width as f64;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, &g), &b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = ((f64::from(*v) - mean) * inv) as f32 * g + b;
        }
    }
}

/// Exact GELU, `x/2 * (1 + erf(x/sqrt(2)))`, as BERT's "gelu" activation.
pub fn gelu(x: &mut [f32]) {
    for v in x {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// erf to within a few 1e-7 absolute (Numerical Recipes' `erfc` Chebyshev fit,
/// 1.2e-7 relative, evaluated in f32): far below what the f32 activations
/// resolve. f32 keeps GELU, a tenth of the forward pass, cheap.
pub fn erf(x: f32) -> f32 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_2
        + t * (1.000_023_7
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_204
                                + t * (1.488_515_9 + t * (-0.822_152_24 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 {
        1.0 - erfc
    } else {
        erfc - 1.0
    }
}

/// In place over one row of attention scores.
pub fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in row {
        *v *= inv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (-2.0, -0.995_322_265_018_952_7),
            (3.5, 0.999_999_256_901_627_7),
        ] {
            let got = f64::from(erf(x as f32));
            assert!((got - want).abs() < 4e-7, "erf({x}) = {got}");
        }
    }

    #[test]
    fn linear_uses_pytorch_layout() {
        // w = [[1, 2], [3, 4], [5, 6]] maps 2 inputs to 3 outputs.
        let w = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let mut out = [0.0; 6];
        linear(&[1.0, 1.0, 0.0, 2.0], 2, &w, &[0.5, 0.0, -1.0], &mut out);
        assert_eq!(out, [3.5, 7.0, 10.0, 4.5, 8.0, 11.0]);
    }

    #[test]
    fn softmax_sums_to_one() {
        let mut row = [0.0, 0.0, 1000.0_f32.ln()];
        softmax(&mut row);
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((row[0] - 1.0 / 1002.0).abs() < 1e-6);
    }

    #[test]
    fn layer_norm_centres_and_scales() {
        let mut x = [1.0, 3.0];
        layer_norm(&mut x, &[1.0, 1.0], &[0.0, 0.0], 1e-12);
        assert!((x[0] + 1.0).abs() < 1e-6 && (x[1] - 1.0).abs() < 1e-6);
    }
}
