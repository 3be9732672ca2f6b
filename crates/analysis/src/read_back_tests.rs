//! The study summaries read back as they were written (the HTML report reads them from the
//! store), and a summary lacking fields reads with the defaults.

use iolab_spec::sweep::LoadAxis;
use iolab_spec::Nanos;
use iolab_stats::result::Bottleneck;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::cliff::{find_cliffs, CliffRule, CliffSummary, ThroughputSample};
use crate::ramp::{RampLimits, RampRow, RampSummary};
use crate::rounds::{SteadyRounds, Tracked};
use crate::steady::{check, SteadyRule, SteadyState};
use crate::sweep::{CurveSummary, SweepRow, SweepSummary, SweetSpotRow};

fn read_back<T: Serialize + DeserializeOwned>(value: &T) -> T {
    serde_json::from_value(serde_json::to_value(value).expect("to JSON")).expect("from JSON")
}

fn rounds(values: &[f64]) -> SteadyRounds {
    let mut rounds = SteadyRounds::new(Tracked::MbS, SteadyRule { window: 3, ..SteadyRule::default() });
    rounds.values = values.to_vec();
    rounds.state = check(&rounds.values, &rounds.rule);
    rounds
}

#[test]
fn a_sweep_with_its_steady_rounds_reads_back_whole() {
    let row = |qd: u32, iops: f64| SweepRow {
        name: format!("qd {qd}"),
        qd,
        workers: 1,
        outstanding: qd,
        iops,
        p99_ns: 1_234_567,
        bottleneck: Bottleneck::Device,
        repeats: 1,
        ..SweepRow::default()
    };
    let sweep = SweepSummary {
        load_axis: LoadAxis::Workers,
        steady: vec![rounds(&[100.0, 101.0, 99.0]), rounds(&[100.0, 50.0])],
        rows: vec![row(1, 1e4), row(2, 2e4)],
        curves: vec![CurveSummary {
            name: String::new(),
            rows: vec![0, 1],
            sweet_spot: Some(SweetSpotRow { row: 1, knee_found: false, reason: "the most IOPS".into() }),
            saturation: None,
        }],
        verdict: vec!["a line".into()],
    };
    assert!(matches!(sweep.steady[0].state, SteadyState::Reached { .. }));
    assert!(matches!(sweep.steady[1].state, SteadyState::TooShort { .. }));
    assert_eq!(read_back(&sweep), sweep);
}

#[test]
fn a_ramp_limit_reads_back_in_nanoseconds() {
    let limits = RampLimits { latency: Some("p99=2ms".parse().expect("limit")), max_cpu_pct: Some(80.0) };
    let ramp = RampSummary {
        max_iops: 5e4,
        limits,
        rows: vec![RampRow { level_pct: 50, response_p99_ns: 3_000_000, ..RampRow::default() }],
        verdict: Vec::new(),
        curves: Vec::new(),
    };
    let back = read_back(&ramp);
    assert_eq!(back.limits.latency.map(|l| l.limit), Some(Nanos::from_millis(2)));
    assert_eq!(back, ramp);
}

#[test]
fn a_cliff_report_reads_back_with_its_log() {
    let samples: Vec<ThroughputSample> = (0..20)
        .map(|i| ThroughputSample {
            bytes_done: (i + 1) * 1_000_000,
            mb_s: if i < 10 { 900.0 } else { 200.0 },
        })
        .collect();
    let cliff = CliffSummary { found: find_cliffs(&samples, &CliffRule::default()), samples };
    assert_eq!(cliff.found.cliffs.len(), 1);
    assert_eq!(read_back(&cliff), cliff);
}

#[test]
fn what_a_summary_lacks_reads_as_the_default() {
    let rounds: SteadyRounds =
        serde_json::from_value(serde_json::json!({ "values": [1.0], "rule": { "window": 3 } }))
            .expect("rounds");
    assert_eq!(rounds.tracked, Tracked::Iops);
    assert_eq!(rounds.rule, SteadyRule { window: 3, ..SteadyRule::default() });
    let sweep: SweepSummary =
        serde_json::from_value(serde_json::json!({ "rows": [{ "iops": 5.0, "new": 1 }] })).expect("sweep");
    assert_eq!((sweep.rows[0].iops, sweep.rows[0].bottleneck), (5.0, Bottleneck::Undetermined));
}
