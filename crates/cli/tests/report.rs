//! `iolab report`: stored runs drawn into one self-contained HTML file.

mod common;

use std::path::Path;

use common::{iolab, stderr};

fn with_db(dir: &Path, args: &[&str]) -> std::process::Output {
    iolab().args(args).arg("--db").arg(dir.join("r.db")).current_dir(dir).output().expect("iolab runs")
}

#[test]
fn stored_runs_become_one_self_contained_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let quick = ["--runtime", "150ms", "--ramp", "0", "--size", "16m", "-q"];
    for engine in ["uring", "psync"] {
        let out =
            with_db(dir.path(), &[&["sweep", "--qd", "1,2,4", "--engine", engine], &quick[..]].concat());
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let html = dir.path().join("out.html");
    let out = with_db(dir.path(), &["report", "1", "2", "-o", html.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).expect("written");
    assert!(page.starts_with("<!DOCTYPE html>"), "{}", &page[..80.min(page.len())]);
    assert!(page.matches("<svg").count() >= 4, "the load, latency, percentile and histogram charts");
    assert!(page.contains("#1 sweep uring") && page.contains("#2 sweep psync"), "both runs in the legends");
    assert!(page.contains("sweet spot") || page.contains("best (no knee)"), "the sweet spot is marked");
    let outside: Vec<&str> =
        page.match_indices("http").map(|(i, _)| &page[i..(i + 40).min(page.len())]).collect();
    assert!(outside.iter().all(|u| u.starts_with("http://www.w3.org/")), "nothing fetched: {outside:?}");

    let missing = with_db(dir.path(), &["report", "7", "-o", html.to_str().expect("utf-8")]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no run 7"), "{}", stderr(&missing));
}
