//! One I/O thread ("lane"): keeps its engine's queue full, times every request, and hands a
//! second's worth of statistics to the collector at each interval boundary.
//!
//! This is the hot path. It reads the clock once per hand-over to the kernel (every request
//! handed over together shares a start time) and once per reap (every request reaped together
//! shares an end time), and touches shared state once per reap; per I/O it only generates the
//! next request and records one histogram value.
//!
//! Words: the user's `--workers` become lanes (`GroupSpec::lanes`: one per worker, or one per
//! outstanding I/O with psync), each a thread with its own engine instance; a lane's `qd` is its
//! share of the user's `--qd`. Below the engine the kernel's words take over (ring entries,
//! submission and completion queues).
//!
//! A lane runs closed loop (each completion makes room for the next I/O) or open loop
//! (`--rate-iops`: each I/O is due at a time of its schedule). The loop is one generic function
//! compiled once per `Pacing`: the closed-loop one carries no schedule, no due times and no
//! deadlines, so without a rate the hot path is what it always was. Open loop issues every I/O
//! that is due while a slot is free; a due I/O that finds none waits in the lane and keeps its
//! scheduled time, so the wait counts in its response time (no coordinated omission). With
//! nothing due the lane waits for a completion or the next due time, whichever comes first.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::Sender;
use std::sync::Mutex;

use iolab_engine::content::ContentConfig;
use iolab_engine::{
    open_engine, stamp, Completion, Engine, EngineConfig, EngineError, IoRequest, Op, Queued, WithEngine,
};
use iolab_spec::{Burst, EngineKind, UringSpec};
use iolab_stats::result::StopReason;
use iolab_stats::{DataSample, IntervalStats, OpStats};

use crate::coverage::Touched;
use crate::poison::lock;
use crate::routing::{RoutedIo, Router};
use crate::schedule::Schedule;
use crate::shared::Shared;

/// Failed requests a lane reports in full; later ones are only counted.
pub const KEPT_ERRORS: usize = 20;

/// What a lane tells the collector.
#[allow(clippy::large_enum_variant)] // `Finished` is sent once per lane and job: boxing saves nothing
pub enum LaneEvent {
    /// Statistics of interval `index` (seconds from the start of measurement; negative during
    /// the ramp), one entry per target of the lane's group. Completions after the end of the
    /// measured window are not in it.
    Interval { lane: usize, index: i64, stats: Vec<IntervalStats> },
    /// A request failed or transferred fewer bytes than asked.
    IoError { lane: usize, target: u16, op: Op, offset: u64, len: u32, result: i32 },
    /// The lane has stopped; `error` when its engine failed, `rate` when it ran open loop;
    /// `touched`: the blocks its I/Os touched, per target of its router; `data`: the sample of
    /// the blocks the lane wrote, measured (`Engine::data_sample`).
    Finished {
        lane: usize,
        error: Option<String>,
        rate: Option<LaneRate>,
        touched: Vec<Touched>,
        data: Option<DataSample>,
        /// Per target of its router: the time inside the window of the I/Os it reaped after it.
        outstanding_ns: Vec<u64>,
    },
}

/// How an open-loop lane kept to its schedule.
pub struct LaneRate {
    /// The schedule as the lane left it, to count what was due in the final measured window.
    pub schedule: Schedule,
    /// The most an I/O issued in the measured window started behind its due time.
    pub max_lag_ns: u64,
    /// How far behind its due time each I/O of the window was taken off the schedule (bytes
    /// not counted).
    pub lags: OpStats,
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
    /// Locked by the lane once per batch while it records; free while the lane waits, so the
    /// watchdog can take a stuck lane's partial interval. Taking it at every pass, even at
    /// batch 1, was measured to cost nothing visible: null engine, QD 1, 6 alternating 3 s runs
    /// per binary, 64.1 ns per I/O with the lock and 67.4 without it (noise is about 5%).
    pub current: Mutex<Option<Interval>>,
}

pub struct LanePlan {
    /// Index of this lane among all the job's lanes.
    pub lane: usize,
    pub engine: EngineKind,
    pub uring: UringSpec,
    /// The I/Os this lane keeps in flight (`GroupSpec::qd_per_lane`).
    pub qd: u32,
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
    /// Open loop: the lane's share of the group's schedule. `None`: closed loop.
    pub schedule: Option<Schedule>,
    /// Closed loop over a finite list (a replay as fast as possible): the I/Os the lane
    /// issues in all. `None`: as many as the window allows.
    pub issue_limit: Option<u64>,
    /// `--verify`: records writes and checks reads (`verify`).
    pub verify: Option<crate::verify::LaneVerify>,
    /// What the lane's writes hold: the group's data settings and seed.
    pub content: ContentConfig,
}

#[derive(Clone, Copy)]
struct SlotInfo<D> {
    target: u16,
    op: Op,
    len: u32,
    offset: u64,
    submitted_ns: u64,
    /// When the slot's previous I/O was reaped (0: it has had none yet): the slot's gap until
    /// this one's hand-over is iolab's own time, in no latency.
    freed_ns: u64,
    /// When the I/O was due (open loop); nothing in closed loop.
    due: D,
}

/// When a lane issues its I/Os.
trait Pacing {
    /// What a slot remembers of its I/O's schedule.
    type Due: Copy + Default;

    /// Whether the next I/O may be issued at `now`.
    fn is_due(&self, now: u64) -> bool;

    /// Takes the next I/O off the schedule as it is queued at `now`.
    fn take(&mut self, now: u64) -> Self::Due;

    /// When the next I/O is due, if it has a time.
    fn next_due(&self) -> Option<u64>;

    /// Waits for a due time this short or shorter spin rather than sleep (0: none do).
    fn spin_ns(&self) -> u64 {
        0
    }

    /// Whether the lane has issued every I/O it ever will (a replay's last).
    fn exhausted(&self) -> bool;

    /// Records what the schedule adds to a completion's statistics.
    fn record(stats: &mut IntervalStats, due: Self::Due, now: u64, len: u32);

    /// Whether I/Os have due times, so the clock is read again after a hand-over in the middle
    /// of issuing (a closed loop does not pay for it).
    const TIMED: bool;
}

/// As fast as the queue allows: always due, nothing to remember or record.
struct ClosedLoop;

impl Pacing for ClosedLoop {
    type Due = ();
    const TIMED: bool = false;

    #[inline(always)]
    fn is_due(&self, _now: u64) -> bool {
        true
    }

    #[inline(always)]
    fn take(&mut self, _now: u64) {}

    #[inline(always)]
    fn next_due(&self) -> Option<u64> {
        None
    }

    #[inline(always)]
    fn exhausted(&self) -> bool {
        false
    }

    #[inline(always)]
    fn record(_stats: &mut IntervalStats, _due: (), _now: u64, _len: u32) {}
}

/// As fast as the queue allows, for a set number of I/Os (a replay at `--speed max`).
struct Bounded {
    left: u64,
}

impl Pacing for Bounded {
    type Due = ();
    const TIMED: bool = false;

    #[inline]
    fn is_due(&self, _now: u64) -> bool {
        self.left > 0
    }

    #[inline]
    fn take(&mut self, _now: u64) {
        self.left -= 1;
    }

    #[inline]
    fn next_due(&self) -> Option<u64> {
        None
    }

    #[inline]
    fn exhausted(&self) -> bool {
        self.left == 0
    }

    #[inline]
    fn record(_stats: &mut IntervalStats, _due: (), _now: u64, _len: u32) {}
}

/// On a schedule: each I/O has a due time; its lag and response time are measured from it.
struct Paced {
    schedule: Schedule,
    /// Waits this short or shorter spin (`Pacing::spin_ns`).
    spin_ns: u64,
    measure_start_ns: u64,
    max_lag_ns: u64,
    lags: OpStats,
}

impl Pacing for Paced {
    type Due = u64;
    const TIMED: bool = true;

    fn spin_ns(&self) -> u64 {
        self.spin_ns
    }

    #[inline]
    fn is_due(&self, now: u64) -> bool {
        self.schedule.next_due_ns() <= now
    }

    #[inline]
    fn take(&mut self, now: u64) -> u64 {
        let due = self.schedule.take();
        if now >= self.measure_start_ns {
            let lag = now.saturating_sub(due);
            self.max_lag_ns = self.max_lag_ns.max(lag);
            self.lags.record(lag, 0);
        }
        due
    }

    /// `None` once a replay's schedule has nothing more: no wait ends at its "next" time.
    #[inline]
    fn next_due(&self) -> Option<u64> {
        Some(self.schedule.next_due_ns()).filter(|&due| due != u64::MAX)
    }

    #[inline]
    fn exhausted(&self) -> bool {
        self.schedule.next_due_ns() == u64::MAX
    }

    #[inline]
    fn record(stats: &mut IntervalStats, due: u64, now: u64, len: u32) {
        stats.response.get_or_insert_with(OpStats::default).record(now.saturating_sub(due), u64::from(len));
    }
}

/// What the lane's engine is made from.
pub fn engine_config(plan: &LanePlan) -> (EngineKind, EngineConfig) {
    let config = EngineConfig {
        files: plan.files.clone(),
        qd: plan.qd,
        max_len: plan.max_len,
        seed: plan.lane as u64 + 1,
        // Every write stamped, unless a benchmark measures what the stamp costs.
        origin: std::env::var_os("IOLAB_UNSTAMPED_WRITES").is_none().then(|| stamp::origin(plan.lane)),
        uring: plan.uring,
        verify: plan.verify.is_some(),
        content: plan.content.clone(),
    };
    (plan.engine, config)
}

/// Opens the lane's engine and hands it to `then` (which owns the lane's plan) to drive as its
/// own type: no virtual call per I/O. Called on the lane's own thread: a ring belongs to its
/// submitter.
pub fn open<W: WithEngine>(engine: (EngineKind, EngineConfig), then: W) -> Result<W::Output, EngineError> {
    open_engine(engine.0, engine.1, then)
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
pub fn run<E: Engine>(
    mut plan: LanePlan,
    mut engine: E,
    shared: &Shared,
    heartbeat: &Heartbeat,
    events: &Sender<LaneEvent>,
) {
    let mut outstanding_ns = vec![0; plan.files.len()];
    let (error, rate) = match plan.schedule.take() {
        None if plan.issue_limit.is_some() => {
            let mut bounded = Bounded { left: plan.issue_limit.unwrap_or(0) };
            let error =
                drive(&mut plan, &mut engine, shared, heartbeat, events, &mut bounded, &mut outstanding_ns);
            (error.err(), None)
        }
        None => {
            let error = drive(
                &mut plan,
                &mut engine,
                shared,
                heartbeat,
                events,
                &mut ClosedLoop,
                &mut outstanding_ns,
            );
            (error.err(), None)
        }
        Some(schedule) => {
            // Sleeps end at due times: without the default 50 us of timer slack the kernel may
            // add, an I/O starts on time rather than up to 50 us late. Best effort.
            let _ = nix::sys::prctl::set_timerslack(1);
            // A replay keeps its trace's times: its waits of up to REPLAY_SPIN_NS spin, so its
            // core never halts between requests (a halted vCPU came back up to ms late).
            let spin_ns = if schedule.is_replay() { REPLAY_SPIN_NS } else { 0 };
            engine.spin_waits_up_to(spin_ns);
            let mut paced = Paced {
                spin_ns,
                schedule,
                measure_start_ns: shared.measure_start_ns,
                max_lag_ns: 0,
                lags: OpStats::default(),
            };
            let error =
                drive(&mut plan, &mut engine, shared, heartbeat, events, &mut paced, &mut outstanding_ns)
                    .err();
            let rate = LaneRate { schedule: paced.schedule, max_lag_ns: paced.max_lag_ns, lags: paced.lags };
            (error, Some(rate))
        }
    };
    if error.is_some() {
        shared.request_stop(StopReason::EngineError, shared.now_ns());
    }
    if let Some(verify) = plan.verify.as_mut() {
        verify.finish();
    }
    heartbeat.in_flight.store(engine.in_flight(), Relaxed);
    shared.await_cpu_snapshot();
    let touched = plan.router.touched();
    // After the CPU snapshot: measuring the sample (zstd) is no part of the run's cost.
    let data = engine.data_sample();
    let _ = events.send(LaneEvent::Finished {
        lane: plan.lane,
        error: error.map(|e| e.to_string()),
        rate,
        touched,
        data,
        outstanding_ns,
    });
}

/// Runs the lane's I/O until the window ends and every I/O in flight is reaped; adds to
/// `outstanding_ns` (per target) the time inside the window of the I/Os reaped after it.
#[allow(clippy::too_many_arguments)] // the lane's own state, lent for the run
fn drive<E: Engine, P: Pacing>(
    plan: &mut LanePlan,
    engine: &mut E,
    shared: &Shared,
    heartbeat: &Heartbeat,
    events: &Sender<LaneEvent>,
    pacer: &mut P,
    outstanding_ns: &mut [u64],
) -> Result<(), EngineError> {
    let depth = plan.qd as usize;
    let targets = plan.files.len();
    let blank = SlotInfo {
        target: 0,
        op: Op::Read,
        len: 0,
        offset: 0,
        submitted_ns: 0,
        freed_ns: 0,
        due: P::Due::default(),
    };
    // Per target: the slot gaps of hand-overs in the measured window not yet in an interval.
    let mut gaps = vec![Gaps::default(); targets];
    // Waits begun in the window with a slot free and I/O due, not yet in an interval.
    let mut waits_with_free_slots = 0;
    let mut slots = vec![blank; depth];
    let mut free: Vec<u32> = (0..plan.qd).rev().collect();
    // Queued requests not yet handed to the kernel.
    let mut batch: Vec<u32> = Vec::with_capacity(depth);
    let mut done: Vec<Completion> = Vec::with_capacity(depth);
    let mut errors_sent = 0;
    let mut busy = false;
    let mut now = shared.now_ns();
    *lock(&heartbeat.current) = Some(Interval::at(now, shared, targets));
    let mut burst_left = plan.burst.map_or(u32::MAX, |b| b.ios);
    let mut finished = false;

    loop {
        let stopping = shared.stopping() || shared.window_over(now);
        if !stopping {
            while burst_left > 0 && pacer.is_due(now) {
                let Some(slot) = free.pop() else { break };
                // A full batch goes to the kernel before the next request is prepared, so the
                // device starts on it at once. Only when there is a next one: the last batch
                // goes with the wait below, in the same system call.
                if batch.len() as u32 >= plan.submit_batch {
                    hand_over(
                        engine, &mut batch, &mut slots, &mut gaps, shared, heartbeat, &mut busy, 0, None,
                    )?;
                    if P::TIMED {
                        // I/Os that fell due during the hand-over go now, and their lag is true.
                        now = shared.now_ns();
                    }
                }
                let RoutedIo { target, io: next } = plan.router.next_io();
                let request =
                    IoRequest { slot, op: next.op, file: target, offset: next.offset, len: next.len };
                if engine.queue(request) == Queued::Busy {
                    plan.router.put_back();
                    free.push(slot);
                    break;
                }
                if let Some(verify) = plan.verify.as_mut() {
                    verify.queued(slot, target, next.op == Op::Write, next.offset, next.len);
                }
                let due = pacer.take(now);
                let freed_ns = slots[slot as usize].freed_ns;
                slots[slot as usize] = SlotInfo {
                    target,
                    op: next.op,
                    len: next.len,
                    offset: next.offset,
                    submitted_ns: 0,
                    freed_ns,
                    due,
                };
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
            if pacer.exhausted() {
                // A replay's lane has issued and reaped its last I/O: it waits for the job to
                // end (the last such lane ends it), counted once.
                if !finished {
                    finished = true;
                    shared.finite_lane_done(shared.now_ns());
                }
                idle_until(shared, u64::MAX);
                now = shared.now_ns();
                continue;
            }
            // A burst is complete: idle, then start the next one.
            if let Some(burst) = plan.burst {
                idle_until(shared, shared.now_ns().saturating_add(burst.idle.0));
                burst_left = burst.ios;
            } else if let Some(due) = pacer.next_due() {
                // Open loop with nothing in flight: sleep until the next I/O is due (spin, for a
                // near one of a replay).
                if due.saturating_sub(shared.now_ns()) <= pacer.spin_ns() {
                    spin_until(shared, due);
                } else {
                    idle_until(shared, due);
                }
            }
            now = shared.now_ns();
            continue;
        }
        let wait_for = plan.complete_batch.min(engine.in_flight());
        // Open loop with the next I/O not due yet: its due time ends the wait if no completion
        // does first. A due I/O that found no free slot waits for a completion, as closed loop.
        let deadline = pacer.next_due().filter(|&due| due > now && !stopping);
        if !stopping
            && burst_left > 0
            && !free.is_empty()
            && pacer.is_due(now)
            && now >= shared.measure_start_ns
        {
            waits_with_free_slots += 1;
        }
        hand_over(
            engine, &mut batch, &mut slots, &mut gaps, shared, heartbeat, &mut busy, wait_for, deadline,
        )?;
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
        let in_window = !shared.window_over(now);
        let measured = in_window && now >= shared.measure_start_ns;
        let (mut batch_ios, mut batch_bytes) = (0u64, 0u64);
        for (stats, gap) in interval.stats.iter_mut().zip(gaps.iter_mut()) {
            stats.gap_ns += std::mem::take(&mut gap.ns);
            stats.gaps += std::mem::take(&mut gap.count);
        }
        // The lane's, counted with its first target.
        interval.stats[0].waits_with_free_slots += std::mem::take(&mut waits_with_free_slots);
        for completion in done.drain(..) {
            let info = slots[completion.slot as usize];
            slots[completion.slot as usize].freed_ns = now;
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
            if let Some(verify) = plan.verify.as_mut() {
                let write = info.op == Op::Write;
                let data = engine.data(completion.slot, info.len);
                verify.completed(completion.slot, info.target, write, info.offset, info.len, data);
            }
            if !in_window {
                // Handed over before the window ended and reaped after it: no result, but its
                // time inside the window is part of what the slots held (Little's law).
                let end = shared.window_end_ns();
                if info.submitted_ns < end && end > shared.measure_start_ns {
                    outstanding_ns[info.target as usize] +=
                        end - info.submitted_ns.max(shared.measure_start_ns);
                }
                continue;
            }
            let latency = now.saturating_sub(info.submitted_ns);
            let stats = &mut interval.stats[info.target as usize];
            if measured {
                stats.before_window_ns += shared.measure_start_ns.saturating_sub(info.submitted_ns);
            }
            match info.op {
                Op::Read => stats.read.record(latency, u64::from(info.len)),
                Op::Write => stats.write.record(latency, u64::from(info.len)),
            }
            P::record(stats, info.due, now, info.len);
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
/// `wait_for` completions, or until `deadline` if one is given: latency runs from here to the
/// reap. The heartbeat is published first, because a synchronous engine does the I/O inside the
/// commit and a stuck device never returns.
#[allow(clippy::too_many_arguments)] // the lane's own state, lent for one call
#[inline]
fn hand_over<E: Engine, D>(
    engine: &mut E,
    batch: &mut Vec<u32>,
    slots: &mut [SlotInfo<D>],
    gaps: &mut [Gaps],
    shared: &Shared,
    heartbeat: &Heartbeat,
    busy: &mut bool,
    wait_for: u32,
    deadline: Option<u64>,
) -> Result<(), EngineError> {
    heartbeat.in_flight.store(engine.in_flight(), Relaxed);
    // Read last, so that the lane's own bookkeeping is not part of the latencies.
    let now = shared.now_ns();
    let measured = now >= shared.measure_start_ns && now < shared.window_end_ns();
    for &slot in batch.iter() {
        let info = &mut slots[slot as usize];
        info.submitted_ns = now;
        if measured && info.freed_ns > 0 {
            let gap = &mut gaps[info.target as usize];
            gap.ns += now.saturating_sub(info.freed_ns);
            gap.count += 1;
        }
    }
    batch.clear();
    if !*busy {
        // The watchdog measures a wait from when the lane last had nothing outstanding.
        *busy = true;
        heartbeat.last_progress_ns.store(now, Relaxed);
    }
    match deadline {
        None => engine.commit(wait_for),
        Some(deadline) => engine.commit_until(wait_for, deadline.saturating_sub(now)),
    }
}

/// Slot time between a reap and the next hand-over, summed, for one target.
#[derive(Clone, Copy, Default)]
struct Gaps {
    ns: u64,
    count: u64,
}

/// A replay's waits for its next request up to this long spin instead of sleeping: long
/// enough for the gaps of a busy trace, short enough that an idle one does not hold a core.
const REPLAY_SPIN_NS: u64 = 2_000_000;

/// Watches the clock until `until` or a stop, never sleeping: a replay's next request is near.
fn spin_until(shared: &Shared, until: u64) {
    let until = until.min(shared.window_end_ns());
    while shared.now_ns() < until && !shared.stopping() {
        std::hint::spin_loop();
    }
}

/// Sleeps until `until` (between bursts, or until an open-loop lane's next I/O is due) in
/// short steps, so a stop request is seen within 100 ms, and never past the end of the measured
/// window.
fn idle_until(shared: &Shared, until: u64) {
    let until = until.min(shared.window_end_ns());
    loop {
        let now = shared.now_ns();
        if now >= until || shared.stopping() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_nanos((until - now).min(100_000_000)));
    }
}
