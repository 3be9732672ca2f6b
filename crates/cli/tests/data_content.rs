//! Content you choose (issue 15): `--dedupe-pct`, `--compress-pct` and `--buffer-pattern` shape
//! what a workload writes and what a file is laid out with, and the report measures it on a
//! sample of the blocks sent. Each test writes a 64 MiB file and looks at its 4 KiB blocks.

mod common;

use std::collections::HashSet;

use common::{run_in, stderr};

const BLOCK: usize = 4096;

/// A 64 MiB target `t` in a new directory, laid out by iolab and then run with `args`: the
/// file's bytes and the group's `data` report.
fn run_on_t(args: &[&str]) -> (Vec<u8>, serde_json::Value) {
    // O_DIRECT needs a real filesystem; /var/tmp is on the root disk here.
    let dir = tempfile::tempdir_in("/var/tmp").expect("temp dir");
    let common = ["--target", "t", "--size", "64m", "--ramp", "0", "--no-store", "-q", "--json"];
    let out = run_in(dir.path(), &[&["run"][..], &common, args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON results");
    let data = json["jobs"][0]["groups"][0]["data"].clone();
    (std::fs::read(dir.path().join("t")).expect("read the target back"), data)
}

/// 64 MiB of random 4 KiB writes at QD 32: an I/O limit, not a time, ends the run.
const RANDWRITE: [&str; 8] = ["--rw", "randwrite", "--qd", "32", "--io-limit", "64m", "--runtime", "120s"];

/// Only the layout: a short read run writes nothing after it.
const LAYOUT_ONLY: [&str; 4] = ["--rw", "randread", "--runtime", "100ms"];

fn distinct_share(data: &[u8]) -> f64 {
    let blocks: HashSet<&[u8]> = data.chunks(BLOCK).collect();
    blocks.len() as f64 / (data.len() / BLOCK) as f64
}

fn zstd_ratio(data: &[u8]) -> f64 {
    data.len() as f64 / zstd::encode_all(data, 3).expect("zstd").len() as f64
}

fn figure(data: &serde_json::Value, key: &str) -> f64 {
    data[key].as_f64().unwrap_or_else(|| panic!("no {key} in {data}"))
}

#[test]
fn half_the_blocks_repeat_with_dedupe_pct_50_and_the_report_measures_it() {
    let (file, data) = run_on_t(&[&RANDWRITE[..], &["--dedupe-pct", "50"]].concat());
    let share = distinct_share(&file);
    assert!((0.47..=0.53).contains(&share), "{:.1}% of the blocks distinct", share * 100.0);
    assert_eq!(data["dedupe_pct"], 50);
    assert!(figure(&data, "sampled_blocks") >= 256.0, "{data}");
    let ratio = figure(&data, "dedupe_ratio");
    assert!((1.7..=2.3).contains(&ratio), "measured dedupe {ratio}");
    assert!(figure(&data, "compression_ratio") < 1.05, "{data}");
    // Every block written is counted, and the last requests made ready when the I/O limit was
    // reached (at most the QD's).
    let written = figure(&data, "written_blocks");
    assert!((16384.0..=16384.0 + 32.0).contains(&written), "{data}");
}

#[test]
fn a_dedupe_set_larger_than_the_writes_repeats_little_and_the_report_says_so() {
    // 8,192 copies drawn from a set of 262,144 blocks: about 1.5% of them repeat another.
    let (file, data) = run_on_t(&[&RANDWRITE[..], &["--dedupe-pct", "50", "--dedupe-set", "1g"]].concat());
    assert!(distinct_share(&file) > 0.97, "{:.1}% of the blocks distinct", distinct_share(&file) * 100.0);
    let ratio = figure(&data, "dedupe_ratio");
    assert!((1.0..1.05).contains(&ratio), "the report says {ratio}, not 2.0: {data}");
    assert!(figure(&data, "distinct_blocks") > 0.97 * 16384.0, "{data}");
}

#[test]
fn zstd_halves_the_file_with_compress_pct_50_and_the_report_measures_it() {
    let (file, data) = run_on_t(&[&RANDWRITE[..], &["--compress-pct", "50"]].concat());
    let ratio = zstd_ratio(&file);
    assert!((1.8..=2.2).contains(&ratio), "zstd ratio {ratio:.3} on the written file");
    assert!(distinct_share(&file) >= 0.999, "each block still unique");
    let measured = figure(&data, "compression_ratio");
    assert!((1.8..=2.2).contains(&measured), "measured compression {measured}");
    assert!(figure(&data, "dedupe_ratio") < 1.01, "{data}");
}

#[test]
fn the_default_stays_unique_and_incompressible_in_the_report() {
    let (file, data) = run_on_t(&RANDWRITE);
    assert!(distinct_share(&file) >= 0.999);
    assert_eq!(data["pattern"], "random");
    assert!(figure(&data, "dedupe_ratio") < 1.01 && figure(&data, "compression_ratio") < 1.05, "{data}");
}

#[test]
fn the_layout_honours_dedupe_and_compression_too() {
    let (file, data) = run_on_t(&[&LAYOUT_ONLY[..], &["--dedupe-pct", "50"]].concat());
    let share = distinct_share(&file);
    assert!((0.47..=0.53).contains(&share), "{:.1}% of the laid-out blocks distinct", share * 100.0);
    assert!(data.is_null(), "a read-only group reports no written data: {data}");
    let (file, _) = run_on_t(&[&LAYOUT_ONLY[..], &["--compress-pct", "50"]].concat());
    let ratio = zstd_ratio(&file);
    assert!((1.8..=2.2).contains(&ratio), "zstd ratio {ratio:.3} on the laid-out file");
    assert!(distinct_share(&file) >= 0.999);
}

#[test]
fn a_pattern_is_written_exactly_without_a_stamp() {
    let (file, data) = run_on_t(&[&RANDWRITE[..], &["--buffer-pattern", "zero"]].concat());
    assert!(file.iter().all(|&b| b == 0), "layout and writes all zeros");
    assert!(figure(&data, "dedupe_ratio") > 100.0, "{data}");
    let pattern = [0xde, 0xad, 0xbe, 0xef];
    let (file, data) = run_on_t(&[&LAYOUT_ONLY[..], &["--buffer-pattern", "0xdeadbeef"]].concat());
    assert!(file.chunks(4).all(|w| w == pattern), "the layout is the pattern, repeated");
    assert!(data.is_null());
    let (file, data) =
        run_on_t(&["--rw", "write", "--bs", "128k", "--io-limit", "64m", "--buffer-pattern", "0xdeadbeef"]);
    assert!(file.chunks(4).all(|w| w == pattern), "every write is the pattern, repeated");
    assert_eq!(data["pattern"], "0xdeadbeef");
}

#[test]
fn contradictory_data_options_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = run_in(dir.path(), &["run", "--buffer-pattern", "zero", "--compress-pct", "50", "--no-store"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--buffer-pattern zero"), "{}", stderr(&out));
    let out = run_in(dir.path(), &["run", "--dedupe-pct", "101", "--no-store"]);
    assert!(stderr(&out).contains("between 0 and 100"), "{}", stderr(&out));
    for data in [&["--dedupe-pct", "50"][..], &["--buffer-pattern", "zero"][..]] {
        let out =
            run_in(dir.path(), &[&["run", "--verify", "--rw", "randwrite", "--no-store"][..], data].concat());
        assert_eq!(out.status.code(), Some(2), "{data:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--verify"), "{data:?}: {}", stderr(&out));
    }
}
