//! Samples where the submitting threads (lanes) and io_uring's io-wq workers are, every
//! `LANE_WAIT_SAMPLE_NS` of the measured window: their state from `/proc/self/task/TID/stat`
//! and, asleep, the kernel function they sleep in from `wchan` (readable for a process's own
//! threads without privilege). io-wq workers start on demand, so the threads are listed again
//! every `RELIST_EVERY` samples. Each thread's schedstat is read with its samples, for the
//! exact share of its time it ran or waited for a CPU (why: `iolab_stats::lane_waits`). The
//! figures are `iolab_stats::lane_waits`.

use std::fmt::Write as _;
use std::time::Instant;

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
    /// Each thread's `stat` text of the sample being taken.
    stats: Vec<String>,
    wchan: String,
    /// The threads' schedstat at the first and the latest sample that found each.
    watches: Vec<Watch>,
    clock: Instant,
}

/// One thread's schedstat run and run-queue time (`wanted_ns`) at the first sample that found
/// it and at the latest.
struct Watch {
    tid: u32,
    class: ThreadClass,
    first: (u64, u64),
    last: (u64, u64),
}

impl Watch {
    fn watched(&self) -> (u64, u64) {
        (self.last.0.saturating_sub(self.first.0), self.last.1.saturating_sub(self.first.1))
    }
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
            stats: Vec::new(),
            wchan: String::new(),
            watches: Vec::new(),
            clock: Instant::now(),
        }
    }

    /// Each thread's state now, and where it sleeps. Every state is read before any wait
    /// channel, io-wq workers first: the sampler takes a core from a lane or a worker as it
    /// wakes, and a worker the lane stops feeding drains its queue and sleeps within tens of
    /// microseconds, so what is read late is what the sampler made.
    pub fn sample(&mut self) {
        self.stats.resize_with(self.threads.len(), String::new);
        for i in 0..self.threads.len() {
            let tid = self.threads[i].0;
            set_path(&mut self.path, tid, "stat");
            if read_into(&self.path, &mut self.stats[i]).is_err() {
                self.stats[i].clear();
            }
        }
        for (i, &(tid, class)) in self.threads.iter().enumerate() {
            let stat = &self.stats[i];
            if stat.is_empty() {
                continue;
            }
            set_path(&mut self.path, tid, "wchan");
            let wchan = read_into(&self.path, &mut self.wchan).is_ok().then_some(self.wchan.as_str());
            let waits = if class == ThreadClass::Worker { &mut self.lanes } else { &mut self.io_wq };
            waits.add(stat, wchan);
        }
        self.read_schedstats();
        // Listed after the sample, for the next: the listing reads every thread's name.
        self.since_listing += 1;
        if self.since_listing >= RELIST_EVERY {
            self.threads = sampled_threads();
            self.since_listing = 0;
        }
    }

    /// Each thread's schedstat now: a thread's first reading starts its watch, a later one
    /// extends it; one whose time went back is a new thread on an old tid.
    fn read_schedstats(&mut self) {
        let now = self.clock.elapsed().as_nanos() as u64;
        for i in 0..self.threads.len() {
            let (tid, class) = self.threads[i];
            set_path(&mut self.path, tid, "schedstat");
            if read_into(&self.path, &mut self.wchan).is_err() {
                continue;
            }
            let mut words = self.wchan.split_whitespace().map(|w| w.parse::<u64>().ok());
            let (Some(Some(run)), Some(Some(queued))) = (words.next(), words.next()) else { continue };
            let reading = (now, run + queued);
            match self.watches.iter().position(|w| w.tid == tid) {
                Some(i) if self.watches[i].class == class && self.watches[i].last.1 <= reading.1 => {
                    self.watches[i].last = reading;
                }
                known => {
                    if let Some(i) = known {
                        let ended = self.watches.swap_remove(i);
                        self.count(&ended);
                    }
                    self.watches.push(Watch { tid, class, first: reading, last: reading });
                }
            }
        }
    }

    /// A thread's watch, counted.
    fn count(&mut self, watch: &Watch) {
        let (watched, wanted) = watch.watched();
        let waits = if watch.class == ThreadClass::Worker { &mut self.lanes } else { &mut self.io_wq };
        waits.watched(watched, wanted);
    }

    /// The window's samples of the lanes and of the io-wq workers; `None` for either when none
    /// was taken (no such thread, or /proc unreadable).
    pub fn finish(mut self) -> (Option<LaneWaits>, Option<LaneWaits>) {
        for watch in std::mem::take(&mut self.watches) {
            self.count(&watch);
        }
        let done = |waits: LaneWaits| (waits.samples > 0).then(|| waits.finish());
        (done(self.lanes), done(self.io_wq))
    }
}

/// `/proc/self/task/{tid}/{file}`, in `path`.
fn set_path(path: &mut String, tid: u32, file: &str) {
    path.clear();
    let _ = write!(path, "/proc/self/task/{tid}/{file}");
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
    // io-wq workers first (see `sample`).
    threads.sort_unstable_by_key(|&(tid, class)| (class == ThreadClass::Worker, tid));
    threads
}
