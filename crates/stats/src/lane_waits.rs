//! Where iolab's submitting threads (lanes) were over a job's window, sampled: on a CPU or
//! waiting for one (state R), or asleep in the kernel function their wait channel names
//! (`/proc/self/task/TID/wchan`). A lane asleep in `balance_dirty_pages` is held by the kernel's
//! dirty page throttling; one in `io_schedule` or the engine's completion wait is waiting for
//! its I/O. The figures say what a lane waited on, where CPU and device counters only say that
//! it waited. The texts are parsed here; sampling them is the runner's.
//!
//! An instant's sample is taken by a thread that needs a core to take it, and on a machine of
//! few cores it takes one from a lane or a worker: an io-wq worker 97% busy by its schedstat
//! was seen asleep in 40-80% of its samples, idle because the lane that feeds it had given its
//! core to the sampler. So the share of time the threads ran or waited for a CPU is their
//! schedstat's over the time they were watched (`wanted_ns` of `watched_ns`), exact, and the
//! samples only split the rest among the functions they slept in.

use serde::{Deserialize, Serialize};

/// The kernel function a writer sleeps in while the dirty page limits throttle it.
pub const DIRTY_THROTTLE_WCHAN: &str = "balance_dirty_pages";
/// A sample of a thread whose state said asleep and whose wait channel the kernel did not
/// give: the kernel gives none for a thread still on its run queue, between setting itself
/// asleep and leaving the CPU, or woken and not yet running again (an io_uring lane checks
/// its completions and runs its task work in that state), or where it has no symbols.
pub const UNNAMED_WCHAN: &str = "?";
/// The kernel function a task sleeps in while its cgroup is throttled above v2 `memory.high`
/// (on its way back to user space, after the reclaim it was made to do).
pub const MEMORY_HIGH_WCHAN: &str = "mem_cgroup_handle_over_high";
/// Where an io-wq worker sleeps while it waits for work.
pub const IO_WQ_IDLE_WCHAN: &str = "io_wq_worker";
/// Where a writer sleeps while it waits for the lock of the file it writes (the inode's
/// `i_rwsem`, which a buffered write holds throughout, throttled or not): the filesystem's
/// write function that takes it, the lock's own functions being the scheduler's for `wchan`.
/// Both checked here: four psync writers of one file under 16 MiB dirty limits slept in
/// `ext4_buffered_write_iter` in 64% of their samples on ext4, in `xfs_ilock` in 69% on xfs.
pub const FILE_LOCK_WCHANS: &[&str] = &["ext4_buffered_write_iter", "xfs_ilock"];

/// The lanes' samples over the window, each sample one lane at one instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LaneWaits {
    /// Lane samples taken (samples x lanes).
    pub samples: u64,
    /// Of them, a lane running or runnable.
    pub running: u64,
    /// Of them, a lane asleep, by the function it slept in, most first; "?" where the kernel
    /// does not name it (no symbols, or a wait channel of 0 while asleep).
    pub sleeping: Vec<WaitChannel>,
    /// The time the sampled threads were watched, summed over them (from the first sample that
    /// found each to the last), and of it the time they ran or waited for a CPU (schedstat's
    /// run and run-queue times); 0 where schedstat was not read.
    pub watched_ns: u64,
    pub wanted_ns: u64,
}

/// Samples of lanes asleep in one kernel function.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WaitChannel {
    pub function: String,
    pub samples: u64,
}

impl LaneWaits {
    /// Adds one lane's sample: its `stat` text and, when it sleeps, its `wchan` text.
    pub fn add(&mut self, stat: &str, wchan: Option<&str>) {
        let Some(state) = stat.rfind(')').and_then(|close| stat[close + 1..].split_whitespace().next())
        else {
            return;
        };
        self.samples += 1;
        if state == "R" {
            self.running += 1;
            return;
        }
        let function = wchan.map(str::trim).filter(|w| !w.is_empty() && *w != "0").unwrap_or(UNNAMED_WCHAN);
        self.asleep_in(function, 1);
    }

    /// Counts `samples` more asleep in `function`.
    fn asleep_in(&mut self, function: &str, samples: u64) {
        match self.sleeping.iter_mut().find(|w| w.function == function) {
            Some(known) => known.samples += samples,
            None => self.sleeping.push(WaitChannel { function: function.to_string(), samples }),
        }
    }

    /// The samples ordered, the most common wait first.
    pub fn finish(mut self) -> LaneWaits {
        self.sleeping.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.function.cmp(&b.function)));
        self
    }

    /// Several hosts' samples as one (each sample counts once, whichever host took it);
    /// `None` when none has any.
    pub fn merged<'a>(all: impl Iterator<Item = &'a LaneWaits>) -> Option<LaneWaits> {
        let mut merged = LaneWaits::default();
        for waits in all {
            merged.samples += waits.samples;
            merged.running += waits.running;
            merged.watched_ns += waits.watched_ns;
            merged.wanted_ns += waits.wanted_ns;
            for wait in &waits.sleeping {
                merged.asleep_in(&wait.function, wait.samples);
            }
        }
        (merged.samples > 0).then(|| merged.finish())
    }

    /// Counts `wanted_ns` of `watched_ns` more: a thread's schedstat run and run-queue time
    /// over the time it was watched.
    pub fn watched(&mut self, watched_ns: u64, wanted_ns: u64) {
        self.watched_ns += watched_ns;
        self.wanted_ns += wanted_ns.min(watched_ns);
    }

    /// The share of the threads' time asleep in `function` or a function named from it (a
    /// kernel may name the throttle `balance_dirty_pages_ratelimited_flags` where it inlines),
    /// 0..100.
    pub fn asleep_in_pct(&self, function: &str) -> f64 {
        self.asleep_pct(self.samples_asleep_in(|f| f.starts_with(function)))
    }

    /// The share of the time not asleep in any of `left_out` (an io-wq worker waiting for
    /// work sleeps in `IO_WQ_IDLE_WCHAN`; a writer waiting for its file's lock, in one of
    /// `FILE_LOCK_WCHANS`) that the threads were asleep in `function` or one named from it,
    /// 0..100.
    pub fn asleep_leaving_out_pct(&self, function: &str, left_out: &[&str]) -> f64 {
        let rest = 100.0 - self.asleep_in_any_pct(left_out);
        if rest <= 0.0 {
            0.0
        } else {
            (100.0 * self.asleep_in_pct(function) / rest).min(100.0)
        }
    }

    /// The share of the threads' time asleep in any of `functions` (named exactly), 0..100.
    pub fn asleep_in_any_pct(&self, functions: &[&str]) -> f64 {
        self.asleep_pct(self.samples_asleep_in(|f| functions.contains(&f)))
    }

    fn samples_asleep_in(&self, function: impl Fn(&str) -> bool) -> u64 {
        self.sleeping.iter().filter(|w| function(&w.function)).map(|w| w.samples).sum()
    }

    /// The share of the threads' time running or runnable, 0..100: their schedstat's where it
    /// was read, else their samples'.
    pub fn running_pct(&self) -> f64 {
        if self.watched_ns > 0 {
            100.0 * self.wanted_ns as f64 / self.watched_ns as f64
        } else if self.samples == 0 {
            0.0
        } else {
            100.0 * self.running as f64 / self.samples as f64
        }
    }

    /// The share of the threads' time asleep where `n` of the asleep samples were, 0..100: the
    /// time not running or runnable, split as the asleep samples are. Where schedstat gave
    /// that time, the unnamed samples are left out of the split: they are mostly a thread
    /// still on its run queue, which schedstat counts as running or runnable.
    pub fn asleep_pct(&self, n: u64) -> f64 {
        let unnamed = if self.watched_ns > 0 { self.samples_asleep_in(|f| f == UNNAMED_WCHAN) } else { 0 };
        let asleep_samples = self.samples.saturating_sub(self.running).saturating_sub(unnamed);
        if asleep_samples == 0 {
            0.0
        } else {
            ((100.0 - self.running_pct()) * n as f64 / asleep_samples as f64).min(100.0)
        }
    }

    /// The functions the threads slept in, most first, with their share of the threads' time;
    /// the unnamed samples only where nothing else splits the time (no schedstat).
    pub fn named_sleeps(&self) -> impl Iterator<Item = (&str, f64)> {
        let split = self.watched_ns > 0;
        self.sleeping
            .iter()
            .filter(move |w| !(split && w.function == UNNAMED_WCHAN))
            .map(|w| (w.function.as_str(), self.asleep_pct(w.samples)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_count_running_lanes_and_name_where_the_others_slept() {
        let mut waits = LaneWaits::default();
        let stat = |state: &str| format!("4242 (iolab-lane0) {state} 1 4242 4242 0 -1 4194624 0 0 0");
        waits.add(&stat("R"), None);
        waits.add(&stat("D"), Some("balance_dirty_pages\n"));
        waits.add(&stat("D"), Some("balance_dirty_pages_ratelimited_flags"));
        waits.add(&stat("S"), Some("io_cqring_wait"));
        // A kernel without symbols writes 0; a command name with ") " in it does not confuse it.
        waits.add("7 (a) b) S 1 2", Some("0"));
        waits.add("unreadable", Some("x"));
        let waits = waits.finish();
        assert_eq!((waits.samples, waits.running), (5, 1));
        assert_eq!(
            waits.sleeping,
            vec![
                WaitChannel { function: "?".into(), samples: 1 },
                WaitChannel { function: "balance_dirty_pages".into(), samples: 1 },
                WaitChannel { function: "balance_dirty_pages_ratelimited_flags".into(), samples: 1 },
                WaitChannel { function: "io_cqring_wait".into(), samples: 1 },
            ]
        );
        assert_eq!((waits.asleep_in_pct(DIRTY_THROTTLE_WCHAN), waits.running_pct()), (40.0, 20.0));
        assert_eq!(LaneWaits::default().running_pct(), 0.0);
        // The threads' schedstat, where read, gives the share running or runnable; the samples
        // split the rest.
        let mut timed = waits.clone();
        timed.watched(1_000, 900);
        assert_eq!(timed.running_pct(), 90.0);
        // The unnamed sample ("?") is left out of the split: two of the three named asleep
        // samples were in the throttle.
        let throttled = timed.asleep_in_pct(DIRTY_THROTTLE_WCHAN);
        assert!((throttled - 20.0 / 3.0).abs() < 1e-9, "{throttled}");
        let named: Vec<&str> = timed.named_sleeps().map(|(f, _)| f).collect();
        assert!(!named.contains(&UNNAMED_WCHAN), "{named:?}");
        timed.watched(1_000, 5_000);
        assert_eq!(timed.running_pct(), 95.0, "a thread's time wanted is at most its time watched");
        let both = LaneWaits::merged([&waits, &waits].into_iter()).expect("merged");
        assert_eq!((both.samples, both.running, both.sleeping[0].samples), (10, 2, 2));
        assert_eq!(LaneWaits::merged(std::iter::empty()), None);
        // An io-wq worker's idle samples are not counted against its work.
        let mut io_wq = LaneWaits::default();
        for wchan in ["io_wq_worker", "io_wq_worker", "balance_dirty_pages", "balance_dirty_pages"] {
            io_wq.add(&stat("S"), Some(wchan));
        }
        io_wq.add(&stat("R"), None);
        assert_eq!(io_wq.asleep_leaving_out_pct(DIRTY_THROTTLE_WCHAN, &[IO_WQ_IDLE_WCHAN]), 200.0 / 3.0);
        assert_eq!(
            LaneWaits::default().asleep_leaving_out_pct(DIRTY_THROTTLE_WCHAN, &[IO_WQ_IDLE_WCHAN]),
            0.0
        );
        // Writers of one file: those waiting for its lock are left out of the throttle's share.
        let mut writers = LaneWaits::default();
        for wchan in
            ["ext4_buffered_write_iter", "ext4_buffered_write_iter", "xfs_ilock", "balance_dirty_pages"]
        {
            writers.add(&stat("D"), Some(wchan));
        }
        assert_eq!(writers.asleep_in_any_pct(FILE_LOCK_WCHANS), 75.0);
        assert_eq!(writers.asleep_leaving_out_pct(DIRTY_THROTTLE_WCHAN, FILE_LOCK_WCHANS), 100.0);
    }
}
