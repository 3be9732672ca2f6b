//! Tests of the burn-in chart: its trend and temperature drawn from kept segments, and no panel
//! without them.

use super::*;
use iolab_analysis::burnin::{health_trend, perf_trend, Ending};
use iolab_stats::health::HealthSample;
use iolab_store::{RunInfo, RunStatus};

fn segment(index: u32, iops: f64) -> Segment {
    Segment {
        index,
        completed_at_unix_s: 1_000_000 + 3600 * i64::from(index),
        measured_s: 3600.0,
        iops,
        mb_s: 1.0,
        mean_ns: Some(1000.0),
        p99_ns: Some(2000 + u64::from(index)),
        data_errors: 0,
    }
}

fn run(report: Option<Value>) -> StoredRun {
    StoredRun {
        info: RunInfo {
            id: 3,
            kind: "burnin".into(),
            label: "burnin".into(),
            command: Vec::new(),
            iolab_version: "0".into(),
            host: "h".into(),
            started_at_unix_s: 0,
            finished_at_unix_s: None,
            status: RunStatus::Complete,
            points: 0,
        },
        plan: Value::Null,
        environment: Value::Null,
        environment_after: None,
        report,
        points: Vec::new(),
    }
}

#[test]
fn a_burn_in_report_draws_its_trend_and_temperature() {
    let segments: Vec<Segment> = (1..=5).map(|i| segment(i, 1000.0 - f64::from(i))).collect();
    let samples: Vec<HealthSample> = (0..4)
        .map(|i| HealthSample {
            taken_at_unix_s: 1_000_000 + 3600 * i,
            source: "nvme".into(),
            device: "nvme0n1".into(),
            temperature_celsius: Some(40 + i as i32),
            media_errors: Some(0),
            percentage_used: Some(1),
            available_spare_pct: Some(100),
            data_written_bytes: Some(i as u64 * 1_000_000_000),
            data_read_bytes: None,
            critical_warning: Some(0),
            io_errors: None,
        })
        .collect();
    let summary = BurninSummary {
        run: Some(3),
        workload: "w".into(),
        target: "t".into(),
        planned_segments: 5,
        segment_s: 3600.0,
        health_every_s: 300.0,
        keep_going: false,
        perf: perf_trend(&segments),
        segments,
        resumed_from: 0,
        whole: None,
        health: health_trend(&samples),
        health_samples: samples,
        health_skipped: None,
        data_errors: 0,
        ending: Ending::Completed,
        rated_model: None,
        rated: Vec::new(),
    };
    let report = serde_json::json!({ "schema": "iolab.burnin/1", "summary": summary });
    let stored = run(Some(report));
    let subject = Subject {
        name: "#3 burnin".into(),
        run: &stored,
        study: crate::studies::Study::None,
        base: crate::plot::color(0),
    };
    let figures = burnin(std::slice::from_ref(&subject)).expect("draws");
    let kinds: Vec<&str> = figures.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, ["burnin-iops", "burnin-p99", "burnin-health"]);
    assert!(figures[0].caption.contains("% per day"), "{}", figures[0].caption);
    assert!(
        figures[2].caption.starts_with("4 samples, one every 300 s, 0 new media errors"),
        "{}",
        figures[2].caption
    );
    assert!(figures.iter().all(|f| f.svg.contains("<svg")));
}

#[test]
fn a_burn_in_with_nothing_kept_and_other_runs_draw_no_burn_in_panel() {
    let stored = run(None);
    let subject = Subject {
        name: "#3 burnin".into(),
        run: &stored,
        study: crate::studies::Study::None,
        base: crate::plot::color(0),
    };
    // No points either: nothing to draw, and no error.
    assert!(burnin(std::slice::from_ref(&subject)).expect("draws").is_empty());
    let mut sweep = run(None);
    sweep.info.kind = "sweep".into();
    let subject = Subject {
        name: "#4 sweep".into(),
        run: &sweep,
        study: crate::studies::Study::None,
        base: crate::plot::color(1),
    };
    assert!(burnin(std::slice::from_ref(&subject)).expect("draws").is_empty());
}
