//! State shared by the threads of one job: the clock base, the measured window, the stop
//! request, and the I/O-limit counters. Lanes read it once per batch, never per I/O.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::OnceLock;

use iolab_spec::IoLimit;
use iolab_stats::result::StopReason;

/// How often the collector reads per-thread CPU.
pub const CPU_SAMPLE_NS: u64 = 1_000_000_000;

pub struct Shared {
    /// The job's clock: the CPU's time-stamp counter where it is invariant (quanta calibrates it
    /// against CLOCK_MONOTONIC), else the monotonic clock. Every I/O reads it twice, and in a
    /// VM the counter costs a fraction of clock_gettime: less of iolab inside each latency.
    clock: quanta::Clock,
    /// The clock's raw reading when the job started: time 0 of every `*_ns` here.
    base: u64,
    /// Nanoseconds after `base` when the measured phase starts (the ramp ends).
    pub measure_start_ns: u64,
    /// Length of one interval of the series (normally one second).
    pub interval_ns: u64,
    /// End of the measured window: the planned end, or earlier when the job is stopped, or
    /// later while no I/O has completed in it (`window_over`).
    window_end_ns: AtomicU64,
    /// The window's length as asked.
    runtime_ns: u64,
    /// Some I/O completed in the measured window.
    measured_any: AtomicBool,
    stop: AtomicBool,
    reason: AtomicU8,
    io_limit: Option<IoLimit>,
    measured_ios: AtomicU64,
    measured_bytes: AtomicU64,
    pub continue_on_error: bool,
    /// Set once the collector has taken the CPU snapshots at the end of the window.
    cpu_snapshot_taken: AtomicBool,
    /// Lanes with a finite list of I/Os (a replay's) that have not issued and reaped all of
    /// them yet; the last to finish ends the job.
    finite_lanes_left: AtomicU32,
}

/// The clock every job of this process runs on, calibrated by its first job. Calibration spins
/// on the OS clock until its estimate settles (milliseconds of CPU, at most 200 ms); an
/// invariant counter's rate does not change, so once is enough, and a sweep's points do not
/// each pay for it.
pub fn job_clock() -> quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new).clone()
}

/// How far past its planned end a window that has seen no completion is extended at most.
const MAX_EMPTY_EXTENSION_NS: u64 = 30_000_000_000;

/// The longest a finished lane waits for the end-of-window CPU snapshot.
const SNAPSHOT_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

const REASONS: [StopReason; 6] = [
    StopReason::Runtime,
    StopReason::IoLimit,
    StopReason::Interrupted,
    StopReason::IoError,
    StopReason::StuckIo,
    StopReason::EngineError,
];

impl Shared {
    /// Starts the job's clock now.
    pub fn new(
        clock: quanta::Clock,
        ramp_ns: u64,
        runtime_ns: u64,
        interval_ns: u64,
        io_limit: Option<IoLimit>,
        continue_on_error: bool,
    ) -> Self {
        Shared {
            base: clock.raw(),
            clock,
            measure_start_ns: ramp_ns,
            interval_ns,
            window_end_ns: AtomicU64::new(ramp_ns + runtime_ns),
            runtime_ns,
            measured_any: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            reason: AtomicU8::new(0),
            io_limit,
            measured_ios: AtomicU64::new(0),
            measured_bytes: AtomicU64::new(0),
            continue_on_error,
            cpu_snapshot_taken: AtomicBool::new(false),
            finite_lanes_left: AtomicU32::new(0),
        }
    }

    /// `lanes` of the job's lanes issue a finite list of I/Os (a replay): when the last of
    /// them has reaped its last I/O, the job ends, as with an I/O limit.
    pub fn with_finite_lanes(self, lanes: u32) -> Self {
        self.finite_lanes_left.store(lanes, Relaxed);
        self
    }

    /// A lane with a finite list has issued and reaped all of it at `now_ns`.
    pub fn finite_lane_done(&self, now_ns: u64) {
        if self.finite_lanes_left.fetch_sub(1, Relaxed) == 1 {
            self.request_stop(StopReason::IoLimit, now_ns + 1);
        }
    }

    /// The collector has read the CPU of every thread at the end of the window.
    pub fn mark_cpu_snapshot(&self) {
        self.cpu_snapshot_taken.store(true, Relaxed);
    }

    /// Called by a lane that has finished, before its thread (and its ring's SQPOLL thread)
    /// exits: /proc forgets an exited thread's CPU, so the per-thread figures of the window
    /// need every thread alive when they are read. Bounded, in case the collector is held up.
    pub fn await_cpu_snapshot(&self) {
        let deadline = std::time::Instant::now() + SNAPSHOT_WAIT;
        while !self.cpu_snapshot_taken.load(Relaxed) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.clock.delta_as_nanos(self.base, self.clock.raw())
    }

    #[inline]
    pub fn window_end_ns(&self) -> u64 {
        self.window_end_ns.load(Relaxed)
    }

    /// Whether the measured window is over at `now`. A window that ends with no I/O completed in
    /// it measured nothing (the device took longer than the window to answer: a 100 ms window
    /// over a disk another load keeps at 140 ms per request): it is extended by its own length
    /// instead, up to `MAX_EMPTY_EXTENSION_NS` past its planned end, until it holds completions.
    /// Lanes and the collector all ask here, so they agree on where it ends.
    #[inline]
    pub fn window_over(&self, now: u64) -> bool {
        let end = self.window_end_ns();
        if now < end {
            return false;
        }
        let planned_end = self.measure_start_ns.saturating_add(self.runtime_ns);
        if self.stopping()
            || self.measured_any.load(Relaxed)
            || self.runtime_ns == 0
            || end >= planned_end.saturating_add(MAX_EMPTY_EXTENSION_NS)
        {
            return true;
        }
        // Whoever comes first extends it; a stop request (which only ever ends it earlier) wins.
        let extended = end.saturating_add(self.runtime_ns).max(now.saturating_add(1));
        let _ = self.window_end_ns.compare_exchange(end, extended, Relaxed, Relaxed);
        self.stopping()
    }

    /// How much longer than asked the window ran because it held no completion (0: as asked).
    pub fn empty_extension_ns(&self) -> u64 {
        let planned_end = self.measure_start_ns.saturating_add(self.runtime_ns);
        if self.stopping() {
            0
        } else {
            self.window_end_ns().saturating_sub(planned_end)
        }
    }

    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.load(Relaxed)
    }

    /// Ends the job at `at_ns`; the first reason given is the one reported.
    pub fn request_stop(&self, reason: StopReason, at_ns: u64) {
        let code = REASONS.iter().position(|&r| r == reason).unwrap_or(0) as u8 + 1;
        let _ = self.reason.compare_exchange(0, code, Relaxed, Relaxed);
        self.window_end_ns.fetch_min(at_ns.max(self.measure_start_ns), Relaxed);
        self.stop.store(true, Relaxed);
    }

    /// Why the job ended; `Runtime` when nothing stopped it early.
    pub fn stop_reason(&self) -> StopReason {
        match self.reason.load(Relaxed) {
            0 => StopReason::Runtime,
            code => REASONS[code as usize - 1],
        }
    }

    /// The share of the I/O limit done, 0..1, when the job has one.
    pub fn limit_done(&self) -> Option<f64> {
        let done = match self.io_limit? {
            IoLimit::Ios(n) => self.measured_ios.load(Relaxed) as f64 / n as f64,
            IoLimit::Bytes(b) => self.measured_bytes.load(Relaxed) as f64 / b.0 as f64,
        };
        Some(done.min(1.0))
    }

    /// Counts a batch of measured I/Os and stops the job when the I/O limit is reached.
    #[inline]
    pub fn count_measured(&self, ios: u64, bytes: u64, now_ns: u64) {
        if !self.measured_any.load(Relaxed) {
            self.measured_any.store(true, Relaxed);
        }
        let Some(limit) = self.io_limit else { return };
        let reached = match limit {
            IoLimit::Ios(n) => self.measured_ios.fetch_add(ios, Relaxed) + ios >= n,
            IoLimit::Bytes(b) => self.measured_bytes.fetch_add(bytes, Relaxed) + bytes >= b.0,
        };
        if reached {
            self.request_stop(StopReason::IoLimit, now_ns + 1);
        }
    }
}
