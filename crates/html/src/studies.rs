//! The parts of the study reports (docs/results-schema.md) the charts read, as the store keeps
//! them: a run's `report` is the command's own `--json` output, `{ "schema", "summary", "run" }`.
//!
//! These mirror the analysis crate's types field by field but only for what is drawn, and every
//! field has a default: a report written by an older or newer iolab still renders what it has.

use serde::Deserialize;
use serde_json::Value;

/// What a run's report holds, by schema.
#[derive(Debug, Clone)]
pub enum Study {
    Sweep(SweepSummary),
    Steady(SteadyRounds),
    Cliff(CliffSummary),
    Ramp(RampSummary),
    /// A suite's load curves and steady-state sections.
    Suite(Vec<SuiteSection>),
    /// No report (a plain `run`, an import) or one this version does not draw.
    None,
}

impl Study {
    /// Reads `report`; a report that does not parse is drawn as none, its points still are.
    pub fn of(report: Option<&Value>) -> Study {
        let Some(report) = report else { return Study::None };
        let schema = report.get("schema").and_then(Value::as_str).unwrap_or_default();
        // `{schema, summary, run}` as the command prints it; a report stored as the summary
        // alone (beside its schema) reads the same.
        let summary = report.get("summary").cloned().unwrap_or_else(|| report.clone());
        let parse = |kind: &str| schema.split('/').next() == Some(kind);
        let study = if parse("iolab.sweep") {
            serde_json::from_value(summary).map(Study::Sweep)
        } else if parse("iolab.steady") {
            serde_json::from_value(summary).map(Study::Steady)
        } else if parse("iolab.cliff") {
            serde_json::from_value(summary).map(Study::Cliff)
        } else if parse("iolab.ramp") {
            serde_json::from_value(summary).map(Study::Ramp)
        } else if parse("iolab.suite") {
            serde_json::from_value::<SuiteSummary>(summary).map(|s| Study::Suite(s.sections))
        } else {
            return Study::None;
        };
        study.unwrap_or(Study::None)
    }

    /// The load curves: a sweep's own, or each curve section of a suite.
    pub fn sweeps(&self) -> Vec<&SweepSummary> {
        match self {
            Study::Sweep(sweep) => vec![sweep],
            Study::Suite(sections) => sections
                .iter()
                .filter_map(|s| match s {
                    SuiteSection::Curve { summary, .. } => Some(summary),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Every steady-state series, with what it is of ("qd 4", a suite section's title).
    pub fn steady_rounds(&self) -> Vec<(String, &SteadyRounds)> {
        match self {
            Study::Steady(rounds) => vec![(String::new(), rounds)],
            Study::Sweep(sweep) => sweep
                .steady
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    (sweep.rows.get(i).map_or_else(|| format!("point {}", i + 1), |row| row.name.clone()), r)
                })
                .collect(),
            Study::Suite(sections) => sections
                .iter()
                .filter_map(|s| match s {
                    SuiteSection::Steady { title, rounds } => Some((title.clone(), rounds)),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SweepSummary {
    /// "qd", "workers" or "none".
    pub load_axis: String,
    pub steady: Vec<SteadyRounds>,
    pub rows: Vec<SweepRow>,
    pub curves: Vec<Curve>,
    pub verdict: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SweepRow {
    pub name: String,
    pub qd: u32,
    pub workers: u32,
    pub outstanding: u32,
    pub iops: f64,
    pub mb_s: f64,
    pub mean_ns: f64,
    pub p99_ns: f64,
    pub cpu_us_per_io: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Curve {
    pub name: String,
    pub rows: Vec<usize>,
    pub sweet_spot: Option<SweetSpot>,
    pub saturation: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SweetSpot {
    pub row: usize,
    pub knee_found: bool,
    pub reason: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SteadyRounds {
    /// "iops", "mb_s" or "mean_latency".
    pub tracked: String,
    pub rule: SteadyRule,
    pub values: Vec<f64>,
    pub state: SteadyState,
}

impl SteadyRounds {
    /// The unit of the tracked value, as `iolab steady` prints it.
    pub fn unit(&self) -> &'static str {
        match self.tracked.as_str() {
            "mb_s" => "MB/s",
            "mean_latency" => "µs mean latency",
            _ => "IOPS",
        }
    }

    /// The window that was judged: the one that qualified, else the latest.
    pub fn window(&self) -> Option<&Window> {
        self.state.window.as_ref().or(self.state.latest.as_ref())
    }

    /// "steady state reached at round 7", "NOT reached: gave up after 8 rounds".
    pub fn outcome(&self) -> String {
        match self.state.state.as_str() {
            "reached" => format!("steady state reached at round {}", self.state.at_round.unwrap_or_default()),
            "too_short" => format!(
                "not judged: {} round(s) ran, the window needs {}",
                self.state.rounds.unwrap_or(self.values.len()),
                self.state.needed.unwrap_or(self.rule.window)
            ),
            "gave_up" => format!("steady state NOT reached: gave up after {} rounds", self.values.len()),
            _ => format!("steady state NOT reached in the {} round(s) that ran", self.values.len()),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct SteadyRule {
    pub window: usize,
    pub max_range_pct: f64,
    pub max_slope_pct: f64,
    pub max_rounds: usize,
}

impl Default for SteadyRule {
    /// The SNIA defaults, as iolab's.
    fn default() -> Self {
        SteadyRule { window: 5, max_range_pct: 20.0, max_slope_pct: 10.0, max_rounds: 25 }
    }
}

/// The state, with the fields of every variant optional (the JSON is internally tagged).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SteadyState {
    pub state: String,
    pub at_round: Option<usize>,
    pub window: Option<Window>,
    pub latest: Option<Window>,
    pub rounds: Option<usize>,
    pub needed: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Window {
    pub first_round: usize,
    pub last_round: usize,
    pub average: f64,
    pub range_pct: f64,
    pub slope_per_round: f64,
    pub intercept: f64,
    pub slope_excursion_pct: f64,
    pub range_ok: bool,
    pub slope_ok: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CliffSummary {
    pub cliffs: Vec<Cliff>,
    pub judged: bool,
    pub note: Option<String>,
    pub samples: Vec<ThroughputSample>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Cliff {
    pub at_bytes: u64,
    pub before_mb_s: f64,
    pub after_mb_s: f64,
    pub drop_pct: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ThroughputSample {
    pub bytes_done: u64,
    pub mb_s: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RampSummary {
    pub max_iops: f64,
    pub limits: RampLimits,
    pub rows: Vec<RampRow>,
    pub verdict: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RampLimits {
    pub latency: Option<LatencyLimit>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LatencyLimit {
    /// `None`: the mean.
    pub percentile: Option<f64>,
    pub limit_ns: f64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RampRow {
    pub level_pct: u32,
    pub achieved_iops: f64,
    pub sustained: bool,
    pub response_mean_ns: f64,
    pub response_p99_ns: f64,
    pub service_p99_ns: f64,
    pub crossed: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct SuiteSummary {
    sections: Vec<SuiteSection>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SuiteSection {
    Curve {
        summary: SweepSummary,
    },
    Steady {
        #[serde(default)]
        title: String,
        rounds: SteadyRounds,
    },
    #[serde(other)]
    Other,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_missing_fields_are_tolerated() {
        let report = serde_json::json!({
            "schema": "iolab.sweep/1",
            "summary": { "rows": [{ "name": "qd 1", "iops": 10.0, "new_field": 1 }], "curves": [{ "rows": [0] }] }
        });
        let Study::Sweep(sweep) = Study::of(Some(&report)) else { panic!("a sweep") };
        assert_eq!(sweep.rows[0].iops, 10.0);
        assert!(sweep.curves[0].sweet_spot.is_none());
        let other = serde_json::json!({ "schema": "iolab.future/9", "summary": {} });
        assert!(matches!(Study::of(Some(&other)), Study::None));
    }

    #[test]
    fn suite_sections_give_curves_and_rounds() {
        let report = serde_json::json!({
            "schema": "iolab.suite/1",
            "summary": { "suite": "quick", "sections": [
                { "kind": "table", "title": "t", "jobs": [0] },
                { "kind": "curve", "title": "QD", "jobs": [1], "summary": { "rows": [], "curves": [] } },
                { "kind": "steady", "title": "ss", "jobs": [2], "rounds": { "tracked": "iops", "values": [1.0] } }
            ] }
        });
        let study = Study::of(Some(&report));
        assert_eq!(study.sweeps().len(), 1);
        assert_eq!(study.steady_rounds()[0].0, "ss");
    }
}
