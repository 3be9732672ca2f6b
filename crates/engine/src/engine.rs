//! The engine trait and the request/completion types that cross it.

use std::os::fd::RawFd;

use iolab_spec::UringSpec;

use crate::error::EngineError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}

/// One I/O. `slot` names the buffer and identifies the request until its completion is reaped;
/// the caller must not queue a slot again before that.
#[derive(Debug, Clone, Copy)]
pub struct IoRequest {
    pub slot: u32,
    pub op: Op,
    /// Index into `EngineConfig::files`.
    pub file: u16,
    pub offset: u64,
    pub len: u32,
}

/// A finished request: `result` is the byte count transferred, or `-errno`.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub slot: u32,
    pub result: i32,
}

/// The answer to `queue`: a full submission queue is an answer, not an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queued {
    Accepted,
    /// Commit (and reap) first, then queue again.
    Busy,
}

pub trait Engine: Send {
    /// Adds a request to the next commit.
    fn queue(&mut self, request: IoRequest) -> Queued;

    /// Hands the queued requests to the kernel and blocks until at least `wait_for` requests
    /// (queued now or earlier) have completed.
    fn commit(&mut self, wait_for: u32) -> Result<(), EngineError>;

    /// As `commit`, but the wait ends after `timeout_ns` even if fewer than `wait_for` requests
    /// have completed (returning then is not an error; `reap` may find nothing). An open-loop
    /// lane waits this way for a completion or its next scheduled I/O, whichever comes first.
    /// An engine that finishes every request inside the commit never waits, so never times out.
    fn commit_until(&mut self, wait_for: u32, timeout_ns: u64) -> Result<(), EngineError>;

    /// From now on, a `commit_until` of `ns` or less watches the completion queue and the clock
    /// from user space instead of sleeping in the kernel: a lane that must start I/Os on time
    /// (a replay) keeps its core awake, where a sleep on a core that halts when idle ends late
    /// by the wake-up. An engine that does not wait (psync) or cannot watch its queue (aio)
    /// ignores it.
    fn spin_waits_up_to(&mut self, ns: u64) {
        let _ = ns;
    }

    /// Moves finished requests into `out` without blocking.
    fn reap(&mut self, out: &mut Vec<Completion>);

    /// Requests handed over and not yet reaped.
    fn in_flight(&self) -> u32;

    /// The features this instance runs with, as the kernel granted them (e.g. "defer_taskrun",
    /// "fixed_buffers"), for the report: a result must say how it was obtained.
    fn setup(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// The bytes of a reaped request of `slot` (`len` of them), for `--verify` to record what a
    /// write sent and check what a read brought; `None` from an engine that moves no bytes.
    fn data(&self, _slot: u32, _len: u32) -> Option<&[u8]> {
        None
    }

    /// The sample of the blocks this instance wrote, measured (`content::Content::measure`):
    /// the achieved dedupe and compression ratios. `None` for an engine that sends nothing.
    fn data_sample(&self) -> Option<iolab_stats::DataSample> {
        None
    }
}

/// What an engine instance needs: its files, how many requests it may hold, the largest request.
pub struct EngineConfig {
    pub files: Vec<RawFd>,
    /// The requests this instance holds at once: its lane's share of the group's `--qd`. Inside
    /// each engine the kernel's words take over: io_uring's ring `entries` (this, rounded up to
    /// a power of two) and aio's `nr_events`.
    pub qd: u32,
    pub max_len: u32,
    /// Seeds the buffers' pseudo-random content, so no two threads write the same data.
    pub seed: u64,
    /// Names this writer in the stamp of every sector it writes (`stamp::origin`), so no two
    /// sectors of a run are equal; `None` sends the buffers unstamped (benchmarks only).
    pub origin: Option<u64>,
    /// io_uring's tuning; other engines ignore it.
    pub uring: UringSpec,
    /// `--verify`: every write also carries its blocks' checksums (`blockcheck`).
    pub verify: bool,
    /// What the writes' blocks hold (`--dedupe-pct`, `--compress-pct`, `--buffer-pattern`).
    pub content: crate::content::ContentConfig,
}
