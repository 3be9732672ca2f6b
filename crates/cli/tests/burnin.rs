//! `iolab burnin`: a burn-in killed with SIGKILL keeps every segment it completed and
//! `--resume ID` goes on from the next with the trend continuing; the first data error stops
//! it unless --keep-going; `--resume` refuses what it cannot continue; the datasheet check.

mod common;

use std::path::Path;

use common::{iolab, json, points_kept, stderr, wait_until_kept};
use iolab_stats::encoded::EncodedHistograms;

fn with_db(dir: &Path, db: &Path, args: &[&str]) -> std::process::Output {
    iolab().args(args).arg("--db").arg(db).current_dir(dir).output().expect("iolab runs")
}

/// Segments of 250 ms on the null engine over a small scratch file (add a --duration).
const BURNIN: &[&str] =
    &["burnin", "--engine", "null", "--size", "16m", "--segment", "250ms", "--health-every", "1s"];

/// Starts a burn-in (`args` after `burnin`'s) in `dir`, its output piped.
fn spawn(dir: &Path, db: &Path, args: &[&str]) -> std::process::Child {
    iolab()
        .args(args)
        .arg("--db")
        .arg(db)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts")
}

/// Ctrl-C to `child`, and what it said.
fn interrupt(child: std::process::Child) -> std::process::Output {
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    child.wait_with_output().expect("wait")
}

/// The stored points of run 1: each a segment, named and numbered in order, none twice; the
/// last may be one cut short by Ctrl-C. Returns them.
fn contiguous_segments(dir: &Path, db: &Path) -> Vec<serde_json::Value> {
    let export = json(&with_db(dir, db, &["results", "export", "1"]));
    let points = export["runs"][0]["points"].as_array().expect("points").clone();
    let names: Vec<&str> = points.iter().filter_map(|p| p["name"].as_str()).collect();
    let expected: Vec<String> = (1..=points.len()).map(|i| format!("burnin segment {i}")).collect();
    assert_eq!(names, expected, "segments in order, none doubled");
    let seqs: Vec<u64> = points.iter().filter_map(|p| p["seq"].as_u64()).collect();
    assert_eq!(seqs, (0..points.len() as u64).collect::<Vec<u64>>());
    points
}

/// The resumed burn-in's report (`out`, stopped with Ctrl-C after more segments) goes on from
/// the `before` points kept: every segment once, the kept ones first figure for figure, and
/// the whole burn-in the exact merge of every complete segment's histograms.
fn check_continued(dir: &Path, db: &Path, before: &[serde_json::Value], out: &std::process::Output) {
    let kept = before.iter().filter(|p| p["summary"]["stop_reason"] != "interrupted").count();
    let summary = &json(out)["summary"];
    assert_eq!(summary["resumed_from"].as_u64(), Some(kept as u64));
    assert_eq!(summary["ending"]["kind"], "interrupted");
    let segments = summary["segments"].as_array().expect("segments");
    assert!(segments.len() > kept, "the resumed run added segments: {}", segments.len());
    let indexes: Vec<u64> = segments.iter().filter_map(|s| s["index"].as_u64()).collect();
    assert_eq!(indexes, (1..=segments.len() as u64).collect::<Vec<u64>>(), "every segment once");
    for (segment, point) in segments.iter().zip(&before[..kept]) {
        assert_eq!(segment["iops"], point["summary"]["total"]["iops"]);
        assert_eq!(segment["completed_at_unix_s"], point["completed_at_unix_s"]);
    }
    let ended: Vec<i64> = segments.iter().filter_map(|s| s["completed_at_unix_s"].as_i64()).collect();
    assert!(ended.windows(2).all(|w| w[0] <= w[1]), "{ended:?}");
    assert_eq!(summary["perf"]["first_iops"], before[0]["summary"]["total"]["iops"]);

    let points = contiguous_segments(dir, db);
    let complete: Vec<&serde_json::Value> =
        points.iter().filter(|p| p["summary"]["stop_reason"] != "interrupted").collect();
    assert_eq!(complete.len(), segments.len(), "the report's segments are the stored ones");
    let ios: u64 = complete
        .iter()
        .map(|p| {
            let h: EncodedHistograms = serde_json::from_value(p["histograms"].clone()).expect("histograms");
            h.decode().expect("decode").ios()
        })
        .sum();
    assert_eq!(summary["whole"]["total"]["ios"].as_u64(), Some(ios));
    let export = json(&with_db(dir, db, &["results", "export", "1"]));
    assert_eq!(export["runs"][0]["status"], "interrupted");
    assert_eq!(export["runs"][0]["report"]["schema"], "iolab.burnin/1", "the report is kept with the run");
}

/// Killed once two segments are kept (an hour-long burn-in: it cannot end first however busy
/// the machine), resumed with its own settings until two more are kept, then stopped.
#[test]
fn a_killed_burn_in_resumes_with_no_segment_lost_and_the_trend_continuing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    let mut child = spawn(dir.path(), &db, &[BURNIN, &["--duration", "1h", "--json", "-q"]].concat());
    wait_until_kept(&db, 2);
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");

    let before = contiguous_segments(dir.path(), &db);
    let list = json(&with_db(dir.path(), &db, &["results", "list", "--json"]));
    assert_eq!((list[0]["kind"].as_str(), list[0]["status"].as_str()), (Some("burnin"), Some("interrupted")));

    // The killed burn-in wrote no report: the HTML report draws its trend from the points.
    let html = with_db(dir.path(), &db, &["report", "1", "-o", "killed.html"]);
    assert!(html.status.success(), "{}", stderr(&html));
    let page = std::fs::read_to_string(dir.path().join("killed.html")).expect("the page");
    assert!(page.contains("data-chart=\"burnin-iops\"") && page.contains("data-chart=\"burnin-p99\""));

    let resumed = spawn(dir.path(), &db, &["burnin", "--resume", "1", "--json", "-q"]);
    wait_until_kept(&db, before.len() as i64 + 2);
    let out = interrupt(resumed);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    check_continued(dir.path(), &db, &before, &out);

    // Without a drive to read (this machine's scratch dir is on no NVMe drive), the health
    // section says why rather than showing nothing.
    let summary = &json(&out)["summary"];
    if summary["health"].is_null() {
        let why = summary["health_skipped"].as_str().expect("a reason");
        assert!(why.ends_with("no drive health to sample") || why.contains("CAP_SYS_ADMIN"), "{why}");
    }
}

/// Ctrl-C, then `--resume`: the segment Ctrl-C cut is measured again, under its own name, and
/// no segment is kept twice.
#[test]
fn a_burn_in_stopped_with_ctrl_c_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    let child = spawn(dir.path(), &db, &[BURNIN, &["--duration", "1h", "-q"]].concat());
    wait_until_kept(&db, 2);
    let first = interrupt(child);
    assert_eq!(first.status.code(), Some(130), "{}", stderr(&first));
    let before = contiguous_segments(dir.path(), &db);

    let resumed = spawn(dir.path(), &db, &["burnin", "--resume", "1", "--json", "-q"]);
    wait_until_kept(&db, before.len() as i64 + 2);
    let out = interrupt(resumed);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    check_continued(dir.path(), &db, &before, &out);
}

/// `--target PATH` is the target: its path (made absolute) is what the report names and whose
/// drive is sampled, never "a scratch file".
#[test]
fn the_target_flag_is_the_burn_ins_target() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    std::fs::write(dir.path().join("data.bin"), vec![0u8; 16 << 20]).expect("target");
    let args =
        ["burnin", "--engine", "null", "--target", "data.bin", "--segment", "250ms", "--duration", "250ms"];
    let out = with_db(dir.path(), &db, &[&args[..], &["--json", "-q"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let target = dir.path().join("data.bin");
    assert_eq!(json(&out)["summary"]["target"].as_str(), Some(target.to_str().expect("utf-8")));
}

/// A job file as the argument is refused, not burned in as a target for a day.
#[test]
fn a_job_file_is_not_taken_for_the_target() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    std::fs::write(dir.path().join("vms.toml"), "[[job]]\nrw = \"randread\"\n").expect("job file");
    let out = with_db(dir.path(), &db, &["burnin", "vms.toml", "--engine", "null"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("vms.toml is a job file"), "{}", stderr(&out));
    assert_eq!(points_kept(&db), 0);
}

/// 12 million segments would be hundreds of gigabytes of points: refused before anything runs.
#[test]
fn too_many_segments_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    let out =
        with_db(dir.path(), &db, &["burnin", "--engine", "null", "--segment", "100ms", "--duration", "336h"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("12096000 segments, more than 100000"), "{}", stderr(&out));
    assert!(stderr(&out).contains("give a longer --segment"), "{}", stderr(&out));
}

#[test]
fn resume_refuses_what_it_cannot_continue() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    let done = with_db(dir.path(), &db, &[BURNIN, &["--duration", "500ms", "-q"]].concat());
    assert!(done.status.success(), "{}", stderr(&done));
    let again = with_db(dir.path(), &db, &["burnin", "--resume", "1", "-q"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("run 1 completed; there is nothing to resume"), "{}", stderr(&again));

    let other = with_db(
        dir.path(),
        &db,
        &["run", "--engine", "null", "--runtime", "100ms", "--ramp", "0", "--size", "16m", "-q"],
    );
    assert!(other.status.success(), "{}", stderr(&other));
    let not_burnin = with_db(dir.path(), &db, &["burnin", "--resume", "2", "-q"]);
    assert_eq!(not_burnin.status.code(), Some(2));
    assert!(stderr(&not_burnin).contains("run 2 is a run run, not a burn-in"), "{}", stderr(&not_burnin));

    let changed = with_db(dir.path(), &db, &["burnin", "--resume", "1", "--qd", "4", "--segment", "1s"]);
    assert_eq!(changed.status.code(), Some(2));
    assert!(
        stderr(&changed).contains(
            "--resume takes the burn-in's settings from its own command line; drop --qd, --segment"
        ),
        "{}",
        stderr(&changed)
    );
    let short = with_db(dir.path(), &db, &["burnin", "--engine", "null", "--runtime", "5s"]);
    assert_eq!(short.status.code(), Some(2));
    assert!(stderr(&short).contains("times its segments itself"), "{}", stderr(&short));
}

/// Runs a burn-in of 250 ms segments on an 8 MiB file, truncating the file to nothing once the
/// first segment is kept, so every later read comes back short: a data error.
fn burn_in_while_the_target_shrinks(extra: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("r.db");
    let path = dir.path().join("shrinks");
    std::fs::write(&path, vec![3u8; 8 << 20]).expect("target");
    let child = iolab()
        .args(["burnin", "shrinks", "--buffered", "--qd", "2", "--duration", "2500ms", "--segment", "250ms"])
        .args(["--json", "-q", "--db"])
        .arg(&db)
        .args(extra)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_until_kept(&db, 1);
    std::fs::File::options().write(true).open(&path).expect("open").set_len(0).expect("truncate");
    child.wait_with_output().expect("wait")
}

#[test]
fn the_first_data_error_stops_the_burn_in() {
    let out = burn_in_while_the_target_shrinks(&[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let summary = &json(&out)["summary"];
    assert_eq!(summary["ending"]["kind"], "data_errors");
    let stopped_at = summary["ending"]["segment"].as_u64().expect("a segment");
    assert!((2..10).contains(&stopped_at), "{stopped_at}");
    assert!(summary["ending"]["errors"].as_u64().expect("errors") >= 1);
    assert_eq!(
        summary["segments"].as_array().expect("segments").len() as u64,
        stopped_at,
        "no segment after it"
    );
    assert!(stderr(&out).contains("the burn-in stopped at segment"), "{}", stderr(&out));
}

#[test]
fn a_block_that_reads_back_wrong_stops_the_burn_in() {
    // Burn-in verifies by default: a write pass records each block, the blocks are zeroed
    // behind iolab's back, and the read pass that follows stops at its first segment.
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("r.db");
    let common = ["burnin", "t", "--size", "1m", "--segment", "250ms", "--verify-state", "t.state", "-q"];
    let write =
        with_db(dir.path(), &db, &[&common[..], &["--rw", "randwrite", "--duration", "500ms"]].concat());
    assert!(write.status.success(), "{}", stderr(&write));
    std::fs::write(dir.path().join("t"), vec![0u8; 1 << 20]).expect("zero the target");
    let read = with_db(
        dir.path(),
        &db,
        &[&common[..], &["--rw", "randread", "--duration", "5s", "--json"]].concat(),
    );
    assert_eq!(read.status.code(), Some(3), "{}", stderr(&read));
    let summary = &json(&read)["summary"];
    assert_eq!(summary["ending"]["kind"], "data_errors", "{summary}");
    assert_eq!(summary["ending"]["segment"], 1, "{summary}");
}

#[test]
fn keep_going_runs_every_segment_and_counts_the_errors() {
    let out = burn_in_while_the_target_shrinks(&["--keep-going"]);
    assert_eq!(out.status.code(), Some(3), "errors still earn their exit code: {}", stderr(&out));
    let summary = &json(&out)["summary"];
    assert_eq!(summary["ending"]["kind"], "completed");
    assert_eq!(summary["segments"].as_array().expect("segments").len(), 10);
    assert!(summary["data_errors"].as_u64().expect("count") > 0);
}

#[test]
fn the_datasheet_check_prints_measured_vs_rated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    std::fs::write(
        dir.path().join("drive.toml"),
        "model = \"Test drive\"\niops = \"1\"\n\"p99.9\" = \"1h\"\n",
    )
    .expect("datasheet");
    let out =
        with_db(dir.path(), &db, &[BURNIN, &["--duration", "500ms", "-q", "--rated", "drive.toml"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("measured vs rated (Test drive):"), "{text}");
    // The null engine does more than one IOPS, and its p99.9 is far below an hour.
    assert!(text.contains("IOPS") && text.contains("above rated  meets"), "{text}");
    assert!(text.contains("p99.9 latency") && text.contains("below rated (faster)  meets"), "{text}");

    let run = with_db(
        dir.path(),
        &db,
        &[
            "run",
            "--engine",
            "null",
            "--runtime",
            "100ms",
            "--ramp",
            "0",
            "--size",
            "16m",
            "-q",
            "--rated",
            "iops=1k",
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(text.contains("measured vs rated:") && text.contains("vs rated 1,000"), "{text}");

    let bad = with_db(dir.path(), &db, &[BURNIN, &["--duration", "1s", "--rated", "p99=200"]].concat());
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("no unit"), "{}", stderr(&bad));
    let p95 = with_db(dir.path(), &db, &[BURNIN, &["--duration", "1s", "--rated", "p95=1ms"]].concat());
    assert_eq!(p95.status.code(), Some(2));
    assert!(stderr(&p95).contains("reports only the percentiles p50, p90, p99"), "{}", stderr(&p95));
}

/// Ctrl-C stops a burn-in at once with its report so far, which names the command that
/// continues it; the segment it cut is measured again on resume.
#[test]
fn ctrl_c_reports_so_far_and_says_how_to_continue() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    let child = iolab()
        .args(BURNIN)
        .args(["--duration", "1h", "-q", "--db"])
        .arg(&db)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    wait_until_kept(&db, 1);
    let out = interrupt(child);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("INTERRUPTED after ") && text.contains("of 14400 segments"), "{text}");
    assert!(text.contains("continue it with `iolab burnin --resume 1`"), "{text}");
    let list = json(&with_db(dir.path(), &db, &["results", "list", "--json"]));
    assert_eq!(list[0]["status"], "interrupted");
}
