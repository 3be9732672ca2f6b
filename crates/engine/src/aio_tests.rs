//! Tests of the Linux AIO engine on O_DIRECT files: reads and writes through it, several in
//! flight, a bad file that fails only its own request.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

use iolab_spec::UringSpec;

use super::*;

const BLOCK: u32 = 4096;

/// A file of `blocks` known blocks (block `i` filled with byte `i + 1`) on a real filesystem,
/// opened with O_DIRECT; `None` (test skipped) where O_DIRECT is refused.
fn direct_file(blocks: u8) -> Option<(tempfile::NamedTempFile, File)> {
    let mut temp = tempfile::Builder::new().prefix("iolab-aio").tempfile_in("/var/tmp").unwrap();
    for i in 0..blocks {
        temp.write_all(&[i + 1; BLOCK as usize]).unwrap();
    }
    temp.as_file().sync_all().unwrap();
    match OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(temp.path()) {
        Ok(file) => Some((temp, file)),
        Err(e) => {
            iolab_test_support::skip!(iolab_test_support::Missing::Other, "/var/tmp refuses O_DIRECT ({e})");
            None
        }
    }
}

fn engine(fd: RawFd, depth: u32) -> AioEngine {
    let config = EngineConfig {
        files: vec![fd],
        qd: depth,
        max_len: BLOCK,
        seed: 7,
        origin: None,
        content: Default::default(),
        uring: UringSpec::default(),
        verify: false,
    };
    AioEngine::new(config).unwrap()
}

fn read(slot: u32, offset: u64) -> IoRequest {
    IoRequest { slot, op: Op::Read, file: 0, offset, len: BLOCK }
}

fn slot_bytes(engine: &AioEngine, slot: u32) -> &[u8] {
    let ptr = engine.buffers.as_ref().unwrap().span(slot, BLOCK);
    // SAFETY: the slot's buffer holds at least BLOCK bytes and no request is in flight.
    unsafe { std::slice::from_raw_parts(ptr, BLOCK as usize) }
}

/// Commits, waits for `n` completions and reaps them all.
fn run(engine: &mut AioEngine, n: u32) -> Vec<Completion> {
    engine.commit(n).unwrap();
    let mut out = Vec::new();
    engine.reap(&mut out);
    while (out.len() as u32) < n {
        engine.commit(1).unwrap();
        engine.reap(&mut out);
    }
    out
}

#[test]
fn reads_what_was_written() {
    let Some((_temp, file)) = direct_file(4) else { return };
    let mut engine = engine(file.as_raw_fd(), 2);
    assert_eq!(engine.queue(read(1, 2 * u64::from(BLOCK))), Queued::Accepted);
    let done = run(&mut engine, 1);
    assert_eq!((done[0].slot, done[0].result), (1, BLOCK as i32));
    assert!(slot_bytes(&engine, 1).iter().all(|&b| b == 3));
    assert_eq!(engine.in_flight(), 0);
}

#[test]
fn writes_then_reads_back_through_the_engine() {
    let Some((_temp, file)) = direct_file(2) else { return };
    let mut engine = engine(file.as_raw_fd(), 2);
    let written = slot_bytes(&engine, 0).to_vec();
    let write = IoRequest { slot: 0, op: Op::Write, file: 0, offset: u64::from(BLOCK), len: BLOCK };
    assert_eq!(engine.queue(write), Queued::Accepted);
    assert_eq!(run(&mut engine, 1)[0].result, BLOCK as i32);
    engine.queue(read(1, u64::from(BLOCK)));
    assert_eq!(run(&mut engine, 1)[0].result, BLOCK as i32);
    assert_eq!(slot_bytes(&engine, 1), &written[..]);
}

#[test]
fn eight_reads_at_once() {
    let Some((_temp, file)) = direct_file(8) else { return };
    let mut engine = engine(file.as_raw_fd(), 8);
    for slot in 0..8 {
        assert_eq!(engine.queue(read(slot, u64::from(slot * BLOCK))), Queued::Accepted);
    }
    assert_eq!(engine.queue(read(0, 0)), Queued::Busy);
    assert_eq!(engine.in_flight(), 8);
    let mut done = run(&mut engine, 8);
    done.sort_by_key(|c| c.slot);
    assert!(done.iter().all(|c| c.result == BLOCK as i32), "{done:?}");
    assert_eq!(done.iter().map(|c| c.slot).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    for slot in 0..8 {
        assert!(slot_bytes(&engine, slot).iter().all(|&b| u32::from(b) == slot + 1));
    }
    assert_eq!(engine.in_flight(), 0);
}

#[test]
fn read_past_the_end_is_short() {
    let Some((_temp, file)) = direct_file(1) else { return };
    let mut engine = engine(file.as_raw_fd(), 1);
    engine.queue(read(0, 16 * u64::from(BLOCK)));
    assert_eq!(run(&mut engine, 1)[0].result, 0);
}

#[test]
fn a_bad_fd_fails_that_request_only() {
    let Some((_temp, file)) = direct_file(1) else { return };
    let config = EngineConfig {
        files: vec![file.as_raw_fd(), -1],
        qd: 3,
        max_len: BLOCK,
        seed: 7,
        origin: None,
        content: Default::default(),
        uring: UringSpec::default(),
        verify: false,
    };
    let mut engine = AioEngine::new(config).unwrap();
    engine.queue(read(0, 0));
    engine.queue(IoRequest { file: 1, ..read(1, 0) });
    engine.queue(read(2, 0));
    let mut done = run(&mut engine, 3);
    done.sort_by_key(|c| c.slot);
    let results: Vec<i32> = done.iter().map(|c| c.result).collect();
    assert_eq!(results, [BLOCK as i32, -libc::EBADF, BLOCK as i32]);
}

#[test]
fn commit_until_returns_with_the_completion_well_before_the_timeout() {
    let Some((_temp, file)) = direct_file(2) else { return };
    let mut engine = engine(file.as_raw_fd(), 2);
    let start = std::time::Instant::now();
    engine.commit_until(1, 5_000_000_000).unwrap();
    assert!(start.elapsed() < std::time::Duration::from_secs(1), "nothing in flight: no wait");
    engine.queue(read(0, 0));
    let mut out = Vec::new();
    while out.is_empty() && start.elapsed() < std::time::Duration::from_secs(5) {
        engine.commit_until(1, 5_000_000_000).unwrap();
        engine.reap(&mut out);
    }
    assert!(start.elapsed() < std::time::Duration::from_secs(4), "a completion ends the wait");
    assert_eq!((out.len(), out[0].result), (1, BLOCK as i32));
}

#[test]
fn commit_without_wait_does_not_block_and_reap_finds_completions() {
    let Some((_temp, file)) = direct_file(2) else { return };
    let mut engine = engine(file.as_raw_fd(), 2);
    engine.queue(read(0, 0));
    engine.queue(read(1, u64::from(BLOCK)));
    engine.commit(0).unwrap();
    let mut out = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while out.len() < 2 && std::time::Instant::now() < deadline {
        engine.reap(&mut out);
    }
    assert_eq!(out.len(), 2);
    assert_eq!(engine.in_flight(), 0);
    assert_eq!(engine.setup(), ["o_direct"]);
}
