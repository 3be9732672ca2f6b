//! Tests of tier detection on synthetic read-latency curves: a cache hierarchy where each tier
//! of size C serves C/W of uniform random reads over a working set W (what LRU gives at best),
//! measured at the study's default sizes and refined by `next_probe` as the study does,
//! optionally with deterministic noise.

use crate::cache::{
    find_tiers, next_probe, polluted, promotion, CachePoint, CacheRule, CacheTiers, LatencySample,
};
use crate::pseudo_noise::Noise;

const MIB: u64 = 1 << 20;
const REGION: u64 = 1024 * MIB;
const GRID_PCT: [f64; 7] = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0];

/// Tiers as (size, hit latency ns), smallest first, over a backing store of `backing_ns`.
struct Hierarchy {
    tiers: Vec<(u64, f64)>,
    backing_ns: f64,
}

impl Hierarchy {
    /// Mean latency of uniform random reads over `w` bytes.
    fn mean_ns(&self, w: u64) -> f64 {
        let w = w as f64;
        let mut below = 0.0;
        let mut total = 0.0;
        for &(size, hit) in &self.tiers {
            let held = (size as f64).min(w);
            total += hit * (held - below) / w;
            below = held;
        }
        total + self.backing_ns * (1.0 - below / w)
    }

    fn point(&self, w: u64, noise: &mut Noise, refined: bool) -> CachePoint {
        let mean_ns = self.mean_ns(w) * noise.factor();
        CachePoint {
            working_set_bytes: w,
            mean_ns,
            trimmed_ns: mean_ns,
            p50_ns: mean_ns as u64,
            p99_ns: mean_ns as u64,
            iops: 1e9 / mean_ns,
            refined,
        }
    }

    /// The study on this hierarchy: the grid, then probes until every tier is resolved.
    fn study(&self, noise_pct: f64, seed: u64) -> (CacheTiers, Vec<CachePoint>) {
        let rule = CacheRule::default();
        let mut noise = Noise::new(seed, noise_pct);
        let mut points: Vec<CachePoint> = GRID_PCT
            .iter()
            .map(|pct| self.point((REGION as f64 * pct / 100.0) as u64 / 4096 * 4096, &mut noise, false))
            .collect();
        for _ in 0..40 {
            let found = find_tiers(&points, &rule);
            match next_probe(&found, 4096) {
                Some(w) => points.push(self.point(w, &mut noise, true)),
                None => return (found, points),
            }
        }
        panic!("the bisection did not end: {:?}", find_tiers(&points, &rule));
    }
}

fn near(actual: f64, expected: f64, pct: f64) -> bool {
    (actual - expected).abs() <= expected * pct / 100.0
}

/// Every tier of `hierarchy` found, its size within 10% and its latencies near the truth.
fn assert_found(hierarchy: &Hierarchy, found: &CacheTiers, latency_pct: f64) {
    assert!(found.judged, "{found:?}");
    assert_eq!(found.tiers.len(), hierarchy.tiers.len(), "{found:#?}");
    for (index, (tier, &(size, hit))) in found.tiers.iter().zip(&hierarchy.tiers).enumerate() {
        assert!(tier.resolved, "tier {index}: {tier:?}");
        // Just past a tier a few misses raise the mean by less than the rule's rise: the size
        // found may lie above the true one by up to rise / (miss / hit - 1), 2.6% here.
        assert!(near(tier.size_bytes as f64, size as f64, 10.0), "tier {index} is {size}: {tier:?}");
        assert!(tier.upper_bytes as f64 <= tier.size_bytes as f64 * 1.1, "within 10%: {tier:?}");
        assert!(near(tier.hit_ns, hit, latency_pct), "tier {index} hit {} vs {hit}", tier.hit_ns);
        let miss = hierarchy.tiers.get(index + 1).map_or(hierarchy.backing_ns, |t| t.1);
        assert!(near(tier.miss_ns, miss, latency_pct), "tier {index} miss {} vs {miss}", tier.miss_ns);
        assert!(tier.inside.working_set_bytes == tier.size_bytes, "{tier:?}");
        assert!(tier.beyond.working_set_bytes >= tier.upper_bytes, "{tier:?}");
    }
}

fn one_tier() -> Hierarchy {
    // A page cache of 250 MiB (2 µs hits) over a disk (200 µs).
    Hierarchy { tiers: vec![(250 * MIB, 2_000.0)], backing_ns: 200_000.0 }
}

fn two_tiers() -> Hierarchy {
    // A 30 MiB DRAM cache (1 µs) and a 300 MiB NVMe tier (20 µs) over SATA (500 µs).
    Hierarchy { tiers: vec![(30 * MIB, 1_000.0), (300 * MIB, 20_000.0)], backing_ns: 500_000.0 }
}

#[test]
fn a_flat_curve_has_no_tier() {
    let flat = Hierarchy { tiers: Vec::new(), backing_ns: 90_000.0 };
    let (found, points) = flat.study(0.0, 1);
    assert!(found.judged && found.tiers.is_empty(), "{found:?}");
    assert_eq!(points.len(), GRID_PCT.len(), "nothing to refine");
    assert!(found.note.as_deref().is_some_and(|n| n.starts_with("no tier between")), "{found:?}");
}

#[test]
fn a_noisy_flat_curve_has_no_tier() {
    for seed in 0..50 {
        let flat = Hierarchy { tiers: Vec::new(), backing_ns: 90_000.0 };
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
    assert_found(&hierarchy, &found, 5.0);
    assert!(points.iter().any(|p| p.refined), "the bracket 20%..50% was refined");
}

#[test]
fn one_noisy_tier_is_found_within_ten_percent() {
    for seed in 0..50 {
        let hierarchy = one_tier();
        let (found, _) = hierarchy.study(15.0, seed);
        assert_found(&hierarchy, &found, 20.0);
    }
}

#[test]
fn two_tiers_are_found_each_within_ten_percent() {
    let hierarchy = two_tiers();
    let (found, _) = hierarchy.study(0.0, 0);
    assert_found(&hierarchy, &found, 10.0);
}

#[test]
fn two_noisy_tiers_are_found_each_within_ten_percent() {
    for seed in 0..50 {
        let hierarchy = two_tiers();
        let (found, _) = hierarchy.study(10.0, seed);
        assert_found(&hierarchy, &found, 25.0);
    }
}

#[test]
fn a_tier_larger_than_the_region_is_no_tier() {
    let all_cached = Hierarchy { tiers: vec![(2 * REGION, 2_000.0)], backing_ns: 200_000.0 };
    let (found, _) = all_cached.study(5.0, 3);
    assert!(found.tiers.is_empty(), "{found:?}");
}

#[test]
fn too_few_points_are_not_judged() {
    let one = [CachePoint { working_set_bytes: MIB, mean_ns: 1.0, ..CachePoint::default() }];
    let found = find_tiers(&one, &CacheRule::default());
    assert!(!found.judged && found.note.is_some());
    assert_eq!(next_probe(&found, 4096), None);
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
