//! How far the running phase is, for a live display. Each thread publishes its count of the
//! phase's own operations every `PUBLISH_EVERY` of them, and at its end, into a cache line of
//! its own (so the threads never contend for one); a reader sums them whenever it likes.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::plan::Phase;

/// A thread publishes its count every this many operations.
pub(crate) const PUBLISH_EVERY: u64 = 64;

/// The running phase's progress, shared by its threads and a reader.
pub struct PhaseProgress {
    running: Mutex<Option<Running>>,
    /// When the run began removing its tree (after its phases, or after Ctrl-C).
    removing: Mutex<Option<Instant>>,
    counts: Box<[OwnLine]>,
}

/// The phase running: its planned operations (or, a mix, its time), and when it began.
#[derive(Clone, Copy)]
struct Running {
    phase: Phase,
    planned: u64,
    runtime: Option<Duration>,
    started: Instant,
}

/// One thread's count, alone in its cache line.
#[repr(align(128))]
struct OwnLine(AtomicU64);

/// The running phase as a reader sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseSnapshot {
    pub phase: Phase,
    /// The phase's own operations done so far (up to `PUBLISH_EVERY` - 1 per thread behind).
    pub done: u64,
    pub planned: u64,
    /// A mix's whole time (warm-up and measured): it ends by the clock, not a count.
    pub runtime: Option<Duration>,
    pub elapsed: Duration,
}

impl PhaseProgress {
    pub fn new(threads: u32) -> PhaseProgress {
        PhaseProgress {
            running: Mutex::new(None),
            removing: Mutex::new(None),
            counts: (0..threads).map(|_| OwnLine(AtomicU64::new(0))).collect(),
        }
    }

    /// A phase of `planned` operations (a mix: of `runtime`) begins.
    pub(crate) fn begin(&self, phase: Phase, planned: u64, runtime: Option<Duration>) {
        for count in &self.counts {
            count.0.store(0, Relaxed);
        }
        *self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(Running { phase, planned, runtime, started: Instant::now() });
    }

    /// Thread `thread` has done `done` of the phase's operations.
    #[inline]
    pub(crate) fn publish(&self, thread: u32, done: u64) {
        if let Some(count) = self.counts.get(thread as usize) {
            count.0.store(done, Relaxed);
        }
    }

    /// The run is removing its tree now.
    pub(crate) fn removing_tree(&self) {
        *self.removing.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
    }

    /// How long the run has been removing its tree, once it began to.
    pub fn removing(&self) -> Option<Duration> {
        self.removing.lock().unwrap_or_else(std::sync::PoisonError::into_inner).map(|since| since.elapsed())
    }

    /// The phase running (or the last one run), if one has begun.
    pub fn snapshot(&self) -> Option<PhaseSnapshot> {
        let running = *self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Running { phase, planned, runtime, started } = running?;
        let done = self.counts.iter().map(|c| c.0.load(Relaxed)).sum();
        Some(PhaseSnapshot { phase, done, planned, runtime, elapsed: started.elapsed() })
    }
}
