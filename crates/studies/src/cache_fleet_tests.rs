//! Tests of the fleet's cache study: each host's share, the union of refinement points, the
//! capacity's working sets before the larger rungs, and marks from each curve's own points.

use std::path::PathBuf;

use iolab_analysis::cache::CacheRule;
use iolab_analysis::cache_capacity::{latency_shares, HitShare};
use iolab_spec::Options;

use super::*;
use crate::plan::Input;

const MIB: u64 = 1 << 20;

fn study(sizes: &str, target: bool) -> CacheStudy {
    let options = Options {
        target: target.then(|| vec![PathBuf::from("/nonexistent/iolab-fleet-cache-test")]),
        ..Options::default()
    };
    let input = Input::flags(&options, Vec::new());
    CacheStudy::new(&input, sizes.parse().unwrap(), CacheRule::default(), None, false).unwrap()
}

fn fleet(regions_mib: &[u64]) -> FleetCacheFound {
    let hosts = regions_mib
        .iter()
        .enumerate()
        .map(|(i, &mib)| HostFound {
            host: format!("h{i}"),
            found: CacheFound { region_bytes: mib * MIB, ..CacheFound::default() },
            failure: None,
        })
        .collect();
    FleetCacheFound { hosts, merged: CacheFound::default() }
}

#[test]
fn each_host_reads_its_share_of_its_own_region_and_a_size_is_the_same_everywhere() {
    let found = fleet(&[100, 400]);
    let steps = study("50%,10%,8m", true).ladder(&found).unwrap();
    let sizes: Vec<&[u64]> = steps.iter().map(|s| s.sizes.as_slice()).collect();
    // In order of the mean share: 8 MiB is 8% and 2%, 10% is 10% on both, 50% last.
    assert_eq!(sizes, vec![&[8 * MIB, 8 * MIB][..], &[10 * MIB, 40 * MIB], &[50 * MIB, 200 * MIB]]);
    let labels: Vec<&str> = steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, vec!["8MiB", "10%", "50%"]);
    assert!(steps.iter().all(|s| !s.refined));
}

#[test]
fn a_size_larger_than_one_hosts_region_names_that_host() {
    let Err(RunError::Invalid(message)) = study("64m", true).ladder(&fleet(&[256, 32])) else {
        panic!("refused")
    };
    assert!(message.starts_with("h1: working set 64MiB is larger than the region"), "{message}");
}

#[test]
fn a_refinement_point_is_the_askers_size_and_the_same_share_elsewhere() {
    let found = fleet(&[100, 400]);
    let cache = study("100%", true);
    let step = cache.union_step(&found, 0, 30 * MIB + 512 * 1024);
    // 30.5% of 400 MiB, rounded down to the 128 KiB grain.
    assert_eq!(step.sizes, vec![30 * MIB + 512 * 1024, 122 * MIB]);
    assert_eq!(step.label, "30.5%");
    assert!(step.refined);
    // Never beyond a host's region, never under one grain.
    let step = cache.union_step(&found, 1, 400 * MIB);
    assert_eq!(step.sizes, vec![100 * MIB, 400 * MIB]);
    let step = cache.union_step(&found, 1, 128 * 1024);
    assert_eq!(step.sizes, vec![128 * 1024, 128 * 1024]);
}

/// A host whose cache holds `capacity` bytes of any working set (hits 2 µs, misses 200 µs):
/// its point at `size` bytes.
fn cached(capacity: u64, size: u64, refined: bool) -> CachePoint {
    const READS: u64 = 1_000_000;
    let hits = (capacity.min(size) as f64 / size as f64 * READS as f64).round() as u64;
    let mean_ns = (hits as f64 * 2_000.0 + (READS - hits) as f64 * 200_000.0) / READS as f64;
    CachePoint {
        working_set_bytes: size,
        mean_ns,
        trimmed_ns: mean_ns,
        iops: 1e9 / mean_ns,
        refined,
        below: latency_shares([(2_000, hits), (200_000, READS - hits)]),
        ..CachePoint::default()
    }
}

/// The study's steps on hosts with regions of `regions_mib` whose caches hold `caches_mib`,
/// in the order measured, and what the hosts found.
fn walked(sizes: &str, regions_mib: &[u64], caches_mib: &[u64]) -> (Vec<Step>, FleetCacheFound) {
    let cache = study(sizes, true);
    let mut found = fleet(regions_mib);
    let mut steps = Vec::new();
    let finished = cache
        .walk(&mut found, |step, found| {
            let points =
                step.sizes.iter().zip(caches_mib).map(|(&s, &c)| Some(cached(c * MIB, s, step.refined)));
            let total = step.sizes.iter().sum();
            let merged = cached(caches_mib.iter().sum::<u64>() * MIB, total, step.refined);
            keep(found, points.collect(), merged);
            steps.push(Step { sizes: step.sizes.clone(), label: step.label.clone(), refined: step.refined });
            Ok(true)
        })
        .unwrap();
    assert!(finished);
    (steps, found)
}

#[test]
fn a_capacitys_working_sets_are_measured_on_the_union_before_the_larger_rungs() {
    // Host 0 holds 100 MiB of 1 GiB, host 1 300 MiB of 2 GiB. Host 0's tier is found at 10%
    // (102.4 MiB) and judged from 20% on: it wants 250 MiB (2.5 x 100) before 50%; host 1's
    // is found at 20% (409.6 MiB) and wants 750 MiB before 50%, then 1.5 GiB before 100%.
    let (steps, found) = walked("1%,2%,5%,10%,20%,50%,100%", &[1024, 2048], &[100, 300]);
    let labels: Vec<&str> = steps.iter().map(|s| s.label.as_str()).collect();
    let rungs = labels.iter().position(|&l| l == "100%").expect("the last rung");
    assert_eq!(
        labels[..=rungs],
        ["1%", "2%", "5%", "10%", "20%", "24.4%", "36.6%", "50%", "73.2%", "100%"],
        "{labels:?}"
    );
    // Each is the asking host's size (2.5, 2.5 and 5 times its capacity so far) and the same
    // share of the other's region (twice the size).
    for (k, asker, mib) in [(5, 0, 250), (6, 1, 750), (8, 1, 1500)] {
        let step = &steps[k];
        assert!(step.sizes[asker].abs_diff(mib * MIB) <= mib * MIB / 100, "{labels:?}: {:?}", step.sizes);
        assert_eq!(step.sizes[1], 2 * step.sizes[0], "{labels:?}");
        assert!(step.refined);
    }
    // On each host every working set its capacity is judged on came before any larger one.
    for (host, cache_mib) in found.hosts.iter().zip([100, 300]) {
        let tier = find_tiers(&host.found.points, &CacheRule::default()).tiers[0].clone();
        assert!(tier.size_bytes.abs_diff(cache_mib * MIB) <= MIB, "{}: {tier:#?}", host.host);
        let used: Vec<&HitShare> = tier.hit_shares.iter().filter(|s| s.used).collect();
        assert!(used.len() >= 3, "{}: {tier:#?}", host.host);
        for share in used {
            let at = host.found.points.iter().position(|p| p.working_set_bytes == share.working_set_bytes);
            let before = &host.found.points[..at.expect("measured")];
            assert!(
                before.iter().all(|p| p.working_set_bytes < share.working_set_bytes),
                "{}: {share:?} measured after a larger working set",
                host.host
            );
        }
    }
    // The brackets are refined after the ladder, as before.
    assert!(steps[rungs + 1..].iter().all(|s| s.refined) && steps.len() > rungs + 1, "{labels:?}");
}

#[test]
fn a_point_is_after_a_larger_one_from_its_own_curves_earlier_points() {
    let mut found = fleet(&[1024, 1024]);
    let mut keep_step = |sizes: [u64; 2], lost: bool| {
        let points = vec![
            Some(cached(MIB, sizes[0] * MIB, false)),
            (!lost).then(|| cached(MIB, sizes[1] * MIB, false)),
        ];
        let total = if lost { sizes[0] } else { sizes[0] + sizes[1] };
        keep(&mut found, points, cached(MIB, total * MIB, false));
    };
    keep_step([10, 40], false);
    // Host 0's 30 MiB comes after host 1's 40 MiB, but only its own 10 MiB counts.
    keep_step([30, 20], false);
    keep_step([20, 60], false);
    // Host 1 did not finish 50 MiB: its 60 MiB is still the largest it measured.
    keep_step([35, 50], true);
    let marks = |curve: &CacheFound| curve.points.iter().map(|p| p.after_larger).collect::<Vec<_>>();
    assert_eq!(marks(&found.hosts[0].found), [false, false, true, false]);
    assert_eq!(marks(&found.hosts[1].found), [false, true, false]);
    // The merged curve (50, 50, 80, 35 MiB) from its own points.
    assert_eq!(marks(&found.merged), [false, false, false, true]);
}

#[test]
fn a_fleet_needs_a_named_target() {
    assert!(study("100%", true).check_fleet().is_ok());
    let message = study("100%", false).check_fleet().unwrap_err().to_string();
    assert!(message.contains("needs a target on the hosts"), "{message}");
}

#[test]
fn refined_shares_are_named_to_three_digits() {
    assert_eq!(round_share(3.41278), 3.41);
    assert_eq!(round_share(12.3456), 12.3);
    assert_eq!(round_share(0.0123456), 0.0123);
}
