//! `iolab files` (issue 16): each phase counts exactly the operations its plan holds, on tmpfs
//! and on ext4 over a loop device; a killed run leaves only its own files and `--clean`
//! removes them; a foreign non-empty directory is refused untouched; a tree too big for its
//! filesystem's inodes or space is refused before anything is made, and one another writer
//! fills under the run stops it with the file it failed on and what ran out; each phase is kept
//! in the results database.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::ext4::Ext4;
use common::tmpfs::{shm_dir, Tmpfs};
use common::{json, needs_root_and, run_in, skip, spawn_in, stderr, LoopDevice};

const PHASES: &str =
    "mkdir,create,stat,readdir,read,rename,copy,stat,statdir,setattr,xattr,link,symlink,unlink,rmdir";

/// What each of PHASES must count: computed here from the shape, not read from iolab's plan.
fn expected(files: u64, dirs_per_dir: u64, depth: u32, trees: u64) -> Vec<(&'static str, u64)> {
    let dirs: u64 = (0..=depth).map(|k| dirs_per_dir.pow(k)).sum::<u64>() * trees;
    vec![
        ("mkdir", dirs),
        ("create", files),
        ("stat", files),
        ("readdir", dirs),
        ("read", files),
        ("rename", files),
        ("copy", files),
        ("stat", files),
        ("statdir", dirs),
        ("setattr", files),
        ("xattr", files),
        ("link", files),
        ("symlink", files),
        // Both trees' files after the copy, and the source's hard and symbolic links.
        ("unlink", 4 * files),
        ("rmdir", 2 * dirs),
    ]
}

fn files_run(cwd: &Path, dir: &Path, extra: &[&str]) -> Output {
    let db = cwd.join("r.db");
    let dir = dir.to_str().expect("utf-8");
    let db = db.to_str().expect("utf-8");
    run_in(cwd, &[&["files", dir, "--json", "--db", db][..], extra].concat())
}

fn assert_counts(report: &serde_json::Value, want: &[(&str, u64)], what: &str) {
    let phases = report["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), want.len(), "{what}");
    for (phase, (name, count)) in phases.iter().zip(want) {
        assert_eq!(phase["phase"], *name, "{what}");
        assert_eq!(phase["done"], *count, "{what}: {name} done");
        assert_eq!(phase["planned"], *count, "{what}: {name} planned");
        let main = &phase["kinds"][0]["summary"];
        assert_eq!(main["ios"], *count, "{what}: {name}'s own operation kind");
        assert!(main["latency"]["percentiles"].as_array().is_some_and(|p| p.len() == 7), "{what}");
    }
}

/// Every phase of PHASES on 1,234 files in three trees (or one shared), on each engine, with
/// `extra` flags (`--fsync`, `--order random`): the counts are the plan's.
fn check_tree_counts(cwd: &Path, dir: &Path, extra: &[&str]) {
    let fsync = extra.contains(&"--fsync");
    let order = if extra.contains(&"random") { "random" } else { "sequential" };
    for engine in ["io_uring", "sync"] {
        for shared in [false, true] {
            let mut args = vec![
                "--files",
                "1234",
                "--threads",
                "3",
                "--depth",
                "2",
                "--dirs-per-dir",
                "3",
                "--sizes",
                "0:2,1k:1,70k:1",
                "--phases",
                PHASES,
                "--engine",
                engine,
            ];
            if shared {
                args.push("--shared-dir");
            }
            args.extend(extra);
            let out = files_run(cwd, dir, &args);
            assert!(out.status.success(), "{engine} shared {shared}: {}", stderr(&out));
            let report = json(&out);
            let what = format!("{engine}, shared {shared}, {extra:?}");
            assert_eq!(report["plan"]["order"], order, "{what}");
            assert_counts(&report, &expected(1234, 3, 2, if shared { 1 } else { 3 }), &what);
            let readdir = &report["phases"][3];
            let trees = if shared { 1 } else { 3 };
            assert_eq!(readdir["entries"], 1234 + 13 * trees - trees, "{what}");
            // Issue 34: entries per second beside directories per second.
            let per_s =
                readdir["entries"].as_f64().expect("entries") / readdir["elapsed_s"].as_f64().expect("time");
            let said = readdir["entries_per_s"].as_f64().expect("entries_per_s");
            assert!((said / per_s - 1.0).abs() < 1e-9, "{what}: {said} against {per_s}");
            // Issue 34 item 4: each xattr operation set the attribute and read it back.
            let xattr = report["phases"][10]["kinds"].as_array().expect("kinds");
            for kind in ["set_xattr", "get_xattr", "open", "close"] {
                let ios = xattr.iter().find(|k| k["kind"] == kind).map(|k| k["summary"]["ios"].clone());
                assert_eq!(ios, Some(serde_json::json!(1234)), "{what}: {kind}");
            }
            let copy = &report["phases"][6];
            assert_eq!(copy["bytes"], report["phases"][1]["bytes"], "{what}: the copy moved every byte");
            if fsync {
                let kinds = report["phases"][1]["kinds"].as_array().expect("kinds");
                let fsyncs = kinds.iter().find(|k| k["kind"] == "fsync").map(|k| k["summary"]["ios"].clone());
                assert_eq!(fsyncs, Some(serde_json::json!(1234)), "{what}");
            }
            assert!(!dir.exists(), "{what}: the run's directory is removed");
        }
    }
}

#[test]
fn every_phase_counts_its_plan_on_tmpfs() {
    let temp = shm_dir();
    check_tree_counts(temp.path(), &temp.path().join("tree"), &[]);
}

#[test]
fn every_phase_counts_its_plan_on_ext4_with_fsync() {
    if let Some((missing, why)) = needs_root_and(&["losetup", "mkfs.ext4", "mount"]) {
        return skip!(missing, "{why}");
    }
    let fs = Ext4::on(LoopDevice::new("files-ext4", 96), "");
    let cwd = shm_dir();
    check_tree_counts(cwd.path(), &fs.mount.path().join("tree"), &["--fsync"]);
}

/// Each phase's engine under `--engine auto` (the default), as the report says it.
fn engines_by_default(cwd: &Path, dir: &Path, extra: &[&str]) -> Vec<(String, String)> {
    let phases = ["--phases", "mkdir,create,stat,unlink,rmdir", "--threads", "2"];
    let out = files_run(cwd, dir, &[&phases[..], extra].concat());
    assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
    let report = json(&out);
    assert!(report["tree"].as_str().is_some_and(|t| t.contains("--engine auto")), "{}", report["tree"]);
    let phases = report["phases"].as_array().expect("phases");
    phases
        .iter()
        .map(|p| (p["phase"].as_str().unwrap_or("").into(), p["engine"].as_str().unwrap_or("").into()))
        .collect()
}

/// Issue 31 item 5: by default each phase takes the faster way. Creates with --fsync are queued
/// on a ring where fsync waits for a device (ext4: 5.0-5.9x system calls, one file at a time
/// per thread); in memory, without fsync, for files of more than one write, and in every other
/// phase, system calls.
#[test]
fn the_default_engine_queues_fsynced_creates_only_where_fsync_waits_for_a_device() {
    let on = |engines: &[(String, String)], phase: &str| {
        engines.iter().find(|(p, _)| p == phase).map(|(_, e)| e.clone()).unwrap_or_default()
    };
    let shm = shm_dir();
    let in_memory = engines_by_default(shm.path(), &shm.path().join("tree"), &["--files", "300", "--fsync"]);
    assert!(in_memory.iter().all(|(_, e)| e == "sync"), "tmpfs: fsync waits for nothing: {in_memory:?}");
    if let Some((missing, why)) = needs_root_and(&["losetup", "mkfs.ext4", "mount"]) {
        return skip!(missing, "the ext4 part: {why}");
    }
    let fs = Ext4::on(LoopDevice::new("files-auto", 96), "");
    let tree = fs.mount.path().join("tree");
    let synced = engines_by_default(shm.path(), &tree, &["--files", "300", "--fsync", "--sizes", "0:1,8k:1"]);
    assert_eq!(on(&synced, "create"), "io_uring", "{synced:?}");
    for phase in ["mkdir", "stat", "unlink", "rmdir"] {
        assert_eq!(on(&synced, phase), "sync", "{phase}: {synced:?}");
    }
    let unsynced = engines_by_default(shm.path(), &tree, &["--files", "300"]);
    assert!(unsynced.iter().all(|(_, e)| e == "sync"), "no fsync: {unsynced:?}");
    let large = engines_by_default(shm.path(), &tree, &["--files", "6", "--fsync", "--sizes", "2m"]);
    assert_eq!(on(&large, "create"), "sync", "files of more than one write: {large:?}");
}

/// Issue 34 item 3: a tree kept with `--keep` is worked again after a remount (nothing of it
/// cached): the phases name only what to do, the shape and state come from its marker, and the
/// counts are the plan's; the last run removes it.
#[test]
fn a_kept_tree_is_worked_again_after_a_remount() {
    if let Some((missing, why)) = needs_root_and(&["losetup", "mkfs.ext4", "mount", "umount"]) {
        return skip!(missing, "{why}");
    }
    let fs = Ext4::on(LoopDevice::new("files-kept", 64), "");
    let cwd = shm_dir();
    let dir = fs.mount.path().join("tree");
    let shape =
        ["--files", "500", "--dirs-per-dir", "4", "--threads", "2", "--sizes", "4k:50,12k:50", "--seed", "5"];
    let made = files_run(
        cwd.path(),
        &dir,
        &[&shape[..], &["--phases", "mkdir,create", "--fsync", "--keep"]].concat(),
    );
    assert!(made.status.success(), "{}", stderr(&made));
    fs.remount();
    let again = files_run(cwd.path(), &dir, &["--phases", "stat,read,readdir", "--keep"]);
    assert!(again.status.success(), "{}", stderr(&again));
    let report = json(&again);
    assert_counts(&report, &[("stat", 500), ("read", 500), ("readdir", 10)], "over the kept tree");
    assert_eq!(report["plan"]["start"]["files"], true);
    let created = json(&made)["phases"][1]["bytes"].as_u64().expect("bytes made");
    assert_eq!(report["phases"][1]["bytes"].as_u64(), Some(created), "read every byte it made");
    let notes = report["notes"].to_string();
    assert!(notes.contains("began on the tree kept in"), "{notes}");
    // Asking another shape of it is refused, with nothing touched.
    let other = files_run(cwd.path(), &dir, &["--phases", "stat", "--files", "400"]);
    assert_eq!(other.status.code(), Some(2), "{}", stderr(&other));
    assert!(stderr(&other).contains("files 500 in all (asked 400 in all)"), "{}", stderr(&other));
    let last = files_run(cwd.path(), &dir, &["--phases", "unlink,rmdir"]);
    assert_counts(&json(&last), &[("unlink", 500), ("rmdir", 10)], "removed");
    assert!(!dir.exists(), "the last run removed the tree and its directory");
}

/// Issue 34 item 3: `--repeat 3` runs the phases three times and says each phase's spread;
/// each repeat's phases are kept in the results database under the phase's own name.
#[test]
fn repeats_give_each_phase_its_spread() {
    let temp = shm_dir();
    let dir = temp.path().join("tree");
    let flags = ["--files", "300", "--phases", "mkdir,create,stat,unlink,rmdir", "--repeat", "3"];
    let out = files_run(temp.path(), &dir, &flags);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let phases = report["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 15);
    assert_eq!(phases[14]["repeat"], 3);
    let repeats = report["repeats"].as_array().expect("repeats");
    assert_eq!(repeats.len(), 5);
    assert!(repeats.iter().all(|r| r["ops_per_s"].as_array().is_some_and(|e| e.len() == 3)), "{repeats:?}");
    let db = temp.path().join("r.db");
    let shown = run_in(temp.path(), &["results", "show", "1", "--db", db.to_str().expect("utf-8")]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.matches("create").count() >= 3, "{text}");
    // The text closes with the spread of each phase; a bad count is refused before anything is made.
    let again = run_in(
        temp.path(),
        &["files", dir.to_str().expect("utf-8"), "--files", "300", "--repeat", "2", "--no-store"],
    );
    assert!(String::from_utf8_lossy(&again.stdout).contains("over the repeats:"), "{}", stderr(&again));
    let refused =
        run_in(temp.path(), &["files", dir.to_str().expect("utf-8"), "--repeat", "0", "--no-store"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(!dir.exists(), "nothing made");
}

/// Issue 34: bonnie++'s random create, stat and delete. In random order every phase still
/// works every file once (the counts are the plan's, stat and read find each file's size, the
/// copy moves every byte), one thread or three sharing a tree.
/// Issue 34: bonnie++'s random create, stat and delete. In random order every phase still works
/// every file once, one thread per tree or three sharing one.
#[test]
fn every_phase_counts_its_plan_in_random_order() {
    let temp = shm_dir();
    check_tree_counts(temp.path(), &temp.path().join("tree"), &["--order", "random"]);
}

#[test]
fn empty_files_count_their_plan_with_open_and_close_each_timed() {
    // Empty files without --fsync are made with their opens and closes in flight on a ring.
    let temp = shm_dir();
    let dir = temp.path().join("tree");
    for engine in ["io_uring", "sync"] {
        for shared in [false, true] {
            let mut args = vec!["--files", "999", "--threads", "2", "--depth", "1", "--dirs-per-dir", "4"];
            args.extend(["--sizes", "0", "--phases", "mkdir,create,stat,unlink,rmdir", "--engine", engine]);
            if shared {
                args.push("--shared-dir");
            }
            let out = files_run(temp.path(), &dir, &args);
            let what = format!("{engine}, shared {shared}");
            assert!(out.status.success(), "{what}: {}", stderr(&out));
            let report = json(&out);
            let trees = if shared { 1 } else { 2 };
            let dirs = 5 * trees;
            let want = [("mkdir", dirs), ("create", 999), ("stat", 999), ("unlink", 999), ("rmdir", dirs)];
            assert_counts(&report, &want, &what);
            let kinds = report["phases"][1]["kinds"].as_array().expect("kinds");
            for kind in ["open", "close"] {
                let ios = kinds.iter().find(|k| k["kind"] == kind).map(|k| k["summary"]["ios"].clone());
                assert_eq!(ios, Some(serde_json::json!(999)), "{what}: {kind}s timed apart");
            }
            assert_eq!(report["phases"][1]["bytes"], 0, "{what}");
            assert!(!dir.exists(), "{what}: the run's directory is removed");
        }
    }
}

/// A run of `files` files of `size` on a tmpfs mounted with `options` that another writer
/// fills while it creates: the tree fits when the run checks (its preflight passes), then the
/// run is stopped once its create has begun, `fill` takes what is left of the filesystem, and
/// the run goes on into a full filesystem. Answers how many files it made, its failure and stderr.
fn create_until_filled(
    options: &str,
    files: &str,
    size: &str,
    engine: &str,
    fill: fn(&Path),
) -> (u64, serde_json::Value, String) {
    let mount_point = tempfile::tempdir().expect("mount point");
    let mount = Tmpfs::mount(mount_point.path(), options);
    let cwd = shm_dir();
    let dir = mount.path().join("tree");
    let db = cwd.path().join("r.db");
    let args = [
        "files",
        dir.to_str().expect("utf-8"),
        "--json",
        "--db",
        db.to_str().expect("utf-8"),
        "--files",
        files,
        "--sizes",
        size,
        "--phases",
        "mkdir,create,unlink,rmdir",
        "--engine",
        engine,
    ];
    let child = spawn_in(cwd.path(), &args);
    let pid = child.id() as i32;
    let signal = |sig| {
        // SAFETY: kill has no memory preconditions; the child is ours and still running.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "signal {sig} to the run");
    };
    let begun = Instant::now();
    // The first file: the create has begun, every directory is made (stopped in the mkdir,
    // the run would fail there, busy run 29).
    while !dir.join("t0/d0/f0").exists() {
        assert!(begun.elapsed() < Duration::from_secs(60), "the create never began");
        std::thread::sleep(Duration::from_millis(1));
    }
    signal(libc::SIGSTOP);
    fill(mount.path());
    signal(libc::SIGCONT);
    let out = common::output_unless_hung(child, "a run on a filled filesystem");
    let what = format!("{options}, {engine}");
    assert_eq!(out.status.code(), Some(3), "{what}: {}", stderr(&out));
    let report = json(&out);
    let phases = report["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 2, "{what}: the run stops at the create");
    let create = &phases[1];
    let failure = create["failure"].clone();
    assert_eq!(failure["errno"], 28, "{what}: {failure}");
    let path = failure["path"].as_str().expect("path");
    assert!(path.starts_with("t0/d") && path.contains("/f"), "{what}: {path}");
    assert!(!dir.exists(), "{what}: the partial tree was removed");
    (create["done"].as_u64().expect("done"), failure, stderr(&out))
}

/// Takes every free block: one file written until the filesystem refuses.
fn fill_space(at: &Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(at.join("filler")).expect("the filler");
    let chunk = vec![7u8; 64 << 10];
    while file.write_all(&chunk).is_ok() {}
}

/// Takes every free inode: empty files until the filesystem refuses.
fn fill_inodes(at: &Path) {
    let mut n = 0;
    while std::fs::File::create(at.join(format!("filler-{n}"))).is_ok() {
        n += 1;
    }
}

#[test]
fn a_filesystem_filled_under_the_run_stops_the_create_with_the_file_it_failed_on() {
    if let Some((missing, why)) = needs_root_and(&["mount"]) {
        return skip!(missing, "{why}");
    }
    let (done, failure, message) = create_until_filled("size=256m", "50000", "4k", "io_uring", fill_space);
    assert!(done < 50_000, "the filler left no room for every file: {done}");
    assert_eq!(failure["ran_out_of"], "space", "{failure}");
    let path = failure["path"].as_str().expect("path");
    assert!(message.contains(path) && message.contains("(the filesystem is full)"), "{message}");
}

#[test]
fn inodes_taken_under_the_run_stop_the_create_and_say_inodes() {
    if let Some((missing, why)) = needs_root_and(&["mount"]) {
        return skip!(missing, "{why}");
    }
    for engine in ["io_uring", "sync"] {
        let (done, failure, message) =
            create_until_filled("size=64m,nr_inodes=60000", "50000", "0", engine, fill_inodes);
        assert!(done < 50_000, "{engine}: the filler left inodes for every file: {done}");
        assert_eq!(failure["op"], "open", "{engine}: {failure}");
        assert_eq!(failure["ran_out_of"], "inodes", "{engine}: {failure}");
        assert!(message.contains("(the filesystem has no free inodes)"), "{engine}: {message}");
    }
}

/// Issue 34: a 200,000-file run on an ext4 of 196,608 inodes stopped near its end with "No
/// space left on device". A tree that cannot fit is refused before anything is made, with
/// what it needs and what is free.
#[test]
fn a_tree_too_big_for_the_filesystem_is_refused_before_anything_is_made() {
    if let Some((missing, why)) = needs_root_and(&["mount"]) {
        return skip!(missing, "{why}");
    }
    let cases = [
        ("size=4m,nr_inodes=300", "1000", "0", "the tree needs 1,011 inodes (1,000 files and 11 directories"),
        ("size=1m", "1000", "8k", "the tree's files need 7.81MiB (in blocks of 4KiB, at its largest)"),
    ];
    for (options, files, size, said) in cases {
        let mount_point = tempfile::tempdir().expect("mount point");
        let mount = Tmpfs::mount(mount_point.path(), options);
        let cwd = shm_dir();
        let dir = mount.path().join("tree");
        let args = ["--files", files, "--sizes", size, "--phases", "mkdir,create,unlink,rmdir"];
        let out = files_run(cwd.path(), &dir, &args);
        assert_eq!(out.status.code(), Some(2), "{options}: {}", stderr(&out));
        let message = stderr(&out);
        assert!(message.contains(said) && message.contains("nothing was made"), "{options}: {message}");
        assert!(!dir.exists(), "{options}: nothing was made");
        assert_eq!(
            std::fs::read_dir(mount.path()).expect("list").count(),
            0,
            "{options}: the mount is as it was"
        );
    }
}

/// Every entry below `dir` (not following links), as paths relative to it.
fn walk(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("list") {
        let entry = entry.expect("entry");
        out.push(entry.path().strip_prefix(root).expect("below").to_path_buf());
        if entry.file_type().expect("type").is_dir() {
            walk(&entry.path(), root, out);
        }
    }
}

fn ours(rel: &Path) -> bool {
    let mut parts = rel.iter().map(|p| p.to_str().expect("utf-8"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let Some(top) = parts.next() else { return false };
    if top == ".iolab-files" {
        return rel.iter().count() == 1;
    }
    let root = top.strip_prefix('c').unwrap_or(top);
    if !(root == "s" || root.strip_prefix('t').is_some_and(digits)) {
        return false;
    }
    parts.all(|p| p.strip_prefix(['d', 'f', 'r']).is_some_and(digits))
}

/// `iolab files` making 2,000,000 files in `dir`, far more than a test waits for, with `output`
/// (`-q`, `--json`).
fn endless_create<'a>(dir: &'a Path, db: &'a Path, output: &'a str) -> Vec<&'a str> {
    let (dir, db) = (dir.to_str().expect("utf-8"), db.to_str().expect("utf-8"));
    let shape = ["--files", "2000000", "--threads", "2", "--phases", "mkdir,create", "--engine", "sync"];
    [&["files", dir][..], &shape, &["--db", db, output]].concat()
}

/// Waits (at most a minute) until the run in `dir` has made files: a leaf directory has entries.
fn wait_for_files(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_dir(dir.join("t0/d0")).is_ok_and(|mut d| d.next().is_some()) {
        assert!(Instant::now() < deadline, "the run in {} never made a file", dir.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_killed_run_leaves_only_its_own_files_and_clean_removes_them() {
    let temp = shm_dir();
    let dir = temp.path().join("tree");
    let db = temp.path().join("r.db");
    let mut child = spawn_in(temp.path(), &endless_create(&dir, &db, "-q"));
    // Once it has made files, kill it outright.
    wait_for_files(&dir);
    child.kill().expect("kill");
    child.wait().expect("reaped");
    let mut left = Vec::new();
    walk(&dir, &dir, &mut left);
    assert!(left.iter().any(|p| p.starts_with("t0/d0")), "the run had made files: {}", left.len());
    let foreign: Vec<_> = left.iter().filter(|p| !ours(p)).collect();
    assert!(foreign.is_empty(), "entries not of iolab's naming: {foreign:?}");
    // A file the user put there meanwhile stays; everything of iolab's goes.
    std::fs::write(dir.join("t1/mine.txt"), b"keep me").expect("write");
    let out = run_in(temp.path(), &["files", "--clean", dir.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut after = Vec::new();
    walk(&dir, &dir, &mut after);
    after.sort();
    let want: Vec<PathBuf> = [".iolab-files", "t1", "t1/mine.txt"].iter().map(PathBuf::from).collect();
    assert_eq!(after, want);
    std::fs::remove_file(dir.join("t1/mine.txt")).expect("rm");
    let out = run_in(temp.path(), &["files", "--clean", dir.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!dir.exists(), "the directory iolab made is gone");
}

/// A child killed (it may be stopped) when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_second_run_on_a_directory_a_running_one_works_is_refused_with_nothing_touched() {
    let temp = shm_dir();
    let dir = temp.path().join("tree");
    let db = temp.path().join("r.db");
    let path = dir.to_str().expect("utf-8");
    let args = ["files", path, "--files", "2000000", "--phases", "mkdir,create", "--engine", "sync"];
    let mut first =
        Killed(spawn_in(temp.path(), &[&args[..], &["--db", db.to_str().expect("utf-8"), "-q"]].concat()));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_dir(dir.join("t0/d0")).is_ok_and(|mut d| d.next().is_some()) {
        assert!(Instant::now() < deadline, "the first run made no file in 60 s");
        assert!(first.0.try_wait().expect("wait").is_none(), "the first run ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Stopped, it is still running (and its tree still): the second run must not touch it.
    let pid = first.0.id().to_string();
    assert!(std::process::Command::new("kill").args(["-STOP", &pid]).status().expect("kill").success());
    // `kill` returns once the signal is sent; the run's threads may make a file or two more
    // before they stop, so the tree is read only once the kernel says every one is stopped.
    let stopped =
        |stat: String| stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('T'));
    let all_stopped = || {
        std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|tasks| {
            tasks.flatten().all(|task| std::fs::read_to_string(task.path().join("stat")).is_ok_and(stopped))
        })
    };
    while !all_stopped() {
        assert!(Instant::now() < deadline, "the first run did not stop");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut before = Vec::new();
    walk(&dir, &dir, &mut before);
    before.sort();
    let marker = std::fs::read_to_string(dir.join(".iolab-files")).expect("marker");
    assert!(marker.contains(&format!("pid: {pid}\n")), "{marker}");
    let second = files_run(temp.path(), &dir, &["--files", "10"]);
    assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    let said = stderr(&second);
    assert!(said.contains("being worked by a running iolab") && said.contains(&pid), "{said}");
    let clean = run_in(temp.path(), &["files", "--clean", path]);
    assert_eq!(clean.status.code(), Some(2), "{}", stderr(&clean));
    let mut after = Vec::new();
    walk(&dir, &dir, &mut after);
    after.sort();
    assert_eq!(before, after, "nothing was touched");
    assert_eq!(std::fs::read_to_string(dir.join(".iolab-files")).expect("marker"), marker);
    // Killed, its tree is an earlier tree: the next run takes it back.
    drop(first);
    let third = files_run(temp.path(), &dir, &["--files", "10"]);
    assert!(third.status.success(), "{}", stderr(&third));
    let notes = json(&third)["notes"].to_string();
    assert!(notes.contains("an earlier iolab tree"), "{notes}");
    assert!(!dir.exists(), "removed with its tree");
}

#[test]
fn a_foreign_directory_is_refused_with_nothing_touched() {
    let temp = shm_dir();
    let dir = temp.path().join("theirs");
    std::fs::create_dir_all(dir.join("t0/d0")).expect("mkdir");
    std::fs::write(dir.join("t0/d0/f1"), b"their data").expect("write");
    std::fs::write(dir.join("notes"), b"more").expect("write");
    let mut before = Vec::new();
    walk(&dir, &dir, &mut before);
    before.sort();
    let out = files_run(temp.path(), &dir, &["--files", "10"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
    let out = run_in(temp.path(), &["files", "--clean", dir.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "no marker, no clean-up: {}", stderr(&out));
    let mut after = Vec::new();
    walk(&dir, &dir, &mut after);
    after.sort();
    assert_eq!(before, after);
    assert_eq!(std::fs::read(dir.join("t0/d0/f1")).expect("read"), b"their data");
}

#[test]
fn its_own_earlier_tree_is_taken_back() {
    let temp = shm_dir();
    let dir = temp.path().join("tree");
    let out = files_run(temp.path(), &dir, &["--files", "50", "--phases", "mkdir,create", "--keep"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(dir.join("t0/d0/f0").exists());
    let out = files_run(temp.path(), &dir, &["--files", "50", "--phases", "mkdir,create,unlink,rmdir"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_counts(&json(&out), &[("mkdir", 11), ("create", 50), ("unlink", 50), ("rmdir", 11)], "rerun");
    assert!(!dir.exists());
}

#[test]
fn each_phase_is_kept_in_the_results_database() {
    let temp = shm_dir();
    let dir = temp.path().join("tree");
    let out = files_run(temp.path(), &dir, &["--files", "40", "--phases", "mkdir,create,stat,unlink,rmdir"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = temp.path().join("r.db");
    let shown = run_in(temp.path(), &["results", "show", "1", "--json", "--db", db.to_str().expect("utf-8")]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let export = json(&shown);
    let run = &export["runs"][0];
    assert_eq!(run["kind"], "files");
    let names: Vec<&str> =
        run["points"].as_array().expect("points").iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, ["files mkdir", "files create", "files stat", "files unlink", "files rmdir"]);
    assert_eq!(run["points"][1]["summary"]["total"]["ios"], 40);
    let db = db.to_str().expect("utf-8");
    // Issue 34: the list says the tree's shape; the text shows phases, not block columns, and
    // each phase's own verdict.
    let list = run_in(temp.path(), &["results", "list", "--db", db]);
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    assert!(list.contains("(40 files in 11 directories, 1 level(s) of 10, sizes "), "{list}");
    let text = run_in(temp.path(), &["results", "show", "1", "--db", db]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains("done of planned") && !text.contains("QD"), "{text}");
    for point in run["points"].as_array().expect("points") {
        let phase = point["result"]["phase"].as_str().expect("phase");
        let cause = point["result"]["verdict"]["cause"].as_str().expect("cause").replace('_', " ");
        let row = text
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(phase))
            .unwrap_or_else(|| panic!("a row for {phase}: {text}"));
        assert!(row.ends_with(&format!("  {cause}")), "{phase}'s own verdict: {row}");
    }
    let html = temp.path().join("r.html");
    let out = run_in(temp.path(), &["report", "1", "-o", html.to_str().expect("utf-8"), "--db", db]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).expect("the report");
    assert_eq!(page.matches("<section class=\"files-phase\">").count(), 5, "a panel per phase");
    assert!(page.contains("<td>create</td>") && page.contains("stonewall"));
}

/// iolab started as from a terminal: SIGHUP at its default disposition, whatever this test
/// process inherited. Under `nohup` (a suite run in the background) SIGHUP is ignored, iolab
/// rightly keeps ignoring it, and the SIGHUP test hung: the run never heard it.
fn spawn_hearing_sighup(dir: &Path, args: &[&str]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let mut command = common::iolab();
    command.args(args).current_dir(dir).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: signal(2) is async-signal-safe, as pre_exec requires; it touches nothing else.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            Ok(())
        });
    }
    command.spawn().expect("iolab starts")
}

/// Issue 32: SIGHUP (a closed terminal) killed `iolab files` with no report, its tree left
/// behind. SIGHUP and SIGTERM end it as Ctrl-C does: the phases done reported, the tree
/// removed, exit 130.
#[test]
fn sighup_and_sigterm_end_a_run_as_ctrl_c_does() {
    for signal in [libc::SIGHUP, libc::SIGTERM] {
        let temp = shm_dir();
        let dir = temp.path().join("tree");
        let db = temp.path().join("r.db");
        let child = spawn_hearing_sighup(temp.path(), &endless_create(&dir, &db, "--json"));
        // Once it has made files, signal it.
        wait_for_files(&dir);
        // SAFETY: plain kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let out = common::output_unless_hung(child, &format!("iolab files after signal {signal}"));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(130), "signal {signal}: {err}");
        assert!(err.contains("interrupted; the phases done so far were reported"), "signal {signal}: {err}");
        let report = json(&out);
        assert!(!report["phases"].as_array().expect("phases").is_empty(), "signal {signal}: {report}");
        let mut left = Vec::new();
        if dir.exists() {
            walk(&dir, &dir, &mut left);
        }
        assert!(left.is_empty(), "signal {signal}: the tree is left: {} entries", left.len());
    }
}

/// The kernel's count of `vm.drop_caches` writes that dropped the page cache.
fn page_cache_drops() -> u64 {
    let vmstat = std::fs::read_to_string("/proc/vmstat").expect("/proc/vmstat");
    vmstat
        .lines()
        .find_map(|l| l.strip_prefix("drop_pagecache "))
        .and_then(|n| n.trim().parse().ok())
        .expect("drop_pagecache in /proc/vmstat")
}

/// Issue 34: cold caches. `--drop-caches` drops them before each phase (the kernel counts each
/// drop), says so, and is refused without root before anything is made.
#[test]
fn drop_caches_drops_before_each_phase_and_needs_root() {
    if let Some((missing, why)) = needs_root_and(&["setpriv"]) {
        return skip!(missing, "{why}");
    }
    let temp = shm_dir();
    let dir = temp.path().join("tree");
    let before = page_cache_drops();
    let out = files_run(
        temp.path(),
        &dir,
        &["--files", "100", "--drop-caches", "--phases", "mkdir,create,stat,unlink,rmdir"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(page_cache_drops() >= before + 5, "a drop before each of the 5 phases");
    let report = json(&out);
    assert!(report["notes"].to_string().contains("caches dropped before each phase"), "{report}");
    assert_eq!(report["plan"]["drop_caches"], true);

    let nobody = tempfile::tempdir_in("/tmp").expect("a directory nobody may enter");
    std::fs::set_permissions(nobody.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777))
        .expect("chmod");
    let tree = nobody.path().join("tree");
    let out = common::iolab_via("setpriv", &["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["--db", nobody.path().join("r.db").to_str().expect("utf-8"), "files"])
        .arg(&tree)
        .args(["--files", "10", "--drop-caches"])
        .output()
        .expect("iolab runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--drop-caches needs root"), "{}", stderr(&out));
    assert!(!tree.exists(), "nothing was made");
}
