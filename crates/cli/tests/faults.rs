//! Faults: Ctrl-C keeps the results so far, I/O errors are reported with their offsets.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{dir_with_target, iolab, json, stderr};
use iolab_test_support::{skip, Missing};

#[test]
fn sigint_stops_the_run_at_once_and_keeps_the_results() {
    let dir = dir_with_target();
    let child = iolab()
        .args([
            "run",
            "--engine",
            "null",
            "--target",
            "t",
            "--runtime",
            "60s",
            "--ramp",
            "0s",
            "--json",
            "-q",
        ])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // A second into the run, counted from the moment iolab holds its target open.
    common::wait_until_open(child.id(), &dir.path().join("t"));
    std::thread::sleep(Duration::from_millis(1000));
    let sent = Instant::now();
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().expect("wait");
    // At once means long before the 60 s runtime; how long exactly is the machine's business
    // (a busy one may take a while to schedule the exit).
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(20), "stopped in {took:?}");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["interrupted"], true);
    let job = &report["jobs"][0];
    assert_eq!(job["stop_reason"], "interrupted");
    let measured = job["measured_s"].as_f64().expect("measured");
    assert!(measured > 0.0 && measured < 60.0 - 20.0, "{measured}");
    assert!(job["total"]["ios"].as_u64().expect("ios") > 0);
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
}

/// Runs iolab on an 8 MiB file with `args` and truncates the file to nothing after `after`, so
/// every later read comes back short.
fn run_while_the_target_shrinks(args: &[&str], after: Duration) -> std::process::Output {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("shrinks");
    std::fs::write(&path, vec![3u8; 8 << 20]).expect("target");
    let child = iolab()
        .args(["run", "--target", "shrinks", "--buffered", "--ramp", "0s", "--json", "-q"])
        .args(args)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // `after` counts from the moment iolab has the target open, however slowly a busy machine
    // got it there (a fixed wait from the spawn truncated it before any I/O).
    common::wait_until_open(child.id(), &path);
    std::thread::sleep(after);
    std::fs::File::options().write(true).open(&path).expect("open").set_len(0).expect("truncate");
    child.wait_with_output().expect("wait")
}

/// Short reads are errors with their offsets, never a silent success.
#[test]
fn short_reads_stop_the_run_with_a_distinct_exit_code() {
    let out = run_while_the_target_shrinks(&["--qd", "4", "--runtime", "20s"], Duration::from_millis(700));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    assert_eq!(job["stop_reason"], "io_error");
    let errors = &job["errors"];
    assert!(errors["count"].as_u64().expect("count") >= 1);
    let first = &errors["first"][0];
    assert_eq!(first["op"], "read");
    assert_eq!(first["len"], 4096);
    assert_eq!(first["errno"], 0);
    assert!(
        first["message"].as_str().expect("message").starts_with("short read: 0 of 4096 bytes"),
        "{first}"
    );
    assert!(first["offset"].as_u64().expect("offset") % 4096 == 0);
    assert!(stderr(&out).contains("I/O errors"), "{}", stderr(&out));
}

#[test]
fn continue_on_error_keeps_going_and_counts() {
    let out = run_while_the_target_shrinks(
        &["--qd", "2", "--runtime", "1500ms", "--continue-on-error"],
        Duration::from_millis(500),
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    assert_eq!(job["stop_reason"], "runtime");
    let count = job["errors"]["count"].as_u64().expect("count");
    assert!(count > 100, "kept going: {count}");
    assert_eq!(job["errors"]["first"].as_array().expect("first").len(), 20, "the first 20 are kept in full");
    assert!(job["total"]["ios"].as_u64().expect("ios") > 0, "the good I/Os before the fault count");
}

#[test]
fn sigint_while_laying_out_the_scratch_file_removes_it() {
    let dir = tempfile::tempdir().expect("dir");
    // Large enough that laying it out outlasts the wait for it to begin, and at most half of
    // what the filesystem has free (a CI machine's disk is mostly taken by the build).
    let free = free_bytes(dir.path());
    let size_mib = ((free / 2) >> 20).min(4096);
    if size_mib < 1024 {
        return skip!(
            Missing::Other,
            "{} MiB free under {}: too little to lay out a 1 GiB scratch file",
            free >> 20,
            dir.path().display()
        );
    }
    let mut child = iolab()
        .args(["run", "--size", &format!("{size_mib}m"), "-q"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Interrupted once the layout has begun (the file exists), however slowly this machine got
    // there; a run that ended before (a refusal) says why.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(dir.path()).expect("dir").count() == 0 {
        if child.try_wait().expect("polls").is_some() {
            let out = child.wait_with_output().expect("wait");
            panic!("ended before laying out, {}: {}", out.status, stderr(&out));
        }
        assert!(Instant::now() < deadline, "no scratch file after 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Instant::now();
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().expect("wait");
    assert!(sent.elapsed() < Duration::from_secs(20), "stopped in {:?}", sent.elapsed());
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted while laying out"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0, "the partial scratch file is removed");
}

/// Bytes an unprivileged writer may still use on the filesystem holding `dir`.
fn free_bytes(dir: &Path) -> u64 {
    let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).expect("no NUL in a temp dir");
    // SAFETY: statvfs is plain old data, for which all zeroes is a valid value.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: statvfs(3) reads a NUL-terminated path and writes into the struct we own.
    let status = unsafe { libc::statvfs(path.as_ptr(), &mut stat) };
    assert_eq!(status, 0, "statvfs {}", dir.display());
    stat.f_bavail as u64 * stat.f_frsize as u64
}
