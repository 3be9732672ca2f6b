//! Tests of cliff detection on synthetic write logs: one sample per second, levels given as
//! (MB/s, samples), optionally with deterministic noise.

use crate::cliff::{find_cliffs, Cliff, CliffReport, CliffRule, ThroughputSample};
use crate::pseudo_noise::Noise;

/// A log of one-second samples running at each (MB/s, samples) level in turn.
fn log(levels: &[(f64, usize)], noise_pct: f64, seed: u64) -> Vec<ThroughputSample> {
    let mut noise = Noise::new(seed, noise_pct);
    let mb_s = levels.iter().flat_map(|&(mb_s, samples)| std::iter::repeat_n(mb_s, samples));
    one_second_samples(mb_s.map(|mb_s| mb_s * noise.factor()))
}

/// One-second samples at these rates, with the bytes they wrote added up.
fn one_second_samples(mb_s: impl IntoIterator<Item = f64>) -> Vec<ThroughputSample> {
    let mut bytes_done = 0u64;
    mb_s.into_iter()
        .map(|mb_s| {
            bytes_done += (mb_s * 1e6) as u64;
            ThroughputSample { bytes_done, mb_s }
        })
        .collect()
}

fn clean(levels: &[(f64, usize)]) -> Vec<ThroughputSample> {
    log(levels, 0.0, 0)
}

fn cliffs(samples: &[ThroughputSample]) -> Vec<Cliff> {
    let report = find_cliffs(samples, &CliffRule::default());
    assert!(report.judged, "{report:?}");
    report.cliffs
}

fn within_pct(actual: f64, expected: f64, pct: f64) -> bool {
    (actual - expected).abs() <= expected * pct / 100.0
}

/// One cliff at `sample` (give or take `slack`), reported at the end of the sample before it.
fn assert_one_cliff(samples: &[ThroughputSample], sample: usize, slack: usize) -> Cliff {
    let found = cliffs(samples);
    assert_eq!(found.len(), 1, "{found:?}");
    let cliff = found[0].clone();
    assert!(cliff.sample.abs_diff(sample) <= slack, "{cliff:?}");
    assert_eq!(cliff.at_bytes, samples[cliff.sample - 1].bytes_done);
    cliff
}

#[test]
fn the_default_rule_is_valid_and_bad_rules_are_explained() {
    assert_eq!(CliffRule::default(), CliffRule { drop_pct: 30.0, min_hold_samples: 5 });
    assert_eq!(CliffRule::default().validate(), Ok(()));
    let error = |rule: CliffRule| rule.validate().expect_err("the rule is invalid");
    for drop_pct in [0.0, 100.0, -5.0, f64::NAN] {
        assert!(error(CliffRule { drop_pct, ..CliffRule::default() }).contains("above 0 and below 100"));
    }
    assert!(error(CliffRule { min_hold_samples: 0, ..CliffRule::default() }).contains("at least 1"));
}

#[test]
fn a_clean_slc_cache_step_is_found_at_its_size() {
    let samples = clean(&[(2000.0, 30), (500.0, 30)]);
    let cliff = assert_one_cliff(&samples, 30, 0);
    assert_eq!(cliff.at_bytes, 30 * 2000 * 1_000_000);
    assert_eq!((cliff.before_mb_s, cliff.after_mb_s, cliff.drop_pct), (2000.0, 500.0, 75.0));
    assert_eq!(find_cliffs(&samples, &CliffRule::default()).note, None);
}

#[test]
fn fifteen_percent_noise_does_not_move_or_hide_the_step() {
    for seed in 0..200 {
        let samples = log(&[(2000.0, 30), (500.0, 30)], 15.0, seed);
        let cliff = assert_one_cliff(&samples, 30, 1);
        assert!(within_pct(cliff.before_mb_s, 2000.0, 10.0), "seed {seed}: {cliff:?}");
        assert!(within_pct(cliff.after_mb_s, 500.0, 10.0), "seed {seed}: {cliff:?}");
    }
}

#[test]
fn a_dip_shorter_than_the_hold_is_a_transient_not_a_cliff() {
    for dip in 1..5 {
        assert_eq!(cliffs(&clean(&[(2000.0, 30), (500.0, dip), (2000.0, 30)])), vec![], "{dip} samples");
        for seed in 0..50 {
            let samples = log(&[(2000.0, 30), (500.0, dip), (2000.0, 30)], 15.0, seed);
            assert_eq!(cliffs(&samples), vec![], "{dip} samples, seed {seed}");
        }
    }
}

#[test]
fn a_drop_held_exactly_the_hold_is_a_cliff() {
    let cliff = assert_one_cliff(&clean(&[(2000.0, 30), (500.0, 5), (2000.0, 30)]), 30, 0);
    assert_eq!(cliff.after_mb_s, 500.0);
}

#[test]
fn a_cliff_after_a_transient_dip_is_still_found_with_clean_levels() {
    let samples = clean(&[(2000.0, 10), (400.0, 3), (2000.0, 20), (500.0, 30)]);
    let cliff = assert_one_cliff(&samples, 33, 0);
    assert_eq!((cliff.before_mb_s, cliff.after_mb_s), (2000.0, 500.0));
}

#[test]
fn two_tiers_give_two_cliffs_in_order() {
    let samples = clean(&[(3000.0, 20), (1500.0, 20), (400.0, 20)]);
    let found = cliffs(&samples);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!((found[0].sample, found[0].before_mb_s, found[0].after_mb_s), (20, 3000.0, 1500.0));
    assert_eq!((found[1].sample, found[1].before_mb_s, found[1].after_mb_s), (40, 1500.0, 400.0));
    assert_eq!(found[0].at_bytes, 20 * 3000 * 1_000_000);
    assert_eq!(found[1].at_bytes, (20 * 3000 + 20 * 1500) * 1_000_000);
    for seed in 0..100 {
        let found = cliffs(&log(&[(3000.0, 20), (1500.0, 20), (400.0, 20)], 15.0, seed));
        let at: Vec<usize> = found.iter().map(|c| c.sample).collect();
        assert!(
            at.len() == 2 && at[0].abs_diff(20) <= 1 && at[1].abs_diff(40) <= 1,
            "seed {seed}: {found:?}"
        );
    }
}

#[test]
fn a_staircase_step_shorter_than_the_hold_makes_one_cliff_where_the_fall_began() {
    let cliff = assert_one_cliff(&clean(&[(3000.0, 20), (1500.0, 3), (400.0, 20)]), 20, 0);
    assert_eq!((cliff.before_mb_s, cliff.after_mb_s), (3000.0, 400.0));
}

#[test]
fn a_flat_noisy_log_has_no_cliff() {
    for seed in 0..200 {
        let report = find_cliffs(&log(&[(1500.0, 120)], 15.0, seed), &CliffRule::default());
        assert_eq!(
            (report.cliffs.len(), report.judged, report.note.as_deref()),
            (0, true, None),
            "seed {seed}"
        );
    }
}

#[test]
fn a_gradual_decline_is_no_cliff_but_is_noted() {
    let samples = one_second_samples((0..60).map(|s| 2000.0 - 1000.0 * f64::from(s) / 59.0));
    let report = find_cliffs(&samples, &CliffRule::default());
    assert!(report.judged && report.cliffs.is_empty(), "{report:?}");
    let note = report.note.expect("a 50% decline is worth a note");
    assert!(note.starts_with("throughput declined gradually from 1966 to 1034 MB/s (47% lower)"), "{note}");
}

#[test]
fn a_drop_smaller_than_the_rule_is_not_a_cliff() {
    assert_eq!(cliffs(&clean(&[(2000.0, 30), (1500.0, 30)])), vec![]);
    assert_one_cliff(&clean(&[(2000.0, 30), (1300.0, 30)]), 30, 0);
}

#[test]
fn a_rise_is_not_a_cliff() {
    let report = find_cliffs(&clean(&[(500.0, 30), (2000.0, 30)]), &CliffRule::default());
    assert_eq!(report, CliffReport { cliffs: vec![], judged: true, note: None });
}

#[test]
fn a_cache_that_recovers_still_had_its_cliff() {
    let cliff = assert_one_cliff(&clean(&[(2000.0, 30), (500.0, 10), (2000.0, 20)]), 30, 0);
    assert_eq!(cliff.after_mb_s, 500.0);
}

#[test]
fn spikes_just_after_the_drop_do_not_move_it() {
    let mut samples = clean(&[(2000.0, 30), (500.0, 30)]);
    samples[31].mb_s = 2100.0;
    samples[33].mb_s = 1900.0;
    let cliff = assert_one_cliff(&samples, 30, 0);
    assert_eq!(cliff.after_mb_s, 500.0);
}

#[test]
fn too_short_a_log_is_not_judged() {
    let report = find_cliffs(&clean(&[(2000.0, 5), (500.0, 4)]), &CliffRule::default());
    assert!(!report.judged && report.cliffs.is_empty());
    let note = report.note.expect("says why");
    assert!(note.contains("9 samples are too few") && note.contains("(10 in all)"), "{note}");
    assert!(!find_cliffs(&[], &CliffRule::default()).judged);
    // Just long enough: the hold before and after.
    assert_one_cliff(&clean(&[(2000.0, 5), (500.0, 5)]), 5, 0);
}

#[test]
fn a_partial_last_sample_makes_no_cliff() {
    let mut samples = clean(&[(2000.0, 40)]);
    let partial = samples[39].bytes_done + 300_000_000;
    samples.push(ThroughputSample { bytes_done: partial, mb_s: 300.0 });
    assert_eq!(cliffs(&samples), vec![]);
    let mut samples = clean(&[(2000.0, 30), (500.0, 30)]);
    samples.push(ThroughputSample { bytes_done: samples[59].bytes_done + 50_000_000, mb_s: 50.0 });
    assert_one_cliff(&samples, 30, 0);
}

#[test]
fn a_hold_of_zero_is_taken_as_one_rather_than_panicking() {
    let rule = CliffRule { min_hold_samples: 0, ..CliffRule::default() };
    let report = find_cliffs(&clean(&[(2000.0, 3), (500.0, 3)]), &rule);
    assert_eq!(report.cliffs.len(), 1, "{report:?}");
    assert_eq!(report.cliffs[0].sample, 3);
}

#[test]
fn nan_or_negative_throughput_does_not_panic() {
    let mut samples = clean(&[(2000.0, 30), (500.0, 30)]);
    samples[10].mb_s = f64::NAN;
    samples[40].mb_s = -100.0;
    assert_one_cliff(&samples, 30, 0);
}

#[test]
fn the_report_serializes_to_json() {
    let report = find_cliffs(&clean(&[(2000.0, 30), (500.0, 30)]), &CliffRule::default());
    let json = serde_json::to_value(report).expect("plain fields serialize");
    assert_eq!(json["judged"], true);
    assert_eq!(json["cliffs"][0]["sample"], 30);
    assert_eq!(json["cliffs"][0]["at_bytes"], 60_000_000_000u64);
    assert!(json["note"].is_null());
}

#[test]
fn noise_of_thirty_percent_makes_no_false_cliff() {
    // Medians of 5 samples at +-30% can differ by more than 30% by chance; the levels they would
    // separate have whole-level medians that do not, so the changes are dropped.
    for seed in 0..300 {
        assert_eq!(cliffs(&log(&[(1500.0, 300)], 30.0, seed)), vec![], "seed {seed}");
    }
}

#[test]
fn a_drop_from_a_level_still_climbing_is_judged_against_that_levels_median() {
    let climb = |then: f64| {
        let climbing = (0..40).map(|s| 1000.0 + 1000.0 * f64::from(s) / 39.0);
        one_second_samples(climbing.chain(std::iter::repeat_n(then, 30)))
    };
    // Sudden from about 1950, but only 13% below the climbing level's median (1500).
    assert_eq!(cliffs(&climb(1300.0)), vec![]);
    let cliff = assert_one_cliff(&climb(900.0), 40, 0);
    assert_eq!((cliff.before_mb_s, cliff.after_mb_s), (1500.0, 900.0));
}
