//! Skewed random offsets: an exact sampler of a block index in `0..n` for every
//! `--distribution` (definitions: docs/distributions.md).
//!
//! One method serves them all, so each is exact and each costs about the same: rejection from a
//! piecewise-constant envelope. The index range is cut into cells, each a power of two blocks
//! wide, over which the probability changes by at most `EPSILON` (a flat zone is cut into the
//! powers of two of its width); a cell is picked from its envelope weight (width x its largest
//! probability) by Walker's alias table, an index uniformly inside it, and the index is kept
//! with probability p(k) / peak. Since every cell's least p is known when the table is built,
//! all but about `EPSILON` of the draws are decided by one integer comparison, without
//! evaluating p at all (the number of cells grows as log n / EPSILON for zipf). A rejected draw
//! starts over from the alias table, which is what makes the envelope's weights, not the cells'
//! exact masses, the right ones: the accepted index has probability p(k) exactly, up to the
//! 2^-64 resolution of the random words.
//!
//! What a draw costs, since it must stay close to uniform's one random word and one multiply
//! per I/O: two random words, two table loads and no multiply besides the generator's. The
//! alias table has a power-of-two number of entries, so the first word's top bits pick an entry
//! and the rest is its coin; a cell's index is the second word's top bits and the rest its
//! acceptance word. The coin is a select, not a jump (a jump on a coin toss is mispredicted half
//! the time), and so is a cell of one block; only a draw that is not sure branches away. A
//! cell's hot fields are 24 bytes, its height kept apart. A lane draws 32 indexes at a time
//! (`Draws`): iterations independent but for the generator's state, which the processor
//! overlaps.
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

/// Beyond this many cells the rest of the range is cut into powers of two without regard to
/// the fall (still exact, accepted less often; only a distribution whose far tail is
/// negligible gets there).
const MAX_CELLS: usize = 1 << 15;

/// A rest of the range whose envelope weight is below this share of the total so far is cut
/// the same way: the normal law's far tails, which would otherwise need a cell per few blocks.
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

/// One cell of the envelope, as the builders make it.
#[derive(Debug, Clone, Copy)]
struct Span {
    first: u64,
    width: u64,
    /// The largest p in the cell (the envelope's height).
    peak: f64,
    /// An index in the cell is kept without evaluating p when the acceptance word is below
    /// this: (least p / peak) x 2^64, rounded down. `u64::MAX`: p is flat, always kept.
    sure: u64,
}

/// What every draw reads of the cell it lands in (24 bytes). The envelope's height, needed
/// only by the rare draw that is not sure, is kept apart (`Cold`).
#[derive(Debug, Clone, Copy)]
struct Cell {
    first: u64,
    /// `Span::sure`, or 0 for a cell wider than 2^32 of a law that is not flat: there the
    /// leftover word has too few bits, and every draw takes a fresh one.
    sure: u64,
    /// The cell is 2^bits blocks wide: an index in it is the top bits of a random word.
    bits: u32,
}

/// An alias-table entry: the cell drawn is the entry's own when the coin word is below `keep`,
/// else `alias`.
#[derive(Debug, Clone, Copy)]
struct Entry {
    keep: u64,
    alias: u64,
}

#[derive(Debug, Clone, Copy)]
struct Cold {
    peak: f64,
    sure: u64,
}

/// An exact sampler of a block index in `0..n` (see the module's notes).
#[derive(Debug, Clone)]
pub struct Sampler {
    law: Law,
    /// 2^table_bits alias-table entries (those past the cells' count have weight 0).
    entries: Vec<Entry>,
    table_bits: u32,
    cells: Vec<Cell>,
    cold: Vec<Cold>,
    scatter: Option<Scatter>,
}

/// 2^64 as a float: turns a probability into a threshold on a random word.
const TWO_64: f64 = 18_446_744_073_709_551_616.0;

/// Cells wider than 2^WIDE take a fresh acceptance word.
const WIDE: u32 = 32;

fn threshold(share: f64) -> u64 {
    if share >= 1.0 {
        u64::MAX
    } else {
        (share * TWO_64) as u64
    }
}

/// `then` if `x < limit`, else `otherwise`, without a branch: the borrow of the subtraction as
/// a mask, which the compiler keeps as arithmetic where it turns a comparison into a jump (and
/// a jump on a coin toss is mispredicted half the time).
#[inline(always)]
fn select_below(x: u64, limit: u64, then: u64, otherwise: u64) -> u64 {
    let below = (u128::from(x).wrapping_sub(u128::from(limit)) >> 64) as u64;
    otherwise ^ ((otherwise ^ then) & below)
}

/// The top `bits` bits of `x` (0..=63 of them) and the rest of `x` shifted up: a uniform value
/// below 2^bits and, independent of it, a uniform word on a grid of step 2^bits. Two plain
/// shifts (`x >> 64` would overflow for `bits` 0).
#[inline(always)]
fn top_bits(x: u64, bits: u32) -> (u64, u64) {
    (x >> 1 >> (63 - bits), x << bits)
}

impl Sampler {
    /// The sampler of `distribution` over `n` blocks (n >= 1); `key` places zipf and pareto
    /// ranks (one key per group, so every lane has the same hot blocks).
    pub fn new(distribution: &Distribution, n: u64, key: u64) -> Result<Sampler, String> {
        let n = n.max(1);
        let nf = n as f64;
        let (law, spans, scatter) = match distribution {
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
                let mut spans = falling(law, top, n, 1);
                if top > 0 {
                    spans.extend(falling(law, top - 1, n, -1));
                }
                (law, spans, None)
            }
            Distribution::Zoned(zones) => (Law::Flat, flat(&zone_cells(zones, n)?), None),
        };
        let cells = spans
            .iter()
            .map(|s| {
                debug_assert!(s.width.is_power_of_two());
                let bits = s.width.trailing_zeros();
                Cell {
                    first: s.first,
                    sure: if bits > WIDE && s.sure != u64::MAX { 0 } else { s.sure },
                    bits,
                }
            })
            .collect();
        let cold = spans.iter().map(|s| Cold { peak: s.peak, sure: s.sure }).collect();
        let table_bits = spans.len().next_power_of_two().trailing_zeros();
        Ok(Sampler { law, entries: alias(&spans, 1 << table_bits), table_bits, cells, cold, scatter })
    }

    /// The next block index, in `0..n` (what `fill` draws, one at a time).
    #[cfg(test)]
    pub fn sample(&self, rng: &mut fastrand::Rng) -> u64 {
        let k = self.draw(rng);
        match &self.scatter {
            Some(scatter) => scatter.map(k),
            None => k,
        }
    }

    /// Fills `out` with draws: loops whose iterations are independent but for the random
    /// generator's state, so the processor overlaps several draws' multiplies and table loads.
    pub fn fill(&self, rng: &mut fastrand::Rng, out: &mut [u64]) {
        // The generator's state in a register, not stored and reloaded through `rng` each time.
        let mut local = rng.clone();
        for drawn in out.iter_mut() {
            *drawn = self.draw(&mut local);
        }
        *rng = local;
        if let Some(scatter) = &self.scatter {
            for drawn in out {
                *drawn = scatter.map(*drawn);
            }
        }
    }

    /// The next index before the scatter (a rank, for zipf and pareto).
    ///
    /// Two random words and no branch the predictor has to guess in the common case: the alias
    /// table's coin is a select, a cell of one block goes through the same shift as any
    /// other, and only an index that is not sure (under 1/64 of the draws) branches away.
    #[inline(always)]
    fn draw(&self, rng: &mut fastrand::Rng) -> u64 {
        loop {
            // The table has 2^table_bits entries: the top bits pick one, the rest are the coin.
            let (pick, coin) = top_bits(rng.u64(..), self.table_bits);
            let entry = self.entries[pick as usize];
            // A select, not a branch: which one is taken is a coin toss no predictor can learn.
            let index = select_below(coin, entry.keep, pick, entry.alias);
            let cell = self.cells[index as usize];
            let (offset, word) = top_bits(rng.u64(..), cell.bits);
            let k = cell.first + offset;
            if word < cell.sure {
                return k;
            }
            // Too few bits left over in a wide cell's word: a fresh word decides.
            let word = if cell.bits > WIDE { rng.u64(..) } else { word };
            if self.keeps(index as usize, k, word) {
                return k;
            }
        }
    }

    /// Whether index `k` of cell `index` is kept, for a draw whose acceptance `word` was not
    /// below the cell's hot threshold: p(k) / peak decides.
    #[cold]
    #[inline(never)]
    fn keeps(&self, index: usize, k: u64, word: u64) -> bool {
        let Cold { peak, sure } = self.cold[index];
        // `sure` is 2^64 - 1 for a flat cell: always kept.
        sure == u64::MAX || word < sure || (word as f64 / TWO_64) * peak < self.law.p(k)
    }
}

/// Slot indexes drawn ahead, a batch at a time (`Sampler::fill`): what a lane draws from, one
/// I/O at a time.
#[derive(Debug, Clone)]
pub struct Draws {
    sampler: Sampler,
    drawn: [u64; BATCH],
    next: usize,
}

/// Draws made at a time: enough for the processor to overlap them, few enough to stay in a
/// cache line or four.
const BATCH: usize = 32;

impl Draws {
    pub fn new(sampler: Sampler) -> Draws {
        Draws { sampler, drawn: [0; BATCH], next: BATCH }
    }

    #[inline]
    pub fn next(&mut self, rng: &mut fastrand::Rng) -> u64 {
        if self.next == BATCH {
            self.sampler.fill(rng, &mut self.drawn);
            self.next = 0;
        }
        let k = self.drawn[self.next];
        self.next += 1;
        k
    }
}

/// Cells of constant p for parts (first, width, weight of the whole part): each part cut into
/// power-of-two pieces, its width's binary digits.
fn flat(parts: &[(u64, u64, f64)]) -> Vec<Span> {
    let mut spans = Vec::new();
    for &(mut first, width, weight) in parts.iter().filter(|&&(_, width, weight)| width > 0 && weight > 0.0) {
        let peak = weight / width as f64;
        for bit in (0..64).rev().map(|b| 1u64 << b).filter(|&bit| width & bit != 0) {
            spans.push(Span { first, width: bit, peak, sure: u64::MAX });
            first += bit;
        }
    }
    spans
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
/// range `0..n` ends: each cell the widest power of two over which p falls by at most EPSILON.
fn falling(law: Law, start: u64, n: u64, step: i64) -> Vec<Span> {
    let mut cells = Vec::new();
    let mut total = 0.0;
    // Blocks left in the direction of travel, `start` included.
    let mut at = start;
    let mut left = if step > 0 { n - start } else { start + 1 };
    let far = |from: u64, blocks: u64| if step > 0 { from + (blocks - 1) } else { from - (blocks - 1) };
    while left > 0 {
        let peak = law.p(at);
        // A lump is cut in powers of two too: at most 64 more cells.
        let lump = cells.len() + 65 >= MAX_CELLS || peak * left as f64 <= total * NEGLIGIBLE_TAIL;
        let width = if lump || peak == 0.0 { left } else { widest(law, at, left, peak, far) };
        let width = 1 << (63 - width.leading_zeros());
        let least = law.p(far(at, width));
        let first = if step > 0 { at } else { at - (width - 1) };
        // A hair under the true ratio, so that rounding in p never accepts too much.
        let sure = if width == 1 { u64::MAX } else { threshold(least / peak * (1.0 - 1e-12)) };
        if peak > 0.0 {
            cells.push(Span { first, width, peak, sure });
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

/// Vose's alias table over the cells' envelope weights, `size` entries (a power of two at
/// least the cells' count; entries past it have weight 0, so they always yield their alias).
fn alias(spans: &[Span], size: usize) -> Vec<Entry> {
    let mut weights: Vec<f64> = spans.iter().map(|c| c.peak * c.width as f64).collect();
    weights.resize(size, 0.0);
    let heaviest = (0..spans.len()).max_by(|&a, &b| weights[a].total_cmp(&weights[b])).unwrap_or(0) as u64;
    let mut entries: Vec<Entry> = (0..size as u64)
        .map(|i| {
            if (i as usize) < spans.len() {
                Entry { keep: u64::MAX, alias: i }
            } else {
                Entry { keep: 0, alias: heaviest }
            }
        })
        .collect();
    let total: f64 = weights.iter().sum();
    let mut scaled: Vec<f64> = weights.iter().map(|w| w * size as f64 / total).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..size).partition(|&i| scaled[i] < 1.0);
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        entries[s] = Entry { keep: threshold(scaled[s]), alias: l as u64 };
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    // What is left is 1 up to rounding: kept as the entries start (a cell always itself, an
    // entry of weight 0 always the heaviest cell).
    entries
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
        let first = self.permute(rank);
        if self.mask < self.n {
            // n is a power of two: no walk.
            return first;
        }
        // The walk's first three steps as selects: whether a step lands below n is a coin
        // toss (as likely as n / (mask + 1), at least 1/2), so a loop would jump on it; this
        // way only the walks of more than three steps (at most 1 in 8) do.
        let second = self.permute(first);
        let third = self.permute(second);
        let mut x = select_below(first, self.n, first, select_below(second, self.n, second, third));
        while x >= self.n {
            x = self.permute(x);
        }
        x
    }
}

#[cfg(test)]
#[path = "distribution_tests.rs"]
mod tests;
