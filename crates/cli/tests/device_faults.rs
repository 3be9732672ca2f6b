//! A failing and a stuck "device" (a FUSE file that answers EIO or never answers): errors are
//! reported with their offsets, and the watchdog reports a request that never completes
//! instead of waiting for it forever.

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::faulty_fs::{mount_or_skip as mount, Fault, Mounted};
use common::{iolab, json, stderr};

fn run_on(mounted: &Mounted, extra: &[&str], limit: Duration) -> Option<std::process::Output> {
    let mut command = iolab();
    command.args(["run", "--target"]).arg(mounted.file()).args(extra).args(["--json", "-q"]);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(command.output().expect("iolab runs"));
    });
    rx.recv_timeout(limit).ok()
}

#[test]
fn eio_is_reported_with_operation_offset_and_errno() {
    let Some(fs) = mount(Fault::EioFrom(8 << 20)) else { return };
    for engine in ["uring", "psync"] {
        let out = run_on(
            &fs,
            &["--engine", engine, "--qd", "4", "--runtime", "20s", "--ramp", "0s"],
            Duration::from_secs(20),
        )
        .expect("finishes");
        assert_eq!(out.status.code(), Some(3), "{engine}: {}", stderr(&out));
        let job = &json(&out)["jobs"][0];
        assert_eq!(job["stop_reason"], "io_error", "{engine}");
        let first = &job["errors"]["first"][0];
        assert_eq!(first["op"], "read");
        assert_eq!(first["errno"], 5, "{engine}: EIO");
        assert!(first["offset"].as_u64().expect("offset") >= 8 << 20, "{engine}: {first}");
        assert_eq!(first["len"], 4096);
        assert!(first["message"].as_str().expect("message").contains("Input/output error"));
        assert!(stderr(&out).contains("I/O errors"), "{}", stderr(&out));
    }
    let _ = fs.path();
}

#[test]
fn a_request_that_never_completes_is_reported_by_the_watchdog() {
    // (engine, reads answered before the hang): a first request that never returns must be
    // caught too.
    for (engine, answered) in [("uring", 200), ("psync", 200), ("psync", 0), ("uring", 0)] {
        let Some(fs) = mount(Fault::HangAfter(answered)) else { return };
        let out_dir = tempfile::tempdir().expect("dir");
        let (results, errors) = (out_dir.path().join("r.json"), out_dir.path().join("stderr"));
        let started = Instant::now();
        let mut child = iolab()
            .args(["run", "--target"])
            .arg(fs.file())
            .args(["--engine", engine, "--qd", "2", "--runtime", "30s", "--ramp", "0s", "--io-timeout", "1s"])
            .args(["--json", "-q", "--output"])
            .arg(&results)
            .stderr(std::fs::File::create(&errors).expect("stderr file"))
            .spawn()
            .expect("spawn");
        // The results are written while the request is still stuck: a thread blocked in the
        // kernel can keep the process from exiting, never from reporting.
        let report = loop {
            let text = std::fs::read_to_string(&results).unwrap_or_default();
            if let Ok(report) = serde_json::from_str::<serde_json::Value>(&text) {
                break report;
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "{engine}: no report while the request is stuck"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        let job = &report["jobs"][0];
        assert_eq!(job["stop_reason"], "stuck_io", "{engine}");
        let stuck = &job["errors"]["stuck"];
        assert!(stuck["outstanding_ms"].as_u64().expect("ms") >= 1000, "{stuck}");
        assert!(stuck["in_flight"].as_u64().expect("in flight") >= 1);
        let ios = job["total"]["ios"].as_u64().expect("ios");
        assert!(ios + 2 >= answered, "{engine}: the I/Os before the hang are kept: {ios}");

        fs.abort();
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(4), "{engine}");
        let err = std::fs::read_to_string(&errors).expect("stderr");
        assert!(err.contains("has not completed"), "{err}");
    }
}

#[test]
fn a_window_shorter_than_the_devices_answer_is_extended_until_it_holds_completions() {
    // A 100 ms window over a device that answers each read after 300 ms completed nothing and
    // reported 0 IOPS as the device's figure (a PTS matrix cell beside another load on the
    // disk did so).
    let Some(fs) = mount(Fault::Slow(Duration::from_millis(300))) else { return };
    for engine in ["uring", "psync"] {
        let out = run_on(
            &fs,
            &["--engine", engine, "--qd", "2", "--runtime", "100ms", "--ramp", "0s"],
            Duration::from_secs(60),
        )
        .expect("finishes");
        assert!(out.status.success(), "{engine}: {}", stderr(&out));
        let job = &json(&out)["jobs"][0];
        assert_eq!(job["stop_reason"], "runtime", "{engine}");
        assert!(job["total"]["ios"].as_u64().expect("ios") > 0, "{engine}: {}", job["total"]);
        assert!(job["total"]["iops"].as_f64().expect("iops") > 0.0, "{engine}");
        let measured = job["measured_s"].as_f64().expect("measured");
        assert!(measured >= 0.2, "{engine}: the window grew by whole windows: {measured}");
        let notes = job["notes"].to_string();
        assert!(notes.contains("no I/O completed in the 100ms window asked"), "{engine}: {notes}");
    }
}
