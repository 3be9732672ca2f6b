//! Tests of SNIA steady-state detection on synthetic per-round series, including a worked
//! example computed by hand (it is also the one in docs/characterization.md).

use crate::pseudo_noise::Noise;
use crate::steady::{check, SteadyRule, SteadyState, WindowCheck};

fn rule() -> SteadyRule {
    SteadyRule::default()
}

fn reached(state: SteadyState) -> (usize, WindowCheck) {
    match state {
        SteadyState::Reached { at_round, window } => (at_round, window),
        other => panic!("expected steady state, got {other:?}"),
    }
}

fn not_yet(state: SteadyState) -> WindowCheck {
    match state {
        SteadyState::NotYet { latest } => latest,
        other => panic!("expected not yet, got {other:?}"),
    }
}

fn gave_up(state: SteadyState) -> WindowCheck {
    match state {
        SteadyState::GaveUp { latest } => latest,
        other => panic!("expected gave up, got {other:?}"),
    }
}

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0)
}

/// 1000 IOPS +-15%, high and low in turn, with +-3% noise on top: the range always exceeds 20%.
fn unsettled(rounds: usize, seed: u64) -> Vec<f64> {
    let mut noise = Noise::new(seed, 3.0);
    (0..rounds).map(|r| if r % 2 == 0 { 1150.0 } else { 850.0 } * noise.factor()).collect()
}

#[test]
fn the_default_rule_is_snias_and_valid() {
    let rule = rule();
    assert_eq!((rule.window, rule.max_range_pct, rule.max_slope_pct, rule.max_rounds), (5, 20.0, 10.0, 25));
    assert_eq!(rule.validate(), Ok(()));
}

#[test]
fn validate_explains_each_bad_setting() {
    let error = |rule: SteadyRule| rule.validate().expect_err("the rule is invalid");
    assert!(error(SteadyRule { window: 1, ..rule() }).contains("at least 2"));
    assert!(error(SteadyRule { max_rounds: 4, ..rule() }).contains("raise max rounds to at least 5"));
    assert!(error(SteadyRule { max_range_pct: 0.0, ..rule() }).contains("max range is 0%"));
    assert!(error(SteadyRule { max_slope_pct: f64::NAN, ..rule() }).contains("max slope is NaN%"));
    assert!(error(SteadyRule { max_slope_pct: -5.0, ..rule() }).contains("above 0"));
}

#[test]
fn a_flat_series_is_steady_at_the_end_of_the_first_window() {
    let state = check(&[1000.0; 5], &rule());
    let (at, window) = reached(state);
    assert_eq!(at, 5);
    assert_eq!((window.first_round, window.last_round), (1, 5));
    assert_eq!((window.average, window.range_pct, window.slope_per_round), (1000.0, 0.0, 0.0));
    assert_eq!((window.intercept, window.slope_excursion_pct), (1000.0, 0.0));
}

#[test]
fn fewer_rounds_than_the_window_are_too_short() {
    assert_eq!(check(&[1000.0; 4], &rule()), SteadyState::TooShort { rounds: 4, needed: 5 });
    assert_eq!(check(&[], &rule()), SteadyState::TooShort { rounds: 0, needed: 5 });
}

#[test]
fn three_percent_noise_is_steady_in_the_first_window() {
    // Worst case: range 6.2% of the average, fitted change 7.4%: within 20% and 10%.
    for seed in 0..200 {
        let mut noise = Noise::new(seed, 3.0);
        let rounds: Vec<f64> = (0..5).map(|_| 10_000.0 * noise.factor()).collect();
        assert_eq!(reached(check(&rounds, &rule())).0, 5, "seed {seed}: {rounds:?}");
    }
}

#[test]
fn a_series_swinging_beyond_the_range_is_not_yet_steady_then_gives_up() {
    for seed in 0..50 {
        let latest = not_yet(check(&unsettled(12, seed), &rule()));
        assert_eq!((latest.first_round, latest.last_round), (8, 12));
        assert!(!latest.range_ok, "seed {seed}: {latest:?}");
        let latest = gave_up(check(&unsettled(25, seed), &rule()));
        assert_eq!(latest.last_round, 25);
    }
}

#[test]
fn a_declining_series_is_steady_once_a_whole_window_has_settled() {
    let mut rounds = vec![5000.0, 4000.0, 3000.0, 2000.0, 1500.0];
    rounds.extend([1000.0; 10]);
    let (at, window) = reached(check(&rounds, &rule()));
    assert_eq!(at, 10);
    assert_eq!(window.first_round, 6);
    // The window before it still holds the 1500 of round 5: a 45% range.
    let before = not_yet(check(&rounds[..9], &rule()));
    assert!(!before.range_ok && before.range_pct > 45.0, "{before:?}");
}

#[test]
fn the_answer_does_not_change_as_rounds_are_added() {
    let mut rounds = vec![5000.0, 4000.0, 3000.0, 2000.0, 1500.0];
    rounds.extend((0..20).map(|r| if r % 2 == 0 { 1020.0 } else { 980.0 }));
    let first = check(&rounds[..10], &rule());
    assert_eq!(reached(first.clone()).0, 10);
    for len in 11..=rounds.len() {
        assert_eq!(check(&rounds[..len], &rule()), first, "after {len} rounds");
    }
}

#[test]
fn a_series_that_never_settles_gives_up_at_max_rounds_and_ignores_later_rounds() {
    // A steady 300 IOPS-per-round decline: the fit changes by 1200 over every window.
    let mut rounds: Vec<f64> = (1..=25).map(|r| 10_000.0 - 300.0 * r as f64).collect();
    let latest = not_yet(check(&rounds[..10], &rule()));
    // Window 6-10: range 1200 / 7600 = 15.8% passes, the same fitted change does not.
    assert!(latest.range_ok && !latest.slope_ok, "{latest:?}");
    assert!(close(latest.slope_per_round, -300.0));
    assert_eq!(gave_up(check(&rounds, &rule())).last_round, 25);
    // Flat after round 25: too late, the test stopped there.
    rounds.extend([2000.0; 10]);
    assert_eq!(gave_up(check(&rounds, &rule())).last_round, 25);
}

#[test]
fn an_all_zero_series_is_steady_because_it_has_no_range_and_no_slope() {
    let (at, window) = reached(check(&[0.0; 6], &rule()));
    assert_eq!(at, 5);
    assert_eq!((window.average, window.range_pct, window.slope_excursion_pct), (0.0, 0.0, 0.0));
}

#[test]
fn negative_values_are_judged_by_magnitude_and_never_panic() {
    // Invalid for IOPS, but judged as the mirror image of the positive series.
    let (at, window) = reached(check(&[-1000.0, -1050.0, -980.0, -1020.0, -1000.0], &rule()));
    assert_eq!(at, 5);
    assert!(close(window.range_pct, 70.0 / 1010.0 * 100.0));
    // An average of zero with a spread: infinitely far from steady.
    let latest = not_yet(check(&[-10.0, 10.0, -10.0, 10.0, 0.0], &rule()));
    assert_eq!(latest.range_pct, f64::INFINITY);
    assert!(!latest.range_ok && !latest.slope_ok);
}

#[test]
fn a_window_holding_nan_or_infinity_never_qualifies() {
    for odd in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let latest = not_yet(check(&[1000.0, 1000.0, odd, 1000.0, 1000.0], &rule()));
        assert!(!latest.range_ok && !latest.slope_ok, "{odd}: {latest:?}");
    }
}

#[test]
fn a_flat_trend_does_not_excuse_a_range_too_wide() {
    // Zigzag: the fitted slope is exactly 0, the range 30/112 = 26.8%.
    let latest = not_yet(check(&[100.0, 130.0, 100.0, 130.0, 100.0], &rule()));
    assert!(latest.slope_ok && !latest.range_ok, "{latest:?}");
    assert_eq!(latest.slope_per_round, 0.0);
}

#[test]
fn a_narrow_range_does_not_excuse_a_trend() {
    // A straight climb: range 16/108 = 14.8% passes, but so is the fit's change, above 10%.
    let latest = not_yet(check(&[100.0, 104.0, 108.0, 112.0, 116.0], &rule()));
    assert!(latest.range_ok && !latest.slope_ok, "{latest:?}");
    assert!(close(latest.slope_per_round, 4.0));
    assert!(close(latest.slope_excursion_pct, 16.0 / 108.0 * 100.0));
}

#[test]
fn worked_example_by_hand() {
    // Rounds 1..6: 1300, 1000, 960, 980, 940, 920 IOPS.
    let rounds = [1300.0, 1000.0, 960.0, 980.0, 940.0, 920.0];
    // Window 1-5: average 5180 / 5 = 1036; range 1300 - 940 = 360 = 34.75%. Deviations from the
    // average 264, -36, -76, -56, -96 against rounds minus their mean 3: -2, -1, 0, 1, 2; the sum
    // of products -740 over the sum of squares 10 gives slope -74, intercept 1036 + 74 x 3 =
    // 1258, change across the window 74 x 4 = 296 = 28.57%. Neither criterion holds.
    let first = not_yet(check(&rounds[..5], &rule()));
    assert_eq!((first.first_round, first.last_round), (1, 5));
    assert!(close(first.average, 1036.0));
    assert!(close(first.range_pct, 360.0 / 1036.0 * 100.0));
    assert!(close(first.slope_per_round, -74.0));
    assert!(close(first.intercept, 1258.0));
    assert!(close(first.slope_excursion_pct, 296.0 / 1036.0 * 100.0));
    assert!(!first.range_ok && !first.slope_ok);
    // Window 2-6: average 4800 / 5 = 960; range 1000 - 920 = 80 = 8.33%. Deviations 40, 0, 20,
    // -20, -40 against -2..2: sum of products -180, slope -18, intercept 960 + 18 x 4 = 1032,
    // change 18 x 4 = 72 = 7.5%. Both hold: steady at round 6.
    let (at, second) = reached(check(&rounds, &rule()));
    assert_eq!(at, 6);
    assert_eq!((second.first_round, second.last_round), (2, 6));
    assert!(close(second.average, 960.0));
    assert!(close(second.range_pct, 80.0 / 960.0 * 100.0));
    assert!(close(second.slope_per_round, -18.0));
    assert!(close(second.intercept, 1032.0));
    assert!(close(second.slope_excursion_pct, 7.5));
}

#[test]
fn a_rule_that_failed_validation_is_widened_rather_than_panicking() {
    let loose = SteadyRule { window: 0, max_rounds: 0, ..rule() };
    assert_eq!(check(&[1000.0], &loose), SteadyState::TooShort { rounds: 1, needed: 2 });
    assert_eq!(reached(check(&[1000.0, 1000.0], &loose)).0, 2);
    assert_eq!(gave_up(check(&[1000.0, 500.0, 1000.0], &loose)).last_round, 2);
}

#[test]
fn states_serialize_with_a_state_tag() {
    let json = |state: SteadyState| serde_json::to_value(state).expect("plain fields serialize");
    let too_short = json(SteadyState::TooShort { rounds: 3, needed: 5 });
    assert_eq!(too_short, serde_json::json!({ "state": "too_short", "rounds": 3, "needed": 5 }));
    let steady = json(check(&[1000.0; 5], &rule()));
    assert_eq!(steady["state"], "reached");
    assert_eq!(steady["at_round"], 5);
    assert_eq!(steady["window"]["range_ok"], true);
    assert_eq!(json(check(&unsettled(25, 1), &rule()))["state"], "gave_up");
    assert_eq!(json(check(&unsettled(6, 1), &rule()))["state"], "not_yet");
}
