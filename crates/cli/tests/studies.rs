//! `iolab ladder`, `iolab scale` and `iolab run --each-alone` end to end: every step runs (or
//! says why not), the tables and verdicts come out, and JSON carries the full run.
mod common;

use common::{json, needs_root_and, run_in, skip, stderr, Missing, ZramDevice};

const QUICK: [&str; 4] = ["--runtime", "400ms", "--ramp", "100ms"];

fn file_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir_in("/var/tmp").expect("temp dir");
    for name in ["a", "b"] {
        std::fs::write(dir.path().join(name), vec![9u8; 8 << 20]).expect("target");
    }
    dir
}

#[test]
fn ladder_climbs_every_rung_on_a_file() {
    let dir = file_dir();
    let out = run_in(dir.path(), &[&["ladder", "a", "--json", "-q", "--qd", "4"][..], &QUICK].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema"], "iolab.ladder/1");
    let rows = report["summary"]["rows"].as_array().expect("rows");
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().expect("name")).collect();
    assert_eq!(
        names,
        ["psync", "aio", "uring", "uring+flags", "uring+registered", "uring+sqpoll", "uring+iopoll"]
    );
    for row in &rows[..6] {
        assert!(row["skipped"].is_null(), "{row}");
        assert!(row["iops"].as_f64().expect("iops") > 0.0, "{row}");
        assert!(row["cpu_us_per_io"].as_f64().expect("cpu") > 0.0, "{row}");
    }
    assert!(rows[5]["sqpoll_us_per_io"].as_f64().expect("sqpoll") > 0.0, "SQPOLL time is counted");
    assert!(rows[6]["skipped"].as_str().expect("iopoll skipped").contains("no poll queues"));
    let verdict = report["summary"]["verdict"].as_array().expect("verdict");
    assert!(verdict[0].as_str().expect("first").starts_with("cheapest on this target"), "{verdict:?}");
    assert_eq!(report["run"]["jobs"].as_array().expect("jobs").len(), 6);
}

#[test]
fn ladder_text_has_the_table_and_refuses_engine_flags() {
    let dir = file_dir();
    let out = run_in(dir.path(), &[&["ladder", "--target", "a", "-q"][..], &QUICK].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("API ladder on") && text.contains("uring+registered") && text.contains("verdict:"));
    let refused = run_in(dir.path(), &["ladder", "a", "--engine", "psync"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("drop --engine"));
    let both = run_in(dir.path(), &["ladder", "a", "--target", "b"]);
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn ladder_on_zram_says_io_uring_punts_to_io_wq() {
    let Some(zram) = ZramDevice::for_test(256) else { return };
    let out = iolab_ladder(&zram);
    let report = json(&out);
    let rows = report["summary"]["rows"].as_array().expect("rows");
    let uring = rows.iter().find(|r| r["name"] == "uring+registered").expect("uring row");
    assert!(uring["io_wq_us_per_io"].as_f64().expect("io-wq") > 0.0, "{uring}");
    let verdict: Vec<&str> = report["summary"]["verdict"]
        .as_array()
        .expect("verdict")
        .iter()
        .map(|v| v.as_str().expect("s"))
        .collect();
    assert!(verdict.iter().any(|v| v.contains("punted requests to io-wq")), "{verdict:?}");
}

fn iolab_ladder(zram: &ZramDevice) -> std::process::Output {
    let dir = tempfile::tempdir().expect("dir");
    let out = run_in(dir.path(), &[&["ladder", zram.path(), "--json", "-q"][..], &QUICK].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

#[test]
fn scale_runs_singles_then_together() {
    let dir = file_dir();
    let out = run_in(dir.path(), &[&["scale", "a", "b", "--json", "-q", "--qd", "4"][..], &QUICK].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema"], "iolab.scale/1");
    let summary = &report["summary"];
    let rows = summary["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    let sum: f64 = rows.iter().map(|r| r["alone_iops"].as_f64().expect("alone")).sum();
    assert!((summary["sum_of_singles_iops"].as_f64().expect("sum") - sum).abs() < 1e-6);
    let efficiency = summary["efficiency_pct"].as_f64().expect("efficiency");
    let together = summary["together_iops"].as_f64().expect("together");
    assert!((efficiency - together / sum * 100.0).abs() < 1e-6);
    let jobs = report["run"]["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 3);
    assert_eq!(jobs[2]["groups"].as_array().expect("groups").len(), 2, "together: one group per target");
    assert!(summary["verdict"][0].as_str().expect("verdict").contains("of the sum of their singles"));

    let one = run_in(dir.path(), &["scale", "a"]);
    assert_eq!(one.status.code(), Some(2), "{}", stderr(&one));
}

#[test]
fn scale_over_zram_devices_reports_efficiency_and_a_cause() {
    if let Some((missing, why)) = needs_root_and(&["dd"]) {
        return skip!(missing, "{why}");
    }
    let (Some(first), Some(second)) = (ZramDevice::new(128), ZramDevice::new(128)) else {
        return skip!(Missing::Other, "no zram on this kernel");
    };
    let dir = tempfile::tempdir().expect("dir");
    let args = [&["scale", first.path(), second.path(), "--json", "-q", "--qd", "8"][..], &QUICK].concat();
    let out = run_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = &json(&out)["summary"];
    let efficiency = summary["efficiency_pct"].as_f64().expect("efficiency");
    assert!(efficiency > 0.0, "{summary}");
    let verdict: Vec<&str> =
        summary["verdict"].as_array().expect("verdict").iter().map(|v| v.as_str().expect("s")).collect();
    assert!(verdict.len() >= 2, "the efficiency and what it means: {verdict:?}");
    let rows = summary["rows"].as_array().expect("rows");
    assert!(rows.iter().all(|r| r["together_iops"].as_f64().expect("together") > 0.0), "{rows:?}");
}

#[test]
fn each_alone_runs_each_group_alone_then_together_and_says_what_each_kept() {
    let dir = file_dir();
    let job = "engine = \"null\"\n[[job]]\nname = \"blender\"\n[[job.group]]\nname = \"db\"\ntarget = \"a\"\nrw = \"randread\"\nqd = 8\n[[job.group]]\nname = \"backup\"\ntarget = \"c\"\nsize = \"8m\"\nrw = \"write\"\nbs = \"128k\"\nqd = 2\n";
    std::fs::write(dir.path().join("blend.toml"), job).expect("job file");
    let out =
        run_in(dir.path(), &[&["run", "blend.toml", "--each-alone", "--json", "-q"][..], &QUICK].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema"], "iolab.blend/1");
    let jobs: Vec<&str> = report["run"]["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| j["name"].as_str().expect("name"))
        .collect();
    assert_eq!(jobs, ["alone: db", "alone: backup", "together: 2 groups"]);
    let rows = report["summary"]["rows"].as_array().expect("rows");
    let groups: Vec<&str> = rows.iter().map(|r| r["group"].as_str().expect("group")).collect();
    assert_eq!(groups, ["db", "backup"]);
    for row in rows {
        assert!(row["alone_iops"].as_f64().expect("alone") > 0.0, "{row}");
        assert!(row["together_iops"].as_f64().expect("together") > 0.0, "{row}");
    }
    assert!(!report["summary"]["verdict"].as_array().expect("verdict").is_empty());

    let text = run_in(dir.path(), &[&["run", "blend.toml", "--each-alone", "-q"][..], &QUICK].concat());
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("each group alone, then all 2 together") && text.contains("verdict:"), "{text}");

    std::fs::write(dir.path().join("one.toml"), "engine = \"null\"\ntarget = \"a\"\n").expect("job file");
    let refused = run_in(dir.path(), &["run", "one.toml", "--each-alone"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("has one group"), "{}", stderr(&refused));
    let repeated = run_in(dir.path(), &["run", "blend.toml", "--each-alone", "--repeat", "2"]);
    assert_eq!(repeated.status.code(), Some(2));
}
