//! Writes to a block device that holds data are refused, and nothing is written; reads are
//! always allowed; --allow-destroy is the explicit way through.

mod common;

use common::{needs_root_and, run_in, sh, skip, stderr, LoopDevice};

fn digest(device: &str) -> String {
    sh(&format!("sha256sum {device}"))
}

#[test]
fn writes_to_a_loop_device_holding_ext4_are_refused_and_nothing_changes() {
    if let Some((missing, why)) = needs_root_and(&["losetup", "mkfs.ext4", "sha256sum"]) {
        return skip!(missing, "{why}");
    }
    let lo = LoopDevice::new("ext4", 64);
    sh(&format!("mkfs.ext4 -q -F {}", lo.path()));
    let before = digest(lo.path());
    let dir = tempfile::tempdir().expect("dir");

    for rw in ["randwrite", "randrw", "write"] {
        let out = run_in(
            dir.path(),
            &["run", "--target", lo.path(), "--rw", rw, "--runtime", "300ms", "--ramp", "0s"],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{rw}: {err}");
        assert!(err.contains("refusing to write to") && err.contains("ext4 filesystem"), "{err}");
        assert!(err.contains("--allow-destroy"), "{err}");
        // One error; a warning about the setup (the loop device has no direct I/O) may precede it.
        assert_eq!(err.lines().filter(|l| !l.starts_with("iolab: warning:")).count(), 1, "{err}");
    }
    assert_eq!(digest(lo.path()), before, "the device is unchanged");

    let out = run_in(
        dir.path(),
        &["run", "--target", lo.path(), "--rw", "randread", "--runtime", "300ms", "--ramp", "0s", "-q"],
    );
    assert!(out.status.success(), "reads are allowed: {}", stderr(&out));
    assert_eq!(digest(lo.path()), before, "reading changed nothing");

    let out = run_in(
        dir.path(),
        &[
            "run",
            "--target",
            lo.path(),
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
    assert!(out.status.success(), "--allow-destroy lets the write run: {}", stderr(&out));
    assert_ne!(digest(lo.path()), before, "and it did write");
}

#[test]
fn writes_to_a_blank_loop_device_run() {
    if let Some((missing, why)) = needs_root_and(&["losetup"]) {
        return skip!(missing, "{why}");
    }
    let lo = LoopDevice::new("blank", 32);
    let dir = tempfile::tempdir().expect("dir");
    let out = run_in(
        dir.path(),
        &[
            "run",
            "--target",
            lo.path(),
            "--rw",
            "randwrite",
            "--runtime",
            "300ms",
            "--ramp",
            "0s",
            "--json",
            "-q",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report = common::json(&out);
    assert!(report["jobs"][0]["write"]["ios"].as_u64().expect("ios") > 0);
}
