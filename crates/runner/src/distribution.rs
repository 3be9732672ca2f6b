//! Skewed random offsets: an exact sampler of a block index in `0..n` for every
//! `--distribution` (definitions: docs/distributions.md).
//!
//! One method serves them all, so each is exact and each costs about the same: rejection from a
//! piecewise-constant envelope. The index range is cut into cells over which the probability
//! changes by at most `EPSILON`; a cell is picked from its envelope weight (width x its largest
//! probability) by Walker's alias table, an index uniformly inside it, and the index is kept
//! with probability p(k) / peak. Since every cell's least p is known when the table is built,
//! all but about `EPSILON` of the draws are decided by one integer comparison, without
//! evaluating p at all: two random words, two 128-bit multiplies and a table load per draw,
//! whatever n is (the number of cells grows as log n / EPSILON for zipf). A rejected draw starts
//! over from the alias table, which is what makes the envelope's weights, not the cells' exact
//! masses, the right ones: the accepted index has probability p(k) exactly, up to the 2^-64
//! resolution of the random words.
//!
//! Zipf and pareto rank blocks (rank 0 the hottest) and place rank k at `Scatter::map(k)`, a
//! keyed bijection of `0..n`, so the hot blocks are spread over the region, every block is
//! reachable, and no two ranks share a block. fio's generator (its issue #1991) lacks the
//! last two: it approximates the zipf law (Gray et al.'s method from 32-bit random numbers)
//! and hashes ranks modulo n, so many blocks can never be drawn and a run touches far fewer
//! distinct blocks than the law predicts. The unit tests below check each law against its CDF
//! at 10^7 draws and the distinct-block count against its expectation.

use iolab_spec::{Distribution, Zone};

/// The most the probability may fall across one cell: at least 1 - EPSILON of the draws are
/// accepted without evaluating p.
const EPSILON: f64 = 1.0 / 64.0;

/// Beyond this many cells the rest of the range becomes one cell (still exact, accepted less
/// often; only a distribution whose far tail is negligible gets there).
const MAX_CELLS: usize = 1 << 15;

/// A rest of the range whose envelope weight is below this share of the total so far becomes
/// one cell: the normal law's far tails, which would otherwise need a cell per few blocks.
const NEGLIGIBLE_TAIL: f64 = 1e-12;

/// The probability law of a block index, unnormalized.
#[derive(Debug, Clone, Copy)]
enum Law {
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
    fn p(self, k: u64) -> f64 {
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

/// One cell of the envelope and its alias-table entry.
#[derive(Debug, Clone, Copy)]
struct Cell {
    first: u64,
    width: u64,
    /// The largest p in the cell (the envelope's height).
    peak: f64,
    /// An index in the cell is kept without evaluating p when the acceptance word is below
    /// this: (least p / peak) x 2^64, rounded down. `u64::MAX`: p is flat, always kept.
    sure: u64,
    /// Alias table: the cell is taken when the coin word is below `keep`, else `alias`.
    keep: u64,
    alias: u32,
}

/// An exact sampler of a block index in `0..n` (see the module's notes).
#[derive(Debug, Clone)]
pub struct Sampler {
    law: Law,
    cells: Vec<Cell>,
    scatter: Option<Scatter>,
}

/// 2^64 as a float: turns a probability into a threshold on a random word.
const TWO_64: f64 = 18_446_744_073_709_551_616.0;

fn threshold(share: f64) -> u64 {
    if share >= 1.0 {
        u64::MAX
    } else {
        (share * TWO_64) as u64
    }
}

/// The high and low words of `x * m`: a uniform value below `m` and what is left of `x`.
#[inline(always)]
fn split(x: u64, m: u64) -> (u64, u64) {
    let product = u128::from(x) * u128::from(m);
    ((product >> 64) as u64, product as u64)
}

impl Sampler {
    /// The sampler of `distribution` over `n` blocks (n >= 1); `key` places zipf and pareto
    /// ranks (one key per group, so every lane has the same hot blocks).
    pub fn new(distribution: &Distribution, n: u64, key: u64) -> Result<Sampler, String> {
        let n = n.max(1);
        let nf = n as f64;
        let (law, cells, scatter) = match distribution {
            Distribution::Uniform => (Law::Flat, flat(&[(0, n, 1.0)]), None),
            Distribution::Zipf { theta } => {
                let law = Law::Zipf { theta: *theta };
                (law, falling(law, 0, n, 1), Some(Scatter::new(n, key)))
            }
            Distribution::Pareto { h } => {
                let law = Law::Pareto { alpha: (1.0 - h).ln() / h.ln(), n: nf };
                (law, falling(law, 0, n, 1), Some(Scatter::new(n, key)))
            }
            Distribution::Normal { stddev_pct } => {
                let law = Law::Normal { mean: nf / 2.0, sd: stddev_pct / 100.0 * nf };
                // p rises up to the block holding the mean and falls after it.
                let top = n / 2;
                let mut cells = falling(law, top, n, 1);
                if top > 0 {
                    cells.extend(falling(law, top - 1, n, -1));
                }
                (law, cells, None)
            }
            Distribution::Zoned(zones) => (Law::Flat, flat(&zone_cells(zones, n)?), None),
        };
        Ok(Sampler { law, cells: alias(cells), scatter })
    }

    /// The next block index, in `0..n`.
    #[inline]
    pub fn sample(&self, rng: &mut fastrand::Rng) -> u64 {
        loop {
            let (pick, coin) = split(rng.u64(..), self.cells.len() as u64);
            let drawn = &self.cells[pick as usize];
            let cell = if coin < drawn.keep { drawn } else { &self.cells[drawn.alias as usize] };
            // A cell of one block (zipf's hottest ranks) needs no second word.
            let k = if cell.width == 1 {
                cell.first
            } else {
                let (offset, mut word) = uniform_below(rng, cell.width);
                let k = cell.first + offset;
                if cell.sure != u64::MAX {
                    if cell.width > 1 << 32 {
                        // Too few bits left over: a fresh word decides.
                        word = rng.u64(..);
                    }
                    if word >= cell.sure && (word as f64 / TWO_64) * cell.peak >= self.law.p(k) {
                        continue;
                    }
                }
                k
            };
            return match &self.scatter {
                Some(scatter) => scatter.map(k),
                None => k,
            };
        }
    }
}

/// A uniform value below `m` (Lemire's method, exact) and the leftover low word, which is
/// uniform on a grid of step m / 2^64 given the value.
#[inline(always)]
fn uniform_below(rng: &mut fastrand::Rng, m: u64) -> (u64, u64) {
    let (mut value, mut low) = split(rng.u64(..), m);
    if low < m {
        let floor = m.wrapping_neg() % m;
        while low < floor {
            (value, low) = split(rng.u64(..), m);
        }
    }
    (value, low)
}

/// Cells of constant p: (first, width, weight of the whole cell).
fn flat(parts: &[(u64, u64, f64)]) -> Vec<Cell> {
    parts
        .iter()
        .filter(|&&(_, width, weight)| width > 0 && weight > 0.0)
        .map(|&(first, width, weight)| Cell {
            first,
            width,
            peak: weight / width as f64,
            sure: u64::MAX,
            keep: 0,
            alias: 0,
        })
        .collect()
}

/// Zoned: contiguous zones from block 0, in the order given, each over its share of `n`.
fn zone_cells(zones: &[Zone], n: u64) -> Result<Vec<(u64, u64, f64)>, String> {
    let mut parts = Vec::new();
    let mut size_before = 0u64;
    for zone in zones {
        let first = n * size_before / 100;
        size_before += u64::from(zone.size_pct);
        let end = n * size_before / 100;
        if end == first && zone.io_pct > 0 {
            return Err(format!(
                "the zone {zone} covers no whole block of a region of {n} blocks; use a larger region or working set, or wider zones"
            ));
        }
        parts.push((first, end - first, f64::from(zone.io_pct)));
    }
    Ok(parts)
}

/// Cells over a stretch where p falls moving away from `start` in `step` (+1 or -1) until the
/// range `0..n` ends: each cell as wide as p allows falling by at most EPSILON.
fn falling(law: Law, start: u64, n: u64, step: i64) -> Vec<Cell> {
    let mut cells = Vec::new();
    let mut total = 0.0;
    // Blocks left in the direction of travel, `start` included.
    let mut at = start;
    let mut left = if step > 0 { n - start } else { start + 1 };
    let far = |from: u64, blocks: u64| if step > 0 { from + (blocks - 1) } else { from - (blocks - 1) };
    while left > 0 {
        let peak = law.p(at);
        let lump = cells.len() + 1 >= MAX_CELLS || peak * left as f64 <= total * NEGLIGIBLE_TAIL;
        let width = if lump || peak == 0.0 { left } else { widest(law, at, left, peak, far) };
        let least = law.p(far(at, width));
        let first = if step > 0 { at } else { at - (width - 1) };
        // A hair under the true ratio, so that rounding in p never accepts too much.
        let sure = if width == 1 { u64::MAX } else { threshold(least / peak * (1.0 - 1e-12)) };
        if peak > 0.0 {
            cells.push(Cell { first, width, peak, sure, keep: 0, alias: 0 });
            total += peak * width as f64;
        }
        left -= width;
        if left > 0 {
            at = if step > 0 { at + width } else { at - width };
        }
    }
    cells
}

/// The most blocks from `at` (at most `left`) over which p stays within EPSILON of `peak`.
fn widest(law: Law, at: u64, left: u64, peak: f64, far: impl Fn(u64, u64) -> u64) -> u64 {
    let fits = |width: u64| law.p(far(at, width)) >= peak * (1.0 - EPSILON);
    let (mut good, mut bad) = (1u64, 2u64);
    while bad <= left && fits(bad) {
        good = bad;
        bad = bad.saturating_mul(2);
    }
    if bad > left {
        if fits(left) {
            return left;
        }
        bad = left;
    }
    while bad - good > 1 {
        let middle = good + (bad - good) / 2;
        if fits(middle) {
            good = middle;
        } else {
            bad = middle;
        }
    }
    good
}

/// Vose's alias table over the cells' envelope weights.
fn alias(mut cells: Vec<Cell>) -> Vec<Cell> {
    let weights: Vec<f64> = cells.iter().map(|c| c.peak * c.width as f64).collect();
    let total: f64 = weights.iter().sum();
    let count = cells.len() as f64;
    let mut scaled: Vec<f64> = weights.iter().map(|w| w * count / total).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..cells.len()).partition(|&i| scaled[i] < 1.0);
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        cells[s].keep = threshold(scaled[s]);
        cells[s].alias = l as u32;
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    // What is left is 1 up to rounding: always kept.
    for i in small.into_iter().chain(large) {
        cells[i].keep = u64::MAX;
        cells[i].alias = i as u32;
    }
    cells
}

/// A keyed bijection of `0..n`: a mixing permutation of the next power of two, walked until it
/// lands below n (fewer than two steps on average).
#[derive(Debug, Clone, Copy)]
pub struct Scatter {
    n: u64,
    mask: u64,
    shift: u32,
    key: u64,
}

impl Scatter {
    pub fn new(n: u64, key: u64) -> Scatter {
        let bits = (64 - (n.max(2) - 1).leading_zeros()).max(1);
        let mask = if bits == 64 { u64::MAX } else { (1 << bits) - 1 };
        Scatter { n, mask, shift: bits.div_ceil(2), key }
    }

    /// Each step is a bijection of `0..=mask`: adding a key, xor with a right shift of itself,
    /// multiplying by an odd number.
    #[inline(always)]
    fn permute(&self, mut x: u64) -> u64 {
        x = x.wrapping_add(self.key) & self.mask;
        x ^= x >> self.shift;
        x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15) & self.mask;
        x ^= x >> self.shift;
        x = x.wrapping_mul(0xd6e8_feb8_6659_fd93) & self.mask;
        x ^ (x >> self.shift)
    }

    #[inline]
    pub fn map(&self, rank: u64) -> u64 {
        let mut x = self.permute(rank);
        while x >= self.n {
            x = self.permute(x);
        }
        x
    }
}

#[cfg(test)]
#[path = "distribution_tests.rs"]
mod tests;
