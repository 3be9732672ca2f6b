//! Snapshots of the terminal output of every command kind, rendered from runs that real commands
//! kept (tests/fixtures/*.json: `iolab results export` of null-engine and scratch-file runs,
//! their histograms left out). A column that runs into the next, a unit that changed or a lost
//! label shows as a diff here. After a deliberate change:
//! `INSTA_UPDATE=always cargo test -p iolab-report --test terminal`, then read the new
//! snapshots in tests/snapshots/ before committing them.

use iolab_analysis::blend::BlendSummary;
use iolab_analysis::cliff::CliffSummary;
use iolab_analysis::compare::CompareInput;
use iolab_analysis::ladder::LadderSummary;
use iolab_analysis::ramp::RampSummary;
use iolab_analysis::rounds::SteadyRounds;
use iolab_analysis::scale::ScaleSummary;
use iolab_analysis::suite::{Preconditioning, SuiteSection};
use iolab_analysis::sweep::SweepSummary;
use iolab_report::*;
use iolab_stats::result::{HostInfo, JobResult, RunReport, SCHEMA};
use iolab_store::{Point, RunInfo, RunStatus, StoredRun};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The one run of fixture `name`, as the store gives it back.
fn stored(name: &str) -> StoredRun {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let export: Value = serde_json::from_str(&text).expect("fixture JSON");
    let run = &export["runs"][0];
    let points: Vec<Point> = parse(&run["points"]);
    let info = RunInfo {
        id: run["id"].as_i64().expect("id"),
        kind: run["kind"].as_str().expect("kind").into(),
        label: run["label"].as_str().expect("label").into(),
        command: parse(&run["command"]),
        iolab_version: "0.1.0".into(),
        host: "snapshot-host".into(),
        started_at_unix_s: run["started_at_unix_s"].as_i64().expect("start"),
        finished_at_unix_s: run["finished_at_unix_s"].as_i64(),
        status: parse::<RunStatus>(&run["status"]),
        points: points.len(),
    };
    StoredRun {
        info,
        plan: run["plan"].clone(),
        environment: run["environment"].clone(),
        environment_after: Some(run["environment_after"].clone()),
        report: Some(run["report"].clone()),
        points,
    }
}

fn parse<T: DeserializeOwned>(value: &Value) -> T {
    serde_json::from_value(value.clone()).expect("a value iolab wrote")
}

/// The command's report kept with the run: its summary and its run report.
fn report<T: DeserializeOwned>(run: &StoredRun) -> (T, RunReport) {
    let report = run.report.as_ref().expect("a study report");
    (parse(&report["summary"]), run_report(run, parse(&report["run"]["jobs"])))
}

fn run_report(run: &StoredRun, jobs: Vec<JobResult>) -> RunReport {
    RunReport {
        schema: SCHEMA,
        iolab_version: "0.1.0",
        host: HostInfo { hostname: "snapshot-host".into(), kernel: "6.x".into(), cpus: 2 },
        started_at_unix_s: run.info.started_at_unix_s as u64,
        interrupted: false,
        peak_rss_bytes: 0,
        jobs,
    }
}

#[test]
fn run() {
    // A plain run keeps no report of its own: its jobs are its points.
    let stored = stored("run");
    let jobs: Vec<JobResult> = stored.points.iter().map(|p| parse(&p.result)).collect();
    insta::assert_snapshot!(render_text(&run_report(&stored, jobs)));
}

#[test]
fn sweep() {
    let (summary, run) = report::<SweepSummary>(&stored("sweep"));
    insta::assert_snapshot!(sweep_text(&summary, &run));
}

/// Issue 30 item 5: a point measured again because another load disturbed it says so.
#[test]
fn a_sweep_says_which_points_were_measured_again() {
    let (mut summary, run) = report::<SweepSummary>(&stored("sweep"));
    assert!(summary.rows.len() >= 2, "the stored sweep has points to mark");
    summary.rows[0].retried = 1;
    summary.rows[1].disturbed = true;
    summary.rows[1].retried = 2;
    let text = sweep_text(&summary, &run);
    let line = |name: &str| text.lines().find(|l| l.contains(name)).unwrap_or_default().to_string();
    assert!(line(&summary.rows[0].name).ends_with("(after 1 disturbed attempt)"), "{text}");
    assert!(line(&summary.rows[1].name).ends_with("(disturbed in all 3 attempts)"), "{text}");
    assert!(
        text.contains("(a disturbed attempt is measured again, up to --retries times; the last is shown)"),
        "{text}"
    );
}

#[test]
fn ramp() {
    let (summary, run) = report::<RampSummary>(&stored("ramp"));
    insta::assert_snapshot!(ramp_text(&summary, &run));
}

#[test]
fn steady() {
    let (rounds, run) = report::<SteadyRounds>(&stored("steady"));
    insta::assert_snapshot!(steady_text(&rounds, &run));
}

#[test]
fn cliff() {
    let (summary, run) = report::<CliffSummary>(&stored("cliff"));
    insta::assert_snapshot!(cliff_text(&summary, &run));
}

#[test]
fn precondition() {
    let (asked, run) = report::<Preconditioning>(&stored("precondition"));
    insta::assert_snapshot!(precondition_text(&asked, &run));
}

#[test]
fn suite() {
    #[derive(serde::Deserialize)]
    struct Suite {
        suite: String,
        sections: Vec<SuiteSection>,
    }
    let (suite, run) = report::<Suite>(&stored("suite"));
    insta::assert_snapshot!(suite_text(&suite.suite, &suite.sections, &run));
}

/// Issue 36 item 1: a suite closes with a paragraph per workload. Where a load curve found a
/// sweet spot, that is the load named (not the most IOPS); a disturbed test is no candidate.
#[test]
fn suite_conclusion_names_the_sweet_spot_and_leaves_out_disturbed_tests() {
    let mut run = stored("suite");
    let kept = run.report.as_mut().expect("a study report");
    // The table becomes a load curve whose sweet spot is QD 1 (the fixture's QD 32 has more IOPS).
    kept["summary"]["sections"][0] = serde_json::json!({
        "kind": "curve", "title": "random 4 KiB", "jobs": [4, 6, 7],
        "summary": {
            "rows": [{"name": "RND4K Q32T16 read"}, {"name": "RND4K Q1T1 read"}],
            "curves": [{"name": "read", "rows": [0, 1], "sweet_spot": {"row": 1, "knee_found": true, "reason": ""}}],
        },
    });
    kept["run"]["jobs"][7]["verdict"]["cause"] = "other_load".into();
    let (suite, ran) = report::<SuiteSections>(&run);
    let text = suite_text("quick", &suite.sections, &ran);
    let conclusion = text.split("conclusion:\n").nth(1).expect("a conclusion");
    let read = conclusion.lines().find(|l| l.contains("4KiB random read:")).expect("the random read");
    assert!(
        read.contains(
            "sweet spot (the most IOPS before latency grows faster) at QD 1 x 1 worker(s) (RND4K Q1T1 read)"
        ),
        "{read}"
    );
    assert!(
        read.contains("; at QD 32 x 16 worker(s) (RND4K Q32T16 read)") && read.contains("more IOPS"),
        "{read}"
    );
    let write = conclusion.lines().find(|l| l.contains("4KiB random write:")).expect("the random write");
    assert!(write.contains("every test of it was disturbed"), "{write}");
    // Only the tests of the curve: the table's sequential tests are no longer in it.
    assert!(!conclusion.contains("1MiB"), "{conclusion}");
}

#[derive(serde::Deserialize)]
struct SuiteSections {
    sections: Vec<SuiteSection>,
}

#[test]
fn ladder() {
    let (summary, run) = report::<LadderSummary>(&stored("ladder"));
    insta::assert_snapshot!(ladder_text(&summary, &run));
}

#[test]
fn scale() {
    let (summary, run) = report::<ScaleSummary>(&stored("scale"));
    insta::assert_snapshot!(scale_text(&summary, &run));
}

#[test]
fn blend() {
    let (summary, run) = report::<BlendSummary>(&stored("blend"));
    insta::assert_snapshot!(blend_text(&summary, &run));
}

#[test]
fn results_list_and_show() {
    let runs: Vec<StoredRun> = ["run", "sweep", "suite", "blend", "ladder"].into_iter().map(stored).collect();
    let infos: Vec<RunInfo> = runs.iter().map(|r| r.info.clone()).collect();
    insta::assert_snapshot!("results_list", runs_text(&infos));
    insta::assert_snapshot!("results_show", run_text(&runs[1], &[]));
}

#[test]
fn compare() {
    let sweep = stored("sweep");
    let side = |label: &str| CompareInput { label: label.into(), points: sweep.points.clone() };
    let comparison = iolab_report::compare(&[side("#2"), side("#2 again")]);
    insta::assert_snapshot!(compare_text(&comparison));
}
