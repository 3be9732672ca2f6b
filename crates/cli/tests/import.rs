//! `iolab import fio`: fio's JSON beside iolab's runs, in the same tables and comparisons.

mod common;

use std::path::{Path, PathBuf};

use common::{iolab, json, stderr};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fio/tests/fixtures").join(name)
}

/// iolab with `--db` in `dir` and HOME there too: never the user's database or files.
fn with_db(dir: &Path, args: &[&str]) -> std::process::Output {
    iolab()
        .args(args)
        .arg("--db")
        .arg(dir.join("r.db"))
        .env("HOME", dir)
        .env_remove("XDG_DATA_HOME")
        .current_dir(dir)
        .output()
        .expect("iolab runs")
}

fn text(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn fio_results_sit_beside_iolab_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plus = fixture("uring_randread.jsonplus.json");
    let imported = with_db(dir.path(), &["import", "fio", plus.to_str().expect("utf-8")]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    assert!(
        stderr(&imported).contains("imported") && stderr(&imported).contains("as run 1"),
        "{}",
        stderr(&imported)
    );
    let run = with_db(
        dir.path(),
        &["run", "--qd", "8", "--runtime", "200ms", "--ramp", "0", "--size", "16m", "-q"],
    );
    assert!(run.status.success(), "{}", stderr(&run));

    // fio's JSON names no host outside its client/server mode: the run says so.
    let shown = text(&with_db(dir.path(), &["results", "show", "1"]));
    assert!(shown.contains(", on an unknown host"), "{shown}");

    let export = json(&with_db(dir.path(), &["results", "export", "1"]));
    let point = &export["runs"][0]["points"][0];
    assert_eq!(export["runs"][0]["kind"], "fio");
    assert_eq!(point["source"], "fio");
    assert_eq!(point["summary"]["engine"], "uring");
    assert_eq!(point["summary"]["access"], "4KiB random read");
    let percentiles = point["summary"]["total"]["latency"]["percentiles"].as_array().expect("percentiles");
    assert_eq!(percentiles.len(), 7, "json+ bins give every percentile to p99.9999");
    assert!(point["histograms"]["read"]["hdr"].is_string(), "json+ bins are kept as a histogram");

    let compared = with_db(dir.path(), &["compare", "1", "2", "--json"]);
    assert!(compared.status.success(), "{}", stderr(&compared));
    assert_eq!(json(&compared)["sides"].as_array().map(Vec::len), Some(2));
}

#[test]
fn a_file_that_is_not_fio_output_stores_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = fixture("uring_randread.json");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"hello": "world"}"#).expect("written");
    let out =
        with_db(dir.path(), &["import", "fio", good.to_str().expect("utf-8"), bad.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is not fio's JSON output"), "{}", stderr(&out));
    assert!(!dir.path().join("r.db").exists(), "nothing stored, not even the good file");
}

/// Issue 18: an import into a database that does not exist yet creates it, as measuring
/// commands do: with --db (its directory too) and at the default place under HOME.
#[test]
fn import_creates_the_database_as_measuring_commands_do() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("new/dir/results.db");
    let file = fixture("uring_randread.json");
    let out = iolab()
        .args(["import", "fio", path(&file), "--db", path(&db)])
        .env("HOME", dir.path())
        .output()
        .expect("iolab runs");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(db.exists());
    let out = iolab()
        .args(["import", "fio", path(&file)])
        .env_remove("IOLAB_DB")
        .env_remove("XDG_DATA_HOME")
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .output()
        .expect("iolab runs");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.path().join(".local/share/iolab/results.db").exists(), "{}", stderr(&out));
}

/// Issue 18: fio 2.x and fio 3.1 outputs import, and `results show` says what was derived.
#[test]
fn older_fio_generations_import_with_their_notes_shown() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, words) in
        [("fio2_randread.jsonplus.json", "microseconds"), ("fio31_randread.json", "bw_bytes")]
    {
        let out = with_db(dir.path(), &["import", "fio", path(&fixture(name))]);
        assert!(out.status.success(), "{}", stderr(&out));
        let shown = with_db(dir.path(), &["results", "list"]);
        let id =
            text(&shown).lines().nth(1).and_then(|l| l.split_whitespace().next()).expect("a run").to_string();
        let shown = text(&with_db(dir.path(), &["results", "show", &id]));
        assert!(shown.contains("import notes:") && shown.contains(words), "{shown}");
    }
}

/// Issue 19: a 50 MB single-string file took 521 MB of memory and grew the database by 315 MB;
/// it is refused before it is read, saying the limit, and nothing is stored.
#[test]
fn a_50_mb_file_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let big = dir.path().join("big.json");
    let mut text = String::with_capacity(50_000_100);
    text.push_str("{\"fio version\": \"fio-3.33\", \"timestamp\": 1, \"jobs\": [{\"jobname\": \"");
    text.push_str(&"x".repeat(50_000_000));
    text.push_str("\"}]}");
    std::fs::write(&big, text).expect("written");
    let out = with_db(dir.path(), &["import", "fio", path(&big)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("more than the 16777216 bytes (16 MiB) one import takes"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("r.db").exists(), "nothing stored");
}

/// Issue 19: under the limit, a long text is cut, so the database grows by a bounded amount.
#[test]
fn a_long_job_name_is_stored_cut_in_bounded_space() {
    let dir = tempfile::tempdir().expect("temp dir");
    let original = std::fs::read_to_string(fixture("uring_randread.json")).expect("fixture");
    let mut doc: serde_json::Value = serde_json::from_str(&original).expect("JSON");
    doc["jobs"][0]["jobname"] = serde_json::Value::from("n".repeat(12_000_000));
    let file = dir.path().join("long.json");
    std::fs::write(&file, doc.to_string()).expect("written");
    let out = with_db(dir.path(), &["import", "fio", path(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stored: u64 = ["r.db", "r.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.path().join(f)).ok())
        .map(|m| m.len())
        .sum();
    assert!(stored < 2_000_000, "the database holds {stored} bytes");
    let shown = text(&with_db(dir.path(), &["results", "show", "1"]));
    assert!(shown.contains("longer than 1024 characters were cut"), "{shown}");
}

/// Issue 18: a directory of one fio result per point is one sweep, stored as `iolab sweep`
/// stores its own: its points named as iolab names them, from the options in each file.
#[test]
fn a_directory_of_fio_points_is_one_sweep() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = with_db(dir.path(), &["import", "fio", path(&fixture("sweep_a")), "--as-sweep"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("as sweep run 1 (6 points, 2 curve(s))"), "{}", stderr(&out));
    let export = json(&with_db(dir.path(), &["results", "export", "1"]));
    let run = &export["runs"][0];
    assert_eq!(run["kind"], "sweep");
    assert_eq!(run["report"]["schema"], "iolab.sweep/1");
    let curves = run["report"]["summary"]["curves"].as_array().expect("curves");
    assert_eq!(curves.len(), 2, "one load curve per numjobs");
    assert!(curves.iter().all(|c| c["sweet_spot"].is_object()), "{curves:?}");
    let points = run["points"].as_array().expect("points");
    let names: Vec<&str> = points.iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "workers 1, qd 1",
            "workers 1, qd 4",
            "workers 1, qd 16",
            "workers 2, qd 1",
            "workers 2, qd 4",
            "workers 2, qd 16"
        ]
    );
    // Each point's load is the one its file's options give.
    for point in points {
        let options = &point["result"]["job options"];
        assert_eq!(point["summary"]["qd"].to_string(), options["iodepth"].as_str().expect("iodepth"));
        assert_eq!(point["summary"]["workers"].to_string(), options["numjobs"].as_str().expect("numjobs"));
    }
    let shown = text(&with_db(dir.path(), &["results", "show", "1"]));
    assert!(shown.contains("workers 2, qd 16") && shown.contains("import notes:"), "{shown}");
    let report = with_db(dir.path(), &["report", "1", "-o", path(&dir.path().join("r.html"))]);
    assert!(report.status.success(), "{}", stderr(&report));
    let html = std::fs::read_to_string(dir.path().join("r.html")).expect("written");
    assert!(html.contains("sweet spot"), "the load curves are drawn with their sweet spots");
}

/// Two directories side by side, matched point by point by name whatever their files are
/// called; and a fio sweep beside a native iolab sweep of the same shape.
#[test]
fn two_fio_sweeps_and_an_iolab_sweep_compare_point_by_point() {
    let dir = tempfile::tempdir().expect("temp dir");
    let b = fixture("sweep_b");
    // The same points under other names, listed in another order.
    let renamed = dir.path().join("renamed");
    std::fs::create_dir(&renamed).expect("dir");
    for (from, to) in [("result-a.json", "z.json"), ("result-b.json", "y.json"), ("result-c.json", "x.json")]
    {
        std::fs::copy(b.join(from), renamed.join(to)).expect("copied");
    }
    for sweep in [&b, &renamed] {
        let out = with_db(dir.path(), &["import", "fio", path(sweep), "--as-sweep"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let compared = json(&with_db(dir.path(), &["compare", "1", "2", "--json"]));
    assert_eq!(compared["sides"][1]["matched_by"], "workload");
    let rows: Vec<&str> =
        compared["rows"].as_array().expect("rows").iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(rows, ["qd 1", "qd 4", "qd 16"]);
    let iops = |side: usize, row: usize| compared["rows"][row]["members"][side].clone();
    assert_eq!(iops(0, 2)["qd"], iops(1, 2)["qd"]);

    let native = with_db(
        dir.path(),
        &[
            "sweep",
            "--engine",
            "null",
            "--qd",
            "1,4,16",
            "--runtime",
            "100ms",
            "--ramp",
            "0",
            "--size",
            "16m",
            "-q",
        ],
    );
    assert!(native.status.success(), "{}", stderr(&native));
    let compared = json(&with_db(dir.path(), &["compare", "1", "3", "--json"]));
    assert_eq!(compared["sides"][1]["matched_by"], "workload", "fio's points are named as iolab's");
    assert_eq!(compared["rows"].as_array().map(Vec::len), Some(3));
    // The latency rows say which span each side measured, and `mean lat` compares fio's lat
    // with iolab's whole cycle, on both sides.
    let notes = compared["notes"].as_array().expect("notes");
    assert!(
        notes
            .iter()
            .filter_map(|n| n.as_str())
            .any(|n| n.contains("#1: fio's clat") && n.contains("#3: iolab's latency (hand-over to reap")),
        "{notes:?}"
    );
    let lat = compared["rows"][0]["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["metric"] == "lat_ns")
        .expect("a mean lat row")
        .clone();
    for side in 0..2 {
        assert!(lat["values"][side]["value"].as_f64().is_some_and(|ns| ns > 0.0), "{lat}");
    }
}

#[test]
fn a_sweep_file_with_several_jobs_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = with_db(dir.path(), &["import", "fio", path(&fixture("three_jobs.json")), "--as-sweep"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--as-sweep takes one point per file"), "{}", stderr(&out));
}
