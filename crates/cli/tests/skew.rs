//! Skewed access end to end (docs/distributions.md): the distribution and working set reach the
//! I/Os, the report says them, and the share of distinct blocks touched is what the law gives.

mod common;

use common::{dir_with_target, json, run_in, stderr};

/// Runs the null engine on the 1 MiB `t` (256 blocks of 4 KiB) for `ios` I/Os, no ramp, and
/// returns the first group's JSON.
fn group(dir: &std::path::Path, ios: u32, args: &[&str]) -> serde_json::Value {
    let limit = format!("{ios}ios");
    let base =
        ["run", "--engine", "null", "--target", "t", "--json", "-q", "--ramp", "0", "--io-limit", &limit];
    let out = run_in(dir, &[&base[..], args].concat());
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    json(&out)["jobs"][0]["groups"][0].clone()
}

fn touched_pct(group: &serde_json::Value) -> f64 {
    assert_eq!(group["blocks"]["sampled"], false, "{group}");
    group["blocks"]["touched_pct"].as_f64().expect("touched_pct")
}

#[test]
fn zones_and_working_sets_bound_the_blocks_touched() {
    let dir = dir_with_target();
    let d = dir.path();
    // Every I/O in the first quarter: its 64 blocks, all of them after 20,000 draws.
    let zoned = group(d, 20_000, &["--distribution", "zoned:100/25,0/75"]);
    assert_eq!(zoned["access"], "4KiB random read zoned:100/25,0/75");
    assert_eq!(zoned["blocks"]["blocks"], 256);
    assert_eq!(zoned["blocks"]["block_bytes"], 4096);
    assert_eq!(touched_pct(&zoned), 25.0);

    let still = group(d, 40_000, &["--working-set", "256k"]);
    assert_eq!(still["access"], "4KiB random read in a 256KiB working set");
    assert_eq!(touched_pct(&still), 25.0);
    // Moving 256 KiB per 10,000 I/Os, it visits the whole file in four moves.
    let moving =
        group(d, 40_000, &["--working-set", "256k", "--working-set-moves", "256k/10000", "--qd", "1"]);
    assert_eq!(touched_pct(&moving), 100.0);
    // Sequential I/O stays in the working set too.
    let sequential = group(d, 1000, &["--rw", "write", "--working-set", "64k", "--qd", "1"]);
    assert_eq!(touched_pct(&sequential), 6.25);
}

#[test]
fn zipf_touches_fewer_blocks_than_uniform_and_repeats_under_its_seed() {
    // A `t` of 64 MiB, laid out by iolab: a run never grows a 1 MiB file it did not make.
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    // 16,384 draws over 16,384 blocks: uniform touches 1 - 1/e of them (63%).
    let sized = ["--size", "64m", "--qd", "1"];
    let uniform = touched_pct(&group(d, 16_384, &sized));
    assert!((60.0..66.0).contains(&uniform), "{uniform}");
    let zipf_args = [&sized[..], &["--distribution", "zipf:1.2"]].concat();
    let zipf = group(d, 16_384, &zipf_args);
    assert_eq!(zipf["access"], "4KiB random read zipf:1.2");
    let skewed = touched_pct(&zipf);
    assert!(skewed < 30.0, "{skewed}");
    assert_eq!(touched_pct(&group(d, 16_384, &zipf_args)), skewed, "the same seed, the same blocks");
}

#[test]
fn bad_skew_is_one_line_with_the_fix() {
    let dir = dir_with_target();
    let d = dir.path();
    for (args, expect) in [
        (&["--distribution", "zipf"][..], "zipf:1.2"),
        (&["--distribution", "zoned:50/50"], "add up to 50%"),
        (&["--working-set-moves", "1m/100"], "add --working-set SIZE"),
        (&["--working-set", "2m"], "larger than the region"),
        (&["--distribution", "zoned:98/98,1/1,1/1", "--working-set", "16k"], "covers no whole block"),
    ] {
        let out = run_in(d, &[&["run", "--engine", "null", "--target", "t", "-q"][..], args].concat());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: expected '{expect}' in {err}");
    }
}
