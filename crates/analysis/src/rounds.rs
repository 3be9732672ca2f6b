//! The variable a steady-state test tracks from round to round, and what a series of rounds
//! found (the detector itself is `steady`).

use std::fmt;
use std::str::FromStr;

use iolab_stats::result::JobResult;
use serde::{Deserialize, Serialize};

use crate::steady::{check, SteadyRule, SteadyState};

/// What is compared between rounds: SNIA tracks IOPS for the IOPS test, bandwidth for the
/// throughput test and mean latency for the latency test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tracked {
    #[default]
    Iops,
    MbS,
    MeanLatency,
}

impl Tracked {
    /// The tracked value of one round.
    pub fn of(self, round: &JobResult) -> f64 {
        match self {
            Tracked::Iops => round.total.iops,
            Tracked::MbS => round.total.mb_s,
            Tracked::MeanLatency => round.total.latency.as_ref().map_or(0.0, |l| l.mean_ns / 1e3),
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Tracked::Iops => "IOPS",
            Tracked::MbS => "MB/s",
            Tracked::MeanLatency => "us mean latency",
        }
    }
}

impl FromStr for Tracked {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_lowercase().as_str() {
            "iops" => Ok(Tracked::Iops),
            "mb-s" | "mbs" | "bandwidth" => Ok(Tracked::MbS),
            "mean-latency" | "latency" => Ok(Tracked::MeanLatency),
            _ => Err(format!("'{text}' cannot be tracked; use iops, mb-s or mean-latency")),
        }
    }
}

impl fmt::Display for Tracked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Tracked::Iops => "iops",
            Tracked::MbS => "mb-s",
            Tracked::MeanLatency => "mean-latency",
        })
    }
}

/// Rounds of one workload and the steady-state judgement over them. A stored report read back
/// takes what it lacks from `SteadyRounds::default()`: IOPS, the SNIA rule, no rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SteadyRounds {
    pub tracked: Tracked,
    pub rule: SteadyRule,
    /// The tracked value of each round, in order (round 1 first).
    pub values: Vec<f64>,
    pub state: SteadyState,
}

impl Default for SteadyRounds {
    fn default() -> Self {
        SteadyRounds::new(Tracked::default(), SteadyRule::default())
    }
}

impl SteadyRounds {
    pub fn new(tracked: Tracked, rule: SteadyRule) -> Self {
        SteadyRounds { tracked, rule, values: Vec::new(), state: check(&[], &rule) }
    }

    /// Adds a round; true when the series is decided (steady, or given up).
    pub fn add(&mut self, round: &JobResult) -> bool {
        self.values.push(self.tracked.of(round));
        self.state = check(&self.values, &self.rule);
        matches!(self.state, SteadyState::Reached { .. } | SteadyState::GaveUp { .. })
    }

    /// "steady at round 7: rounds 3-7 within 8.1% range (max 20%) and 3.2% slope excursion
    /// (max 10%) of their average, 41,230 IOPS".
    pub fn sentence(&self) -> String {
        let rule = &self.rule;
        let unit = self.tracked.unit();
        match &self.state {
            SteadyState::Reached { at_round, window } => format!(
                "steady state reached at round {at_round}: rounds {}-{} stayed within a {:.1}% range (max {}%) and a {:.1}% slope excursion (max {}%) of their average, {:.1} {unit}",
                window.first_round, window.last_round, window.range_pct, rule.max_range_pct,
                window.slope_excursion_pct, rule.max_slope_pct, window.average
            ),
            SteadyState::TooShort { rounds, needed } => format!(
                "not judged: {rounds} round(s) ran, the window needs {needed}"
            ),
            SteadyState::NotYet { latest } | SteadyState::GaveUp { latest } => {
                let failed: Vec<String> = [
                    (!latest.range_ok).then(|| format!("range {:.1}% > {}%", latest.range_pct, rule.max_range_pct)),
                    (!latest.slope_ok).then(|| format!("slope excursion {:.1}% > {}%", latest.slope_excursion_pct, rule.max_slope_pct)),
                ]
                .into_iter()
                .flatten()
                .collect();
                let ended = if matches!(self.state, SteadyState::GaveUp { .. }) {
                    format!("NOT reached after {} rounds (the most allowed)", self.values.len())
                } else {
                    format!("NOT reached in the {} round(s) that ran", self.values.len())
                };
                format!(
                    "steady state {ended}; the last window, rounds {}-{}: {} (average {:.1} {unit})",
                    latest.first_round, latest.last_round, failed.join(", "), latest.average
                )
            }
        }
    }
}
