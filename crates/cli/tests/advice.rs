//! The verdict's advice is a hypothesis that `iolab run` tests: a short trial at the advised
//! setting, after the job, confirms it or not, and the verdict says which with the trial's
//! figures. The target is a FUSE file whose server has a known number of channels, each read
//! taking 20 ms on one: what a deeper queue gains there is known in advance, and the lanes sleep
//! on it whatever else runs on the machine. The engine is psync: io_uring's reads of a FUSE file
//! were served one at a time on this kernel (QD 1, 2 and 4 all gave 34 IOPS on four channels).

mod common;

use std::time::Duration;

use common::faulty_fs::{mount_or_skip, Fault, Mounted};
use common::{iolab, json, stderr};

const DELAY: Duration = Duration::from_millis(20);
/// A saturated channel's service time: long against the FUSE round trip around it, whose cost
/// on a machine busy with other work (a thread woken per request, 10 ms or more at times) would
/// otherwise move the channel's rate between the run and its trial by more than the 10% that
/// confirms advice (busy run 17: +17% at 1.6x the latency, 32 against 37 IOPS at 20 ms).
const SATURATED_DELAY: Duration = Duration::from_millis(80);

/// `iolab run` of 4 KiB random reads at `qd` on the FUSE file, kept in a database of its own.
fn run(fs: &Mounted, qd: &str, extra: &[&str], db: &std::path::Path) -> serde_json::Value {
    let out = iolab()
        .args(["run", "--target"])
        .arg(fs.file())
        .args([
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--qd",
            qd,
            "--runtime",
            "2s",
            "--ramp",
            "0s",
            "--engine",
            "psync",
        ])
        .args(["--json", "-q", "--db"])
        .arg(db)
        .args(extra)
        .output()
        .expect("iolab runs");
    assert!(out.status.success(), "{}", stderr(&out));
    json(&out)["jobs"][0].clone()
}

#[test]
fn a_target_that_serves_more_at_once_confirms_a_deeper_queue() {
    let Some(fs) = mount_or_skip(Fault::Channels { delay: DELAY, channels: 4 }) else { return };
    let dir = tempfile::tempdir().expect("dir");
    let job = run(&fs, "1", &[], &dir.path().join("r.db"));
    let verdict = &job["verdict"];
    let summary = verdict["summary"].as_str().expect("summary");
    assert_eq!(verdict["advice"]["change"], "queue_depth", "{verdict}");
    assert_eq!(verdict["advice"]["qd"], 2, "{verdict}");
    assert_eq!(verdict["advice"]["outcome"], "confirmed", "{verdict}");
    // Four channels serve two reads at once: about twice the IOPS, far past the 10% bar.
    let gain = verdict["advice"]["iops_gain_pct"].as_f64().expect("gain");
    assert!(gain >= 50.0, "{verdict}");
    assert_eq!(verdict["cause"], "concurrency", "{summary}");
    assert!(summary.contains("Confirmed: --qd 2 gave +"), "{summary}");
    assert_eq!(job["trial"]["change"], "queue_depth");
    assert!(job["trial"]["iops"].as_f64().expect("iops") > 0.0, "{}", job["trial"]);
}

#[test]
fn a_saturated_target_is_named_once_a_deeper_queue_gains_nothing() {
    let Some(fs) = mount_or_skip(Fault::Channels { delay: SATURATED_DELAY, channels: 1 }) else { return };
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("r.db");
    let job = run(&fs, "2", &[], &db);
    let verdict = &job["verdict"];
    let summary = verdict["summary"].as_str().expect("summary");
    assert_eq!(verdict["advice"]["qd"], 4, "{verdict}");
    assert_eq!(verdict["advice"]["outcome"], "not_confirmed", "{verdict}");
    assert_eq!(verdict["cause"], "target", "{summary}");
    assert!(summary.contains("--qd 4 gave"), "{summary}");
    assert!(summary.contains("serves no more at once: it was saturated"), "{summary}");

    // The trial is kept with the point: judged again, it is judged the same.
    let out = iolab()
        .args(["results", "show", "1", "--rejudge", "--json", "--db"])
        .arg(&db)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let points = json(&out);
    let rejudged = &points["runs"][0]["points"][0]["verdict"];
    assert_eq!(rejudged["cause"], "target", "{rejudged}");
    assert_eq!(rejudged["advice"]["outcome"], "not_confirmed", "{rejudged}");
}

#[test]
fn no_confirm_leaves_the_advice_untested_and_says_so() {
    let Some(fs) = mount_or_skip(Fault::Channels { delay: DELAY, channels: 4 }) else { return };
    let dir = tempfile::tempdir().expect("dir");
    let job = run(&fs, "1", &["--no-confirm"], &dir.path().join("r.db"));
    let verdict = &job["verdict"];
    let summary = verdict["summary"].as_str().expect("summary");
    assert_eq!(verdict["advice"]["outcome"], "untested", "{verdict}");
    assert_eq!(verdict["cause"], "target", "{summary}");
    assert!(summary.ends_with("Advice, untested: --qd 2."), "{summary}");
    assert!(job.get("trial").is_none(), "{job}");
}
