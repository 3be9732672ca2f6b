//! Writes to a block device that holds data are refused, and nothing is written; reads are
//! always allowed; --allow-destroy is the explicit way through.

mod common;

use common::{needs_root_and, run_in, sh, skip, stderr, LoopDevice, Missing};

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

/// Filesystems iolab's own list of signatures lacks, each made on a fresh loop device by
/// `make` (given the device's path): libblkid knows them, so the write is refused.
#[test]
fn writes_to_filesystems_only_libblkid_knows_are_refused_and_nothing_changes() {
    if let Some((missing, why)) = needs_root_and(&["losetup", "sha256sum"]) {
        return skip!(missing, "{why}");
    }
    let dir = tempfile::tempdir().expect("dir");
    let content = dir.path().join("content");
    std::fs::create_dir(&content).expect("content");
    std::fs::write(content.join("kept"), b"someone's file").expect("content");
    let image = dir.path().join("cramfs.img");
    let kinds: [(&str, &str, String); 2] = [
        ("minix", "mkfs.minix", "mkfs.minix {dev} >/dev/null".to_string()),
        // cramfs is made as an image and copied onto the device, as a firmware flasher does.
        (
            "cramfs",
            "mkfs.cramfs",
            format!(
                "mkfs.cramfs {} {} >/dev/null && dd if={} of={{dev}} status=none",
                content.display(),
                image.display(),
                image.display()
            ),
        ),
    ];
    for (kind, tool, make) in kinds {
        if !common::have(tool) {
            skip!(Missing::Other, "the {kind} case: {tool} not found (util-linux)");
            continue;
        }
        let lo = LoopDevice::new(kind, 16);
        sh(&make.replace("{dev}", lo.path()));
        let before = digest(lo.path());
        let out = run_in(
            dir.path(),
            &["run", "--target", lo.path(), "--rw", "randwrite", "--runtime", "300ms", "--ramp", "0s", "-q"],
        );
        let err = stderr(&out);
        if err.contains("libblkid not found") {
            return skip!(Missing::Other, "libblkid cannot be loaded here: {err}");
        }
        assert_eq!(out.status.code(), Some(2), "{kind}: {err}");
        let what = format!("a {kind} filesystem signature (libblkid");
        assert!(err.contains("refusing to write to") && err.contains(&what), "{kind}: {err}");
        assert!(err.contains("--allow-destroy"), "{err}");
        assert_eq!(digest(lo.path()), before, "{kind}: the device is unchanged");
    }
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

/// Where libblkid cannot be loaded (here: every copy ldconfig knows hidden under /dev/null in a
/// mount namespace of the run's own), iolab's own list is checked and the refusal says so.
#[test]
fn without_libblkid_iolab_s_own_list_is_checked_and_the_refusal_says_so() {
    if let Some((missing, why)) =
        needs_root_and(&["losetup", "mkfs.ext4", "sha256sum", "unshare", "ldconfig"])
    {
        return skip!(missing, "{why}");
    }
    let lo = LoopDevice::new("nolibblkid", 64);
    sh(&format!("mkfs.ext4 -q -F {}", lo.path()));
    let before = digest(lo.path());
    let dir = tempfile::tempdir().expect("dir");
    let hide = r#"for lib in $(ldconfig -p | sed -n 's/.*libblkid\.so\.1 .*=> //p'); do
                      mount --bind /dev/null "$(realpath "$lib")" || exit 1
                  done; exec "$0" "$@""#;
    let out = common::iolab_via("unshare", &["-m", "sh", "-c", hide])
        .args(["run", "--target", lo.path(), "--rw", "randwrite", "--runtime", "300ms", "--ramp", "0s", "-q"])
        .current_dir(dir.path())
        .output()
        .expect("iolab runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("refusing to write to") && err.contains("an ext4 filesystem signature;"), "{err}");
    assert!(
        err.contains("libblkid not found (") && err.contains("iolab's own list of 18 signatures"),
        "{err}"
    );
    assert_eq!(digest(lo.path()), before, "the device is unchanged");
}
