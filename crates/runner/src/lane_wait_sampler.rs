//! Samples where the submitting threads (lanes) and io_uring's io-wq workers are, every
//! `LANE_WAIT_SAMPLE_NS` of the measured window: their state from `/proc/self/task/TID/stat`
//! and, asleep, the kernel function they sleep in from `wchan` (readable for a process's own
//! threads without privilege). io-wq workers start on demand, so the threads are listed again
//! every `RELIST_EVERY` samples. The figures are `iolab_stats::lane_waits`.

use std::fmt::Write as _;

use iolab_stats::lane_waits::LaneWaits;
use iolab_stats::threads::ThreadClass;

use crate::proc_reader::read_into;

/// How often the threads are sampled: 50 a second gives a 2 s window 100 samples per thread,
/// at a few microseconds each.
pub const LANE_WAIT_SAMPLE_NS: u64 = 20_000_000;
/// Samples between listings of the process's threads.
const RELIST_EVERY: u32 = 10;

pub struct LaneWaitSampler {
    /// The threads sampled, each with its class (lanes and io-wq workers only).
    threads: Vec<(u32, ThreadClass)>,
    since_listing: u32,
    lanes: LaneWaits,
    io_wq: LaneWaits,
    path: String,
    stat: String,
    wchan: String,
}

impl LaneWaitSampler {
    /// Finds the threads to sample: the window starts.
    pub fn start() -> LaneWaitSampler {
        LaneWaitSampler {
            threads: sampled_threads(),
            since_listing: 0,
            lanes: LaneWaits::default(),
            io_wq: LaneWaits::default(),
            path: String::new(),
            stat: String::new(),
            wchan: String::new(),
        }
    }

    /// Each thread's state now, and where it sleeps.
    pub fn sample(&mut self) {
        if self.since_listing >= RELIST_EVERY {
            self.threads = sampled_threads();
            self.since_listing = 0;
        }
        self.since_listing += 1;
        for i in 0..self.threads.len() {
            let (tid, class) = self.threads[i];
            if !self.read(tid, "stat", false) {
                continue;
            }
            let wchan = self.read(tid, "wchan", true).then_some(self.wchan.as_str());
            let waits = if class == ThreadClass::Worker { &mut self.lanes } else { &mut self.io_wq };
            waits.add(&self.stat, wchan);
        }
    }

    /// The window's samples of the lanes and of the io-wq workers; `None` for either when none
    /// was taken (no such thread, or /proc unreadable).
    pub fn finish(self) -> (Option<LaneWaits>, Option<LaneWaits>) {
        let done = |waits: LaneWaits| (waits.samples > 0).then(|| waits.finish());
        (done(self.lanes), done(self.io_wq))
    }

    /// Reads `/proc/self/task/{tid}/{file}` into the stat buffer, or the wchan one.
    fn read(&mut self, tid: u32, file: &str, wchan: bool) -> bool {
        self.path.clear();
        let _ = write!(self.path, "/proc/self/task/{tid}/{file}");
        let buffer = if wchan { &mut self.wchan } else { &mut self.stat };
        read_into(&self.path, buffer).is_ok()
    }
}

/// This process's lanes and io-wq workers now.
fn sampled_threads() -> Vec<(u32, ThreadClass)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    let mut threads: Vec<(u32, ThreadClass)> = tasks
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter_map(|tid: u32| {
            let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
            let class = ThreadClass::of(comm.trim_end());
            matches!(class, ThreadClass::Worker | ThreadClass::IoWq).then_some((tid, class))
        })
        .collect();
    threads.sort_unstable_by_key(|&(tid, _)| tid);
    threads
}
