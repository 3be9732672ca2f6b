//! Tests of tier detection on synthetic read-latency curves: a cache hierarchy where each tier
//! of size C serves the share of uniform random reads over a working set W that it holds of W
//! (C/W once W is past it), measured at the study's default sizes and refined by `next_probe`
//! as the study does, optionally with deterministic noise. Each point keeps its latency
//! distribution, so the capacity is judged from the share of hits beyond each tier.

use crate::cache::{
    capacity_probe_below, find_tiers, next_probe, polluted, promotion, CachePoint, CacheRule, CacheTiers,
    LatencySample,
};
use crate::cache_capacity::{latency_shares, share_below, sure_points, CAPACITY_POINTS};
use crate::pseudo_noise::Noise;

const MIB: u64 = 1 << 20;
const REGION: u64 = 1024 * MIB;
const GRID_PCT: [f64; 7] = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0];
/// Reads in each synthetic point's distribution.
const READS: f64 = 100_000.0;

/// Tiers as (size, hit latency ns), smallest first, over a backing store of `backing_ns`.
struct Hierarchy {
    tiers: Vec<(u64, f64)>,
    backing_ns: f64,
    /// Each tier begins to miss at this share of its capacity, and holds less than it could
    /// until the working set is twice its capacity (an LRU that thrashes before it is full);
    /// 1: it holds min(C, W).
    thrash: f64,
}

impl Hierarchy {
    fn new(tiers: Vec<(u64, f64)>, backing_ns: f64) -> Hierarchy {
        Hierarchy { tiers, backing_ns, thrash: 1.0 }
    }

    /// What a tier of `size` holds of a working set `w`.
    fn held(&self, size: u64, w: u64) -> f64 {
        let (c, w) = (size as f64, w as f64);
        let begins = self.thrash * c;
        if w <= begins {
            w
        } else if w >= 2.0 * c {
            c
        } else {
            begins + (c - begins) * (w - begins) / (2.0 * c - begins)
        }
    }

    /// The share of reads each level serves over `w` bytes (each tier, then the backing store)
    /// with their latency; the tiers' shares scaled by the noise's factors (sampling error,
    /// none where every read hits).
    fn levels(&self, w: u64, share_noise: &mut Noise) -> Vec<(f64, f64)> {
        let mut levels = Vec::new();
        let mut below = 0.0;
        for &(size, hit) in &self.tiers {
            let held = self.held(size, w).max(below);
            let misses = 1.0 - held / w as f64;
            let factor = 1.0 + (share_noise.factor() - 1.0) * misses;
            levels.push((((held - below) / w as f64) * factor, hit));
            below = held;
        }
        let tiers: f64 = levels.iter().map(|l| l.0).sum::<f64>().min(1.0);
        levels.push((1.0 - tiers, self.backing_ns));
        levels
    }

    fn point(&self, w: u64, noise: &mut Noise, share_noise: &mut Noise, refined: bool) -> CachePoint {
        let levels = self.levels(w, share_noise);
        // Each level's reads spread over three latencies around its own.
        let mut recorded: Vec<(u64, u64)> = levels
            .iter()
            .flat_map(|&(share, ns)| {
                [0.8, 1.0, 1.25].map(|k| ((ns * k) as u64, (share * READS / 3.0).round() as u64))
            })
            .collect();
        recorded.sort();
        let mean_ns = levels.iter().map(|(share, ns)| share * ns).sum::<f64>() * noise.factor();
        CachePoint {
            working_set_bytes: w,
            mean_ns,
            trimmed_ns: mean_ns,
            p50_ns: mean_ns as u64,
            p99_ns: mean_ns as u64,
            iops: 1e9 / mean_ns,
            refined,
            after_larger: false,
            below: latency_shares(recorded),
        }
    }

    /// The study on this hierarchy: the grid, then probes until every tier is known.
    fn study(&self, noise_pct: f64, seed: u64) -> (CacheTiers, Vec<CachePoint>) {
        self.study_to(REGION, noise_pct, seed)
    }

    /// The study over a region of `region` bytes, the shares' noise a third of the latency's:
    /// the points in the order measured (before each size of the grid, the working sets for a
    /// capacity that lie below it, as the study measures them).
    fn study_to(&self, region: u64, noise_pct: f64, seed: u64) -> (CacheTiers, Vec<CachePoint>) {
        let rule = CacheRule::default();
        let mut noise = Noise::new(seed, noise_pct);
        let mut share_noise = Noise::new(seed ^ 0x5eed, noise_pct / 3.0);
        let grid: Vec<u64> =
            GRID_PCT.iter().map(|pct| (region as f64 * pct / 100.0) as u64 / 4096 * 4096).collect();
        let mut points: Vec<CachePoint> = Vec::new();
        for (k, &w) in grid.iter().enumerate() {
            loop {
                let planned: Vec<u64> =
                    points.iter().map(|p| p.working_set_bytes).chain(grid[k..].iter().copied()).collect();
                let found = find_tiers(&points, &rule);
                let Some(probe) = capacity_probe_below(&found, &planned, w, 4096) else { break };
                assert!(probe < w, "{probe} below {w}");
                points.push(self.point(probe, &mut noise, &mut share_noise, true));
                assert!(!after_larger(&points), "nothing larger measured before {probe}");
            }
            points.push(self.point(w, &mut noise, &mut share_noise, false));
        }
        for _ in 0..40 {
            let found = find_tiers(&points, &rule);
            match next_probe(&found, &points, &rule, 4096) {
                Some(w) => {
                    points.push(self.point(w, &mut noise, &mut share_noise, true));
                    let after = after_larger(&points);
                    points.last_mut().expect("pushed").after_larger = after;
                }
                None => return (found, points),
            }
        }
        panic!("the bisection did not end: {:?}", find_tiers(&points, &rule));
    }
}

/// The last of `points` was measured after a larger one.
fn after_larger(points: &[CachePoint]) -> bool {
    points
        .split_last()
        .is_some_and(|(last, before)| before.iter().any(|p| p.working_set_bytes > last.working_set_bytes))
}

fn near(actual: f64, expected: f64, pct: f64) -> bool {
    (actual - expected).abs() <= expected * pct / 100.0
}

/// Every tier of `hierarchy` found, its capacity within `size_pct`, where its misses begin
/// within 10%, and its latencies near the truth.
fn assert_found(hierarchy: &Hierarchy, found: &CacheTiers, size_pct: f64, latency_pct: f64) {
    assert!(found.judged, "{found:?}");
    assert_eq!(found.tiers.len(), hierarchy.tiers.len(), "{found:#?}");
    for (index, (tier, &(size, hit))) in found.tiers.iter().zip(&hierarchy.tiers).enumerate() {
        assert!(tier.resolved, "tier {index}: {tier:?}");
        assert!(near(tier.size_bytes as f64, size as f64, size_pct), "tier {index} is {size}: {tier:#?}");
        // Just past where misses begin a few misses raise the mean by less than the rule's rise:
        // `fits_bytes` may lie above it by up to rise / (miss / hit - 1), 2.6% here.
        let begins = size as f64 * hierarchy.thrash;
        assert!(near(tier.fits_bytes as f64, begins, 10.0), "tier {index} misses from {begins}: {tier:?}");
        assert!(tier.upper_bytes as f64 <= tier.fits_bytes as f64 * 1.1, "within 10%: {tier:?}");
        assert!(near(tier.hit_ns, hit, latency_pct), "tier {index} hit {} vs {hit}", tier.hit_ns);
        let miss = hierarchy.tiers.get(index + 1).map_or(hierarchy.backing_ns, |t| t.1);
        assert!(near(tier.miss_ns, miss, latency_pct), "tier {index} miss {} vs {miss}", tier.miss_ns);
        assert!(tier.inside.working_set_bytes == tier.fits_bytes, "{tier:?}");
        assert!(tier.beyond.working_set_bytes >= tier.upper_bytes, "{tier:?}");
        assert!(tier.threshold_ns > hit * 1.25 && tier.threshold_ns < miss * 0.8, "{tier:?}");
        // A 1 GiB region holds two working sets past twice a 300 MiB tier, three past 250 MiB.
        assert!(sure_points(tier) >= 2, "judged on several working sets: {tier:#?}");
    }
}

fn one_tier() -> Hierarchy {
    // A page cache of 250 MiB (2 µs hits) over a disk (200 µs).
    Hierarchy::new(vec![(250 * MIB, 2_000.0)], 200_000.0)
}

fn two_tiers() -> Hierarchy {
    // A 30 MiB DRAM cache (1 µs) and a 300 MiB NVMe tier (20 µs) over SATA (500 µs).
    Hierarchy::new(vec![(30 * MIB, 1_000.0), (300 * MIB, 20_000.0)], 500_000.0)
}

#[test]
fn a_flat_curve_has_no_tier() {
    let flat = Hierarchy::new(Vec::new(), 90_000.0);
    let (found, points) = flat.study(0.0, 1);
    assert!(found.judged && found.tiers.is_empty(), "{found:?}");
    assert_eq!(points.len(), GRID_PCT.len(), "nothing to refine");
    assert!(found.note.as_deref().is_some_and(|n| n.starts_with("no tier between")), "{found:?}");
}

#[test]
fn a_noisy_flat_curve_has_no_tier() {
    for seed in 0..50 {
        let flat = Hierarchy::new(Vec::new(), 90_000.0);
        let (found, _) = flat.study(20.0, seed);
        assert!(found.tiers.is_empty(), "seed {seed}: {found:?}");
    }
}

#[test]
fn a_gradual_rise_is_no_tier() {
    // 10% more latency at each size: twice as slow at the end, with no step.
    let points: Vec<CachePoint> = GRID_PCT
        .iter()
        .enumerate()
        .map(|(i, pct)| CachePoint {
            working_set_bytes: (REGION as f64 * pct / 100.0) as u64,
            mean_ns: 10_000.0 * 1.1f64.powi(i as i32),
            ..CachePoint::default()
        })
        .collect();
    assert!(find_tiers(&points, &CacheRule::default()).tiers.is_empty());
}

#[test]
fn a_lone_spike_is_noise() {
    let mut points: Vec<CachePoint> = GRID_PCT
        .iter()
        .map(|pct| CachePoint {
            working_set_bytes: (REGION as f64 * pct / 100.0) as u64,
            mean_ns: 5_000.0,
            ..CachePoint::default()
        })
        .collect();
    points[3].mean_ns = 50_000.0;
    let found = find_tiers(&points, &CacheRule::default());
    assert!(found.tiers.is_empty(), "{found:?}");
}

#[test]
fn one_tier_is_found_within_ten_percent() {
    let hierarchy = one_tier();
    let (found, points) = hierarchy.study(0.0, 0);
    assert_found(&hierarchy, &found, 1.0, 5.0);
    assert!(points.iter().any(|p| p.refined), "the bracket 20%..50% was refined");
}

#[test]
fn one_noisy_tier_is_found_within_ten_percent() {
    for seed in 0..50 {
        let hierarchy = one_tier();
        let (found, _) = hierarchy.study(15.0, seed);
        assert_found(&hierarchy, &found, 10.0, 20.0);
    }
}

#[test]
fn a_tier_is_judged_on_three_working_sets_past_twice_its_capacity() {
    let hierarchy = one_tier();
    let (found, points) = hierarchy.study(0.0, 0);
    let tier = &found.tiers[0];
    // 500 MiB and 1 GiB were asked for; 625 MiB (2.5 x 250) and 874 MiB (3.5 x) were probed
    // before 1 GiB, which the study measures all the same.
    let used: Vec<u64> =
        tier.hit_shares.iter().filter(|s| s.used).map(|s| s.working_set_bytes / MIB).collect();
    assert_eq!(used, [512, 625, 874, 1024], "{tier:#?}");
    assert_eq!(sure_points(tier), CAPACITY_POINTS + 1, "{tier:#?}");
    assert!(points.iter().any(|p| p.refined && p.working_set_bytes > 500 * MIB), "probed past the grid");
    for share in &tier.hit_shares {
        let truth = (250.0 * MIB as f64 / share.working_set_bytes as f64).min(1.0);
        assert!((share.share - truth).abs() < 0.001, "{share:?} vs {truth}");
    }
}

#[test]
fn a_capacity_is_judged_on_working_sets_measured_before_any_larger_one() {
    // A cache still holds blocks of a larger working set measured before, and serves a smaller
    // one less than it can: each working set a capacity is judged on comes before any larger.
    for hierarchy in [one_tier(), two_tiers(), Hierarchy { thrash: 0.75, ..one_tier() }] {
        let (found, points) = hierarchy.study(0.0, 0);
        for tier in &found.tiers {
            for share in tier.hit_shares.iter().filter(|s| s.used) {
                let at = points.iter().position(|p| p.working_set_bytes == share.working_set_bytes);
                let before = &points[..at.expect("measured")];
                assert!(
                    before.iter().all(|p| p.working_set_bytes < share.working_set_bytes),
                    "{share:?} measured after a larger working set: {:?}",
                    points.iter().map(|p| p.working_set_bytes / MIB).collect::<Vec<_>>()
                );
            }
        }
    }
}

#[test]
fn a_working_set_measured_after_a_larger_one_is_not_judged_on_when_others_are() {
    // Measured again after the whole region, 625 MiB hits as if the cache held 150 MiB of it
    // (it still holds blocks past 625 MiB): left out while 512 MiB, 874 MiB and 1 GiB judge it.
    let hierarchy = one_tier();
    let (_, mut points) = hierarchy.study(0.0, 0);
    let at = points.iter().position(|p| p.working_set_bytes / MIB == 625).expect("625 MiB");
    let (mut quiet, mut quiet_shares) = (Noise::new(0, 0.0), Noise::new(0, 0.0));
    let stale = Hierarchy::new(vec![(150 * MIB, 2_000.0)], 200_000.0);
    let w = points[at].working_set_bytes;
    points[at] = CachePoint { after_larger: true, ..stale.point(w, &mut quiet, &mut quiet_shares, true) };
    let tier = &find_tiers(&points, &CacheRule::default()).tiers[0];
    let unused = tier.hit_shares.iter().find(|s| s.working_set_bytes == w).expect("judged");
    assert!(!unused.used && unused.share < 0.25, "{unused:?}");
    assert!(near(tier.size_bytes as f64, 250.0 * MIB as f64, 1.0), "{tier:#?}");
    // The same working set measured in order is judged on.
    points[at].after_larger = false;
    let tier = &find_tiers(&points, &CacheRule::default()).tiers[0];
    assert!(tier.hit_shares.iter().any(|s| s.working_set_bytes == w && s.used), "{tier:#?}");
}

#[test]
fn a_cache_that_thrashes_before_it_is_full_is_sized_by_its_capacity() {
    // Misses begin at 75% of 250 MiB; it holds all it can only from 500 MiB on.
    let hierarchy = Hierarchy { thrash: 0.75, ..one_tier() };
    let (found, _) = hierarchy.study(0.0, 0);
    assert_found(&hierarchy, &found, 1.0, 5.0);
    let tier = &found.tiers[0];
    assert!(tier.fits_bytes < 200 * MIB, "misses begin well below the capacity: {tier:?}");
    // The working sets just past the step hold less than the capacity: not used.
    assert!(tier.hit_shares.iter().any(|s| !s.used && s.capacity_bytes < 240 * MIB), "{tier:#?}");
}

#[test]
fn noisy_caches_that_thrash_are_sized_by_their_capacity() {
    for seed in 0..50 {
        let hierarchy = Hierarchy { thrash: 0.75, ..one_tier() };
        let (found, _) = hierarchy.study(15.0, seed);
        assert_found(&hierarchy, &found, 10.0, 20.0);
        let hierarchy = Hierarchy { thrash: 0.8, ..two_tiers() };
        let (found, _) = hierarchy.study(10.0, seed);
        assert_found(&hierarchy, &found, 10.0, 25.0);
    }
}

#[test]
fn a_working_set_short_of_twice_the_capacity_is_not_judged_on() {
    // 350 MiB measured after the whole region, 145 MiB of the 250 MiB cache still holding blocks
    // of the larger working set: 30% of its reads hit, in range, but it is short of twice 250 MiB.
    let hierarchy = one_tier();
    let (_, mut points) = hierarchy.study(0.0, 0);
    let stale = 350 * MIB;
    let hits = (30_000.0, 70_000.0);
    points.push(CachePoint {
        working_set_bytes: stale,
        mean_ns: 0.3 * 2_000.0 + 0.7 * 200_000.0,
        trimmed_ns: 0.3 * 2_000.0 + 0.7 * 200_000.0,
        below: latency_shares([(2_000, hits.0 as u64), (200_000, hits.1 as u64)]),
        ..CachePoint::default()
    });
    let found = find_tiers(&points, &CacheRule::default());
    let tier = &found.tiers[0];
    let at = tier.hit_shares.iter().find(|s| s.working_set_bytes == stale).expect("judged");
    assert!((at.share - 0.3).abs() < 1e-9 && !at.used, "{at:?}");
    assert!(near(tier.size_bytes as f64, 250.0 * MIB as f64, 1.0), "{tier:?}");
}

#[test]
fn a_region_short_of_twice_the_tier_judges_every_working_set_with_hits() {
    // 250 MiB in a 400 MiB region: every working set past the step hits more than half the time.
    let hierarchy = one_tier();
    let (found, _) = hierarchy.study_to(400 * MIB, 0.0, 0);
    let tier = &found.tiers[0];
    assert_eq!(sure_points(tier), 0, "{tier:#?}");
    assert!(tier.hit_shares.iter().all(|s| s.used == (s.share > 0.0)), "{tier:#?}");
    assert!(near(tier.size_bytes as f64, 250.0 * MIB as f64, 1.0), "exact for an ideal cache: {tier:?}");
}

#[test]
fn points_without_a_distribution_size_a_tier_where_misses_begin() {
    let hierarchy = one_tier();
    let (_, mut points) = hierarchy.study(0.0, 0);
    points.iter_mut().for_each(|p| p.below.clear());
    let found = find_tiers(&points, &CacheRule::default());
    let tier = &found.tiers[0];
    assert_eq!(tier.size_bytes, tier.fits_bytes, "{tier:?}");
    assert!(tier.hit_shares.is_empty() && sure_points(tier) == 0);
    assert_eq!(next_probe(&found, &points, &CacheRule::default(), 4096), None, "nothing to judge it on");
}

#[test]
fn latency_shares_count_the_reads_at_or_below_each_step() {
    // 2^10 = 1024 ns and 2^11 = 2048 ns are steps of the ladder (4 a doubling).
    let shares = latency_shares([(1_000, 3), (1_024, 1), (2_000, 4), (150_000, 2)]);
    let at = |ns: u64| shares.iter().find(|s| s.ns == ns).map(|s| s.share);
    assert_eq!(shares.first().map(|s| s.ns), Some(1_024), "from the first step with a read");
    assert_eq!(at(1_024), Some(0.4));
    assert_eq!(at(2_048), Some(0.8));
    assert_eq!(shares.last().map(|s| s.share), Some(1.0), "up to the first step with all of them");
    assert!(shares.last().is_some_and(|s| s.ns >= 150_000 && s.ns < 180_000), "{shares:?}");
    assert!(shares.windows(2).all(|w| w[0].ns < w[1].ns && w[0].share <= w[1].share));
    assert!(latency_shares([]).is_empty());

    let point = CachePoint { below: shares, ..CachePoint::default() };
    assert_eq!(share_below(&point, 500.0), Some(0.0), "below the first step");
    assert_eq!(share_below(&point, 2_047.0), share_below(&point, 1_800.0));
    assert_eq!(share_below(&point, 20_000.0), Some(0.8));
    assert_eq!(share_below(&point, 1e12), Some(1.0));
    assert_eq!(share_below(&CachePoint::default(), 20_000.0), None, "no distribution kept");
}

#[test]
fn two_tiers_are_found_each_within_ten_percent() {
    let hierarchy = two_tiers();
    let (found, _) = hierarchy.study(0.0, 0);
    assert_found(&hierarchy, &found, 1.0, 10.0);
}

#[test]
fn two_noisy_tiers_are_found_each_within_ten_percent() {
    for seed in 0..50 {
        let hierarchy = two_tiers();
        let (found, _) = hierarchy.study(10.0, seed);
        assert_found(&hierarchy, &found, 10.0, 25.0);
    }
}

#[test]
fn a_tier_larger_than_the_region_is_no_tier() {
    let all_cached = Hierarchy::new(vec![(2 * REGION, 2_000.0)], 200_000.0);
    let (found, _) = all_cached.study(5.0, 3);
    assert!(found.tiers.is_empty(), "{found:?}");
}

#[test]
fn too_few_points_are_not_judged() {
    let one = [CachePoint { working_set_bytes: MIB, mean_ns: 1.0, ..CachePoint::default() }];
    let found = find_tiers(&one, &CacheRule::default());
    assert!(!found.judged && found.note.is_some());
    assert_eq!(next_probe(&found, &one, &CacheRule::default(), 4096), None);
}

#[test]
fn promotion_is_when_the_set_stays_fast() {
    let samples: Vec<LatencySample> = [200.0, 150.0, 80.0, 2.5, 9.0, 2.0, 2.1, 1.9]
        .iter()
        .enumerate()
        .map(|(i, us)| LatencySample { t_s: (i + 1) as f64 * 0.5, mean_ns: us * 1e3 })
        .collect();
    // 2.5 µs at 2 s is fast, but 9 µs after it is not: fast from the end of the 6th interval.
    assert_eq!(promotion(&samples, 3_000.0), (Some(3.0), false));
    assert_eq!(promotion(&samples, 1_000.0), (None, false), "never that fast");
    assert_eq!(promotion(&samples[5..], 3_000.0), (Some(3.0), true), "already cached");
    assert_eq!(promotion(&[], 3_000.0), (None, false));
}

#[test]
fn a_hot_set_that_slows_after_a_scan_is_polluted() {
    let at = |mean_ns| CachePoint { mean_ns, ..CachePoint::default() };
    let rule = CacheRule::default();
    assert!(!polluted(&at(2_000.0), &at(2_900.0), &rule));
    assert!(polluted(&at(2_000.0), &at(60_000.0), &rule));
}

#[test]
fn bad_rules_are_refused() {
    assert!(CacheRule { rise_pct: 0.0, ..CacheRule::default() }.validate().is_err());
    assert!(CacheRule { precision_pct: 0.5, ..CacheRule::default() }.validate().is_err());
    assert!(CacheRule::default().validate().is_ok());
}

#[test]
fn a_cache_report_reads_back_and_tolerates_missing_fields() {
    use crate::cache::CacheSummary;
    // Round figures, which JSON carries exactly.
    let points: Vec<CachePoint> = [(64, 2_000.0), (128, 2_500.0), (256, 100_000.0), (512, 150_000.0)]
        .iter()
        .map(|&(mib, ns)| CachePoint {
            working_set_bytes: mib * MIB,
            mean_ns: ns,
            trimmed_ns: ns,
            iops: 1e9 / ns,
            ..CachePoint::default()
        })
        .collect();
    let found = find_tiers(&points, &CacheRule::default());
    assert_eq!(found.tiers.len(), 1);
    let summary = CacheSummary {
        found,
        rule: CacheRule::default(),
        region_bytes: REGION,
        points,
        ..CacheSummary::default()
    };
    let text = serde_json::to_string(&summary).expect("json");
    assert_eq!(serde_json::from_str::<CacheSummary>(&text).expect("reads back"), summary);
    let old: CacheSummary = serde_json::from_value(
        serde_json::json!({ "points": [{ "working_set_bytes": 4096, "mean_ns": 2.0 }] }),
    )
    .expect("an older report");
    assert_eq!(old.points[0].level_ns(), 2.0, "no trimmed mean: the mean is judged");
    assert_eq!(old.rule, CacheRule::default());
}
