//! `iolab files` from a job file (issue 16): the file's keys give the same run as the flags
//! they are named after, a flag on the command line overrides its key, and an unknown key is
//! refused naming it, before anything is touched.

mod common;

use common::tmpfs::shm_dir;
use common::{json, run_in, stderr};

/// Each phase's (name, done, planned) and the plan's engine, from a JSON report.
fn counts(report: &serde_json::Value) -> Vec<(String, u64, u64)> {
    let phases = report["phases"].as_array().expect("phases");
    phases
        .iter()
        .map(|p| {
            let name = p["phase"].as_str().expect("name").to_string();
            (name, p["done"].as_u64().expect("done"), p["planned"].as_u64().expect("planned"))
        })
        .collect()
}

#[test]
fn a_job_file_gives_the_counts_of_the_equivalent_flags() {
    let temp = shm_dir();
    let cwd = temp.path();
    let job = cwd.join("files.toml");
    std::fs::write(
        &job,
        "# 600 small files over 3 threads\n\
         files = 600\nthreads = 3\ndepth = 2\ndirs_per_dir = 3\nsizes = \"0:2,1k:1\"\n\
         phases = [\"mkdir\", \"create\", \"stat\", \"readdir\", \"rename\", \"unlink\", \"rmdir\"]\n\
         engine = \"sync\"\nshared_dir = true\nseed = 7\njson = true\n",
    )
    .expect("job file");
    let by_file = run_in(cwd, &["files", "files.toml", "tree", "--no-store"]);
    assert!(by_file.status.success(), "{}", stderr(&by_file));
    let flags = [
        "files",
        "tree",
        "--files",
        "600",
        "--threads",
        "3",
        "--depth",
        "2",
        "--dirs-per-dir",
        "3",
        "--sizes",
        "0:2,1k:1",
        "--phases",
        "mkdir,create,stat,readdir,rename,unlink,rmdir",
        "--engine",
        "sync",
        "--shared-dir",
        "--seed",
        "7",
        "--json",
        "--no-store",
    ];
    let by_flags = run_in(cwd, &flags);
    assert!(by_flags.status.success(), "{}", stderr(&by_flags));
    let (file_report, flag_report) = (json(&by_file), json(&by_flags));
    assert_eq!(counts(&file_report), counts(&flag_report));
    assert_eq!(file_report["plan"], flag_report["plan"], "the same plan either way");
    let want: Vec<u64> = vec![13, 600, 600, 13, 600, 600, 13];
    let got: Vec<u64> = counts(&file_report).iter().map(|c| c.1).collect();
    assert_eq!(got, want);
    assert_eq!(file_report["phases"][1]["bytes"], flag_report["phases"][1]["bytes"], "the same sizes");
    assert!(!cwd.join("tree").exists(), "the tree is removed");

    // A flag overrides its key; the rest of the file stays.
    let over = run_in(cwd, &["files", "files.toml", "tree", "--no-store", "--files", "90", "--threads", "2"]);
    assert!(over.status.success(), "{}", stderr(&over));
    let report = json(&over);
    assert_eq!(report["total_files"], 90);
    assert_eq!(report["plan"]["threads"], 2);
    assert_eq!(report["plan"]["engine"], "sync", "kept from the file");
    assert_eq!(report["plan"]["shared_dir"], true, "kept from the file");
}

#[test]
fn the_job_files_dir_is_used_and_an_unknown_key_is_refused_untouched() {
    let temp = shm_dir();
    let cwd = temp.path();
    std::fs::write(
        cwd.join("dir.toml"),
        "dir = \"made-here\"\nfiles = 20\nphases = \"mkdir,create\"\nkeep = true\nquiet = true\n",
    )
    .expect("job file");
    let out = run_in(cwd, &["files", "dir.toml", "--no-store"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(cwd.join("made-here/.iolab-files").exists(), "the file's dir, kept as the file says");
    let cleaned = run_in(cwd, &["files", "dir.toml", "--clean"]);
    assert!(cleaned.status.success(), "{}", stderr(&cleaned));
    assert!(!cwd.join("made-here").exists(), "--clean takes DIR from the job file");

    std::fs::write(cwd.join("bad.toml"), "files = 20\nfsnyc = true\n").expect("job file");
    let out = run_in(cwd, &["files", "bad.toml", "tree", "--no-store"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("fsnyc") && err.contains("line 2"), "{err}");
    assert!(!cwd.join("tree").exists(), "nothing made");

    std::fs::write(cwd.join("value.toml"), "sizes = \"4q\"\n").expect("job file");
    let out = run_in(cwd, &["files", "value.toml", "tree", "--no-store"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("line 1 (sizes)"), "{}", stderr(&out));
}
