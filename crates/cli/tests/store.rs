//! The results database: every run kept as it runs, the results commands, a sweep killed with
//! SIGKILL and resumed, several writers at once, and files that are not iolab databases.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{iolab, json, stderr};
use iolab_stats::encoded::EncodedHistograms;

/// Runs iolab in `dir` with the database `db`.
fn with_db(dir: &Path, db: &Path, args: &[&str]) -> std::process::Output {
    iolab().args(args).arg("--db").arg(db).current_dir(dir).output().expect("iolab runs")
}

fn integrity(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).expect("opens");
    conn.query_row("PRAGMA integrity_check", [], |row| row.get(0)).expect("checks")
}

fn point_count(db: &Path) -> i64 {
    let Ok(conn) = rusqlite::Connection::open(db) else { return 0 };
    conn.query_row("SELECT count(*) FROM points", [], |row| row.get(0)).unwrap_or(0)
}

const QUICK: &[&str] = &["--runtime", "200ms", "--ramp", "0", "--size", "16m", "-q"];

#[test]
fn runs_are_kept_and_every_export_parses() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    let run = with_db(dir.path(), &db, &[&["run"], QUICK].concat());
    assert!(run.status.success(), "{}", stderr(&run));
    // The null engine: a 200 ms point on a disk busy with other work may complete a handful of
    // I/Os, all reads by chance; this test is about what is kept, not the disk.
    let sweep = with_db(
        dir.path(),
        &db,
        &[&["sweep", "--engine", "null", "--qd", "1,2", "--rw", "randrw"], QUICK].concat(),
    );
    assert!(sweep.status.success(), "{}", stderr(&sweep));

    let list = json(&with_db(dir.path(), &db, &["results", "list", "--json"]));
    let runs = list.as_array().expect("a list");
    assert_eq!(runs.len(), 2);
    assert_eq!((runs[0]["kind"].as_str(), runs[0]["points"].as_u64()), (Some("sweep"), Some(2)));
    assert_eq!((runs[1]["kind"].as_str(), runs[1]["status"].as_str()), (Some("run"), Some("complete")));
    let sweep_id = runs[0]["id"].as_i64().expect("an id").to_string();

    let export = json(&with_db(dir.path(), &db, &["results", "export", &sweep_id]));
    assert_eq!(export["schema"], "iolab.export/1");
    let stored = &export["runs"][0];
    assert_eq!(stored["report"]["schema"], "iolab.sweep/1", "the sweep's own report is kept");
    for point in stored["points"].as_array().expect("points") {
        // The histograms merge again: read + write decode to the stored counts.
        let histograms: EncodedHistograms =
            serde_json::from_value(point["histograms"].clone()).expect("histograms parse");
        let stats = histograms.decode().expect("histograms decode");
        assert_eq!(stats.ios(), point["summary"]["total"]["ios"].as_u64().expect("ios"));
        assert!(stats.read.ios() > 0 && stats.write.ios() > 0, "randrw has both");
        assert!(point["verdict"]["summary"].is_string());
        assert!(!point["series"].as_array().expect("series").is_empty());
    }

    let csv_out = with_db(dir.path(), &db, &["results", "export", &sweep_id, "--format", "csv"]);
    let mut reader = csv::Reader::from_reader(csv_out.stdout.as_slice());
    let header = reader.headers().expect("a header").clone();
    let rows: Vec<csv::StringRecord> = reader.records().collect::<Result<_, _>>().expect("CSV parses");
    assert_eq!(rows.len(), 2);
    let column = |name: &str| header.iter().position(|h| h == name).expect(name);
    assert_eq!(&rows[1][column("qd")], "2");
    assert!(rows[0][column("p99.9999_ns")].parse::<u64>().expect("a number") > 0);

    let show = with_db(dir.path(), &db, &["results", "show", &sweep_id]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("qd 2") && text.contains("limited by"), "{text}");

    let deleted = with_db(dir.path(), &db, &["results", "delete", &sweep_id]);
    assert!(deleted.status.success(), "{}", stderr(&deleted));
    let gone = with_db(dir.path(), &db, &["results", "show", &sweep_id]);
    assert_eq!(gone.status.code(), Some(2));
    assert!(stderr(&gone).contains(&format!("no run {sweep_id}")), "{}", stderr(&gone));
    assert_eq!(integrity(&db), "ok");
}

/// A sweep killed outright keeps every point it completed, the database stays sound, and
/// --resume measures only the rest.
#[test]
fn a_killed_sweep_keeps_its_points_and_resumes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    // No retries: on a busy machine a point judged disturbed is taken back and measured
    // again, so the count of kept points could fall after the kill (busy run 24: 2, then 1).
    let sweep: Vec<&str> = [&["sweep", "--qd", "1..32", "--json", "--retries", "0"], QUICK].concat();
    let mut child = iolab()
        .args(&sweep)
        .arg("--db")
        .arg(&db)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while point_count(&db) < 2 {
        assert!(Instant::now() < deadline, "no two points in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");

    assert_eq!(integrity(&db), "ok");
    let kept = point_count(&db);
    assert!((2..6).contains(&kept), "{kept} of 6 points kept");
    let list = json(&with_db(dir.path(), &db, &["results", "list", "--json"]));
    assert_eq!(list[0]["status"], "interrupted", "a killed run is never complete; its writer is gone");

    let resumed = with_db(dir.path(), &db, &[sweep.as_slice(), &["--resume"]].concat());
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert!(stderr(&resumed).is_empty(), "quiet: {}", stderr(&resumed));
    let report = json(&resumed);
    let names: Vec<&str> = report["summary"]["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["qd 1", "qd 2", "qd 4", "qd 8", "qd 16", "qd 32"], "the table has every point");
    assert_eq!(report["run"]["jobs"].as_array().expect("jobs").len() as i64, 6 - kept, "only the rest ran");

    let list = json(&with_db(dir.path(), &db, &["results", "list", "--json"]));
    assert_eq!(list.as_array().expect("runs").len(), 1, "resumed in place");
    assert_eq!((list[0]["status"].as_str(), list[0]["points"].as_u64()), (Some("complete"), Some(6)));
    let export = json(&with_db(dir.path(), &db, &["results", "export", "1"]));
    let seqs: Vec<u64> = export["runs"][0]["points"]
        .as_array()
        .expect("points")
        .iter()
        .filter_map(|p| p["seq"].as_u64())
        .collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4, 5]);
}

#[test]
fn resume_without_an_unfinished_sweep_starts_a_new_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    let out = with_db(dir.path(), &db, &[&["sweep", "--qd", "1,2", "--resume"], QUICK].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("no unfinished sweep"), "{}", stderr(&out));
    assert_eq!(point_count(&db), 2);
}

/// Several iolab processes write to one database at once; every one succeeds.
#[test]
fn concurrent_writers_all_succeed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    let children: Vec<_> = (0..4)
        .map(|_| {
            iolab()
                .args([
                    "sweep",
                    "--qd",
                    "1,2,4",
                    "--engine",
                    "null",
                    "--runtime",
                    "50ms",
                    "--ramp",
                    "0",
                    "-q",
                ])
                .arg("--db")
                .arg(&db)
                .current_dir(dir.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("starts")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("runs");
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let list = json(&with_db(dir.path(), &db, &["results", "list", "--json"]));
    let runs = list.as_array().expect("runs");
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|r| r["points"] == 3 && r["status"] == "complete"), "{list}");
    assert_eq!(integrity(&db), "ok");
}

/// A file that is not an iolab database is refused with a clear error and left as it was.
#[test]
fn foreign_and_damaged_files_are_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "my precious notes, not a database\n".repeat(100)).expect("written");
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .and_then(|c| {
            c.execute_batch(
                "CREATE TABLE accounts (id INTEGER, balance REAL); INSERT INTO accounts VALUES (1, 2.5);",
            )
        })
        .expect("another program's database");
    let damaged = dir.path().join("damaged.db");
    let made = with_db(dir.path(), &damaged, &[&["run"], QUICK].concat());
    assert!(made.status.success(), "{}", stderr(&made));
    let mut bytes = std::fs::read(&damaged).expect("read");
    assert!(bytes.len() > 8192, "the database has several pages");
    for byte in &mut bytes[4096..8192] {
        *byte = 0xA5;
    }
    std::fs::write(&damaged, &bytes).expect("damaged");
    let newer = dir.path().join("newer.db");
    assert!(with_db(dir.path(), &newer, &[&["run"], QUICK].concat()).status.success());
    rusqlite::Connection::open(&newer)
        .and_then(|c| c.execute_batch("PRAGMA user_version = 99"))
        .expect("aged");

    for (file, expected) in [
        (&text, "is not an iolab results database (not an SQLite file)"),
        (&other, "is not an iolab results database (an SQLite database of another program"),
        (&damaged, "is damaged"),
        (&newer, "made by a newer iolab (schema 99"),
    ] {
        let before = std::fs::read(file).expect("read");
        for args in [&["run", "--runtime", "100ms", "--ramp", "0", "--size", "16m"][..], &["results", "list"]]
        {
            let out = with_db(dir.path(), file, args);
            assert_eq!(out.status.code(), Some(2), "{}: {}", file.display(), stderr(&out));
            assert!(stderr(&out).contains(expected), "{}: {}", file.display(), stderr(&out));
            assert!(out.stdout.is_empty(), "nothing measured");
        }
        assert_eq!(std::fs::read(file).expect("read"), before, "{} untouched", file.display());
    }
}

/// `iolab compare` on repeated runs: the JSON parses, each side is there, and with repeats every
/// difference is judged against the noise.
#[test]
fn compare_judges_differences_against_repeats() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    for qd in ["1", "8"] {
        let out = with_db(
            dir.path(),
            &db,
            &[&["run", "--repeat", "3", "--qd", qd, "--runtime", "100ms"], &QUICK[2..]].concat(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = with_db(dir.path(), &db, &["compare", "1", "2", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let comparison = json(&out);
    assert_eq!(comparison["schema"], "iolab.compare/2");
    assert_eq!(comparison["sides"].as_array().map(Vec::len), Some(2));
    let text = String::from_utf8_lossy(&with_db(dir.path(), &db, &["compare", "1", "2"]).stdout).to_string();
    assert!(text.contains("noise") && text.contains("3 repeats"), "{text}");
    assert!(text.contains("qd 1 vs 8") || text.contains("QD 8"), "the workloads differ: {text}");

    let missing = with_db(dir.path(), &db, &["compare", "1", "9"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no run 9"), "{}", stderr(&missing));
}

/// Issue 33: measure, keep, then judge. The runner returns a measured result; the point is
/// kept, then judged, and its verdict stored beside it and in its whole result, where the
/// reports and `--rejudge` read it.
#[test]
fn a_kept_point_is_judged_and_its_verdict_kept_beside_it_and_in_its_result() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    let run =
        with_db(dir.path(), &db, &["run", "--engine", "null", "--runtime", "200ms", "--ramp", "0", "-q"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let conn = rusqlite::Connection::open(&db).expect("opens");
    let (beside, within): (String, String) = conn
        .query_row(
            "SELECT json_extract(verdict, '$.cause'), json_extract(result, '$.verdict.cause') FROM points",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .expect("one point");
    assert_eq!((beside.as_str(), within.as_str()), ("submitting_cpu", "submitting_cpu"));
}

#[test]
fn a_stored_run_is_judged_again_by_todays_rules() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("r.db");
    let run =
        with_db(dir.path(), &db, &["run", "--engine", "null", "--runtime", "200ms", "--ramp", "0", "-q"]);
    assert!(run.status.success(), "{}", stderr(&run));
    // An older iolab's rules said something else: plant that verdict, as an old database holds it.
    let old = r#"{"cause":"undetermined","summary":"Old rules.","evidence":[]}"#;
    let conn = rusqlite::Connection::open(&db).expect("opens");
    conn.execute("UPDATE points SET verdict = ?1", [old]).expect("updates");
    drop(conn);

    let kept = with_db(dir.path(), &db, &["results", "show", "1"]);
    assert!(
        String::from_utf8_lossy(&kept.stdout).contains("Old rules."),
        "without --rejudge the stored verdict shows"
    );
    let rejudged = with_db(dir.path(), &db, &["results", "show", "1", "--rejudge"]);
    assert!(rejudged.status.success(), "{}", stderr(&rejudged));
    let text = String::from_utf8_lossy(&rejudged.stdout);
    assert!(text.contains("The null engine does no I/O") && !text.contains("Old rules."), "{text}");
    assert!(
        stderr(&rejudged)
            .contains("point 0 of run 1: undetermined -> submitting CPU under this iolab's rules"),
        "{}",
        stderr(&rejudged)
    );
    let json_out = json(&with_db(dir.path(), &db, &["results", "show", "1", "--rejudge", "--json"]));
    assert_eq!(json_out["runs"][0]["points"][0]["verdict"]["cause"], "submitting_cpu");
    // The database keeps what was stored: --rejudge only shows.
    let again = with_db(dir.path(), &db, &["results", "show", "1"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("Old rules."));
}
