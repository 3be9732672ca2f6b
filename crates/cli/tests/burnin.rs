//! `iolab burnin`: a burn-in killed with SIGKILL keeps every segment it completed and
//! `--resume ID` goes on from the next with the trend continuing; the first data error stops
//! it unless --keep-going; `--resume` refuses what it cannot continue; the datasheet check.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{iolab, json, stderr};
use iolab_stats::encoded::EncodedHistograms;

fn with_db(dir: &Path, db: &Path, args: &[&str]) -> std::process::Output {
    iolab().args(args).arg("--db").arg(db).current_dir(dir).output().expect("iolab runs")
}

fn point_count(db: &Path) -> i64 {
    let Ok(conn) = rusqlite::Connection::open(db) else { return 0 };
    conn.query_row("SELECT count(*) FROM points", [], |row| row.get(0)).unwrap_or(0)
}

/// Segments of 250 ms on the null engine over a small scratch file (add a --duration).
const BURNIN: &[&str] =
    &["burnin", "--engine", "null", "--size", "16m", "--segment", "250ms", "--health-every", "1s"];

#[test]
fn a_killed_burn_in_resumes_with_no_segment_lost_and_the_trend_continuing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    let mut child = iolab()
        .args(BURNIN)
        .args(["--duration", "2s", "--json", "-q", "--db"])
        .arg(&db)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    while point_count(&db) < 2 {
        assert!(Instant::now() < deadline, "no two segments in 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");

    let kept = point_count(&db) as usize;
    assert!((2..8).contains(&kept), "{kept} of 8 segments kept");
    let before = json(&with_db(dir.path(), &db, &["results", "export", "1"]));
    let before = before["runs"][0]["points"].as_array().expect("points").clone();
    let list = json(&with_db(dir.path(), &db, &["results", "list", "--json"]));
    assert_eq!((list[0]["kind"].as_str(), list[0]["status"].as_str()), (Some("burnin"), Some("interrupted")));

    // The killed burn-in wrote no report: the HTML report draws its trend from the points.
    let html = with_db(dir.path(), &db, &["report", "1", "-o", "killed.html"]);
    assert!(html.status.success(), "{}", stderr(&html));
    let page = std::fs::read_to_string(dir.path().join("killed.html")).expect("the page");
    assert!(page.contains("data-chart=\"burnin-iops\"") && page.contains("data-chart=\"burnin-p99\""));

    let resumed = with_db(dir.path(), &db, &["burnin", "--resume", "1", "--json", "-q"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert!(stderr(&resumed).is_empty(), "quiet: {}", stderr(&resumed));
    let summary = &json(&resumed)["summary"];
    assert_eq!(summary["resumed_from"].as_u64(), Some(kept as u64));
    assert_eq!(summary["ending"]["kind"], "completed");
    let segments = summary["segments"].as_array().expect("segments");
    let indexes: Vec<u64> = segments.iter().filter_map(|s| s["index"].as_u64()).collect();
    assert_eq!(indexes, (1..=8).collect::<Vec<u64>>(), "every segment, the kept ones first");
    // The kept segments are the trend's start, figure for figure; time runs on after them.
    for (segment, point) in segments.iter().zip(&before) {
        assert_eq!(segment["iops"], point["summary"]["total"]["iops"]);
        assert_eq!(segment["completed_at_unix_s"], point["completed_at_unix_s"]);
    }
    let ended: Vec<i64> = segments.iter().filter_map(|s| s["completed_at_unix_s"].as_i64()).collect();
    assert!(ended.windows(2).all(|w| w[0] <= w[1]), "{ended:?}");
    assert_eq!(summary["perf"]["first_iops"], before[0]["summary"]["total"]["iops"]);

    // The run is one run, complete, its points the eight segments in order.
    let export = json(&with_db(dir.path(), &db, &["results", "export", "1"]));
    let run = &export["runs"][0];
    assert_eq!((run["status"].as_str(), run["kind"].as_str()), (Some("complete"), Some("burnin")));
    let points = run["points"].as_array().expect("points");
    let names: Vec<&str> = points.iter().filter_map(|p| p["name"].as_str()).collect();
    let expected: Vec<String> = (1..=8).map(|i| format!("burnin segment {i}")).collect();
    assert_eq!(names, expected);
    let seqs: Vec<u64> = points.iter().filter_map(|p| p["seq"].as_u64()).collect();
    assert_eq!(seqs, (0..8).collect::<Vec<u64>>());
    // The whole burn-in is the exact merge of every segment's histograms.
    let ios: u64 = points
        .iter()
        .map(|p| {
            let h: EncodedHistograms = serde_json::from_value(p["histograms"].clone()).expect("histograms");
            h.decode().expect("decode").ios()
        })
        .sum();
    assert_eq!(summary["whole"]["total"]["ios"].as_u64(), Some(ios));
    assert_eq!(run["report"]["schema"], "iolab.burnin/1", "the report is kept with the run");

    // Without a drive to read (this machine's scratch dir is on no NVMe drive), the health
    // section says why rather than showing nothing.
    if summary["health"].is_null() {
        let why = summary["health_skipped"].as_str().expect("a reason");
        assert!(why.ends_with("no drive health to sample") || why.contains("CAP_SYS_ADMIN"), "{why}");
    }
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
    let deadline = Instant::now() + Duration::from_secs(120);
    while point_count(&db) < 1 {
        assert!(Instant::now() < deadline, "no segment in 120 s");
        std::thread::sleep(Duration::from_millis(10));
    }
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

    let bad = with_db(dir.path(), &db, &[BURNIN, &["--rated", "p99=200"]].concat());
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("no unit"), "{}", stderr(&bad));
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
    let deadline = Instant::now() + Duration::from_secs(120);
    while point_count(&db) < 1 {
        assert!(Instant::now() < deadline, "no segment in 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("INTERRUPTED after ") && text.contains("of 14400 segments"), "{text}");
    assert!(text.contains("continue it with `iolab burnin --resume 1`"), "{text}");
    let list = json(&with_db(dir.path(), &db, &["results", "list", "--json"]));
    assert_eq!(list[0]["status"], "interrupted");
}
