//! Samples where the submitting threads (lanes) are, every `LANE_WAIT_SAMPLE_NS` of the
//! measured window: their state from `/proc/self/task/TID/stat` and, asleep, the kernel
//! function they sleep in from `wchan` (readable for a process's own threads without privilege).
//! The figures are `iolab_stats::lane_waits`.

use std::fmt::Write as _;

use iolab_stats::lane_waits::LaneWaits;
use iolab_stats::threads::WORKER_THREAD_PREFIX;

use crate::proc_reader::read_into;

/// How often the lanes are sampled: 50 a second gives a 2 s window 100 samples per lane, at a
/// few microseconds each.
pub const LANE_WAIT_SAMPLE_NS: u64 = 20_000_000;

pub struct LaneWaitSampler {
    tids: Vec<u32>,
    waits: LaneWaits,
    path: String,
    stat: String,
    wchan: String,
}

impl LaneWaitSampler {
    /// Finds the lanes among this process's threads: the window starts.
    pub fn start() -> LaneWaitSampler {
        let mut sampler = LaneWaitSampler {
            tids: Vec::new(),
            waits: LaneWaits::default(),
            path: String::new(),
            stat: String::new(),
            wchan: String::new(),
        };
        sampler.tids = sampler.lane_tids();
        sampler
    }

    /// Each lane's state now, and where it sleeps.
    pub fn sample(&mut self) {
        for i in 0..self.tids.len() {
            let tid = self.tids[i];
            if !self.read(tid, "stat", false) {
                continue;
            }
            let wchan = self.read(tid, "wchan", true).then_some(self.wchan.as_str());
            self.waits.add(&self.stat, wchan);
        }
    }

    /// The window's samples; `None` when none was taken (no lane found, or /proc unreadable).
    pub fn finish(self) -> Option<LaneWaits> {
        (self.waits.samples > 0).then(|| self.waits.finish())
    }

    fn lane_tids(&mut self) -> Vec<u32> {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
        let mut tids: Vec<u32> = tasks
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .filter(|&tid| {
                let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).unwrap_or_default();
                comm.starts_with(WORKER_THREAD_PREFIX)
            })
            .collect();
        tids.sort_unstable();
        tids
    }

    /// Reads `/proc/self/task/{tid}/{file}` into the stat buffer, or the wchan one.
    fn read(&mut self, tid: u32, file: &str, wchan: bool) -> bool {
        self.path.clear();
        let _ = write!(self.path, "/proc/self/task/{tid}/{file}");
        let buffer = if wchan { &mut self.wchan } else { &mut self.stat };
        read_into(&self.path, buffer).is_ok()
    }
}
