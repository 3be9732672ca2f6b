//! The study reports (docs/results-schema.md) the charts read, as the store keeps them: a run's
//! `report` is the command's own `--json` output, `{ "schema", "summary", "run" }`, read into
//! the analysis crate's own types. Every field of those has a default and unknown fields are
//! skipped, so a report written by an older or newer iolab still renders what it has; a value this
//! version does not know (a steady state or bottleneck added later) leaves the study undrawn, its
//! points still drawn.

use iolab_analysis::cache::CacheSummary;
use iolab_analysis::cliff::CliffSummary;
use iolab_analysis::ramp::RampSummary;
use iolab_analysis::rounds::{SteadyRounds, Tracked};
use iolab_analysis::steady::SteadyState;
use iolab_analysis::sweep::SweepSummary;
use serde::Deserialize;
use serde_json::Value;

/// What a run's report holds, by schema.
#[derive(Debug, Clone)]
pub enum Study {
    Sweep(SweepSummary),
    Steady(SteadyRounds),
    Cliff(CliffSummary),
    Cache(Box<CacheSummary>),
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
        } else if parse("iolab.cache") {
            serde_json::from_value(summary).map(|c| Study::Cache(Box::new(c)))
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

/// The unit of a steady test's tracked value, as the page prints it.
pub fn unit(tracked: Tracked) -> &'static str {
    match tracked {
        Tracked::Iops => "IOPS",
        Tracked::MbS => "MB/s",
        Tracked::MeanLatency => "µs mean latency",
    }
}

/// "steady state reached at round 7", "NOT reached: gave up after 8 rounds".
pub fn outcome(rounds: &SteadyRounds) -> String {
    match &rounds.state {
        SteadyState::Reached { at_round, .. } => format!("steady state reached at round {at_round}"),
        SteadyState::TooShort { rounds, needed } => {
            format!("not judged: {rounds} round(s) ran, the window needs {needed}")
        }
        SteadyState::GaveUp { .. } => {
            format!("steady state NOT reached: gave up after {} rounds", rounds.values.len())
        }
        SteadyState::NotYet { .. } => {
            format!("steady state NOT reached in the {} round(s) that ran", rounds.values.len())
        }
    }
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
