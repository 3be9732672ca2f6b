//! One I/O thread ("lane"): keeps its engine's queue full, times every request, and hands a
//! second's worth of statistics to the collector at each interval boundary.
//!
//! This is the hot path. It reads the clock once per hand-over to the kernel (every request
//! handed over together shares a start time) and once per reap (every request reaped together
//! shares an end time), and touches shared state once per reap; per I/O it only generates the
//! next request and records one histogram value.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::Sender;
use std::sync::Mutex;

use iolab_engine::{open_engine, Completion, Engine, EngineConfig, EngineError, IoRequest, Op, Queued};
use iolab_spec::{Burst, EngineKind, UringSpec};
use iolab_stats::result::StopReason;
use iolab_stats::IntervalStats;

use crate::routing::{RoutedIo, Router};
use crate::shared::Shared;

/// Failed requests a lane reports in full; later ones are only counted.
pub const KEPT_ERRORS: usize = 20;

/// What a lane tells the collector.
pub enum LaneEvent {
    /// Statistics of interval `index` (seconds from the start of measurement; negative during
    /// the ramp), one entry per target of the lane's group. Completions after the end of the
    /// measured window are not in it.
    Interval { lane: usize, index: i64, stats: Vec<IntervalStats> },
    /// A request failed or transferred fewer bytes than asked.
    IoError { lane: usize, target: u16, op: Op, offset: u64, len: u32, result: i32 },
    /// The lane has stopped; `error` when its engine failed.
    Finished { lane: usize, error: Option<String> },
}

/// Published by a lane once per batch so the watchdog can tell a stuck request, and the
/// statistics of the lane's current interval, which the collector takes from a lane stuck in
/// the kernel so that the I/Os it completed before are not lost.
#[derive(Default)]
#[repr(align(128))] // one per lane, written every batch: no two lanes share a cache line
pub struct Heartbeat {
    pub last_progress_ns: AtomicU64,
    pub in_flight: AtomicU32,
    /// Requests that failed or came back short.
    pub errors: AtomicU64,
    /// Locked by the lane once per batch while it records; free while the lane waits.
    pub current: Mutex<Option<Interval>>,
}

pub struct LanePlan {
    /// Index of this lane among all the job's lanes.
    pub lane: usize,
    pub engine: EngineKind,
    pub uring: UringSpec,
    pub depth: u32,
    /// The group's targets, in the order the router numbers them.
    pub files: Vec<RawFd>,
    pub max_len: u32,
    pub router: Router,
    pub burst: Option<Burst>,
    /// Queued requests handed to the kernel at a time.
    pub submit_batch: u32,
    /// Completions waited for per commit, at most.
    pub complete_batch: u32,
    /// The CPU this lane's thread is pinned to.
    pub cpu: Option<u32>,
}

#[derive(Clone, Copy)]
struct SlotInfo {
    target: u16,
    op: Op,
    len: u32,
    offset: u64,
    submitted_ns: u64,
}

/// Opens the lane's engine. Called on the lane's own thread: a ring belongs to its submitter.
pub fn open(plan: &LanePlan) -> Result<Box<dyn Engine>, EngineError> {
    open_engine(
        plan.engine,
        EngineConfig {
            files: plan.files.clone(),
            depth: plan.depth,
            max_len: plan.max_len,
            seed: plan.lane as u64 + 1,
            uring: plan.uring,
        },
    )
}

pub struct Interval {
    pub index: i64,
    next_boundary_ns: u64,
    /// One per target of the lane's group.
    pub stats: Vec<IntervalStats>,
}

impl Interval {
    fn at(now_ns: u64, shared: &Shared, targets: usize) -> Self {
        let (start, length) = (shared.measure_start_ns as i64, shared.interval_ns as i64);
        let index = (now_ns as i64 - start).div_euclid(length);
        let next_boundary_ns = (start + (index + 1) * length).max(0) as u64;
        Interval { index, next_boundary_ns, stats: vec![IntervalStats::default(); targets] }
    }
}

/// Runs the lane until the job stops; always ends with `Finished`.
pub fn run(
    mut plan: LanePlan,
    mut engine: Box<dyn Engine>,
    shared: &Shared,
    heartbeat: &Heartbeat,
    events: &Sender<LaneEvent>,
) {
    let error = drive(&mut plan, engine.as_mut(), shared, heartbeat, events).err();
    if error.is_some() {
        shared.request_stop(StopReason::EngineError, shared.now_ns());
    }
    heartbeat.in_flight.store(engine.in_flight(), Relaxed);
    shared.await_cpu_snapshot();
    let _ = events.send(LaneEvent::Finished { lane: plan.lane, error: error.map(|e| e.to_string()) });
}

fn drive(
    plan: &mut LanePlan,
    engine: &mut dyn Engine,
    shared: &Shared,
    heartbeat: &Heartbeat,
    events: &Sender<LaneEvent>,
) -> Result<(), EngineError> {
    let depth = plan.depth as usize;
    let targets = plan.files.len();
    let mut slots = vec![SlotInfo { target: 0, op: Op::Read, len: 0, offset: 0, submitted_ns: 0 }; depth];
    let mut free: Vec<u32> = (0..plan.depth).rev().collect();
    // Queued requests not yet handed to the kernel.
    let mut batch: Vec<u32> = Vec::with_capacity(depth);
    let mut done: Vec<Completion> = Vec::with_capacity(depth);
    let mut errors_sent = 0;
    let mut busy = false;
    let mut now = shared.now_ns();
    *lock(&heartbeat.current) = Some(Interval::at(now, shared, targets));
    let mut burst_left = plan.burst.map_or(u32::MAX, |b| b.ios);

    loop {
        let stopping = shared.stopping() || now >= shared.window_end_ns();
        if !stopping {
            while burst_left > 0 {
                // A full batch goes to the kernel before the next request is prepared, so the
                // device starts on it at once.
                if batch.len() as u32 >= plan.submit_batch {
                    hand_over(engine, &mut batch, &mut slots, shared, heartbeat, &mut busy, 0)?;
                }
                let Some(slot) = free.pop() else { break };
                let RoutedIo { target, io: next } = plan.router.next_io();
                let request =
                    IoRequest { slot, op: next.op, file: target, offset: next.offset, len: next.len };
                if engine.queue(request) == Queued::Busy {
                    free.push(slot);
                    break;
                }
                slots[slot as usize] =
                    SlotInfo { target, op: next.op, len: next.len, offset: next.offset, submitted_ns: 0 };
                batch.push(slot);
                if plan.burst.is_some() {
                    burst_left -= 1;
                }
            }
        }
        if engine.in_flight() == 0 {
            heartbeat.in_flight.store(0, Relaxed);
            busy = false;
            if stopping {
                break;
            }
            // A burst is complete: idle, then start the next one.
            if let Some(burst) = plan.burst {
                idle(shared, burst.idle.0);
                burst_left = burst.ios;
            }
            now = shared.now_ns();
            continue;
        }
        let wait_for = plan.complete_batch.min(engine.in_flight());
        hand_over(engine, &mut batch, &mut slots, shared, heartbeat, &mut busy, wait_for)?;
        // The wait has returned: that is when the completions are known, before reaping them.
        now = shared.now_ns();
        engine.reap(&mut done);
        heartbeat.last_progress_ns.store(now, Relaxed);

        let mut current = lock(&heartbeat.current);
        let Some(interval) = current.as_mut() else { break };
        if now >= interval.next_boundary_ns {
            let finished = std::mem::replace(interval, Interval::at(now, shared, targets));
            let _ = events.send(LaneEvent::Interval {
                lane: plan.lane,
                index: finished.index,
                stats: finished.stats,
            });
        }
        // Completions after the window (the drain at the end, or after a stop) are not results.
        let window_end = shared.window_end_ns();
        let in_window = now < window_end;
        let measured = in_window && now >= shared.measure_start_ns;
        let (mut batch_ios, mut batch_bytes) = (0u64, 0u64);
        for completion in done.drain(..) {
            let info = slots[completion.slot as usize];
            free.push(completion.slot);
            if completion.result != info.len as i32 {
                heartbeat.errors.fetch_add(1, Relaxed);
                if errors_sent < KEPT_ERRORS {
                    errors_sent += 1;
                    let _ = events.send(LaneEvent::IoError {
                        lane: plan.lane,
                        target: info.target,
                        op: info.op,
                        offset: info.offset,
                        len: info.len,
                        result: completion.result,
                    });
                }
                if !shared.continue_on_error {
                    shared.request_stop(StopReason::IoError, now);
                }
                continue;
            }
            if !in_window {
                continue;
            }
            let latency = now.saturating_sub(info.submitted_ns);
            let stats = &mut interval.stats[info.target as usize];
            match info.op {
                Op::Read => stats.read.record(latency, u64::from(info.len)),
                Op::Write => stats.write.record(latency, u64::from(info.len)),
            }
            if measured {
                batch_ios += 1;
                batch_bytes += u64::from(info.len);
            }
        }
        drop(current);
        if batch_ios > 0 {
            shared.count_measured(batch_ios, batch_bytes, now);
        }
    }
    if let Some(last) = lock(&heartbeat.current).take() {
        let _ = events.send(LaneEvent::Interval { lane: plan.lane, index: last.index, stats: last.stats });
    }
    Ok(())
}

/// Stamps the queued requests with the time they are handed over and commits them, waiting for
/// `wait_for` completions: latency runs from here to the reap. The heartbeat is published first,
/// because a synchronous engine does the I/O inside the commit and a stuck device never returns.
fn hand_over(
    engine: &mut dyn Engine,
    batch: &mut Vec<u32>,
    slots: &mut [SlotInfo],
    shared: &Shared,
    heartbeat: &Heartbeat,
    busy: &mut bool,
    wait_for: u32,
) -> Result<(), EngineError> {
    let now = shared.now_ns();
    for &slot in batch.iter() {
        slots[slot as usize].submitted_ns = now;
    }
    batch.clear();
    if !*busy {
        // The watchdog measures a wait from when the lane last had nothing outstanding.
        *busy = true;
        heartbeat.last_progress_ns.store(now, Relaxed);
    }
    heartbeat.in_flight.store(engine.in_flight(), Relaxed);
    engine.commit(wait_for)
}

/// A poisoned lock only means another thread panicked while recording; the counts are intact.
pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sleeps between bursts in short steps, so a stop request is seen within 100 ms, and never
/// past the end of the measured window.
fn idle(shared: &Shared, ns: u64) {
    let until = shared.now_ns().saturating_add(ns).min(shared.window_end_ns());
    loop {
        let now = shared.now_ns();
        if now >= until || shared.stopping() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_nanos((until - now).min(100_000_000)));
    }
}
