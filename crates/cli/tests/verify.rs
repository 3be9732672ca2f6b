//! `--verify` and `iolab verify`: a region written with verify, damaged behind iolab's back in
//! three known ways, is reported block by block with the right kind; an intact region verifies
//! clean; a region with no record says it was never written.

mod common;

use std::os::unix::fs::FileExt;
use std::path::Path;

use common::{run_in, stderr};
use serde_json::Value;

const BLOCK: u64 = 4096;
/// 8 MiB: 2048 blocks.
const SIZE: &str = "8m";
const BLOCKS: u64 = 2048;

fn dir() -> tempfile::TempDir {
    // O_DIRECT needs a real filesystem; /var/tmp is on the root disk here.
    tempfile::tempdir_in("/var/tmp").expect("temp dir")
}

/// Writes the whole of `t` once, sequentially, with --verify and `extra` options.
fn write_region(dir: &Path, extra: &[&str]) {
    let args = [
        "run",
        "--target",
        "t",
        "--size",
        SIZE,
        "--rw",
        "write",
        "--bs",
        "64k",
        "--qd",
        "8",
        "--ramp",
        "0",
        "--io-limit",
        SIZE,
        "--verify",
        "--no-store",
        "-q",
    ];
    let out = run_in(dir, &[&args[..], extra].concat());
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `iolab verify t` as JSON, with its exit code.
fn verify(dir: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let out = run_in(dir, &[&["verify", "t", "--json"][..], extra].concat());
    let text = String::from_utf8_lossy(&out.stdout);
    let summary = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}{}", stderr(&out)));
    (out.status.code(), summary)
}

fn count(summary: &Value, key: &str) -> u64 {
    summary[key].as_u64().unwrap_or_else(|| panic!("no {key} in {summary}"))
}

#[test]
fn three_damaged_blocks_are_reported_by_offset_and_kind_and_nothing_else() {
    let dir = dir();
    write_region(dir.path(), &["--verify-state", "state"]);
    let state = ["--verify-state", "state"];
    let (code, clean) = verify(dir.path(), &state);
    assert_eq!(code, Some(0), "{clean}");
    assert_eq!(count(&clean, "blocks_checked"), BLOCKS);
    assert_eq!(clean["bad_blocks"], Value::Array(vec![]));

    let file = std::fs::OpenOptions::new().read(true).write(true).open(dir.path().join("t")).expect("open");
    let mut byte = [0u8; 1];
    let (flipped, copied, zeroed) = (100 * BLOCK, 700 * BLOCK, 1500 * BLOCK);
    file.read_exact_at(&mut byte, flipped + 1234).expect("read");
    file.write_all_at(&[byte[0] ^ 0x10], flipped + 1234).expect("flip a byte");
    let mut other = vec![0u8; BLOCK as usize];
    file.read_exact_at(&mut other, 3 * BLOCK).expect("read");
    file.write_all_at(&other, copied).expect("copy a block from elsewhere");
    file.write_all_at(&vec![0u8; BLOCK as usize], zeroed).expect("zero a block");
    file.sync_all().expect("sync");
    drop(file);

    let (code, damaged) = verify(dir.path(), &state);
    assert_eq!(code, Some(6), "{damaged}");
    assert_eq!(count(&damaged, "blocks_checked"), BLOCKS);
    let mut found: Vec<(u64, String)> = damaged["bad_blocks"]
        .as_array()
        .expect("bad blocks")
        .iter()
        .map(|b| (b["offset"].as_u64().expect("offset"), b["kind"].as_str().expect("kind").to_string()))
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![
            (flipped, "corrupted_bytes".to_string()),
            (copied, "misdirected_write".to_string()),
            (zeroed, "lost_write".to_string()),
        ]
    );
    let bad = &damaged["bad"];
    assert_eq!((bad["corrupted_bytes"].as_u64(), bad["misdirected_write"].as_u64()), (Some(1), Some(1)));
    assert_eq!(
        (bad["lost_write"].as_u64(), bad["torn_write"].as_u64(), bad["stale_data"].as_u64()),
        (Some(1), Some(0), Some(0))
    );
    let misdirected =
        damaged["bad_blocks"].as_array().expect("list").iter().find(|b| b["kind"] == "misdirected_write");
    assert_eq!(
        misdirected.expect("misdirected")["found"]["offset"].as_u64(),
        Some(3 * BLOCK),
        "the stamp says where it came from"
    );

    // A read workload with --verify finds the same blocks, and fails the run.
    let args = [
        "run",
        "--target",
        "t",
        "--size",
        SIZE,
        "--rw",
        "read",
        "--bs",
        "64k",
        "--ramp",
        "0",
        "--io-limit",
        SIZE,
        "--verify",
        "--verify-state",
        "state",
        "--db",
        "r.db",
        "-q",
        "--json",
    ];
    let out = run_in(dir.path(), &args);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let html = run_in(dir.path(), &["--db", "r.db", "report", "1", "-o", "r.html"]);
    assert!(html.status.success(), "{}", stderr(&html));
    let page = std::fs::read_to_string(dir.path().join("r.html")).expect("html");
    assert!(
        // A block read twice (see below) is counted twice: the kinds, not their counts.
        page.contains("BAD: ")
            && ["lost write", "misdirected write", "corrupted bytes"].iter().all(|k| page.contains(k)),
        "the HTML report says what verify found: {}",
        page.lines().filter(|l| l.contains("verify") || l.contains("<small>")).collect::<Vec<_>>().join("\n")
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let in_job = &report["jobs"][0]["verify"];
    // Reads in flight when the limit is reached complete and are checked too: a block may be
    // read twice.
    assert!(count(in_job, "blocks_checked") >= BLOCKS, "{in_job}");
    let mut offsets: Vec<u64> =
        in_job["bad_blocks"].as_array().expect("list").iter().filter_map(|b| b["offset"].as_u64()).collect();
    offsets.sort();
    offsets.dedup();
    assert_eq!(offsets, vec![flipped, copied, zeroed], "{in_job}");
}

#[test]
fn a_region_read_and_rewritten_at_random_with_verify_stays_clean_under_the_default_state() {
    let dir = dir();
    write_region(dir.path(), &[]);
    let args = [
        "run",
        "--target",
        "t",
        "--size",
        SIZE,
        "--rw",
        "randrw",
        "--qd",
        "16",
        "--workers",
        "2",
        "--ramp",
        "0",
        "--io-limit",
        "4000ios",
        "--verify",
        "--no-store",
        "-q",
        "--json",
    ];
    let out = run_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let in_job = &report["jobs"][0]["verify"];
    assert!(count(in_job, "blocks_checked") > 0, "{in_job}");
    assert!(count(in_job, "blocks_recorded") > 0, "{in_job}");
    assert_eq!(in_job["bad_blocks"], Value::Array(vec![]), "{in_job}");
    let (code, after) = verify(dir.path(), &[]);
    assert_eq!(code, Some(0), "{after}");
    assert_eq!(count(&after, "blocks_checked"), BLOCKS, "the default state is found again");
}

#[test]
fn a_region_never_written_says_so_and_is_no_error() {
    let dir = dir();
    // 9 MiB of someone else's data, of which a --verify run writes the first 8.
    std::fs::write(dir.path().join("t"), vec![0u8; 9 << 20]).expect("a file iolab never wrote");
    write_region(dir.path(), &["--allow-destroy"]);
    let (code, summary) = verify(dir.path(), &["--offset", "8m", "--size", "1m"]);
    assert_eq!(code, Some(0), "{summary}");
    assert_eq!(count(&summary, "never_written"), 256);
    assert_eq!(count(&summary, "blocks_checked"), 0);
    let out = run_in(dir.path(), &["verify", "t", "--offset", "8m", "--size", "1m"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("never written"), "{}", stderr(&out));
    // No record at all is a wrong path or another target, not a clean device.
    let out = run_in(dir.path(), &["verify", "t", "--verify-state", "nothing-here"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no verify state"), "{}", stderr(&out));
}

#[test]
fn verify_refuses_block_sizes_it_cannot_check() {
    let dir = dir();
    let out = run_in(
        dir.path(),
        &["run", "--target", "t", "--size", "1m", "--bs", "512", "--verify", "--no-store"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("4 KiB"), "{}", stderr(&out));
}

/// A state file cut short, zeroed or wiped is an error naming what is wrong (exit 2, as for any
/// bad input), never "0 blocks checked, all never written" (issue 32).
#[test]
fn a_truncated_zeroed_or_wiped_state_is_an_error_that_says_so() {
    let dir = dir();
    write_region(dir.path(), &["--verify-state", "state"]);
    let state = dir.path().join("state");
    let good = std::fs::read(&state).expect("state");
    let mut zeroed = good.clone();
    zeroed[24..].fill(0);
    let damaged: [(&str, Vec<u8>, &str); 4] = [
        (
            "truncated",
            good[..16].to_vec(),
            "is 16 bytes, a state for 2048 blocks is 16408 bytes: it was truncated",
        ),
        (
            "cut in its header",
            good[..5].to_vec(),
            "is 5 bytes, too short to hold even a verify state's header",
        ),
        ("records zeroed", zeroed, "fails its checksum"),
        ("wiped", vec![0; good.len()], "is 16408 bytes of zeros"),
    ];
    for (how, bytes, says) in damaged {
        std::fs::write(&state, &bytes).expect("damage the state");
        let out = run_in(dir.path(), &["verify", "t", "--verify-state", "state"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{how}: {err}");
        assert!(err.contains(&format!("state file {}", "state")) && err.contains(says), "{how}: {err}");
        assert!(out.stdout.is_empty(), "{how}: nothing was checked");
    }
}

/// `-o` naming the run's verify state would overwrite the record of what the target holds.
#[test]
fn output_naming_the_verify_state_is_refused_and_the_state_kept() {
    let dir = dir();
    write_region(dir.path(), &["--verify-state", "state"]);
    let before = std::fs::read(dir.path().join("state")).expect("state");
    let read = ["run", "--target", "t", "--rw", "randread", "--runtime", "200ms", "--ramp", "0"];
    let out = run_in(
        dir.path(),
        &[&read[..], &["--verify", "--verify-state", "state", "-q", "-o", "state"]].concat(),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--output state is a verify state file of this run"), "{err}");
    assert!(std::fs::read(dir.path().join("state")).expect("state") == before, "the record is as it was");
    let (code, summary) = verify(dir.path(), &["--verify-state", "state"]);
    assert_eq!((code, count(&summary, "blocks_checked")), (Some(0), BLOCKS), "{summary}");
}

/// Issue 32: `iolab verify --json > /dev/full` panicked ("failed printing to stdout", exit 101).
/// A stdout that cannot be written is one line on stderr and exit 1; a closed pipe is no error.
#[test]
fn a_report_stdout_cannot_take_is_an_error_not_a_panic() {
    let dir = dir();
    write_region(dir.path(), &[]);
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let out = common::iolab()
        .args(["verify", "t", "--json"])
        .current_dir(dir.path())
        .stdout(full)
        .output()
        .expect("iolab runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot write the results to stdout") && err.contains("No space left"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let piped = common::iolab_via("bash", &["-c", "set -o pipefail; \"$0\" verify t --json | true"])
        .current_dir(dir.path())
        .output()
        .expect("bash runs");
    assert!(piped.status.success(), "a closed pipe: {}", stderr(&piped));
    assert!(!stderr(&piped).contains("panicked"), "{}", stderr(&piped));
}
