//! Skewed random offsets: an exact sampler of a block index in `0..n` for every
//! `--distribution` (definitions: docs/distributions.md).
//!
//! One method serves them all, so each is exact and each costs about the same: rejection from a
//! piecewise-constant envelope. The index range is cut into cells, each a power of two blocks
//! wide, over which the probability changes by at most `EPSILON` (a flat zone is cut into the
//! powers of two of its width; a normal law's flanks, which carry little of its mass, may fall
//! more, see `allowed_fall`); a cell is picked from its envelope weight (width x its largest
//! probability) by Walker's alias table, an index uniformly inside it, and the index is kept
//! with probability p(k) / peak. Since every cell's least p is known when the table is built,
//! all but about `EPSILON` of the draws are decided by one integer comparison, without
//! evaluating p at all (the number of cells grows as log n / EPSILON for zipf), and most of
//! the rest by linear bounds on p where it is convex or concave across the cell (`Squeeze`;
//! every law's cells but two per side of a normal bell's inflections). A rejected draw
//! starts over from the alias table, which is what makes the envelope's weights, not the cells'
//! exact masses, the right ones: the accepted index has probability p(k) exactly, up to the
//! resolution of the random words (a cell's share of an alias entry is exact to 2^-32 at
//! worst, the acceptance test to 2^-32).
//!
//! What a draw costs, since it must stay close to uniform's one random word, one multiply and
//! one division per I/O: two random words, two dependent table loads and one multiply besides
//! the generator's. The alias table has a power-of-two number of entries, so the first word's
//! top bits pick an entry and the rest is its coin; an entry is one word (coin threshold and
//! alias, `Slot`), a cell another (`Cell`), so zipf:0.99's tables take 7.2 KiB over 2^18 slots
//! beside the L1 cache's other tenants, the engine's latency histograms: a 24 KiB table whose
//! entries held both of their cells cost zipf:0.99 0.87 L1 misses per I/O more than uniform
//! over a whole null-engine run (cachegrind), 0.28 now. A cell's index is the
//! second word's top bits, and its low 16 bits are checked against the cell's sure threshold.
//! The coin is a select, not a jump (a jump on a coin toss is mispredicted half the time), and
//! so is a cell of one block. The only jump is on the sure test, which goes the same way for
//! all but about `EPSILON` of the draws, so the predictor learns it; the draw is made inline in
//! the I/O's path, the unsure ones settled by a call (`Sampler::settle`). (An earlier version
//! drew 32 at a time and settled the unsure ones after the batch: storing, flagging, reloading
//! and replaying cost more instructions than the overlap it sought, which the processor gets
//! across I/Os anyway.)
//!
//! Zipf and pareto rank blocks (rank 0 the hottest) and place rank k where `Scatter` lands it, a
//! keyed affine bijection of `0..n`, so the hot blocks are spread over the region, every block is
//! reachable, and no two ranks share a block. fio's generator (its issue #1991) lacks the
//! last two: it approximates the zipf law (Gray et al.'s method from 32-bit random numbers)
//! and hashes ranks modulo n, so many blocks can never be drawn and a run touches far fewer
//! distinct blocks than the law predicts. The unit tests below check each law against its CDF
//! at 10^7 draws and the distinct-block count against its expectation.

use iolab_spec::{Distribution, Zone};
use thiserror::Error;

mod law;
mod scatter;

use law::Law;
use scatter::Scatter;

/// The most the probability may fall across one cell: at least 1 - EPSILON of the draws are
/// accepted without evaluating p. (1/64 took twice the cells, a table the L1 cache did not
/// keep beside the engine's histograms; 1/16 sends twice the draws to `settle`, each a
/// mispredicted jump, for a table smaller still: about even.)
const EPSILON: f64 = 1.0 / 32.0;

/// The most a normal law's cell may fall (`allowed_fall`).
const MOST_FALL: f64 = 0.25;

/// Beyond this many cells the rest of the range is cut into powers of two without regard to
/// the fall (still exact, accepted less often; only a distribution whose far tail is
/// negligible gets there).
const MAX_CELLS: usize = 1 << 15;

/// A rest of the range whose envelope weight is below this share of the total so far is cut
/// the same way: the normal law's far tails, which would otherwise need a cell per few blocks.
const NEGLIGIBLE_TAIL: f64 = 1e-12;

/// Linear bounds on p across a cell of two or more blocks where p is convex or concave (as a
/// sequence) and falls by at most half: the chord between the cell's ends, and the lines that
/// continue its first and last steps. Convex, the chord is above p and the larger of those lines
/// below it; concave, the other way round. Most draws that are not sure fall outside the gap
/// between them and are decided without evaluating p.
#[derive(Debug, Clone, Copy)]
struct Squeeze {
    /// The cell's index where p is largest (p0), and the distance to its far end (p1).
    at: u64,
    last: f64,
    p0: f64,
    p1: f64,
    /// p's first step down from `at`, and its last one.
    first_step: f64,
    last_step: f64,
    convex: bool,
}

impl Squeeze {
    /// The squeeze of a cell from `at` over `width` blocks towards `far` (None when p is neither
    /// convex nor concave there, or falls by more than half, where rounding in the bounds could
    /// matter).
    fn new(law: Law, at: u64, far: u64, width: u64) -> Option<Squeeze> {
        if width < 2 {
            return None;
        }
        let convex = law.shape(at.min(far), at.max(far))?;
        let toward = |k: u64| if far > at { k + 1 } else { k - 1 };
        let back = |k: u64| if far > at { k - 1 } else { k + 1 };
        let (p0, p1) = (law.p(at), law.p(far));
        if !(p1 >= p0 / 2.0 && p1 > 0.0) {
            return None;
        }
        Some(Squeeze {
            at,
            last: (width - 1) as f64,
            p0,
            p1,
            first_step: p0 - law.p(toward(at)),
            last_step: law.p(back(far)) - p1,
            convex,
        })
    }

    /// (below, above): bounds on p(k) for an index k of the cell, each moved a hair (10^-9 of
    /// itself) outside its line, against rounding in p and in the lines, which is far smaller
    /// for every law but a normal one over a vast region (its p, a difference of two erfc, then
    /// carries a relative error of about 10^-16 x the deviation in blocks, whichever way the
    /// draw is decided).
    fn bounds(&self, k: u64) -> (f64, f64) {
        let t = k.abs_diff(self.at) as f64;
        let chord = self.p0 - (self.p0 - self.p1) * t / self.last;
        let from_first = self.p0 - self.first_step * t;
        let from_last = self.p1 + self.last_step * (self.last - t);
        let (below, above) =
            if self.convex { (from_first.max(from_last), chord) } else { (chord, from_first.min(from_last)) };
        (below * (1.0 - 1e-9), above * (1.0 + 1e-9))
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
    squeeze: Option<Squeeze>,
}

/// A cell as every draw reads it, in one word: where its first index lands (the top 42 bits;
/// the scatter is affine, so index `first + r` lands `r` multipliers further on, see
/// `Scatter::onward`), `63 - bits` (6 bits; the cell is 2^bits blocks wide, so an index in it
/// is the top bits of a random word), and the top 16 bits of its sure threshold (`Span::sure` rounded down, so that a draw
/// found sure by them is sure; 0 for a cell wider than 2^32 of a law that is not flat, where
/// a draw's word has too few bits left and every one takes a fresh word).
#[derive(Debug, Clone, Copy)]
struct Cell(u64);

/// Regions up to this many blocks: a cell's first index fits its 42 bits.
const MOST_BLOCKS: u64 = 1 << 42;

impl Cell {
    fn new(landing: u64, bits: u32, sure: u64) -> Cell {
        Cell(landing << 22 | u64::from(63 - bits) << 16 | sure >> 48)
    }

    /// Where the cell's first index lands.
    #[inline(always)]
    fn landing(self) -> u64 {
        self.0 >> 22
    }

    /// 63 - bits: the shift that leaves a word's top `bits` bits (after a first shift by one).
    #[inline(always)]
    fn shift(self) -> u32 {
        ((self.0 >> 16) & 63) as u32
    }

    #[inline(always)]
    fn bits(self) -> u32 {
        63 - self.shift()
    }

    /// A draw whose acceptance word's top 16 bits are below this is sure. (Compared as 16-bit
    /// numbers, the compiler compares the registers as they are, without two zero-extensions.)
    #[inline(always)]
    fn sure(self) -> u16 {
        self.0 as u16
    }

    /// The acceptance word of the draw whose index came from `word`'s top `bits` bits (up to
    /// `WIDE` of them): `word`'s low 16 bits on top (what the sure test reads), then the bits
    /// between them and the index's, so it is uniform on a grid of 2^bits and independent of
    /// the index.
    fn acceptance(self, word: u64) -> u64 {
        let bits = self.bits();
        debug_assert!(bits <= WIDE);
        word << 48 | (word << bits) >> (bits + 16) << bits
    }
}

/// An alias-table entry in one word: the entry's own number in the top `table_bits` bits, its
/// coin threshold in the bits below them down to bit 16, and its alias (the cell drawn when the
/// coin is not below the threshold) in the low 16 bits. The word whose top bits picked the
/// entry, its low 16 bits set, is below this exactly when its coin (its bits from 16 up) is
/// below the threshold: one comparison, no mask. A cell's share is exact to 2^-(48 -
/// table_bits) of an entry's, 2^-32 at worst.
#[derive(Debug, Clone, Copy)]
struct Slot(u64);

impl Slot {
    fn new(number: u64, keep: u64, alias: u64, table_bits: u32) -> Slot {
        // `keep` is scaled to the coin's bits under the entry's number (it is below
        // 2^(64 - table_bits): no carry).
        Slot((number << (64 - table_bits) | keep >> table_bits) & !0xffff | alias)
    }

    /// The index of the cell drawn by `pick_word`, whose top bits picked this entry, number
    /// `pick`: a select, not a jump (which one is a coin toss no predictor can learn).
    #[inline(always)]
    fn cell(self, pick_word: u64, pick: u64) -> u64 {
        if pick_word | 0xffff < self.0 {
            pick
        } else {
            self.0 & 0xffff
        }
    }
}

/// A draw's first try (`Sampler::first_try`).
#[derive(Debug, Clone, Copy)]
struct FirstTry {
    /// The index drawn, from the cell's first.
    r: u64,
    /// The acceptance word is below the cell's hot threshold: the index is kept.
    sure: bool,
    /// The cell's number, and the cell.
    index: usize,
    cell: Cell,
}

/// What a draw that is not sure reads: the cell's first index, the envelope's height, the full
/// threshold and the bounds on p.
#[derive(Debug, Clone, Copy)]
struct Cold {
    first: u64,
    peak: f64,
    sure: u64,
    squeeze: Option<Squeeze>,
}

/// A skewed distribution the region is too large or too small for.
#[derive(Debug, Error)]
pub enum SamplerError {
    #[error("a skewed distribution covers at most 2^42 blocks; the region has {0}")]
    TooManyBlocks(u64),
    #[error(
        "the zone {zone} covers no whole block of a region of {blocks} blocks; use a larger region or working set, or wider zones"
    )]
    ZoneTooNarrow { zone: Zone, blocks: u64 },
    #[error("{distribution} needs {cells} cells, more than the 2^16 a sampler holds")]
    TooManyCells { distribution: Distribution, cells: usize },
}

/// An exact sampler of a block index in `0..n` (see the module's notes).
#[derive(Debug, Clone)]
pub struct Sampler {
    law: Law,
    /// 2^table_bits alias-table entries, at least 2 (those past the cells' count have weight
    /// 0, so they always give their alias); a random word's top bits pick one (`pick_shift` is
    /// 64 - table_bits), the others are its coin.
    slots: Vec<Slot>,
    pick_shift: u32,
    /// One per cell: what every draw reads, and what the few that are not sure read.
    cells: Vec<Cell>,
    cold: Vec<Cold>,
    /// Where each index lands: zipf's and pareto's ranks are scattered, the other laws' indexes
    /// stay where they are.
    scatter: Scatter,
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

impl Sampler {
    /// The sampler of `distribution` over `n` blocks (n >= 1); `key` places zipf and pareto
    /// ranks (one key per group, so every lane has the same hot blocks).
    pub fn new(distribution: &Distribution, n: u64, key: u64) -> Result<Sampler, SamplerError> {
        let n = n.max(1);
        if n > MOST_BLOCKS {
            return Err(SamplerError::TooManyBlocks(n));
        }
        let nf = n as f64;
        let (law, spans, scatter) = match distribution {
            Distribution::Uniform => (Law::Flat, flat(&[(0, n, 1.0)]), Scatter::identity()),
            Distribution::Zipf { theta } => {
                let law = Law::Zipf { theta: *theta };
                (law, falling(law, 0, n, 1), Scatter::new(n, key))
            }
            Distribution::Pareto { h } => {
                let law = Law::Pareto { alpha: (1.0 - h).ln() / h.ln(), n: nf };
                (law, falling(law, 0, n, 1), Scatter::new(n, key))
            }
            Distribution::Normal { stddev_pct } => {
                let law = Law::Normal { mean: nf / 2.0, sd: stddev_pct / 100.0 * nf };
                // p rises up to the block holding the mean and falls after it.
                let top = n / 2;
                let mut spans = falling(law, top, n, 1);
                if top > 0 {
                    spans.extend(falling(law, top - 1, n, -1));
                }
                (law, spans, Scatter::identity())
            }
            Distribution::Zoned(zones) => (Law::Flat, flat(&zone_cells(zones, n)?), Scatter::identity()),
        };
        if spans.len() > 1 << 16 {
            return Err(SamplerError::TooManyCells {
                distribution: distribution.clone(),
                cells: spans.len(),
            });
        }
        let cells: Vec<Cell> = spans
            .iter()
            .map(|s| {
                debug_assert!(s.width.is_power_of_two());
                let bits = s.width.trailing_zeros();
                let sure = if bits > WIDE && s.sure != u64::MAX { 0 } else { s.sure };
                Cell::new(scatter.permute(s.first), bits, sure)
            })
            .collect();
        let cold = spans
            .iter()
            .map(|s| Cold { first: s.first, peak: s.peak, sure: s.sure, squeeze: s.squeeze })
            .collect();
        let table_bits = spans.len().next_power_of_two().trailing_zeros().max(1);
        let entries = alias(&spans, 1 << table_bits);
        let slots = entries
            .iter()
            .enumerate()
            .map(|(number, &(keep, alias))| Slot::new(number as u64, keep, alias, table_bits))
            .collect();
        Ok(Sampler { law, slots, pick_shift: 64 - table_bits, cells, cold, scatter })
    }

    /// One draw: the first try from two fresh words, which all but about `EPSILON` of the
    /// draws stop at (a jump the predictor learns as never taken), where its index lands.
    #[inline(always)]
    pub fn draw(&self, rng: &mut fastrand::Rng) -> u64 {
        let (pick_word, cell_word) = (rng.u64(..), rng.u64(..));
        let first = self.first_try(pick_word, cell_word);
        if first.sure {
            self.scatter.onward(first.cell.landing(), first.r)
        } else {
            self.settle(pick_word, cell_word, rng)
        }
    }

    /// A draw from two random words, before the acceptance test's rare part.
    ///
    /// The first word's top bits pick an alias-table entry and the rest are its coin, a select
    /// and not a branch (which one is taken is a coin toss no predictor can learn); the cell's
    /// index is the second word's top bits and the rest its acceptance word. A cell of one
    /// block goes through the same steps as any other.
    #[inline(always)]
    fn first_try(&self, pick_word: u64, cell_word: u64) -> FirstTry {
        let pick = pick_word >> self.pick_shift;
        debug_assert!((pick as usize) < self.slots.len());
        // No bounds check (three instructions per draw): `pick` is a word's top `table_bits` bits
        // (`pick_shift` = 64 - table_bits), and the table has 2^table_bits entries (`Sampler::new`).
        // SAFETY: `pick` < 2^table_bits = `slots.len()`, as said above.
        let slot = unsafe { *self.slots.get_unchecked(pick as usize) };
        let index = slot.cell(pick_word, pick) as usize;
        debug_assert!(index < self.cells.len());
        // The entry gives its own number only where its coin threshold is above 0, which an
        // entry past the cells' count never has (`alias`), else its alias, a cell.
        // SAFETY: `index` < `cells.len()`, as said above.
        let cell = unsafe { *self.cells.get_unchecked(index) };
        FirstTry { r: cell_word >> 1 >> cell.shift(), sure: (cell_word as u16) < cell.sure(), index, cell }
    }

    /// The draw whose first try from these words was not sure: p(k) decides, and a rejected
    /// index starts over with fresh words from `rng`. Answers where the index kept lands.
    #[cold]
    #[inline(never)]
    fn settle(&self, mut pick_word: u64, mut cell_word: u64, rng: &mut fastrand::Rng) -> u64 {
        loop {
            let first = self.first_try(pick_word, cell_word);
            let lands = self.scatter.onward(first.cell.landing(), first.r);
            if first.sure {
                return lands;
            }
            // Too few bits left over in a wide cell's word: a fresh word decides.
            let word = if first.cell.bits() > WIDE { rng.u64(..) } else { first.cell.acceptance(cell_word) };
            if self.keeps(first.index, first.r, word) {
                return lands;
            }
            (pick_word, cell_word) = (rng.u64(..), rng.u64(..));
        }
    }

    /// Whether index `first + r` of cell `index` is kept, for a draw whose acceptance `word`
    /// was not below the cell's hot threshold: p(k) / peak decides.
    fn keeps(&self, index: usize, r: u64, word: u64) -> bool {
        let Cold { first, peak, sure, squeeze } = self.cold[index];
        // `sure` is 2^64 - 1 for a flat cell: always kept.
        if sure == u64::MAX || word < sure {
            return true;
        }
        let k = first + r;
        let height = (word as f64 / TWO_64) * peak;
        if let Some(squeeze) = squeeze {
            let (below, above) = squeeze.bounds(k);
            if height < below {
                return true;
            }
            if height >= above {
                return false;
            }
        }
        height < self.law.p(k)
    }
}

/// Cells of constant p for parts (first, width, weight of the whole part): each part cut into
/// power-of-two pieces, its width's binary digits.
fn flat(parts: &[(u64, u64, f64)]) -> Vec<Span> {
    let mut spans = Vec::new();
    for &(mut first, width, weight) in parts.iter().filter(|&&(_, width, weight)| width > 0 && weight > 0.0) {
        let peak = weight / width as f64;
        for bit in (0..64).rev().map(|b| 1u64 << b).filter(|&bit| width & bit != 0) {
            spans.push(Span { first, width: bit, peak, sure: u64::MAX, squeeze: None });
            first += bit;
        }
    }
    spans
}

/// Zoned: contiguous zones from block 0, in the order given, each over its share of `n`.
fn zone_cells(zones: &[Zone], n: u64) -> Result<Vec<(u64, u64, f64)>, SamplerError> {
    let mut parts = Vec::new();
    let mut size_before = 0u64;
    for zone in zones {
        let first = n * size_before / 100;
        size_before += u64::from(zone.size_pct);
        let end = n * size_before / 100;
        if end == first && zone.io_pct > 0 {
            return Err(SamplerError::ZoneTooNarrow { zone: *zone, blocks: n });
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
    let top = law.p(start);
    while left > 0 {
        let peak = law.p(at);
        // A lump is cut in powers of two too: at most 64 more cells.
        let lump = cells.len() + 65 >= MAX_CELLS || peak * left as f64 <= total * NEGLIGIBLE_TAIL;
        let width = if lump || peak == 0.0 {
            left
        } else {
            widest(law, at, left, peak, allowed_fall(law, top, peak), far)
        };
        let width = 1 << (63 - width.leading_zeros());
        let least = law.p(far(at, width));
        let first = if step > 0 { at } else { at - (width - 1) };
        // A hair under the true ratio, so that rounding in p never accepts too much.
        let sure = if width == 1 { u64::MAX } else { threshold(least / peak * (1.0 - 1e-12)) };
        if peak > 0.0 {
            let squeeze = Squeeze::new(law, at, far(at, width), width);
            cells.push(Span { first, width, peak, sure, squeeze });
            total += peak * width as f64;
        }
        left -= width;
        if left > 0 {
            at = if step > 0 { at + width } else { at - width };
        }
    }
    cells
}

/// The most p may fall across a cell whose largest p is `peak`, `top` being the law's largest:
/// EPSILON, but for the normal law EPSILON / 2 x sqrt(top / peak), at most `MOST_FALL`. A cell's
/// unsure draws (a share of about its fall) cost in proportion to its mass, and a bell's flanks
/// carry little of it: a constant fall cut normal:10 into 2,322 cells (a 96 KiB alias table,
/// beyond the L1 cache), most of them out in the flanks, where a wider fall costs next to
/// nothing. Zipf and pareto gain nothing from it: their mass falls about as fast as their
/// cells widen. (Half of EPSILON at the top: most of a bell's mass is near it, where a fall of
/// EPSILON sent 2.9% of normal:10's first tries to `settle` and its erfc, 1.6% now, for 430
/// cells instead of 254.)
fn allowed_fall(law: Law, top: f64, peak: f64) -> f64 {
    match law {
        Law::Normal { .. } => (EPSILON / 2.0 * (top / peak).sqrt()).min(MOST_FALL),
        _ => EPSILON,
    }
}

/// The most blocks from `at` (at most `left`) over which p falls by at most `fall` from `peak`.
fn widest(law: Law, at: u64, left: u64, peak: f64, fall: f64, far: impl Fn(u64, u64) -> u64) -> u64 {
    let fits = |width: u64| law.p(far(at, width)) >= peak * (1.0 - fall);
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
/// least the cells' count; entries past it have weight 0, so they always yield their alias):
/// per entry, the threshold below which a coin keeps it, and its alias.
fn alias(spans: &[Span], size: usize) -> Vec<(u64, u64)> {
    let mut weights: Vec<f64> = spans.iter().map(|c| c.peak * c.width as f64).collect();
    weights.resize(size, 0.0);
    let heaviest = (0..spans.len()).max_by(|&a, &b| weights[a].total_cmp(&weights[b])).unwrap_or(0) as u64;
    let mut entries: Vec<(u64, u64)> = (0..size as u64)
        .map(|i| if (i as usize) < spans.len() { (u64::MAX, i) } else { (0, heaviest) })
        .collect();
    let total: f64 = weights.iter().sum();
    let mut scaled: Vec<f64> = weights.iter().map(|w| w * size as f64 / total).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..size).partition(|&i| scaled[i] < 1.0);
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        entries[s] = (threshold(scaled[s]), l as u64);
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

#[cfg(test)]
#[path = "distribution_tests.rs"]
mod tests;
