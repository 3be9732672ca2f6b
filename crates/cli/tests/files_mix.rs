//! `iolab files --mix` and `--profile` (issue 34 items 1 and 2): Filebench's fileserver
//! personality on tmpfs and on ext4 over a loop device, warm and with caches dropped, repeated
//! with its spread; every operation of the mix in the report with its percentiles, the tree
//! removed; a mix from a job file's keys; bad mixes refused before anything is made.

mod common;

use std::path::Path;
use std::process::Output;

use common::ext4::Ext4;
use common::tmpfs::shm_dir;
use common::{is_root, json, needs_root_and, run_in, skip, stderr, LoopDevice};

/// Fileserver, shrunk to run in a second: its mix, sizes' law and shared tree kept.
const FILESERVER: [&str; 12] = [
    "--profile",
    "fileserver",
    "--files",
    "600",
    "--threads",
    "4",
    "--runtime",
    "1s",
    "--sizes",
    "gamma:16k:1.5",
    "--repeat",
    "2",
];

fn files_in(cwd: &Path, dir: &Path, extra: &[&str]) -> Output {
    let db = cwd.join("r.db");
    let (dir, db) = (dir.to_str().expect("utf-8"), db.to_str().expect("utf-8"));
    run_in(cwd, &[&["files", dir, "--json", "--db", db][..], extra].concat())
}

/// The run's mix phases each did every operation of fileserver's with its percentiles, the
/// repeats say the mix's spread, and nothing of the tree is left.
fn check_fileserver(cwd: &Path, dir: &Path, extra: &[&str], what: &str) -> serde_json::Value {
    let out = files_in(cwd, dir, &[&FILESERVER[..], extra].concat());
    assert!(out.status.success(), "{what}: {}", stderr(&out));
    let report = json(&out);
    let phases: Vec<&str> = report["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .map(|p| p["phase"].as_str().expect("name"))
        .collect();
    assert_eq!(phases, ["mkdir", "create", "mix", "mkdir", "create", "mix"], "{what}");
    for mix in report["phases"].as_array().expect("phases").iter().filter(|p| p["phase"] == "mix") {
        assert!(mix["failure"].is_null(), "{what}: {}", mix["failure"]);
        let kinds: Vec<&str> = mix["kinds"]
            .as_array()
            .expect("kinds")
            .iter()
            .map(|k| k["kind"].as_str().expect("kind"))
            .collect();
        assert_eq!(&kinds[..6], ["mix", "create", "append", "read_file", "unlink", "stat"], "{what}");
        for kind in mix["kinds"].as_array().expect("kinds") {
            let percentiles = kind["summary"]["latency"]["percentiles"].as_array().map(Vec::len);
            assert_eq!(percentiles, Some(7), "{what}: {}", kind["kind"]);
        }
        assert!(mix["done"].as_u64().is_some_and(|n| n > 0), "{what}");
        assert!(mix["mix"]["files_at_start"].as_u64().is_some_and(|n| n > 400 && n < 600), "{what}");
    }
    let repeats = report["repeats"].as_array().expect("repeats");
    assert!(
        repeats.iter().any(|r| r["phase"] == "mix" && r["ops_per_s"].as_array().map(Vec::len) == Some(2)),
        "{what}"
    );
    assert!(
        !dir.exists() || std::fs::read_dir(dir).expect("list").count() == 0,
        "{what}: the tree is removed"
    );
    report
}

#[test]
fn the_fileserver_profile_runs_on_tmpfs_warm_and_cold() {
    let temp = shm_dir();
    let report = check_fileserver(temp.path(), &temp.path().join("tree"), &[], "tmpfs");
    assert_eq!(report["plan"]["mix"]["ops"][0], serde_json::json!(["create", 1]));
    if is_root() {
        let cold =
            check_fileserver(temp.path(), &temp.path().join("cold"), &["--drop-caches"], "tmpfs, cold");
        assert!(cold["notes"].to_string().contains("caches dropped before each phase"));
    }
    // The results keep it: the mix in the run's label, its operations in its time.
    let db = temp.path().join("r.db");
    let shown = run_in(temp.path(), &["results", "show", "1", "--db", db.to_str().expect("utf-8")]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let text = String::from_utf8_lossy(&shown.stdout);
    let mix_row = text.lines().find(|l| l.split_whitespace().nth(1) == Some("mix")).unwrap_or_default();
    assert!(mix_row.contains(" in 1 s"), "a mix is counted in its time, not of a plan: {text}");
    let listed = run_in(temp.path(), &["results", "list", "--db", db.to_str().expect("utf-8")]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("a mix of create 1, append 1, read 1, unlink 1, stat 1 for 1 s"), "{listed}");
}

#[test]
fn the_fileserver_profile_runs_on_ext4_warm_and_cold() {
    if let Some((missing, why)) = needs_root_and(&["losetup", "mkfs.ext4", "mount"]) {
        return skip!(missing, "{why}");
    }
    let fs = Ext4::on(LoopDevice::new("files-mix", 128), "");
    let cwd = shm_dir();
    check_fileserver(cwd.path(), &fs.mount.path().join("warm"), &[], "ext4");
    check_fileserver(cwd.path(), &fs.mount.path().join("cold"), &["--drop-caches"], "ext4, cold");
}

#[test]
fn the_text_report_says_the_population_and_each_operation() {
    let temp = shm_dir();
    let dir = temp.path().join("tree");
    let out = run_in(
        temp.path(),
        &[
            "files",
            dir.to_str().expect("utf-8"),
            "--mix",
            "read:3,stat:1,create:1,unlink:1,readdir:1",
            "--files",
            "300",
            "--runtime",
            "1s",
            "--warmup",
            "200ms",
            "--distribution",
            "zipf:1.1",
            "--no-store",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("operations in") && text.contains("(after 0.2 s of warm-up)"), "{text}");
    assert!(text.contains("at the start") && text.contains("of 300 names"), "{text}");
    for op in ["mix ", "read_file", "stat", "create", "unlink", "readdir"] {
        assert!(text.lines().any(|l| l.trim_start().starts_with(op)), "{op}: {text}");
    }
    assert!(
        stderr(&out).contains("iolab: files: mix") && stderr(&out).contains("operations in"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_mix_from_a_job_files_keys() {
    let temp = shm_dir();
    std::fs::write(
        temp.path().join("mail.toml"),
        "profile = \"varmail\"\nfiles = 200\nthreads = 2\nruntime = \"500ms\"\nsizes = \"gamma:4k:1.5\"\n\
         mix = [\"unlink:1\", \"create:1\", \"append:1\", \"read:2\", \"setxattr:1\"]\nappend_size = \"8k\"\n\
         prealloc = 50\nengine = \"sync\"\njson = true\n",
    )
    .expect("job file");
    let out = run_in(temp.path(), &["files", "mail.toml", "tree", "--no-store"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let mix = &report["plan"]["mix"];
    assert_eq!(mix["ops"][4], serde_json::json!(["setxattr", 1]), "the file's mix over the profile's");
    assert_eq!((mix["append_size"].as_u64(), mix["prealloc_pct"].as_u64()), (Some(8192), Some(50)));
    assert_eq!(report["plan"]["fsync"], true, "kept from varmail");
    let bad = temp.path().join("bad.toml");
    std::fs::write(&bad, "files = 10\nmix = \"read:1,frob:2\"\n").expect("job file");
    let out = run_in(temp.path(), &["files", "bad.toml", "tree", "--no-store"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("line 2") && stderr(&out).contains("'frob' is not an operation"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_mixes_are_refused_before_anything_is_made() {
    let temp = shm_dir();
    let dir = temp.path().join("tree");
    let d = dir.to_str().expect("utf-8");
    for (flags, said) in [
        (&["--mix", "read:4,frobnicate:1"][..], "'frobnicate' is not an operation of a mix"),
        (&["--mix", "read:0,stat:0"][..], "add up to 0"),
        (&["--runtime", "5s"][..], "add --mix or --profile"),
        (&["--profile", "mailserver"][..], "'mailserver' is not a profile"),
        (&["--mix", "stat", "--phases", "mkdir,create,mix,unlink"][..], "put the mix last"),
        (&["--mix", "stat", "--prealloc", "120"][..], "0 to 100"),
    ] {
        let out = run_in(temp.path(), &[&["files", d, "--no-store"][..], flags].concat());
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{flags:?}: {}", stderr(&out));
        assert!(!dir.exists(), "{flags:?}: nothing made");
    }
}
