//! The laws a skewed offset follows (zipf, pareto, normal, and the flat cells of zoned and
//! uniform), as the unnormalized probability of one block index and the shape of that
//! probability over a run of indexes, which the sampler's envelope and squeeze are built on.

/// The probability law of a block index, unnormalized.
#[derive(Debug, Clone, Copy)]
pub(super) enum Law {
    /// Rank k (0-based) has weight (k + 1)^-theta.
    Zipf { theta: f64 },
    /// Rank k has probability F(k) - F(k - 1), F(k) = ((k + 1) / n)^alpha.
    Pareto { alpha: f64, n: f64 },
    /// Block k has the probability that N(mean, sd) falls in [k, k + 1).
    Normal { mean: f64, sd: f64 },
    /// Weights are set per cell (zoned, uniform): p is constant inside a cell.
    Flat,
}

impl Law {
    pub(super) fn p(self, k: u64) -> f64 {
        match self {
            Law::Zipf { theta } => (k as f64 + 1.0).powf(-theta),
            Law::Pareto { alpha, n } => {
                if k == 0 {
                    (1.0 / n).powf(alpha)
                } else {
                    // F(k) - F(k-1) = (k/n)^a ((1 + 1/k)^a - 1), without the cancellation.
                    let k = k as f64;
                    (k / n).powf(alpha) * (alpha * (1.0 / k).ln_1p()).exp_m1()
                }
            }
            Law::Normal { mean, sd } => gauss_mass((k as f64 - mean) / sd, (k as f64 + 1.0 - mean) / sd),
            Law::Flat => 1.0,
        }
    }
}

impl Law {
    /// Whether p is convex (`Some(true)`) or concave (`Some(false)`) over the indexes
    /// `lo..=hi`, as a sequence; `None`: neither, or not known.
    pub(super) fn shape(self, lo: u64, hi: u64) -> Option<bool> {
        match self {
            // x^-theta is convex, and so are the differences of x^alpha for alpha < 1 (their
            // second differences are third differences of x^alpha, whose third derivative is
            // positive).
            Law::Zipf { .. } | Law::Pareto { .. } => Some(true),
            // p(k) is the integral of the bell's density over [k, k + 1), so its second
            // difference at k is that of the density over [k - 1, k + 2]: convex where the whole
            // stretch is a standard deviation or more from the mean, concave where it is within.
            Law::Normal { mean, sd } => {
                let (from, to) = (lo as f64 - 1.0 - mean, hi as f64 + 2.0 - mean);
                if from >= sd || to <= -sd {
                    Some(true)
                } else if from >= -sd && to <= sd {
                    Some(false)
                } else {
                    None
                }
            }
            Law::Flat => None,
        }
    }
}

/// P(a <= Z < b) for a standard normal Z, accurate in both tails (a difference of upper tails,
/// never of numbers near 1).
fn gauss_mass(a: f64, b: f64) -> f64 {
    let upper = |x: f64| 0.5 * libm::erfc(x / std::f64::consts::SQRT_2);
    if a >= 0.0 {
        upper(a) - upper(b)
    } else if b <= 0.0 {
        upper(-b) - upper(-a)
    } else {
        1.0 - upper(-a) - upper(b)
    }
}
