//! CPU accounting by thread class: how much of a run's CPU went to the submitting workers, the
//! io_uring SQPOLL thread, io-wq workers and the rest of the process (main thread, collector).
//!
//! `cpu::ProcessCpu` gives the process total; this module splits it. Since Linux 5.12 the
//! io_uring threads are tasks of our own thread group, so /proc/self/task/<tid>/stat lists each
//! of them with its name and its user and system time. That matters for SQPOLL: its polling is
//! system time of our process (fio reports it as 0% sys), and a 100%-busy SQPOLL thread is the
//! first thing to check when an io_uring run stops scaling.
//!
//! Precision: stat counts in clock ticks (USER_HZ, normally 100 a second, so 10 ms). When the
//! kernel has /proc/<tid>/schedstat (CONFIG_SCHED_INFO), its nanosecond run time gives each
//! thread's total, and the ticks only split it into user and system.
//!
//! Threads that exit: /proc forgets a thread once it exits, so its CPU counts up to the last
//! sample that saw it. Hence a sample about once a second, and a last one before the workers are
//! joined and the rings closed. io-wq workers exit only after seconds of idling, so sampling once
//! a second loses next to nothing of theirs. This module is the arithmetic; the runner reads
//! /proc (crates/runner/src/thread_cpu.rs).

use std::collections::HashMap;

use iolab_spec::Nanos;
use serde::{Deserialize, Serialize};

/// Name prefix of the runner's submitting threads ("iolab-lane0", "iolab-lane1", ...).
pub const WORKER_THREAD_PREFIX: &str = "iolab-lane";

/// Who a thread of the process works for, told by its name (`comm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ThreadClass {
    /// The runner's threads that submit and reap I/O.
    #[serde(rename = "workers")]
    Worker,
    /// io_uring's submission-queue polling thread, "iou-sqp-<tid>".
    #[serde(rename = "sqpoll")]
    Sqpoll,
    /// io_uring's async workers, "iou-wrk-<tid>": I/O that could not be issued inline.
    #[serde(rename = "io-wq")]
    IoWq,
    /// Everything else: the main thread, the collector, other libraries' threads.
    #[serde(rename = "other")]
    Other,
}

impl ThreadClass {
    /// Every class, in report order.
    pub const ALL: [ThreadClass; 4] =
        [ThreadClass::Worker, ThreadClass::Sqpoll, ThreadClass::IoWq, ThreadClass::Other];

    /// The name shown to users, the same as the serialized form.
    pub fn name(self) -> &'static str {
        match self {
            ThreadClass::Worker => "workers",
            ThreadClass::Sqpoll => "sqpoll",
            ThreadClass::IoWq => "io-wq",
            ThreadClass::Other => "other",
        }
    }

    /// The class of a thread named `comm` (as in /proc/<tid>/comm, at most 15 bytes).
    pub fn of(comm: &str) -> ThreadClass {
        if comm.starts_with(WORKER_THREAD_PREFIX) {
            ThreadClass::Worker
        } else if comm.starts_with("iou-sqp-") {
            ThreadClass::Sqpoll
        } else if comm.starts_with("iou-wrk-") {
            ThreadClass::IoWq
        } else {
            ThreadClass::Other
        }
    }

    /// io_uring's threads never run user code: all their time is system time.
    fn kernel_only(self) -> bool {
        matches!(self, ThreadClass::Sqpoll | ThreadClass::IoWq)
    }
}

/// CPU of one class of threads during the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadClassCpu {
    pub class: ThreadClass,
    /// Distinct threads of the class that used measurable CPU in the window (a thread that only
    /// slept is not counted; an exited thread and the one that reused its tid count as two).
    pub threads: u32,
    pub user_s: f64,
    pub system_s: f64,
    /// CPU of the class's busiest thread as a share of the window's wall time, 0..100: "a worker
    /// thread was 97% busy" means that thread, not the I/O device, is the bottleneck.
    pub busiest_thread_pct: f64,
    /// Time the class's threads were ready to run but waited for a CPU (schedstat's run-queue
    /// wait), summed: a lane that waits here is held back by whatever else holds the cores.
    #[serde(default)]
    pub runqueue_wait_s: f64,
    /// The largest share of the window one of its threads spent running or waiting to run,
    /// 0..100: near 100 the thread wanted a whole core, even if others held it part of the time.
    #[serde(default)]
    pub busiest_demand_pct: f64,
}

/// One thread's CPU since it started, read from /proc at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSample {
    pub tid: u32,
    /// Clock ticks after boot when the thread started (stat field 22): tells a reused tid from
    /// the exited thread that had it before.
    pub starttime: u64,
    pub class: ThreadClass,
    /// User and system time, with the 10 ms resolution of clock ticks.
    pub user_ns: u64,
    pub system_ns: u64,
    /// Time on CPU from schedstat, to the nanosecond, when the kernel has it.
    pub run_ns: Option<u64>,
    /// Time runnable but waiting for a CPU, from schedstat (0 without it).
    pub wait_ns: u64,
}

// Fields of /proc/<tid>/stat, numbered from 1 as in proc(5).
const STATE: usize = 3;
const UTIME: usize = 14;
const STIME: usize = 15;
const STARTTIME: usize = 22;

impl ThreadSample {
    /// Parses the text of /proc/<tid>/stat, and of /proc/<tid>/schedstat if the kernel has it.
    /// `None` if `stat` is not a stat line.
    pub fn parse(stat: &str, schedstat: Option<&str>, clk_tck: u64) -> Option<ThreadSample> {
        // The name may hold spaces and parentheses, but the kernel writes no ')' after it: like
        // procps, take the name up to the last ')'.
        let open = stat.find('(')?;
        let close = stat.rfind(')')?;
        if close < open {
            return None;
        }
        let tid = stat[..open].trim().parse().ok()?;
        let comm = &stat[open + 1..close];
        let mut fields = stat[close + 1..].split_whitespace();
        let utime: u64 = fields.nth(UTIME - STATE)?.parse().ok()?;
        let stime: u64 = fields.next()?.parse().ok()?;
        let starttime = fields.nth(STARTTIME - STIME - 1)?.parse().ok()?;
        // A kernel without sched_info prints "0 0 0": no precise time then.
        let mut schedstat = schedstat.map(str::split_whitespace);
        let run_ns = schedstat.as_mut().and_then(|words| words.next()?.parse().ok()).filter(|&ns| ns > 0);
        let wait_ns = schedstat.as_mut().and_then(|words| words.next()?.parse().ok()).unwrap_or(0);
        Some(ThreadSample {
            tid,
            starttime,
            class: ThreadClass::of(comm),
            user_ns: ticks_to_ns(utime, clk_tck),
            system_ns: ticks_to_ns(stime, clk_tck),
            run_ns,
            wait_ns,
        })
    }
}

fn ticks_to_ns(ticks: u64, clk_tck: u64) -> u64 {
    ticks.saturating_mul(1_000_000_000) / clk_tck.max(1)
}

/// The accounting over a window, given samples of every thread: no /proc in here, so the
/// maths is tested with made-up samples. `ThreadCpuTracker` feeds it from /proc.
#[derive(Debug, Default)]
pub struct ThreadAccounting {
    live: HashMap<u32, LiveThread>,
    /// Threads already retired (exited, or finished with), indexed by `ThreadClass as usize`.
    classes: [ClassTotal; 4],
    round: u64,
}

#[derive(Debug)]
struct LiveThread {
    /// Its CPU when the window started, or zero if it was born in the window.
    base: ThreadSample,
    last: ThreadSample,
    /// The last `observe` round that listed it.
    round: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct ClassTotal {
    threads: u32,
    user_ns: u64,
    system_ns: u64,
    busiest_ns: u64,
    wait_ns: u64,
    busiest_demand_ns: u64,
}

impl ThreadAccounting {
    /// Starts the window: each thread's CPU so far is its baseline, not counted.
    pub fn new(baseline: &[ThreadSample]) -> Self {
        let mut accounting = ThreadAccounting::default();
        for sample in baseline {
            accounting.live.insert(sample.tid, LiveThread { base: *sample, last: *sample, round: 0 });
        }
        accounting
    }

    /// Takes a listing of every thread alive now. A thread missing from it has exited: its CPU
    /// counts up to the last listing that had it. A new tid, or a known tid with a new start time
    /// (reused after an exit), is a thread born in the window: all its CPU counts.
    pub fn observe(&mut self, samples: &[ThreadSample]) {
        self.round += 1;
        for sample in samples {
            match self.live.get_mut(&sample.tid) {
                Some(thread) if thread.last.starttime == sample.starttime => {
                    thread.last = *sample;
                    thread.round = self.round;
                }
                _ => {
                    let base = ThreadSample {
                        user_ns: 0,
                        system_ns: 0,
                        run_ns: sample.run_ns.map(|_| 0),
                        wait_ns: 0,
                        ..*sample
                    };
                    let born = LiveThread { base, last: *sample, round: self.round };
                    if let Some(exited) = self.live.insert(sample.tid, born) {
                        retire(&mut self.classes, &exited);
                    }
                }
            }
        }
        let (round, classes) = (self.round, &mut self.classes);
        self.live.retain(|_, thread| {
            let alive = thread.round == round;
            if !alive {
                retire(classes, thread);
            }
            alive
        });
    }

    /// Ends the window of wall-clock length `window`: CPU per class, in `ThreadClass::ALL`
    /// order, without the classes that had no thread using CPU.
    pub fn finish(mut self, window: Nanos) -> Vec<ThreadClassCpu> {
        for thread in self.live.values() {
            retire(&mut self.classes, thread);
        }
        ThreadClass::ALL
            .into_iter()
            .filter_map(|class| {
                let total = self.classes[class as usize];
                let of_window = |ns: u64| {
                    if window.0 == 0 {
                        0.0
                    } else {
                        (100.0 * ns as f64 / window.0 as f64).min(100.0)
                    }
                };
                (total.threads > 0).then(|| ThreadClassCpu {
                    class,
                    threads: total.threads,
                    user_s: total.user_ns as f64 / 1e9,
                    system_s: total.system_ns as f64 / 1e9,
                    busiest_thread_pct: of_window(total.busiest_ns),
                    runqueue_wait_s: total.wait_ns as f64 / 1e9,
                    busiest_demand_pct: of_window(total.busiest_demand_ns),
                })
            })
            .collect()
    }
}

/// Adds a thread's CPU in the window to its class (the class of its latest name).
fn retire(classes: &mut [ClassTotal; 4], thread: &LiveThread) {
    let class = thread.last.class;
    let (user_ns, system_ns) = window_cpu(class, &thread.base, &thread.last);
    if user_ns + system_ns == 0 {
        return;
    }
    let wait_ns = thread.last.wait_ns.saturating_sub(thread.base.wait_ns);
    let total = &mut classes[class as usize];
    total.threads += 1;
    total.user_ns += user_ns;
    total.system_ns += system_ns;
    total.busiest_ns = total.busiest_ns.max(user_ns + system_ns);
    total.wait_ns += wait_ns;
    total.busiest_demand_ns = total.busiest_demand_ns.max(user_ns + system_ns + wait_ns);
}

/// User and system time between two samples of one thread. With schedstat on both, its
/// precise run time is the total, split in the ticks' proportion.
fn window_cpu(class: ThreadClass, base: &ThreadSample, last: &ThreadSample) -> (u64, u64) {
    let user = last.user_ns.saturating_sub(base.user_ns);
    let system = last.system_ns.saturating_sub(base.system_ns);
    let (Some(run0), Some(run1)) = (base.run_ns, last.run_ns) else {
        return (user, system);
    };
    let run = run1.saturating_sub(run0);
    // Under one tick in the window: split like the thread's whole life so far.
    let (user, system) = if user + system > 0 { (user, system) } else { (last.user_ns, last.system_ns) };
    if user + system == 0 {
        // No tick at all yet; the kernel would call it user time, but io_uring's threads have none.
        return if class.kernel_only() { (0, run) } else { (run, 0) };
    }
    let user_part = (u128::from(run) * u128::from(user) / u128::from(user + system)) as u64;
    (user_part, run - user_part)
}

#[cfg(test)]
#[path = "threads_tests.rs"]
mod tests;
