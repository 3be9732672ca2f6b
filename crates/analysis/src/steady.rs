//! Steady state as the SNIA Solid State Storage Performance Test Specification (PTS v2.0.2)
//! defines it: over a measurement window of the last rounds, the tracked variable (e.g. IOPS per
//! round) stays within a range and its least-squares trend stays within a slope excursion, both
//! relative to the window's average. The rule and its edge cases are written down in
//! docs/characterization.md ("Steady state (SNIA)").
//!
//! `check` reports the first window that qualifies, so a runner may call it after every round and
//! stop at the first `Reached` or `GaveUp`: the answer for a prefix never changes when rounds
//! are added.

use serde::{Deserialize, Serialize};

/// The SNIA criteria. `Default` gives the PTS's values, and is where they are stated: the hints
/// of `validate` and a stored report that lacks a field take them from it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SteadyRule {
    /// Rounds in the measurement window.
    pub window: usize,
    /// Largest allowed max - min within the window, in percent of its average.
    pub max_range_pct: f64,
    /// Largest allowed change of the fitted line across the window, in percent of its average.
    pub max_slope_pct: f64,
    /// Rounds after which the test gives up; later rounds are not looked at.
    pub max_rounds: usize,
}

impl Default for SteadyRule {
    fn default() -> Self {
        SteadyRule { window: 5, max_range_pct: 20.0, max_slope_pct: 10.0, max_rounds: 25 }
    }
}

impl SteadyRule {
    pub fn validate(&self) -> Result<(), String> {
        let snia = SteadyRule::default();
        if self.window < 2 {
            return Err(format!(
                "steady-state window is {} rounds; a trend needs at least 2 (the SNIA default is {})",
                self.window, snia.window
            ));
        }
        if self.max_rounds < self.window {
            return Err(format!(
                "steady-state max rounds ({}) is below the window ({}): no window could ever be judged; raise max rounds to at least {}",
                self.max_rounds, self.window, self.window
            ));
        }
        for (name, pct, default) in [
            ("range", self.max_range_pct, snia.max_range_pct),
            ("slope", self.max_slope_pct, snia.max_slope_pct),
        ] {
            if !(pct.is_finite() && pct > 0.0) {
                return Err(format!(
                    "steady-state max {name} is {pct}%; give a percentage above 0 (the SNIA default is {default}%)"
                ));
            }
        }
        Ok(())
    }
}

/// One measurement window judged against the rule. Rounds are numbered from 1, and the fitted line
/// is over the round numbers: value = slope_per_round x round + intercept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WindowCheck {
    pub first_round: usize,
    pub last_round: usize,
    pub average: f64,
    /// (max - min) in percent of the average.
    pub range_pct: f64,
    pub slope_per_round: f64,
    pub intercept: f64,
    /// |slope| x (window - 1), the fit's change across the window, in percent of the average.
    pub slope_excursion_pct: f64,
    pub range_ok: bool,
    pub slope_ok: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SteadyState {
    /// Both criteria held first over the window ending at `at_round`.
    Reached { at_round: usize, window: WindowCheck },
    /// Fewer rounds than the window: nothing to judge yet.
    TooShort { rounds: usize, needed: usize },
    /// No window qualified yet, but more rounds are allowed and may settle it.
    NotYet { latest: WindowCheck },
    /// `max_rounds` rounds without a qualifying window.
    GaveUp { latest: WindowCheck },
}

impl SteadyState {
    /// The window that was judged: the one that qualified, else the latest; none when too short.
    pub fn window(&self) -> Option<&WindowCheck> {
        match self {
            SteadyState::Reached { window, .. } => Some(window),
            SteadyState::NotYet { latest } | SteadyState::GaveUp { latest } => Some(latest),
            SteadyState::TooShort { .. } => None,
        }
    }
}

/// Judges `rounds` (one value of the tracked variable per round, oldest first) against `rule`.
///
/// A window holding a NaN or an infinite value has no finite average or spread and never
/// qualifies. Negative values (invalid for IOPS) do not panic: percentages are taken of the
/// average's magnitude. Expects a rule that passed `validate`; an invalid one is widened rather
/// than trusted: a window below 2 is taken as 2 and `max_rounds` below the window as the window.
pub fn check(rounds: &[f64], rule: &SteadyRule) -> SteadyState {
    let window = rule.window.max(2);
    let max_rounds = rule.max_rounds.max(window);
    let judged = &rounds[..rounds.len().min(max_rounds)];
    if judged.len() < window {
        return SteadyState::TooShort { rounds: judged.len(), needed: window };
    }
    let first_steady = judged
        .windows(window)
        .enumerate()
        .map(|(start, values)| judge(start + 1, values, rule))
        .find(|checked| checked.range_ok && checked.slope_ok);
    if let Some(checked) = first_steady {
        return SteadyState::Reached { at_round: checked.last_round, window: checked };
    }
    let last_start = judged.len() - window;
    let latest = judge(last_start + 1, &judged[last_start..], rule);
    if judged.len() >= max_rounds {
        SteadyState::GaveUp { latest }
    } else {
        SteadyState::NotYet { latest }
    }
}

/// Judges one window whose first value is round `first_round`.
fn judge(first_round: usize, values: &[f64], rule: &SteadyRule) -> WindowCheck {
    let n = values.len() as f64;
    let average = values.iter().sum::<f64>() / n;
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let rounds = (first_round..).map(|r| r as f64);
    let round_mean = first_round as f64 + (n - 1.0) / 2.0;
    let (covariance, spread) = rounds.zip(values).fold((0.0, 0.0), |(cov, spread), (x, y)| {
        (cov + (x - round_mean) * (y - average), spread + (x - round_mean) * (x - round_mean))
    });
    let slope = covariance / spread;
    let range_pct = share_pct(max - min, average);
    let slope_excursion_pct = share_pct(slope.abs() * (n - 1.0), average);
    WindowCheck {
        first_round,
        last_round: first_round + values.len() - 1,
        average,
        range_pct,
        slope_per_round: slope,
        intercept: average - slope * round_mean,
        slope_excursion_pct,
        range_ok: range_pct <= rule.max_range_pct,
        slope_ok: slope_excursion_pct <= rule.max_slope_pct,
    }
}

/// `part` in percent of the magnitude of `average`. An average of zero (an all-zero window, or
/// invalid negative values cancelling out) allows no spread: 0% of nothing is 0%, anything else
/// is infinitely far from steady.
fn share_pct(part: f64, average: f64) -> f64 {
    if average != 0.0 {
        part / average.abs() * 100.0
    } else if part == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}
