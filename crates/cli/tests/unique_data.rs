//! Data no device can fake: every 4 KiB block iolab writes, by a workload or by laying out a
//! file, differs from every other, so a deduplicating or compressing device sees real data.

mod common;

use std::collections::HashSet;
use std::path::Path;

use common::{run_in, stderr};

const BLOCK: usize = 4096;

/// The file's 4 KiB blocks: how many, how many distinct, and how many a workload wrote (its
/// stamp names the block's own offset at bytes 24..32).
fn blocks(path: &Path) -> (usize, usize, usize) {
    let data = std::fs::read(path).expect("read the target back");
    let mut seen = HashSet::new();
    let mut written = 0;
    for (i, block) in data.chunks(BLOCK).enumerate() {
        seen.insert(block.to_vec());
        let at = u64::from_le_bytes(block[24..32].try_into().expect("8 bytes"));
        if at == (i * BLOCK) as u64 {
            written += 1;
        }
    }
    (data.len() / BLOCK, seen.len(), written)
}

fn dir() -> tempfile::TempDir {
    // O_DIRECT needs a real filesystem; /var/tmp is on the root disk here.
    tempfile::tempdir_in("/var/tmp").expect("temp dir")
}

/// Runs `args` on the target `t` of a new directory (64 MiB, laid out by iolab), keeping
/// nothing, and returns the target's blocks as `blocks` counts them.
fn run_on_t(args: &[&str]) -> (usize, usize, usize) {
    let dir = dir();
    let common = ["--target", "t", "--size", "64m", "--ramp", "0", "--no-store", "-q"];
    let out = run_in(dir.path(), &[&["run"][..], &common, args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    blocks(&dir.path().join("t"))
}

#[test]
fn every_block_a_random_write_workload_sends_is_distinct() {
    // 2,048 writes, however busy the machine: an I/O limit, not a time, ends the run.
    let (total, distinct, written) =
        run_on_t(&["--rw", "randwrite", "--qd", "32", "--io-limit", "8m", "--runtime", "60s"]);
    assert_eq!(total, 16_384);
    assert!(distinct as f64 >= 0.999 * total as f64, "{distinct} of {total} blocks distinct");
    // 32 slots of constant buffers would give at most 32 distinct written blocks; 2,048 random
    // writes land on about 1,925 blocks.
    assert!(written > 1_000, "only {written} blocks carry a workload's stamp");
}

#[test]
fn a_sequential_write_of_the_whole_file_leaves_no_two_blocks_alike() {
    let (total, distinct, written) =
        run_on_t(&["--rw", "write", "--bs", "128k", "--qd", "8", "--io-limit", "64m", "--runtime", "60s"]);
    assert_eq!((written, distinct), (total, total), "every block written once, each one different");
}

#[test]
fn a_laid_out_file_has_no_two_blocks_alike() {
    let (total, distinct, _) = run_on_t(&["--rw", "randread", "--runtime", "100ms"]);
    assert_eq!(distinct, total, "{distinct} of {total} laid-out blocks distinct");
}
