//! Nothing a user owns is destroyed (issue 19): the results file never lands on a device, a
//! target or the database; a write workload never overwrites a file iolab did not lay out; the
//! scratch file goes however the run ends; a point the database cannot keep changes the exit
//! code.

mod common;

use std::path::Path;
use std::time::Duration;

use common::tmpfs::Tmpfs;
use common::{needs_root_and, run_in, sh, skip, spawn_in, stderr, LoopDevice};

const QUICK: [&str; 5] = ["--runtime", "200ms", "--ramp", "0s", "-q"];

fn run_quick(dir: &Path, args: &[&str]) -> std::process::Output {
    run_in(dir, &[args, &QUICK[..]].concat())
}

#[test]
fn output_onto_a_loop_device_holding_ext4_is_refused_and_the_device_is_unchanged() {
    if let Some((missing, why)) = needs_root_and(&["losetup", "mkfs.ext4", "sha256sum"]) {
        return skip!(missing, "{why}");
    }
    let lo = LoopDevice::new("output-ext4", 32);
    sh(&format!("mkfs.ext4 -q -F {}", lo.path()));
    let before = sh(&format!("sha256sum {}", lo.path()));
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("r.db");
    let out = run_quick(
        dir.path(),
        &[
            "run",
            "--engine",
            "null",
            "--size",
            "1m",
            "--json",
            "-o",
            lo.path(),
            "--db",
            db.to_str().expect("utf-8 path"),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is a block device"), "{err}");
    assert_eq!(sh(&format!("sha256sum {}", lo.path())), before, "the filesystem is intact");
    assert!(!db.exists(), "nothing ran, so nothing was recorded");
}

/// Issue 32: `-o` at a FIFO with no reader blocked after the run, deaf to SIGTERM. It is refused
/// before anything runs.
#[test]
fn output_naming_a_fifo_is_refused_before_anything_runs() {
    let dir = common::dir_with_target();
    let status = std::process::Command::new("mkfifo").arg(dir.path().join("fifo")).status().expect("mkfifo");
    assert!(status.success());
    let db = dir.path().join("r.db");
    let args = ["run", "--target", "t", "--engine", "null", "--json", "-o", "fifo", "--db", "r.db"];
    let out = common::output_unless_hung(spawn_in(dir.path(), &[&args[..], &QUICK[..]].concat()), "-o fifo");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("-o fifo is a FIFO: give a regular file"), "{err}");
    assert!(!db.exists(), "nothing ran, so nothing was recorded");
}

#[test]
fn output_naming_the_target_is_refused_and_the_target_is_unchanged() {
    let dir = common::dir_with_target();
    let before = std::fs::read(dir.path().join("t")).expect("target");
    for output in ["t", "./t"] {
        let out =
            run_quick(dir.path(), &["run", "--target", "t", "--engine", "null", "--json", "-o", output]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("is a target of this run"), "{err}");
    }
    assert_eq!(std::fs::read(dir.path().join("t")).expect("target"), before);
}

#[test]
fn output_naming_the_results_database_or_its_journal_is_refused() {
    let dir = common::dir_with_target();
    let db = dir.path().join("r.db");
    let out = run_quick(dir.path(), &["run", "--target", "t", "--engine", "null", "--db", "r.db"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before = std::fs::read(&db).expect("db");
    for output in ["r.db", "r.db-wal"] {
        let out = run_quick(
            dir.path(),
            &["run", "--target", "t", "--engine", "null", "--db", "r.db", "--json", "-o", output],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{output}: {err}");
        assert!(err.contains("results database"), "{err}");
    }
    assert_eq!(std::fs::read(&db).expect("db"), before);
    let out = run_in(dir.path(), &["report", "1", "--db", "r.db", "-o", "r.db"]);
    assert_eq!(out.status.code(), Some(2), "report -o: {}", stderr(&out));
    let out = run_in(dir.path(), &["results", "export", "1", "--db", "r.db", "--output", "r.db"]);
    assert_eq!(out.status.code(), Some(2), "export --output: {}", stderr(&out));
    assert_eq!(std::fs::read(&db).expect("db"), before);
}

#[test]
fn output_naming_a_directory_is_refused_before_anything_runs() {
    let dir = common::dir_with_target();
    std::fs::create_dir(dir.path().join("out")).expect("dir");
    let args = ["run", "--target", "t", "--engine", "null", "--db", "r.db", "--runtime", "1h", "-o", "out"];
    let out = run_in(dir.path(), &args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is a directory"), "{err}");
    assert!(!dir.path().join("r.db").exists(), "nothing ran, so nothing was recorded");
    let out = run_in(dir.path(), &["run", "--target", "t", "--engine", "null", "-o", "missing/out.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn output_replaces_an_old_results_file_whole() {
    let dir = common::dir_with_target();
    std::fs::write(dir.path().join("out.json"), "old results").expect("old");
    let out =
        run_quick(dir.path(), &["run", "--target", "t", "--engine", "null", "--json", "-o", "out.json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(dir.path().join("out.json")).expect("results");
    serde_json::from_str::<serde_json::Value>(&text).expect("the new results, whole");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "no temporary file is left: {names:?}");
}

/// The probe's case: a study pointed at a job file as its target, with a write workload.
#[test]
fn a_write_workload_never_overwrites_a_file_iolab_did_not_lay_out() {
    let dir = tempfile::tempdir().expect("dir");
    let job = dir.path().join("job.toml");
    std::fs::write(&job, "[[job]]\nrw = \"randread\"\n").expect("job file");
    let before = std::fs::read(&job).expect("job file");
    // A study's argument that is a job file is read as one, never written.
    let out =
        run_quick(dir.path(), &["sweep", "job.toml", "--engine", "null", "--size", "1m", "--qd", "1,2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for args in [
        &["sweep", "--target", "job.toml", "--rw", "randwrite", "--size", "16M", "--qd", "1,2"][..],
        &["run", "--target", "job.toml", "--rw", "write", "--size", "16M"][..],
        &["run", "--target", "job.toml", "--rw", "randrw", "--engine", "psync"][..],
    ] {
        let out = run_quick(dir.path(), args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("job.toml") && err.contains("--allow-destroy"), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
    assert_eq!(std::fs::read(&job).expect("job file"), before, "not a byte changed");

    // Reads are always allowed; --allow-destroy is the explicit way through.
    let out =
        run_quick(dir.path(), &["run", "--target", "job.toml", "--bs", "4k", "--buffered", "--rw", "read"]);
    assert!(out.status.code() != Some(2) || !stderr(&out).contains("refusing"), "{}", stderr(&out));
    let out = run_quick(
        dir.path(),
        &["run", "--target", "job.toml", "--rw", "randwrite", "--size", "1m", "--allow-destroy"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_file_iolab_laid_out_or_an_empty_one_may_be_written_again() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("dir");
    let write = ["run", "--target", "data.bin", "--rw", "randwrite", "--size", "2m"];
    for round in 0..2 {
        let out = run_quick(dir.path(), &write);
        assert!(out.status.success(), "round {round}: {}", stderr(&out));
    }
    std::fs::write(dir.path().join("empty.bin"), b"").expect("empty");
    let out = run_quick(dir.path(), &["run", "--target", "empty.bin", "--rw", "write", "--size", "1m"]);
    assert!(out.status.success(), "an empty file holds nothing: {}", stderr(&out));
}

/// A run that may not write a file iolab did not make never grows it (issue 32): a read run's
/// --size, or the null engine's, past its end is refused and the file stays as it was; a file
/// iolab laid out is still laid out further.
#[test]
fn a_run_that_may_not_write_a_user_s_file_never_grows_it() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("dir");
    let data = dir.path().join("data.bin");
    let bytes: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(&data, &bytes).expect("data.bin");
    for extra in [&["--rw", "randread"][..], &["--engine", "null", "--rw", "randwrite"]] {
        let out =
            run_quick(dir.path(), &[&["run", "--target", "data.bin", "--size", "16m"][..], extra].concat());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains("data.bin holds 8MiB, --size asks 16MiB"), "{err}");
        assert!(err.contains("Pass --size 8MiB or less, or write it first"), "{err}");
        assert!(std::fs::read(&data).expect("data.bin") == bytes, "{extra:?}: data.bin changed");
    }
    let out = run_quick(dir.path(), &["run", "--target", "data.bin", "--offset", "4m", "--size", "8m"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--offset 4MiB + --size 8MiB ask 12MiB")
            && stderr(&out).contains("Pass --size 4MiB or less")
    );
    let out = run_quick(dir.path(), &["run", "--target", "data.bin", "--size", "8m"]);
    assert!(out.status.success(), "what the file holds is read: {}", stderr(&out));
    assert!(std::fs::read(&data).expect("data.bin") == bytes);

    let out = run_quick(dir.path(), &["run", "--target", "own.bin", "--size", "4m"]);
    assert!(out.status.success(), "iolab makes the file: {}", stderr(&out));
    let out = run_quick(dir.path(), &["run", "--target", "own.bin", "--size", "8m"]);
    assert!(out.status.success(), "and may lay out more of it: {}", stderr(&out));
    assert_eq!(std::fs::metadata(dir.path().join("own.bin")).expect("own.bin").len(), 8 << 20);
}

fn scratch_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("iolab-scratch-"))
        .collect()
}

fn signal(child: &std::process::Child, signal: i32) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, signal) };
}

/// The scratch file names in `dir` once the run there has made one (its stop signals are
/// installed by then), waiting up to 60 s: a busy machine may start it late.
fn wait_for_scratch_file(dir: &Path) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let names = scratch_files(dir);
        if !names.is_empty() || std::time::Instant::now() > deadline {
            return names;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Two stop signals 20 ms apart, at several moments of a run (laying out, measuring): the
/// process ends at once, and its scratch file is gone every time.
#[test]
fn a_second_ctrl_c_removes_the_scratch_file() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("dir");
    for (attempt, wait_ms) in [0u64, 100, 300, 600, 1200, 2500].into_iter().enumerate() {
        let child =
            spawn_in(dir.path(), &["run", "--size", "64m", "--runtime", "30s", "--ramp", "0s", "--no-store"]);
        assert_eq!(
            wait_for_scratch_file(dir.path()).len(),
            1,
            "attempt {attempt}: the run made its scratch file"
        );
        std::thread::sleep(Duration::from_millis(wait_ms));
        signal(&child, libc::SIGINT);
        std::thread::sleep(Duration::from_millis(20));
        signal(&child, libc::SIGINT);
        let out = child.wait_with_output().expect("wait");
        assert_eq!(out.status.code(), Some(130), "attempt {attempt}: {}", stderr(&out));
        assert_eq!(scratch_files(dir.path()), Vec::<String>::new(), "attempt {attempt} after {wait_ms} ms");
    }
}

/// A run killed with SIGKILL leaves its scratch file; the next run in that directory removes it
/// (and says so), but never a file of a running iolab or one without iolab's mark.
#[test]
fn the_next_run_removes_the_scratch_file_of_a_killed_one() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("dir");
    let child =
        spawn_in(dir.path(), &["run", "--size", "8m", "--runtime", "30s", "--ramp", "0s", "--no-store"]);
    let left = wait_for_scratch_file(dir.path());
    assert_eq!(left.len(), 1, "the run laid out its scratch file");
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGKILL);
    let _ = child.wait_with_output();
    assert_eq!(scratch_files(dir.path()), left, "SIGKILL leaves it");
    let foreign = dir.path().join("iolab-scratch-4194000.dat");
    std::fs::write(&foreign, b"a user's file that happens to have this name").expect("foreign");

    let out =
        run_in(dir.path(), &["run", "--engine", "null", "--size", "1m", "--no-store", "--runtime", "200ms"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{:?} {err}", out.status);
    assert!(err.contains("removed 1 scratch file") && err.contains(&left[0]), "{err}");
    assert_eq!(scratch_files(dir.path()), ["iolab-scratch-4194000.dat"], "only the foreign file stays");
}

/// A scratch file kept with --keep is the user's from then on (issue 32): later runs in its
/// directory never remove it, and `iolab verify` still finds in it what the run wrote.
#[test]
fn a_scratch_file_kept_with_keep_outlives_later_runs_and_still_verifies() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("dir");
    let write = ["run", "--size", "8m", "--rw", "randwrite", "--verify", "--verify-state", "kept.state"];
    let out = run_quick(dir.path(), &[&write[..], &["--keep", "--no-store"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("kept.state"))
        .collect();
    assert_eq!(names.len(), 1, "the kept file: {names:?}");
    let kept = dir.path().join(&names[0]);
    let before = std::fs::read(&kept).expect("the kept file");

    // Quiet runs, as a script's would be: nothing on stderr would say what they removed.
    for args in [
        &["run", "--size", "8m", "--no-store"][..],
        &["run", "--rw", "randwrite", "--size", "4m", "--no-store"],
    ] {
        let out = run_quick(dir.path(), args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let after =
            std::fs::read(&kept).unwrap_or_else(|e| panic!("after {args:?}, {}: {e}", kept.display()));
        assert!(after == before, "after {args:?}, {} changed", kept.display());
    }
    let out = run_in(dir.path(), &["verify", &names[0], "--verify-state", "kept.state"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text} {}", stderr(&out));
    assert!(text.contains(" 0 bad") && !text.contains("verify: 0 blocks checked"), "{text}");
}

fn results_list(dir: &Path, db: &Path) -> String {
    let out = run_in(dir, &["results", "list", "--db", db.to_str().expect("utf-8 path")]);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A sweep whose database's filesystem fills up after the run was recorded: the rows still
/// reach the output, every lost point is named, the exit code is 5, and the run is listed as
/// interrupted (its writer is gone), never `running`. How many points fit depends on the
/// fingerprint's size, so the free space is tried from little to more until a run starts.
#[test]
fn points_lost_to_a_full_disk_are_named_and_change_the_exit_code() {
    if let Some((missing, why)) = needs_root_and(&["mount", "umount", "df"]) {
        return skip!(missing, "{why} (mounts a small tmpfs)");
    }
    let dir = tempfile::tempdir().expect("dir");
    let mounted = small_tmpfs(dir.path(), "4m");
    let small = mounted.path().to_path_buf();
    let db = small.join("r.db");
    let sweep = [
        "sweep",
        "--engine",
        "null",
        "--size",
        "1m",
        "--qd",
        "1,2,4,8",
        "--db",
        db.to_str().expect("utf-8 path"),
    ];
    for free_kib in [64u64, 80, 100, 120, 160, 200] {
        let _ = std::fs::remove_file(small.join("fill"));
        let out = run_quick(
            dir.path(),
            &["run", "--engine", "null", "--size", "1m", "--db", db.to_str().expect("utf-8 path")],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let avail: u64 =
            sh(&format!("df -k --output=avail {} | tail -1", small.display())).parse().expect("df");
        sh(&format!(
            "dd if=/dev/zero of={}/fill bs=1k count={} 2>/dev/null || true",
            small.display(),
            avail.saturating_sub(free_kib)
        ));
        let out = run_quick(dir.path(), &sweep);
        let err = stderr(&out);
        match out.status.code() {
            Some(5) => {
                let lost: Vec<&str> = err.lines().filter(|l| l.contains("was not kept")).collect();
                let last = err
                    .lines()
                    .find(|l| l.contains("points were not kept"))
                    .unwrap_or_else(|| panic!("{err}"));
                for line in &lost {
                    let name = line.split('\'').nth(1).expect("a named point");
                    assert!(last.contains(&format!("'{name}'")), "{last}");
                }
                let rows = String::from_utf8_lossy(&out.stdout);
                assert!(
                    ["qd 1", "qd 8"].iter().all(|p| rows.contains(p)),
                    "the rows still reach the output: {rows}"
                );
                let _ = std::fs::remove_file(small.join("fill"));
                let list = results_list(dir.path(), &db);
                assert!(!list.contains("running"), "{list}");
                assert!(list.lines().any(|l| l.contains("sweep") && l.contains("interrupted")), "{list}");
                return;
            }
            Some(0) => panic!(
                "with {free_kib} KiB free everything fitted, before any smaller space let a run start: {err}"
            ),
            _ => assert!(err.contains("filesystem is full"), "{free_kib} KiB: {err}"),
        }
    }
    panic!("no free space between 64 and 200 KiB let a sweep start and then lose a point");
}

/// A new database on a full filesystem leaves nothing behind: no 0-byte file, no directory.
#[test]
fn a_new_database_on_a_full_disk_leaves_no_file() {
    if let Some((missing, why)) = needs_root_and(&["mount", "umount"]) {
        return skip!(missing, "{why} (mounts a small tmpfs)");
    }
    let dir = tempfile::tempdir().expect("dir");
    let mounted = small_tmpfs(dir.path(), "1m");
    let small = mounted.path().to_path_buf();
    sh(&format!("dd if=/dev/zero of={}/fill bs=1k count=2048 2>/dev/null || true", small.display()));
    let db = small.join("new/results.db");
    let out = run_quick(
        dir.path(),
        &["run", "--engine", "null", "--size", "1m", "--db", db.to_str().expect("utf-8 path")],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("filesystem is full"), "{err}");
    let left: Vec<_> =
        std::fs::read_dir(&small).expect("dir").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(left, ["fill"], "nothing but the filler");
}

/// A tmpfs of `size` mounted at `DIR/small`, unmounted on drop.
fn small_tmpfs(dir: &Path, size: &str) -> Tmpfs {
    let small = dir.join("small");
    std::fs::create_dir(&small).expect("mount point");
    Tmpfs::mount(&small, &format!("size={size}"))
}
