//! `iolab sweep`, `steady`, `precondition` and `cliff` end to end: the points, rounds and
//! samples come out in order, the JSON of each parses with its findings, bad lists and rules are
//! refused with exit code 2, and Ctrl-C keeps what finished.

mod common;

use std::path::Path;
use std::process::Output;

use common::{json, run_in, spawn_in, stderr, ZramDevice};
use serde_json::Value;

/// Short points on a 64 MiB file `t`, laid out by the first command that uses it.
const QUICK: [&str; 6] = ["--runtime", "300ms", "--ramp", "0", "--size", "64m"];

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// Runs `iolab <args> <QUICK> -q` in `dir` and insists that it succeeded.
fn quick(dir: &Path, args: &[&str]) -> Output {
    let out = run_in(dir, &[args, &QUICK, &["-q"]].concat());
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

fn array<'a>(value: &'a Value, what: &str) -> &'a Vec<Value> {
    value.as_array().unwrap_or_else(|| panic!("{what} is not an array: {value}"))
}

fn names(rows: &[Value]) -> Vec<&str> {
    rows.iter().map(|r| r["name"].as_str().expect("name")).collect()
}

/// Every curve lists its rows, and its sweet spot (when it has one) is one of them.
/// Checks each curve's sweet spot and answers how many curves were judged: those with a sweet
/// spot, on an undisturbed row of their own, and those whose every point was disturbed (another
/// load or stolen CPU: a machine busy with other work), which have none and say so.
fn sweet_spots_are_on_their_curves(summary: &Value) -> usize {
    let rows = array(&summary["rows"], "rows");
    let verdict = array(&summary["verdict"], "verdict");
    let mut judged = 0;
    for curve in array(&summary["curves"], "curves") {
        let members: Vec<u64> =
            array(&curve["rows"], "curve rows").iter().map(|r| r.as_u64().expect("row")).collect();
        assert!(members.iter().all(|&r| (r as usize) < rows.len()), "{curve}");
        let disturbed = |row: u64| rows[row as usize]["disturbed"] == true;
        if let Some(spot) = curve["sweet_spot"].as_object() {
            let row = spot["row"].as_u64().expect("sweet spot row");
            assert!(members.contains(&row), "the sweet spot is on its own curve: {curve}");
            assert!(!disturbed(row), "the sweet spot is an undisturbed point: {curve}");
            assert!(spot["knee_found"].is_boolean() && spot["reason"].is_string(), "{curve}");
            judged += 1;
        } else if summary["load_axis"] != "none" && members.iter().all(|&row| disturbed(row)) {
            let said = verdict
                .iter()
                .filter_map(Value::as_str)
                .any(|l| l.ends_with("no sweet spot: every point was disturbed"));
            assert!(said, "{verdict:?}");
            judged += 1;
        }
    }
    judged
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Table lines marked as the sweet spot.
fn marked(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with("* ")).collect()
}

#[test]
fn sweep_over_qd_on_a_file_marks_one_sweet_spot() {
    let dir = dir();
    let out = quick(dir.path(), &["sweep", "t", "--qd", "1..8", "--json"]);
    let report = json(&out);
    assert_eq!(report["schema"], "iolab.sweep/1");
    let summary = &report["summary"];
    assert_eq!(summary["load_axis"], "qd");
    let rows = array(&summary["rows"], "rows");
    assert_eq!(names(rows), ["qd 1", "qd 2", "qd 4", "qd 8"]);
    let qd: Vec<u64> = rows.iter().map(|r| r["qd"].as_u64().expect("qd")).collect();
    assert_eq!(qd, [1, 2, 4, 8]);
    for row in rows {
        assert!(row["iops"].as_f64().expect("iops") > 0.0, "{row}");
        assert_eq!(row["outstanding"], row["qd"], "one worker: {row}");
    }
    let curves = array(&summary["curves"], "curves");
    assert_eq!(curves.len(), 1);
    assert_eq!(curves[0]["rows"], serde_json::json!([0, 1, 2, 3]));
    assert_eq!(sweet_spots_are_on_their_curves(summary), 1, "exactly one sweet spot");
    let verdict = array(&summary["verdict"], "verdict");
    assert!(
        verdict
            .iter()
            .filter_map(Value::as_str)
            .any(|l| l.contains("at qd ") || l.ends_with("every point was disturbed")),
        "{verdict:?}"
    );
    let jobs = array(&report["run"]["jobs"], "jobs");
    assert_eq!(names(jobs), ["qd 1", "qd 2", "qd 4", "qd 8"], "the full run, one job per point");

    let out = quick(dir.path(), &["sweep", "t", "--qd", "1,2"]);
    let text = text(&out);
    assert!(text.starts_with("sweep of 2 points: 4KiB random read on t"), "{text}");
    // None on a machine so busy that every point was disturbed; that is said.
    let spots = if text.contains("no sweet spot: every point was disturbed") { 0 } else { 1 };
    assert_eq!(marked(&text).len(), spots, "one sweet spot marked: {text}");
    assert!(spots == 0 || text.contains("(* the sweet spot"), "{text}");
    assert!(text.contains("verdict:"), "{text}");
}

#[test]
fn sweep_over_block_sizes_gives_a_curve_each_written_with_o() {
    let dir = dir();
    let out =
        quick(dir.path(), &["sweep", "t", "--bs", "4k,16k", "--qd", "1,4", "--json", "-o", "sweep.json"]);
    assert!(out.stdout.is_empty(), "the results went to the file");
    let written = std::fs::read(dir.path().join("sweep.json")).expect("sweep.json");
    let report: Value = serde_json::from_slice(&written).expect("sweep.json is JSON");
    assert_eq!(report["schema"], "iolab.sweep/1");
    let summary = &report["summary"];
    assert_eq!(summary["load_axis"], "qd");
    assert_eq!(
        names(array(&summary["rows"], "rows")),
        ["bs 4KiB, qd 1", "bs 4KiB, qd 4", "bs 16KiB, qd 1", "bs 16KiB, qd 4"]
    );
    let curves = array(&summary["curves"], "curves");
    let curve_names: Vec<&str> = curves.iter().map(|c| c["name"].as_str().expect("name")).collect();
    assert_eq!(curve_names, ["bs 4KiB", "bs 16KiB"]);
    assert_eq!(curves[0]["rows"], serde_json::json!([0, 1]));
    assert_eq!(curves[1]["rows"], serde_json::json!([2, 3]));
    assert_eq!(sweet_spots_are_on_their_curves(summary), 2, "one sweet spot per curve");
}

#[test]
fn sweep_without_a_load_axis_has_no_sweet_spot() {
    let dir = dir();
    let out = quick(dir.path(), &["sweep", "t", "--read-pct", "100,0", "--json"]);
    let report = json(&out);
    let summary = &report["summary"];
    assert_eq!(summary["load_axis"], "none");
    assert_eq!(names(array(&summary["rows"], "rows")), ["read 100%", "read 0%"]);
    assert_eq!(sweet_spots_are_on_their_curves(summary), 0);
    let verdict = array(&summary["verdict"], "verdict")[0].as_str().expect("verdict");
    assert!(verdict.contains("not a load curve and have no sweet spot"), "{verdict}");
    let jobs = array(&report["run"]["jobs"], "jobs");
    assert_eq!(jobs[0]["write"]["ios"], 0, "read 100% only reads");
    assert_eq!(jobs[1]["read"]["ios"], 0, "read 0% only writes");
    assert!(jobs[1]["write"]["ios"].as_u64().expect("writes") > 0);
}

#[test]
fn sweep_refuses_bad_lists_and_run_refuses_lists() {
    let dir = dir();
    let d = dir.path();
    let cases: [(&[&str], &str); 5] = [
        (&["sweep", "t", "--qd", "8..1"], "bad range '8..1': it runs downwards"),
        (&["sweep", "t", "--qd", "0..8"], "doubling needs a start above 0"),
        (&["sweep", "t", "--qd", "8"], "a sweep needs a list"),
        (&["run", "--target", "t", "--qd", "1,2"], "`iolab sweep` runs lists"),
        (&["steady", "t", "--bs", "4k,8k"], "`iolab sweep` runs lists"),
    ];
    for (args, expect) in cases {
        let out = run_in(d, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("iolab: error: ") && err.contains(expect), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_dir(d).expect("dir").count(), 0, "nothing was laid out");
}

#[test]
fn sweep_on_the_null_engine_has_every_point() {
    let dir = dir();
    let out =
        quick(dir.path(), &["sweep", "t", "--engine", "null", "--qd", "1..8", "--workers", "1,2", "--json"]);
    let summary = &json(&out)["summary"];
    assert_eq!(summary["load_axis"], "qd");
    let rows = array(&summary["rows"], "rows");
    let points: Vec<(u64, u64)> =
        rows.iter().map(|r| (r["workers"].as_u64().expect("w"), r["qd"].as_u64().expect("qd"))).collect();
    assert_eq!(points, [(1, 1), (1, 2), (1, 4), (1, 8), (2, 1), (2, 2), (2, 4), (2, 8)]);
    for row in rows {
        let outstanding = row["outstanding"].as_u64().expect("outstanding");
        assert_eq!(outstanding, row["qd"].as_u64().expect("qd") * row["workers"].as_u64().expect("w"));
        assert!(row["iops"].as_f64().expect("iops") > 0.0, "{row}");
        assert!(row["cpu_us_per_io"].as_f64().expect("cpu per I/O") > 0.0, "{row}");
    }
    let curves = array(&summary["curves"], "curves");
    let curve_names: Vec<&str> = curves.iter().map(|c| c["name"].as_str().expect("name")).collect();
    assert_eq!(curve_names, ["workers 1", "workers 2"]);
    assert_eq!(sweet_spots_are_on_their_curves(summary), 2);
}

#[test]
fn steady_rounds_end_reached_or_given_up_within_max_rounds() {
    let dir = dir();
    let args = ["steady", "t", "--window", "3", "--max-rounds", "6", "--json"];
    let report = json(&quick(dir.path(), &args));
    assert_eq!(report["schema"], "iolab.steady/1");
    let rounds = &report["summary"];
    assert_eq!(rounds["tracked"], "iops");
    let values = array(&rounds["values"], "values");
    assert!((3..=6).contains(&values.len()), "{rounds}");
    assert_eq!(array(&report["run"]["jobs"], "jobs").len(), values.len(), "one job per round");
    let state = &rounds["state"];
    match state["state"].as_str().expect("state tag") {
        "reached" => assert_eq!(state["at_round"].as_u64(), Some(values.len() as u64), "stops when steady"),
        "gave_up" => assert_eq!(values.len(), 6, "gives up at --max-rounds"),
        other => panic!("ended {other}: {state}"),
    }
}

#[test]
fn steady_with_a_wide_rule_is_steady_at_round_two() {
    let dir = dir();
    // Two positive values are never more than 200% apart relative to their average, so a 1000%
    // rule holds at the first window: round 2, whatever the device does.
    let wide = ["--window", "2", "--max-range-pct", "1000", "--max-slope-pct", "1000"];
    let report = json(&quick(dir.path(), &[&["steady", "t", "--json"][..], &wide].concat()));
    let rounds = &report["summary"];
    assert_eq!(rounds["state"]["state"], "reached", "{rounds}");
    assert_eq!(rounds["state"]["at_round"], 2);
    assert_eq!(rounds["state"]["window"]["first_round"], 1);
    assert_eq!(array(&rounds["values"], "values").len(), 2);
    assert_eq!(rounds["rule"]["max_rounds"], 25, "the SNIA default");
    assert_eq!(names(array(&report["run"]["jobs"], "jobs")), ["default round 1", "default round 2"]);

    let out = quick(dir.path(), &[&["steady", "t", "--track", "mb-s"][..], &wide].concat());
    let text = text(&out);
    assert!(text.contains("steady state reached at round 2: rounds 1-2"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with('>')).count(), 2, "the window is marked: {text}");
}

#[test]
fn steady_refuses_a_window_it_could_never_fill() {
    let dir = dir();
    let out = run_in(dir.path(), &["steady", "t", "--max-rounds", "3", "--window", "5"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("max rounds (3) is below the window (5)"), "{err}");
}

#[test]
fn precondition_writes_every_pass_and_trims_a_file() {
    let dir = dir();
    let d = dir.path();
    let size = 32u64 << 20;
    let out = run_in(d, &["precondition", "p", "--size", "32m", "--passes", "2", "--json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema"], "iolab.precondition/1");
    let done = &report["summary"];
    assert_eq!(done["region_bytes"], size);
    assert_eq!(done["passes"], 2);
    assert!(done["written_bytes"].as_u64().expect("written") >= 2 * size, "{done}");
    assert_eq!(done["complete"], true, "{done}");
    assert_eq!(done["trimmed"], false);
    let job = &report["run"]["jobs"][0];
    assert_eq!(job["stop_reason"], "io_limit");
    assert_eq!(job["read"]["ios"], 0);

    let out = run_in(d, &["precondition", "p", "--passes", "1", "--trim", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = text(&out);
    assert!(
        text.contains("preconditioning: 1 pass(es) over 32MiB") && text.contains("discarded first"),
        "{text}"
    );
    assert!(!text.contains("discard:") && !text.contains("NOT COMPLETE"), "no note: {text}");

    let refused = run_in(d, &["precondition", "p", "--rw", "randread"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("drop --rw"), "{}", stderr(&refused));
}

/// Bytes written at the end of each sample never shrink (a stalled interval writes nothing).
fn checked_samples(summary: &Value) -> Vec<u64> {
    let done: Vec<u64> = array(&summary["samples"], "samples")
        .iter()
        .map(|s| s["bytes_done"].as_u64().expect("bytes_done"))
        .collect();
    assert!(!done.is_empty(), "{summary}");
    // A busy machine may write nothing in an early interval: only the order is the tool's.
    assert!(done.last() > Some(&0) && done.windows(2).all(|w| w[0] <= w[1]), "{done:?}");
    assert!(summary["judged"].is_boolean() && summary["cliffs"].is_array(), "{summary}");
    if summary["judged"] == false {
        assert!(summary["note"].as_str().expect("why not judged").contains("too few to judge"), "{summary}");
    }
    done
}

#[test]
fn cliff_logs_throughput_against_bytes_written() {
    let dir = dir();
    let args = [
        "cliff",
        "c",
        "--size",
        "128m",
        "--bytes",
        "512m",
        "--interval",
        "50ms",
        "--hold",
        "2",
        "--json",
        "-q",
    ];
    let out = run_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema"], "iolab.cliff/1");
    let done = checked_samples(&report["summary"]);
    let job = &report["run"]["jobs"][0];
    assert_eq!(job["stop_reason"], "io_limit");
    // The I/Os in flight when the limit is reached complete too.
    let written = job["write"]["bytes"].as_u64().expect("written");
    assert!(
        (512 << 20..(512 << 20) + (32 << 17)).contains(&written),
        "--bytes, past the region's end: {written}"
    );
    let logged = *done.last().expect("last") as f64;
    assert!(logged <= written as f64 * 1.001, "the log adds up to at most what was written: {done:?}");
    assert_eq!(job["spec"]["interval_ns"], 50_000_000);

    let refused = run_in(dir.path(), &["cliff", "c", "--runtime", "1s"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("drop --runtime"), "{}", stderr(&refused));
}

#[test]
fn precondition_and_cliff_on_a_zram_device() {
    let Some(zram) = ZramDevice::for_test(64) else { return };
    let dir = dir();
    let out = run_in(dir.path(), &["precondition", zram.path(), "--trim", "--passes", "1", "--json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let done = &json(&out)["summary"];
    assert_eq!(done["region_bytes"], 64u64 << 20, "the whole device");
    assert_eq!((&done["trimmed"], &done["complete"]), (&Value::Bool(true), &Value::Bool(true)), "{done}");

    let out = run_in(dir.path(), &["cliff", zram.path(), "--interval", "50ms", "--json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    checked_samples(&report["summary"]);
    // The whole device once; the batch that reaches the I/O limit may complete a few more
    // requests (at most the QD of 32 x 128 KiB), which wrap to the start of the device.
    let written = report["run"]["jobs"][0]["write"]["bytes"].as_u64().expect("bytes");
    assert!((64u64 << 20..(64u64 << 20) + 32 * (128 << 10)).contains(&written), "{written} bytes written");
}

fn interrupt(child: &std::process::Child) {
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
}

/// Points of 2 s each, interrupted once the first is kept: one or two finished, the next cut
/// short if the signal came while it ran. (A fixed 2.5 s wait found none finished on a busy
/// machine.)
#[test]
fn sigint_during_a_sweep_keeps_the_finished_points() {
    let (json_dir, text_dir) = (common::dir_with_target(), common::dir_with_target());
    let sweep = ["sweep", "t", "--engine", "null", "--qd", "1..8", "--runtime", "2s", "--ramp", "0", "-q"];
    let (json_db, text_db) = (json_dir.path().join("r.db"), text_dir.path().join("r.db"));
    let db = |path: &Path| ["--db".to_string(), path.display().to_string()];
    let (json_db_args, text_db_args) = (db(&json_db), db(&text_db));
    let json_db_args: Vec<&str> = json_db_args.iter().map(String::as_str).collect();
    let text_db_args: Vec<&str> = text_db_args.iter().map(String::as_str).collect();
    let as_json = spawn_in(json_dir.path(), &[&sweep[..], &["--json"], &json_db_args].concat());
    let as_text = spawn_in(text_dir.path(), &[&sweep[..], &text_db_args].concat());
    common::wait_until_kept(&json_db, 1);
    interrupt(&as_json);
    common::wait_until_kept(&text_db, 1);
    interrupt(&as_text);

    let out = as_json.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["run"]["interrupted"], true);
    let jobs = array(&report["run"]["jobs"], "jobs");
    // The signal may come between two points, or after a point's window ended: then no point
    // is cut and every job kept ran its whole runtime.
    let finished_count = jobs.iter().take_while(|j| j["stop_reason"] == "runtime").count();
    let (finished, cut) = jobs.split_at(finished_count);
    assert!(cut.len() <= 1, "only the last point can be cut short: {jobs:?}");
    assert!(
        cut.iter().all(|j| j["stop_reason"] == "interrupted"),
        "the partial point stays in the run: {jobs:?}"
    );
    assert!(!finished.is_empty() && finished.len() < 4, "{jobs:?}");
    let rows = array(&report["summary"]["rows"], "rows");
    assert_eq!(names(rows), names(finished), "the rows are the finished points");

    let out = as_text.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let text = text(&out);
    assert!(text.contains(" qd 1 ") && !text.contains("qd 8"), "{text}");
    assert!(text.contains("INTERRUPTED: the points above are those that finished."), "{text}");
}

/// A round cut short by Ctrl-C is not judged: with a rule that holds at round 2, stopping
/// during round 2 must not report it steady.
#[test]
fn sigint_during_steady_does_not_judge_the_cut_round() {
    let dir = common::dir_with_target();
    let args = [
        "steady",
        "t",
        "--engine",
        "null",
        "--runtime",
        "2s",
        "--window",
        "2",
        "--max-range-pct",
        "1000",
        "--max-slope-pct",
        "1000",
        "--json",
        "-q",
    ];
    // Interrupted once round 1 is kept, during round 2 (a fixed 1.5 s wait cut round 1 on a
    // busy machine).
    let db = dir.path().join("r.db");
    let child = spawn_in(dir.path(), &[&args[..], &["--db", db.to_str().expect("UTF-8 path")]].concat());
    common::wait_until_kept(&db, 1);
    interrupt(&child);
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let report = json(&out);
    let jobs = array(&report["run"]["jobs"], "jobs");
    // Round 2 is cut short, or never started if the signal came between the rounds.
    assert!(matches!(jobs.len(), 1 | 2), "round 1, and round 2 cut short: {jobs:?}");
    assert_eq!(jobs[0]["stop_reason"], "runtime", "{jobs:?}");
    assert!(jobs[1..].iter().all(|j| j["stop_reason"] == "interrupted"), "{jobs:?}");
    let rounds = &report["summary"];
    assert_eq!(array(&rounds["values"], "values").len(), 1, "{rounds}");
    assert_eq!(rounds["state"]["state"], "too_short", "{rounds}");
}
