//! `iolab run` end to end: the null engine, real files, job files, JSON shape.

mod common;

use common::{dir_with_target, json, run_in, stderr};

/// Runs the null engine on the `t` of `dir_with_target`, quietly, with JSON results.
fn run_null(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let base = ["run", "--engine", "null", "--target", "t", "--json", "-q"];
    run_in(dir, &[&base[..], args].concat())
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

#[test]
fn null_engine_json_has_every_documented_figure() {
    let dir = dir_with_target();
    let out = run_null(dir.path(), &["--runtime", "1s", "--ramp", "200ms", "--slo", "500us"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema"], "iolab.run/3");
    let job = &report["jobs"][0];
    assert_eq!(job["stop_reason"], "runtime");
    let measured = job["measured_s"].as_f64().expect("measured_s");
    assert!((measured - 1.0).abs() < 0.01, "{measured}");
    let total = &job["total"];
    assert!(total["ios"].as_u64().expect("ios") > 1000);
    assert_eq!(job["write"]["ios"], 0);
    let latency = &total["latency"];
    let ps: Vec<f64> = latency["percentiles"]
        .as_array()
        .expect("percentiles")
        .iter()
        .map(|p| p["p"].as_f64().expect("p"))
        .collect();
    assert_eq!(ps, [50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999]);
    let within: Vec<u64> = latency["within"]
        .as_array()
        .expect("within")
        .iter()
        .map(|w| w["threshold_ns"].as_u64().expect("ns"))
        .collect();
    assert_eq!(within, [500_000, 1_000_000, 2_000_000]);
    let series = job["series"].as_array().expect("series");
    assert_eq!(series.len(), 1, "one one-second interval");
    let series_ios: f64 =
        series.iter().map(|p| p["iops"].as_f64().expect("iops") * p["duration_s"].as_f64().expect("d")).sum();
    assert!((series_ios - total["ios"].as_f64().expect("ios")).abs() < 1.0, "series adds up to the total");
    assert!(job["cpu"]["us_per_io"].as_f64().expect("us_per_io") > 0.0);
    assert!(!job["cpu"]["machine_busy_pct"].as_array().expect("busy").is_empty());
    assert!(job["notes"][0].as_str().expect("note").contains("null engine"));
    assert!(job["groups"][0]["rate"].is_null(), "closed loop has no schedule to report");
    assert!(stderr(&out).is_empty(), "quiet JSON run prints nothing on stderr: {}", stderr(&out));
}

#[test]
fn io_limit_stops_the_measured_phase() {
    let dir = dir_with_target();
    let out =
        run_null(dir.path(), &["--runtime", "30s", "--ramp", "0s", "--io-limit", "50000ios", "--qd", "4"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    assert_eq!(job["stop_reason"], "io_limit");
    let ios = job["total"]["ios"].as_u64().expect("ios");
    assert!((50_000..50_000 + 64).contains(&ios), "{ios}");
}

#[test]
fn uring_on_a_file_creates_it_and_reads_and_writes() {
    let dir = tmp();
    let out = run_in(
        dir.path(),
        &[
            "run",
            "--target",
            "data",
            "--size",
            "8m",
            "--rw",
            "randrw",
            "--bs-split",
            "4k/50,16k/50",
            "--qd",
            "8",
            "--workers",
            "2",
            "--runtime",
            "1s",
            "--ramp",
            "0s",
            "--json",
            "-q",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    assert!(job["read"]["ios"].as_u64().expect("reads") > 0);
    assert!(job["write"]["ios"].as_u64().expect("writes") > 0);
    let bytes = job["total"]["bytes"].as_u64().expect("bytes");
    let ios = job["total"]["ios"].as_u64().expect("ios");
    let mean_bs = bytes as f64 / ios as f64;
    assert!((8_000.0..12_500.0).contains(&mean_bs), "a 50/50 mix of 4k and 16k averages 10k: {mean_bs}");
    assert_eq!(std::fs::metadata(dir.path().join("data")).expect("kept").len(), 8 << 20);
}

#[test]
fn psync_says_how_many_threads_it_ran() {
    let dir = tmp();
    let out = run_in(
        dir.path(),
        &[
            "run",
            "--engine",
            "psync",
            "--target",
            "data",
            "--size",
            "4m",
            "--qd",
            "4",
            "--runtime",
            "500ms",
            "--ramp",
            "0s",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("psync holds one I/O per thread, so QD 4 ran as 4 threads"), "{text}");
}

#[test]
fn a_regular_file_larger_than_size_is_never_truncated() {
    let dir = tmp();
    let path = dir.path().join("big");
    std::fs::write(&path, vec![7u8; 4 << 20]).expect("target");
    let out = run_in(
        dir.path(),
        &[
            "run",
            "--target",
            "big",
            "--size",
            "1m",
            "--rw",
            "randwrite",
            "--allow-destroy",
            "--runtime",
            "300ms",
            "--ramp",
            "0s",
            "-q",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let data = std::fs::read(&path).expect("read back");
    assert_eq!(data.len(), 4 << 20);
    assert!(data[1 << 20..].iter().all(|&b| b == 7), "nothing beyond --size was touched");
}

#[test]
fn job_file_runs_jobs_in_order_with_concurrent_groups() {
    let dir = dir_with_target();
    std::fs::write(
        dir.path().join("job.toml"),
        r#"
engine = "null"
target = "t"
ramp = "0s"
runtime = "300ms"

[[job]]
name = "blender"
[[job.group]]
name = "oltp"
rw = "randread"
qd = 16
[[job.group]]
name = "backup"
rw = "write"
bs = "128k"
qd = 2

[[job]]
name = "second"
rw = "randwrite"
"#,
    )
    .expect("job file");
    let out = run_in(dir.path(), &["run", "job.toml", "--json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let jobs = report["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["name"], "blender");
    let groups = jobs[0]["groups"].as_array().expect("groups");
    assert_eq!(groups[0]["name"], "oltp");
    assert!(groups[0]["read"]["ios"].as_u64().expect("ios") > 0 && groups[0]["write"]["ios"] == 0);
    assert!(groups[1]["write"]["ios"].as_u64().expect("ios") > 0 && groups[1]["read"]["ios"] == 0);
    let sum = groups[0]["total"]["ios"].as_u64().expect("a") + groups[1]["total"]["ios"].as_u64().expect("b");
    assert_eq!(jobs[0]["total"]["ios"].as_u64(), Some(sum), "job totals merge the groups");
    assert_eq!(jobs[1]["name"], "second");
    assert!(jobs[1]["write"]["ios"].as_u64().expect("ios") > 0);
}

#[test]
fn default_run_uses_and_removes_a_scratch_file() {
    let dir = tmp();
    let out = run_in(dir.path(), &["run", "--size", "16m", "--runtime", "300ms", "--ramp", "100ms", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("4KiB random read, QD 32 x 1 worker, uring ("), "{text}");
    assert!(
        text.contains("+fixed_buffers") && text.contains("), O_DIRECT"),
        "the setup the kernel granted is shown: {text}"
    );
    assert!(text.contains("p99.9999"), "{text}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert!(left.is_empty(), "the scratch file was removed");

    let out =
        run_in(dir.path(), &["run", "--size", "8m", "--runtime", "200ms", "--ramp", "0s", "--keep", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1, "--keep keeps it");
}

/// The null engine touches no data, so its scratch file holds none: a null run needs neither the
/// time nor the disk space of a real layout (a CI disk nearly filled by the build refused one).
#[test]
fn a_null_runs_scratch_file_holds_no_data() {
    use std::os::unix::fs::MetadataExt;
    let dir = tmp();
    let out = run_in(
        dir.path(),
        &["run", "--engine", "null", "--size", "64m", "--runtime", "100ms", "--ramp", "0s", "--keep"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("making an empty (sparse) 64MiB scratch file"), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("is sparse: only"),
        "no warning about holes nothing reads: {}",
        stderr(&out)
    );
    let kept: Vec<_> =
        std::fs::read_dir(dir.path()).expect("dir").map(|e| e.expect("entry").path()).collect();
    assert_eq!(kept.len(), 1, "--keep keeps it: {kept:?}");
    let meta = std::fs::metadata(&kept[0]).expect("stat");
    assert_eq!((meta.len(), meta.blocks()), (64 << 20, 0), "64 MiB long, nothing allocated");
}

#[test]
fn output_file_gets_the_results() {
    let dir = dir_with_target();
    let out = run_null(dir.path(), &["--runtime", "200ms", "--ramp", "0s", "--output", "r.json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let text = std::fs::read_to_string(dir.path().join("r.json")).expect("written");
    let report: serde_json::Value = serde_json::from_str(&text).expect("parses");
    assert!(report["jobs"][0]["total"]["ios"].as_u64().expect("ios") > 0);
}

#[test]
fn bursts_issue_n_ios_then_idle() {
    let dir = dir_with_target();
    let out = run_null(
        dir.path(),
        &["--burst", "10", "--burst-idle", "100ms", "--qd", "4", "--runtime", "1s", "--ramp", "0s"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ios = json(&out)["jobs"][0]["total"]["ios"].as_u64().expect("ios");
    // About ten bursts of ten fit in a second of 100 ms pauses.
    assert!((80..=110).contains(&ios), "{ios}");
}

#[test]
fn seconds_without_completions_are_zero_points_not_gaps() {
    let dir = dir_with_target();
    // Bursts start at 0 s, about 2.5 s and 5 s: seconds 1 and 3 see no completion at all.
    let out = run_null(
        dir.path(),
        &["--burst", "5", "--burst-idle", "2500ms", "--qd", "1", "--runtime", "4500ms", "--ramp", "0s"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    let series = job["series"].as_array().expect("series");
    let starts: Vec<f64> = series.iter().map(|p| p["t_s"].as_f64().expect("t")).collect();
    assert_eq!(starts, [0.0, 1.0, 2.0, 3.0, 4.0], "one point per second of the window");
    assert_eq!(series[1]["iops"], 0.0);
    assert_eq!(series[3]["iops"], 0.0);
    assert!((series[4]["duration_s"].as_f64().expect("d") - 0.5).abs() < 1e-9, "the last second is partial");
    let group_series = job["groups"][0]["series"].as_array().expect("group series");
    assert_eq!(group_series.len(), 5);
}

#[test]
fn sparse_targets_are_flagged_and_read_only_files_can_be_read() {
    let dir = tmp();
    let path = dir.path().join("sparse");
    std::fs::File::create(&path).expect("create").set_len(8 << 20).expect("sparse");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o444)).expect("chmod");
    let out = run_in(
        dir.path(),
        &["run", "--target", "sparse", "--size", "4m", "--runtime", "200ms", "--ramp", "0s", "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("is sparse"), "{}", stderr(&out));
    let notes = json(&out)["jobs"][0]["notes"].to_string();
    assert!(notes.contains("reads of the holes never reach the device"), "{notes}");
}

#[test]
fn peak_memory_is_iolabs_own_not_its_parents() {
    // Regression: getrusage's ru_maxrss survives exec, so under `cargo run` the report gave
    // cargo's 143 MiB high-water mark for a 7 MiB iolab. This test process holds 256 MiB when
    // it starts iolab, as cargo did.
    let ballast = vec![1u8; 256 << 20];
    std::hint::black_box(&ballast);
    let dir = dir_with_target();
    let out = run_null(dir.path(), &["--runtime", "100ms", "--ramp", "0s"]);
    drop(ballast);
    assert!(out.status.success(), "{}", stderr(&out));
    let peak = json(&out)["peak_rss_bytes"].as_u64().expect("peak_rss_bytes");
    assert!(peak > 0 && peak < 128 << 20, "iolab's own peak, not its parent's: {peak} bytes");
}
