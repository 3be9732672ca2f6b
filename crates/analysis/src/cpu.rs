//! Reading a job's CPU figures: where the time went, and whether a core was the limit.

use iolab_stats::result::{GroupResult, JobResult};
use iolab_stats::threads::ThreadClass;

/// A thread or core at this share of its time or more counts as saturated.
pub const SATURATED_PCT: f64 = 95.0;

/// The machine's cores, taken together, at this share or more count as saturated: lower than
/// one thread's, because the mean over cores stays below 100% while one of them idles briefly.
pub const MACHINE_SATURATED_PCT: f64 = SATURATED_PCT - 5.0;

/// Process CPU seconds of the measured window.
pub fn process_s(job: &JobResult) -> f64 {
    job.cpu.user_s + job.cpu.system_s
}

/// CPU seconds of one thread class, and how many of its threads used CPU.
pub fn class_s(job: &JobResult, class: ThreadClass) -> (f64, u32) {
    job.cpu.threads.iter().find(|t| t.class == class).map_or((0.0, 0), |t| (t.user_s + t.system_s, t.threads))
}

/// The busiest thread of a class, as a share of the window (0..100).
pub fn busiest_pct(job: &JobResult, class: ThreadClass) -> f64 {
    job.cpu.threads.iter().find(|t| t.class == class).map_or(0.0, |t| t.busiest_thread_pct)
}

/// The machine's cores were busy, taken together, this share of the window (0..100).
pub fn machine_busy_pct(job: &JobResult) -> f64 {
    let cores = &job.cpu.machine_busy_pct;
    if cores.is_empty() {
        0.0
    } else {
        cores.iter().sum::<f64>() / cores.len() as f64
    }
}

/// A plain sentence on what saturated, if anything did: every core of the machine, or one
/// submitting thread. (An SQPOLL thread spins by design, so its 100% says nothing; nor does a
/// submitting thread's that polls or watches for completions.)
pub fn saturation(job: &JobResult) -> Option<String> {
    let machine = machine_busy_pct(job);
    if machine >= MACHINE_SATURATED_PCT {
        let cores = job.cpu.machine_busy_pct.len();
        return Some(format!("the machine's CPU: its {cores} cores were {machine:.0}% busy on average"));
    }
    let worker = busiest_pct(job, ThreadClass::Worker);
    if worker >= SATURATED_PCT && !job.groups.iter().any(GroupResult::lanes_poll) {
        return Some(format!("a submitting thread: the busiest worker was {worker:.0}% busy, a whole core"));
    }
    None
}
