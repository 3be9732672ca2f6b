//! A tier's capacity, from the share of reads it serves beyond it.
//!
//! Under uniform random reads over a working set W every read falls on a block at random, so
//! whatever a cache holds of W serves its share of the reads: the share that hits is (bytes of
//! W held) / W, whichever blocks the cache keeps (LRU, CLOCK, ARC, a tier's promotions). Once W
//! is well past the tier the tier is full of W, and its capacity is C = h x W. Where misses
//! *begin* says less: a real cache may start missing before it is full (the kernel's LRU lists
//! evict while a memory cgroup still has room, an LRU under pressure thrashes), so the working
//! sets judged are those where at most half the reads hit (W at least twice what the tier held)
//! and at least 5% (fewer hits are mostly noise), and C is the median of their h x W.
//!
//! h is read off each working set's latency distribution: the share of its reads at or below
//! the geometric middle of the tier's hit and miss latencies. A point keeps that distribution as
//! the share of its reads at or below each step of a fixed ladder of latencies (4 steps a
//! doubling, 19% apart), computed from its merged histogram (exact to the histogram's 0.1%).

use iolab_stats::central::median;

use crate::cache_curve::{CachePoint, Tier};
pub use crate::cache_curve::{HitShare, LatencyShare, MAX_HIT_SHARE};

/// Beyond a tier, working sets where fewer of the reads hit are not judged: a few hits among
/// thousands of reads are mostly noise.
pub const MIN_HIT_SHARE: f64 = 0.05;
/// "Twice the capacity" as the median of the working sets in range first judges it: less 10%
/// for that estimate's own error.
const TWICE: f64 = 1.8;
/// Working sets (with a share of hits in range) a capacity is the median of, when the region
/// holds them.
pub const CAPACITY_POINTS: usize = 3;
/// Where `capacity_probe` measures, as multiples of the capacity estimated so far: past twice
/// it (with a margin for the estimate's own error), and short of 1 / `MIN_HIT_SHARE`.
const PROBE_MULTIPLES: [f64; 5] = [2.5, 3.5, 5.0, 7.0, 10.0];
/// A working set for a capacity is not measured within this share of one measured already: as
/// the estimate moves, the next multiple would land next to the last one.
const PROBE_SPACING: f64 = 0.15;
const STEPS_PER_DOUBLING: u32 = 4;
/// The ladder runs from 2^6 ns (64 ns) to 2^36 ns (69 s).
const LADDER_DOUBLINGS: (u32, u32) = (6, 36);

/// The steps of the ladder, fastest first.
fn ladder() -> impl Iterator<Item = u64> {
    let (first, last) = LADDER_DOUBLINGS;
    (first * STEPS_PER_DOUBLING..=last * STEPS_PER_DOUBLING)
        .map(|k| 2f64.powf(f64::from(k) / f64::from(STEPS_PER_DOUBLING)).round() as u64)
}

/// The share of reads at or below each step of the ladder, from a histogram's recorded values
/// as (latency ns, count) in rising latency order: from the first step any read is at or below,
/// to the first all of them are. Empty for no reads.
pub fn latency_shares(recorded: impl IntoIterator<Item = (u64, u64)>) -> Vec<LatencyShare> {
    let recorded: Vec<(u64, u64)> = recorded.into_iter().filter(|r| r.1 > 0).collect();
    let total: u64 = recorded.iter().map(|r| r.1).sum();
    let mut shares = Vec::new();
    let (mut at_or_below, mut next) = (0u64, recorded.iter().peekable());
    for ns in ladder() {
        while let Some((_, count)) = next.next_if(|r| r.0 <= ns) {
            at_or_below += count;
        }
        if at_or_below > 0 {
            shares.push(LatencyShare { ns, share: at_or_below as f64 / total as f64 });
        }
        if at_or_below == total {
            break;
        }
    }
    shares
}

/// The share of `point`'s reads at or below `threshold_ns`, from the highest step of its ladder
/// not above it; `None` when the point keeps no distribution (an older report).
pub fn share_below(point: &CachePoint, threshold_ns: f64) -> Option<f64> {
    let below = &point.below;
    (!below.is_empty())
        .then(|| below.iter().take_while(|s| s.ns as f64 <= threshold_ns).last().map_or(0.0, |s| s.share))
}

/// The threshold between a tier's hits and its misses: their geometric middle.
pub fn threshold_ns(hit_ns: f64, miss_ns: f64) -> f64 {
    (hit_ns.max(0.0) * miss_ns.max(0.0)).sqrt()
}

/// The capacity of a tier whose hits take `hit_ns` and misses `miss_ns`, from the working sets
/// `beyond` it: the median of share x W over those where `MIN_HIT_SHARE` <= share <=
/// `MAX_HIT_SHARE` (leaving out those measured after a larger working set, when any other is)
/// and, if any is, W >= `TWICE` x that median first taken over them all; when
/// none is in range, over every one with a share of hits above 0 (a region short of twice the
/// tier: less sure, and low for a cache that thrashes before it is full). `None` when no
/// working set beyond keeps a distribution or has a hit.
pub(crate) fn capacity(beyond: &[CachePoint], hit_ns: f64, miss_ns: f64) -> (Option<u64>, Vec<HitShare>) {
    let threshold = threshold_ns(hit_ns, miss_ns);
    let (mut shares, after_larger): (Vec<HitShare>, Vec<bool>) = beyond
        .iter()
        .filter_map(|p| {
            let share = share_below(p, threshold)?;
            let capacity_bytes = (share * p.working_set_bytes as f64).round() as u64;
            let hit = HitShare { working_set_bytes: p.working_set_bytes, share, capacity_bytes, used: false };
            Some((hit, p.after_larger))
        })
        .unzip();
    let in_range = |s: &HitShare| (MIN_HIT_SHARE..=MAX_HIT_SHARE).contains(&s.share);
    let sure = shares.iter().any(in_range);
    // Working sets measured after a larger one are left out when another is in range.
    let fresh = shares.iter().zip(&after_larger).any(|(s, after)| in_range(s) && !after);
    for (share, after) in shares.iter_mut().zip(after_larger) {
        share.used = if sure { in_range(share) && !(fresh && after) } else { share.share > 0.0 };
    }
    // A cache still holding blocks of a larger working set measured before (the kernel's active
    // list keeps them through a sequential warm pass) hits less than its capacity allows, and
    // so may hit at most half the time short of twice its capacity: those are left out too.
    if let Some(first) = median_capacity(&shares) {
        let near: Vec<bool> =
            shares.iter().map(|s| (s.working_set_bytes as f64) < TWICE * first as f64).collect();
        if shares.iter().zip(&near).any(|(s, near)| s.used && !near) {
            shares.iter_mut().zip(near).for_each(|(s, near)| s.used &= !near);
        }
    }
    (median_capacity(&shares), shares)
}

fn median_capacity(shares: &[HitShare]) -> Option<u64> {
    let used: Vec<f64> = shares.iter().filter(|s| s.used).map(|s| s.capacity_bytes as f64).collect();
    median(&used).map(|c| c.round() as u64)
}

/// How many working sets with a share of hits in range the tier's capacity is the median of.
pub fn sure_points(tier: &Tier) -> usize {
    tier.hit_shares.iter().filter(|s| s.used && s.share <= MAX_HIT_SHARE && s.share >= MIN_HIT_SHARE).count()
}

/// The working set to measure next to know `tier`'s capacity: while fewer than
/// `CAPACITY_POINTS` working sets judge it, the first of `PROBE_MULTIPLES` of the capacity so
/// far (rounded down to `align`) that lies past the tier, no larger than `largest`, and not
/// within `PROBE_SPACING` of one of `measured` (measured, or to be). `None` when the points
/// measured keep no distribution.
pub(crate) fn capacity_probe(tier: &Tier, measured: &[u64], largest: u64, align: u64) -> Option<u64> {
    if tier.hit_shares.is_empty() || sure_points(tier) >= CAPACITY_POINTS {
        return None;
    }
    let near = |a: u64, b: u64| (a as f64 - b as f64).abs() <= b as f64 * PROBE_SPACING;
    PROBE_MULTIPLES
        .iter()
        .map(|m| (tier.size_bytes as f64 * m) as u64 / align * align)
        .filter(|&w| w > tier.upper_bytes && w <= largest)
        .find(|&w| !measured.iter().any(|&m| near(m, w)))
}
