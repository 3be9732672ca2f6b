//! Tests of the burn-in text: how it ended and what to do next, long runs shortened, data errors
//! and the health trend.

use super::*;
use iolab_analysis::burnin::{health_trend, perf_trend};
use iolab_stats::health::HealthSample;

fn segment(index: u32, iops: f64) -> Segment {
    Segment {
        index,
        completed_at_unix_s: 1_764_000_000 + 600 * i64::from(index),
        measured_s: 600.0,
        iops,
        mb_s: iops * 4096.0 / 1e6,
        mean_ns: Some(50_000.0),
        p99_ns: Some(120_000),
        data_errors: 0,
    }
}

fn summary(segments: Vec<Segment>, ending: Ending) -> BurninSummary {
    BurninSummary {
        run: Some(7),
        workload: "randwrite 4KiB, QD 32 x 1 worker(s)".into(),
        target: "/dev/nvme0n1".into(),
        planned_segments: 144,
        segment_s: 600.0,
        health_every_s: 300.0,
        keep_going: false,
        perf: perf_trend(&segments),
        segments,
        resumed_from: 0,
        whole: None,
        health: None,
        health_samples: Vec::new(),
        health_skipped: Some("/dev/vda is not NVMe".into()),
        data_errors: 0,
        ending,
        rated_model: None,
        rated: Vec::new(),
    }
}

#[test]
fn an_interrupted_burn_in_says_how_to_continue() {
    let text = burnin_text(&summary((1..=3).map(|i| segment(i, 1000.0)).collect(), Ending::Interrupted));
    let head = "burn-in on /dev/nvme0n1: randwrite 4KiB, QD 32 x 1 worker(s), 144 segments of 10 min, \
                24.0 h planned";
    assert!(text.starts_with(head), "{text}");
    let end = "INTERRUPTED after 3 of 144 segments, no data errors: continue it with \
               `iolab burnin --resume 7`";
    assert!(text.contains(end), "{text}");
    assert!(text.contains("health: not sampled: /dev/vda is not NVMe"), "{text}");
}

#[test]
fn a_failed_burn_in_says_to_start_anew_not_to_resume() {
    let failed = Ending::Failed { reason: "stuck_io".into() };
    let text = burnin_text(&summary(vec![segment(1, 1000.0)], failed));
    assert!(text.contains("FAILED after 1 of 144 segments (stuck_io), no data errors: a failed"), "{text}");
    assert!(text.contains("start a new burn-in") && !text.contains("--resume"), "{text}");
    let stopped = Ending::DataErrors { segment: 2, errors: 3 };
    let text = burnin_text(&summary(vec![segment(1, 1000.0)], stopped));
    assert!(text.contains("start a new burn-in") && !text.contains("--resume"), "{text}");
}

#[test]
fn a_long_burn_in_shows_its_first_and_last_segments() {
    let text = burnin_text(&summary((1..=100).map(|i| segment(i, 1000.0)).collect(), Ending::Completed));
    assert!(text.contains("(60 segments not shown"), "{text}");
    assert!(text.contains("\n       10  "), "{text}");
    assert!(!text.contains("\n       11  "), "{text}");
    assert!(text.contains("\n       71  ") && text.contains("\n      100  "), "{text}");
    assert!(text.contains("completed: all 144 segments ran, no data errors"), "{text}");
}

#[test]
fn a_data_error_stop_and_the_health_trend_are_said() {
    let mut s = summary(vec![segment(1, 900.0)], Ending::DataErrors { segment: 2, errors: 1 });
    let sample = |at: i64, c: i32, errors: u64| HealthSample {
        taken_at_unix_s: at,
        source: "nvme".into(),
        device: "nvme0n1".into(),
        temperature_celsius: Some(c),
        media_errors: Some(errors),
        percentage_used: Some(3),
        available_spare_pct: Some(100),
        data_written_bytes: Some(at as u64 * 1_000_000_000),
        data_read_bytes: None,
        critical_warning: Some(0),
        io_errors: None,
    };
    s.health_samples = vec![sample(1000, 40, 0), sample(1300, 55, 1)];
    s.health = health_trend(&s.health_samples);
    let text = burnin_text(&s);
    assert!(text.contains("STOPPED at segment 2 of 144: 1 data error (the first error stops"), "{text}");
    let health = "health of nvme0n1 (nvme, 2 samples every 5 min from 1970-01-01 00:16 to \
                  1970-01-01 00:21 UTC): temperature 40-55 °C, last 55 °C, 1 new media errors, \
                  3% -> 3% used, 300.0 GB written as the drive counts";
    assert!(text.contains(health), "{text}");
    assert!(text.contains("  WARNING: the drive added 1 media"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&burnin_json(&s)).expect("JSON");
    assert_eq!(json["schema"], BURNIN_SCHEMA);
    assert_eq!(json["summary"]["ending"]["kind"], "data_errors");
    assert_eq!(json["summary"]["health_samples"].as_array().map(Vec::len), Some(2));
}
