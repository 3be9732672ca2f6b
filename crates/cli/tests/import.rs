//! `iolab import fio`: fio's JSON beside iolab's runs, in the same tables and comparisons.

mod common;

use std::path::{Path, PathBuf};

use common::{iolab, json, stderr};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fio/tests/fixtures").join(name)
}

fn with_db(dir: &Path, args: &[&str]) -> std::process::Output {
    iolab().args(args).arg("--db").arg(dir.join("r.db")).current_dir(dir).output().expect("iolab runs")
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
