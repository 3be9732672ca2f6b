//! Tiers in a read-latency curve: mean random-read latency against the working-set size, each
//! size warmed (read once) before it is measured. While the working set fits a cache or fast
//! tier every read hits it; past the tier's size a share of the reads miss, and the mean
//! latency rises at once: the step says where misses begin (the largest working set measured
//! inside). A real cache may begin to miss before it is full, so the tier's size is its
//! capacity, from the share of reads that still hit beyond the step (cache_capacity.rs).
//!
//! Past a tier of size C, uniform random reads over a working set W hit it C/W of the time at
//! best, so the mean keeps rising towards the miss latency as W grows, with no level of its
//! own. Each tier found is therefore peeled off before the next is looked for: the latency of
//! a *miss* of the tiers found, (L - the hits' share of it) / (1 - hit share), is flat until the
//! next tier is full. The rule is written down in docs/characterization.md ("Read cache and
//! tiers"); this file is its only implementation, and `next_probe` says which working set the
//! study measures next to know each tier's size within `precision_pct`.
//!
//! What it reports (`CachePoint`, `Tier`, `CacheSummary`, ...) is kept and read back from the
//! store (the HTML report draws it); those types live in cache_curve.rs.

use iolab_spec::Bytes;
use iolab_stats::central::median;

use crate::cache_capacity::{capacity, capacity_probe, threshold_ns};
pub use crate::cache_curve::{
    CachePoint, CacheRule, CacheSummary, CacheTiers, LatencySample, Pollution, Promotion, Tier, MAX_HIT_SHARE,
};

/// A tier as the peeling needs it: its size and the latency of its hits.
#[derive(Clone, Copy)]
struct Found {
    size: f64,
    hit_ns: f64,
}

/// The tiers in `points` (any order; one per working set, a later duplicate ignored).
/// Expects a rule that passed `validate`.
pub fn find_tiers(points: &[CachePoint], rule: &CacheRule) -> CacheTiers {
    let points = sorted(points);
    if points.len() < 2 {
        let note =
            format!("{} working set(s) measured; a tier needs one inside it and one beyond", points.len());
        return CacheTiers { tiers: Vec::new(), judged: false, note: Some(note) };
    }
    let mut found: Vec<Found> = Vec::new();
    let mut tiers: Vec<Tier> = Vec::new();
    let mut start = 0;
    loop {
        let mut after = walk(&points, &found, start, rule);
        if let Some(tier) = tiers.last_mut() {
            // The level after the tier, judged with the tier peeled at the largest working set
            // inside it, places the threshold between its hits and its misses, and so gives its
            // capacity; then the level is judged again with the capacity peeled.
            settle(tier, &after, &points);
            let (size, shares) = capacity(&points[start..], tier.hit_ns, tier.miss_ns);
            tier.threshold_ns = threshold_ns(tier.hit_ns, tier.miss_ns);
            tier.hit_shares = shares;
            if let (Some(size), Some(peeled)) = (size, found.last_mut()) {
                tier.size_bytes = size;
                peeled.size = size as f64;
                after = walk(&points, &found, start, rule);
                settle(tier, &after, &points);
            }
        }
        let Some((inside, beyond, hit_ns)) = after.step else { break };
        let (fits, upper) = (points[inside].working_set_bytes, points[beyond].working_set_bytes);
        found.push(Found { size: fits as f64, hit_ns });
        tiers.push(Tier {
            size_bytes: fits,
            fits_bytes: fits,
            upper_bytes: upper,
            resolved: upper as f64 <= fits as f64 * (1.0 + rule.precision_pct / 100.0),
            hit_ns,
            // Until a level after it is judged (no point lies far enough beyond): the step's own.
            miss_ns: miss_ns(&found, &points[beyond]),
            threshold_ns: 0.0,
            hit_shares: Vec::new(),
            inside: points[inside].clone(),
            beyond: points[beyond].clone(),
        });
        start = beyond;
    }
    let note = tiers.is_empty().then(|| flat_note(&points, rule));
    CacheTiers { tiers, judged: true, note }
}

/// The working set to measure next: one beyond a tier whose capacity wants more working sets to
/// judge it (`capacity_probe`) first; else the geometric middle of the first tier's
/// bracket that is wider than the rule's precision, rounded down to `align` bytes; `None` when
/// every tier is known (or no working set for a capacity fits within the largest of `points`,
/// or a bracket cannot be split at that alignment).
pub fn next_probe(found: &CacheTiers, points: &[CachePoint], rule: &CacheRule, align: u64) -> Option<u64> {
    let align = align.max(1);
    let measured: Vec<u64> = points.iter().map(|p| p.working_set_bytes).collect();
    let largest = measured.iter().copied().max().unwrap_or(0);
    let capacity = found.tiers.iter().find_map(|tier| capacity_probe(tier, &measured, largest, align));
    capacity.or_else(|| {
        let precision = 1.0 + rule.precision_pct / 100.0;
        found.tiers.iter().filter(|t| t.upper_bytes as f64 > t.fits_bytes as f64 * precision).find_map(
            |tier| {
                let middle =
                    ((tier.fits_bytes as f64 * tier.upper_bytes as f64).sqrt() as u64) / align * align;
                (middle > tier.fits_bytes && middle < tier.upper_bytes).then_some(middle)
            },
        )
    })
}

/// A working set for a tier's capacity (as `next_probe`'s first step) below `below`, the next
/// size the study was asked for, which `planned` holds with the sizes measured (none is probed
/// within 15% of one of them): measured before it, so that every working set a capacity is
/// judged on is measured before any larger one. A cache still holds blocks of a larger working
/// set measured before (the kernel's active list keeps those that were hit) and serves a
/// smaller one less than it can: 20-35% fewer hits than the page cache held, over working sets
/// measured after the whole region in a memory cgroup. `None` when no tier wants one there.
pub fn capacity_probe_below(found: &CacheTiers, planned: &[u64], below: u64, align: u64) -> Option<u64> {
    let largest = below.saturating_sub(1);
    found.tiers.iter().find_map(|tier| capacity_probe(tier, planned, largest, align.max(1)))
}

/// The usable working sets from one tier's step on, their level and the next step up.
struct Walk {
    /// The first usable working set: where the level starts.
    first: Option<usize>,
    /// The misses of the tiers found at each working set on the level.
    level: Vec<f64>,
    /// (last inside, first beyond, the level's latency) of the next tier.
    step: Option<(usize, usize, f64)>,
}

/// Walks up the working sets from `start` with the tiers `found` peeled (rule step 3).
fn walk(points: &[CachePoint], found: &[Found], start: usize, rule: &CacheRule) -> Walk {
    let usable: Vec<usize> = (start..points.len())
        .filter(|&i| found.is_empty() || hit_share(found, points[i].working_set_bytes) <= MAX_HIT_SHARE)
        .collect();
    let Some(&first) = usable.first() else {
        return Walk { first: None, level: Vec::new(), step: None };
    };
    let miss = |i: usize| miss_ns(found, &points[i]);
    let mut level = vec![miss(first)];
    let mut step = None;
    for (k, pair) in usable.windows(2).enumerate() {
        let here = median(&level).unwrap_or(0.0);
        let ceiling = rule.ceiling(here);
        if miss(pair[1]) > ceiling && confirmed(&usable[k + 2..], ceiling, miss) {
            step = Some((pair[0], pair[1], here));
            break;
        }
        // A lone spike that the next point does not confirm is noise, not part of the level.
        if miss(pair[1]) <= ceiling {
            level.push(miss(pair[1]));
        }
    }
    Walk { first: Some(first), level, step }
}

/// A tier's miss latency is the level after it, once one is judged, and its figures beyond
/// are those where that level starts.
fn settle(tier: &mut Tier, after: &Walk, points: &[CachePoint]) {
    if let (Some(level), Some(first)) = (median(&after.level), after.first) {
        tier.miss_ns = level;
        tier.beyond = points[first].clone();
    }
}

/// Seconds until a hot set read from cold became fast: the end of the first interval from
/// which every interval's mean latency is at most `target_ns`.
pub fn promotion(samples: &[LatencySample], target_ns: f64) -> (Option<f64>, bool) {
    let fast = |s: &LatencySample| s.mean_ns > 0.0 && s.mean_ns <= target_ns;
    let from = samples.iter().rposition(|s| !fast(s)).map_or(0, |i| i + 1);
    let reached = samples.get(from).map(|s| s.t_s);
    (reached, from == 0 && reached.is_some())
}

/// A hot set is polluted when its latency after a scan is more than the rule's share above
/// its latency before.
pub fn polluted(before: &CachePoint, after: &CachePoint, rule: &CacheRule) -> bool {
    after.level_ns() > rule.ceiling(before.level_ns())
}

fn sorted(points: &[CachePoint]) -> Vec<CachePoint> {
    let mut sorted: Vec<CachePoint> = Vec::with_capacity(points.len());
    for point in points {
        if !sorted.iter().any(|p| p.working_set_bytes == point.working_set_bytes) {
            sorted.push(point.clone());
        }
    }
    sorted.sort_by_key(|p| p.working_set_bytes);
    sorted
}

/// A step is confirmed by the next usable point beyond it, if there is one.
fn confirmed(after: &[usize], threshold: f64, miss: impl Fn(usize) -> f64) -> bool {
    after.first().is_none_or(|&i| miss(i) > threshold)
}

/// The share of reads over `working_set` that the tiers found serve: each holds its size.
fn hit_share(found: &[Found], working_set: u64) -> f64 {
    let w = working_set as f64;
    found.last().map_or(0.0, |last| (last.size.min(w) / w).min(1.0))
}

/// The mean latency of the reads the tiers found miss: the point's mean with their hits taken
/// out (C_k - C_k-1 of every W reads at each tier's hit latency).
fn miss_ns(found: &[Found], point: &CachePoint) -> f64 {
    let w = point.working_set_bytes as f64;
    let mut below = 0.0;
    let mut hits = 0.0;
    for tier in found {
        let held = tier.size.min(w);
        hits += tier.hit_ns * (held - below) / w;
        below = held;
    }
    let share = below / w;
    if share >= 1.0 {
        return point.level_ns();
    }
    (point.level_ns() - hits) / (1.0 - share)
}

fn flat_note(points: &[CachePoint], rule: &CacheRule) -> String {
    let (first, last) = (&points[0], &points[points.len() - 1]);
    format!(
        "no tier between working sets of {} and {}: latency never rose more than {}% (and {} µs) above its level and stayed up ({:.1} µs at the smallest, {:.1} µs at the largest, mean of the fastest 99%)",
        Bytes(first.working_set_bytes),
        Bytes(last.working_set_bytes),
        rule.rise_pct,
        rule.min_rise_ns / 1e3,
        first.level_ns() / 1e3,
        last.level_ns() / 1e3
    )
}
