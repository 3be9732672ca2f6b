//! Every bad input gives one line on stderr that names the problem and the fix, exit code 2,
//! and never a panic or a backtrace.

mod common;

use common::{dir_with_target, is_root, run_in, stderr};

fn rejected(dir: &std::path::Path, args: &[&str], expect: &str) {
    let out = run_in(dir, args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    assert!(err.starts_with("iolab: error: "), "{args:?}: {err}");
    assert!(err.contains(expect), "{args:?}: expected '{expect}' in: {err}");
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{err}");
}

#[test]
fn bad_values() {
    let dir = dir_with_target();
    let d = dir.path();
    rejected(d, &["run", "--target", "t", "--qd", "0"], "--qd must be 1 or more");
    rejected(
        d,
        &["run", "--target", "t", "--read-pct", "150"],
        "--read-pct must be between 0 and 100 (got 150)",
    );
    rejected(d, &["run", "--target", "t", "--workers", "0"], "--workers must be 1 or more");
    rejected(d, &["run", "--target", "t", "--bs", "4q"], "write e.g. 4096, 4k");
    rejected(d, &["run", "--target", "t", "--rw", "sideways"], "use read, write, randread");
    rejected(d, &["run", "--target", "t", "--engine", "spdk"], "use uring, aio, psync or null");
    rejected(d, &["run", "--target", "t", "--runtime", "soon"], "write e.g. 10s");
    rejected(d, &["run", "--target", "t", "--qd", "abc"], "--qd");
    rejected(d, &["run", "--target", "t", "--no-such-flag"], "--no-such-flag");
    rejected(d, &["run", "--target", "t", "--size", "2k", "--bs", "4k"], "smaller than the block size");
}

#[test]
fn bad_study_flags() {
    let dir = dir_with_target();
    let d = dir.path();
    rejected(
        d,
        &["run", "--target", "t", "--interval", "1ms"],
        "--interval 1ms is too short; use 50ms or more",
    );
    rejected(d, &["sweep", "t", "--qd", "1,2", "--interval", "10ms"], "use 50ms or more");
    rejected(d, &["run", "--target", "t", "--qd", "1,2"], "`iolab sweep` runs lists");
    rejected(d, &["sweep", "t", "--qd", "8..1"], "it runs downwards");
    rejected(d, &["sweep", "t", "--qd", "8..1"], "(see `iolab sweep --help`)");
    rejected(d, &["sweep", "t", "--read-pct", "0..100/0"], "the step must be above 0");
    rejected(d, &["sweep", "t"], "a sweep needs a list");
    rejected(
        d,
        &["sweep", "t", "--bs", "4k,8k", "--bs-split", "4k/70,64k/30"],
        "cannot be combined with --bs-split",
    );
    rejected(d, &["precondition", "t", "--passes", "0"], "--passes must be 1 or more");
    rejected(d, &["precondition", "t", "--rw", "randread"], "drop --rw");
    rejected(d, &["cliff", "t", "--drop-pct", "0"], "give a percentage above 0 and below 100");
    rejected(d, &["cliff", "t", "--drop-pct", "100"], "give a percentage above 0 and below 100");
    rejected(d, &["cliff", "t", "--hold", "0"], "give at least 1");
    rejected(d, &["cliff", "t", "--io-limit", "1m"], "drop --io-limit");
    rejected(d, &["steady", "t", "--window", "1"], "a trend needs at least 2");
    rejected(d, &["steady", "t", "--window", "5", "--max-rounds", "3"], "is below the window (5)");
    rejected(d, &["steady", "t", "--max-range-pct", "0"], "give a percentage above 0");
    rejected(d, &["steady", "t", "--max-slope-pct=-1"], "give a percentage above 0");
    rejected(d, &["steady", "t", "--track", "wattage"], "use iops, mb-s or mean-latency");
}

#[test]
fn bad_rates() {
    let dir = dir_with_target();
    let d = dir.path();
    rejected(d, &["run", "--target", "t", "--rate-iops", "0"], "--rate-iops must be above 0");
    rejected(d, &["run", "--target", "t", "--arrival", "poisson"], "add --rate-iops N");
    rejected(d, &["run", "--target", "t", "--rate-iops", "100", "--burst", "4"], "--rate-iops and --burst");
    rejected(
        d,
        &["run", "--target", "t", "--rate-iops", "100", "--arrival", "bursty"],
        "use uniform or poisson",
    );
}

#[test]
fn bad_ramps_and_suites() {
    let dir = dir_with_target();
    let d = dir.path();
    rejected(d, &["ramp", "t", "--levels", "0"], "--levels are shares of the maximum, 1..100 (got 0)");
    rejected(d, &["ramp", "t", "--levels", "50,150"], "--levels are shares of the maximum, 1..100 (got 150)");
    rejected(
        d,
        &["ramp", "t", "--max-latency", "p98=1ms"],
        "the percentile must be one the report has: p50, p90, p99",
    );
    rejected(d, &["ramp", "t", "--max-latency", "p99"], "write e.g. p99=2ms or mean=500us");
    rejected(d, &["ramp", "t", "--max-cpu", "0"], "above 0 and at most 100 (got 0)");
    rejected(d, &["ramp", "t", "--max-cpu", "lots"], "write e.g. 80 or 80%");
    rejected(
        d,
        &["ramp", "t", "--rate-iops", "5"],
        "`iolab ramp` sets the rate of each level itself; drop --rate-iops",
    );
    rejected(d, &["suite", "quick", "t", "--qd", "4"], "sets the workload of each test itself; drop --qd");
    rejected(d, &["suite", "fastest", "t"], "'fastest' is not a suite; use quick, enterprise or pts");
}

#[test]
fn bad_engine_tuning() {
    let dir = dir_with_target();
    let d = dir.path();
    rejected(d, &["run", "--target", "t", "--engine", "psync", "--sqpoll"], "--sqpoll tunes io_uring");
    rejected(d, &["run", "--target", "t", "--ring-setup", "fast"], "use auto, defer-taskrun");
    rejected(
        d,
        &["run", "--target", "t", "--sqpoll", "--ring-setup", "defer-taskrun"],
        "cannot be combined with --sqpoll",
    );
    rejected(d, &["run", "--target", "t", "--fixed-files", "maybe"], "use on or off");
    rejected(d, &["run", "--target", "t", "--hipri", "--buffered"], "cannot be used with --buffered");
    rejected(d, &["run", "--target", "t", "--hipri", "--runtime", "1s"], "has no poll queues");
    rejected(d, &["run", "--target", "t", "--cpus", "1-0"], "is not a CPU list");
    rejected(
        d,
        &["run", "--target", "t", "--cpus", "4000", "--runtime", "1s"],
        "cannot pin a thread to CPU 4000",
    );
    rejected(d, &["run", "--target", "t", "--complete-batch", "0"], "--complete-batch must be 1 or more");
}

#[test]
fn bad_target_lists() {
    let dir = dir_with_target();
    let d = dir.path();
    rejected(d, &["run", "--target", "t", "--stripe", "128k"], "--stripe needs two or more --target");
    rejected(d, &["run", "--target", "t", "--target", "t"], "is given twice");
    rejected(
        d,
        &["run", "--target", "t", "--target", "u", "--size", "1m", "--stripe", "2k", "--bs", "4k"],
        "smaller than the largest block size",
    );
    rejected(
        d,
        &["run", "-q", "--target", "t", "--target", "u", "--size", "64k", "--stripe", "128k"],
        "smaller than one --stripe chunk",
    );
}

#[test]
fn bad_targets() {
    let dir = dir_with_target();
    let d = dir.path();
    rejected(d, &["run", "--target", "missing.dat"], "does not exist");
    rejected(d, &["run", "--target", "."], "is a directory");
    rejected(d, &["run", "--target", "t", "--bs", "1000"], "not a multiple of the");
    rejected(d, &["run", "--target", "t", "--offset", "2m"], "--offset 2MiB is beyond the end");
}

#[test]
fn bad_job_files() {
    let dir = dir_with_target();
    let d = dir.path();
    std::fs::write(d.join("typo.toml"), "target = \"t\"\nqdepth = 8\n").expect("file");
    rejected(d, &["run", "typo.toml"], "line 2: unknown field `qdepth`");
    std::fs::write(d.join("bad.toml"), "[[job]]\n[[job.group]]\nruntime = \"1s\"\n").expect("file");
    rejected(d, &["run", "bad.toml"], "'runtime' cannot be set in a group");
    std::fs::write(d.join("syntax.toml"), "qd = \n").expect("file");
    rejected(d, &["run", "syntax.toml"], "line 1");
    rejected(d, &["run", "nonexistent.toml"], "cannot read it");
}

#[test]
fn no_permission_is_explained() {
    if !is_root() {
        return common::skip!(common::Missing::Root, "needs root to run iolab as another user");
    }
    if !common::have("setpriv") {
        return common::skip!(common::Missing::Other, "needs setpriv");
    }
    let dir = dir_with_target();
    let target = dir.path().join("t");
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod dir");
    std::fs::set_permissions(&target, std::os::unix::fs::PermissionsExt::from_mode(0o600)).expect("chmod");
    // The tests' database is root's: nobody keeps nothing (unwritable_store.rs tests that case).
    let out = common::iolab_via("setpriv", &["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["run", "--no-store", "--target"])
        .arg(&target)
        .args(["--runtime", "100ms", "--ramp", "0s"])
        .current_dir("/")
        .output()
        .expect("runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no permission to open") && err.contains("for reading"), "{err}");
}

#[test]
fn a_target_that_does_not_fit_is_refused_before_writing() {
    if let Some((missing, why)) = common::needs_root_and(&["mount", "umount"]) {
        return common::skip!(missing, "{why}");
    }
    let dir = tempfile::tempdir().expect("dir");
    common::sh(&format!("mount -t tmpfs -o size=8m iolab-test {}", dir.path().display()));
    let out = run_in(dir.path(), &["run", "--target", "big", "--size", "64m", "--runtime", "100ms"]);
    common::sh(&format!("umount {}", dir.path().display()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("needs 64MiB more to reach --size") && err.contains("free"), "{err}");
}

/// Issue 32: a file the user named was read whatever it was. A FIFO hung the command before it
/// ran anything (a `--verify-state` linked to /dev/zero grew to 20 GB: `user_file`'s unit tests
/// hold that one). Each is refused at once, named, with exit 2.
#[test]
fn user_named_files_must_be_regular_files() {
    let dir = dir_with_target();
    let d = dir.path();
    for name in ["job.toml", "job.fio", "state", "rated.toml", "token"] {
        let status = std::process::Command::new("mkfifo")
            .args(["-m", "600"])
            .arg(d.join(name))
            .status()
            .expect("mkfifo runs");
        assert!(status.success(), "mkfifo {name}");
    }
    std::fs::write(d.join("outer.fio"), "[global]\ninclude job.fio\n[j]\nfilename=t\nrw=read\n")
        .expect("outer");
    let fifo = "is a FIFO, not a regular file";
    rejected_within(d, &["run", "job.toml"], fifo);
    rejected_within(d, &["run", "job.fio"], fifo);
    rejected_within(d, &["run", "outer.fio"], "line 2");
    rejected_within(d, &["verify", "t", "--verify-state", "state"], fifo);
    rejected_within(d, &["run", "--target", "t", "--engine", "null", "--rated", "rated.toml"], fifo);
    rejected_within(d, &["agent", "--token-file", "token", "--listen", "127.0.0.1:0"], fifo);
    rejected_within(d, &["fleet", "--hosts", "127.0.0.1:9", "--token-file", "token", "run", "t"], fifo);
}

/// `rejected`, for a command the defect made hang.
fn rejected_within(dir: &std::path::Path, args: &[&str], expect: &str) {
    let out = common::output_unless_hung(common::spawn_in(dir, args), &format!("{args:?}"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(expect), "{args:?}: expected '{expect}' in: {err}");
}
