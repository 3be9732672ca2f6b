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
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A stat line as the kernel writes it, with the fields this module reads set.
    fn stat_line(tid: u32, comm: &str, utime: u64, stime: u64, starttime: u64) -> String {
        format!(
            "{tid} ({comm}) S 1 {tid} {tid} 0 -1 4194624 12 0 0 0 {utime} {stime} 0 0 20 0 3 0 \
             {starttime} 25165824 900 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
        )
    }

    fn sample(tid: u32, starttime: u64, class: ThreadClass, user_ms: u64, system_ms: u64) -> ThreadSample {
        ThreadSample {
            tid,
            starttime,
            class,
            user_ns: user_ms * MS,
            system_ns: system_ms * MS,
            run_ns: None,
            wait_ns: 0,
        }
    }

    fn class_of(cpu: &[ThreadClassCpu], class: ThreadClass) -> &ThreadClassCpu {
        cpu.iter().find(|c| c.class == class).expect("class in the report")
    }

    #[test]
    fn parses_an_io_wq_thread() {
        let stat = stat_line(4321, "iou-wrk-1234", 3, 250, 987654);
        let parsed = ThreadSample::parse(&stat, None, 100).expect("a stat line");
        assert_eq!(
            parsed,
            ThreadSample {
                tid: 4321,
                starttime: 987654,
                class: ThreadClass::IoWq,
                user_ns: 30 * MS,
                system_ns: 2500 * MS,
                run_ns: None,
                wait_ns: 0,
            }
        );
    }

    #[test]
    fn parses_a_name_with_parentheses_and_numbers_from_the_last_paren() {
        let stat = stat_line(77, "a) (b 1 2) 3", 5, 6, 7);
        let parsed = ThreadSample::parse(&stat, Some("123456789 2000 40\n"), 100).expect("a stat line");
        assert_eq!((parsed.tid, parsed.class), (77, ThreadClass::Other));
        assert_eq!((parsed.user_ns, parsed.system_ns, parsed.starttime), (50 * MS, 60 * MS, 7));
        assert_eq!((parsed.run_ns, parsed.wait_ns), (Some(123456789), 2000));
    }

    #[test]
    fn rejects_what_is_not_a_stat_line_and_ignores_empty_schedstat() {
        assert_eq!(ThreadSample::parse("", None, 100), None);
        assert_eq!(ThreadSample::parse("12 (cut short) S 1 2 3", None, 100), None);
        assert_eq!(ThreadSample::parse("x (name) S", None, 100), None);
        let stat = stat_line(1, "iolab", 1, 1, 1);
        let parsed = ThreadSample::parse(&stat, Some("0 0 0\n"), 100).expect("a stat line");
        assert_eq!(parsed.run_ns, None);
    }

    #[test]
    fn classifies_by_name() {
        assert_eq!(ThreadClass::of("iolab-lane0"), ThreadClass::Worker);
        assert_eq!(ThreadClass::of("iolab-lane12345"), ThreadClass::Worker);
        assert_eq!(ThreadClass::of("iou-sqp-4242"), ThreadClass::Sqpoll);
        assert_eq!(ThreadClass::of("iou-wrk-4243"), ThreadClass::IoWq);
        assert_eq!(ThreadClass::of("iolab"), ThreadClass::Other);
        assert_eq!(ThreadClass::of("iolab-lan"), ThreadClass::Other);
        assert_eq!(ThreadClass::of("iou-wrk"), ThreadClass::Other);
        let names: Vec<_> = ThreadClass::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names, ["workers", "sqpoll", "io-wq", "other"]);
    }

    #[test]
    fn counts_growth_births_exits_and_reused_tids() {
        use ThreadClass::*;
        let mut accounting = ThreadAccounting::new(&[
            sample(1, 10, Worker, 100, 50),
            sample(2, 10, Other, 500, 500),
            sample(4, 10, Other, 10, 10),
            sample(5, 10, Worker, 0, 0),
        ]);
        accounting.observe(&[
            sample(1, 10, Worker, 300, 150),
            sample(2, 10, Other, 500, 500),
            // Born in the window: all of its time counts.
            sample(3, 20, IoWq, 0, 120),
            sample(4, 10, Other, 60, 10),
            sample(5, 10, Worker, 100, 0),
        ]);
        accounting.observe(&[
            sample(1, 10, Worker, 500, 250),
            sample(2, 10, Other, 500, 500),
            sample(3, 20, IoWq, 0, 200),
            // 4 exited: its 50 ms up to the last sample count. 5 exited and its tid was reused.
            sample(5, 30, IoWq, 0, 30),
        ]);
        let cpu = accounting.finish(Nanos(1_000 * MS));

        let order: Vec<_> = cpu.iter().map(|c| c.class).collect();
        assert_eq!(order, [Worker, IoWq, Other], "report order, no empty class");
        assert_eq!(
            class_of(&cpu, Worker),
            &ThreadClassCpu {
                class: Worker,
                threads: 2,
                user_s: 0.5,
                system_s: 0.2,
                busiest_thread_pct: 60.0,
                runqueue_wait_s: 0.0,
                busiest_demand_pct: 60.0,
            }
        );
        assert_eq!(
            class_of(&cpu, IoWq),
            &ThreadClassCpu {
                class: IoWq,
                threads: 2,
                user_s: 0.0,
                system_s: 0.23,
                busiest_thread_pct: 20.0,
                runqueue_wait_s: 0.0,
                busiest_demand_pct: 20.0,
            }
        );
        // Thread 2 used nothing in the window and is not counted.
        assert_eq!(
            class_of(&cpu, Other),
            &ThreadClassCpu {
                class: Other,
                threads: 1,
                user_s: 0.05,
                system_s: 0.0,
                busiest_thread_pct: 5.0,
                runqueue_wait_s: 0.0,
                busiest_demand_pct: 5.0,
            }
        );
    }

    #[test]
    fn schedstat_refines_the_total_and_keeps_the_split() {
        let with_run = |s: ThreadSample, run_ms: u64| ThreadSample { run_ns: Some(run_ms * MS), ..s };
        let (worker, sqpoll) = (ThreadClass::Worker, ThreadClass::Sqpoll);
        let mut accounting = ThreadAccounting::new(&[
            with_run(sample(1, 10, worker, 100, 100), 205),
            with_run(sample(2, 10, sqpoll, 0, 0), 3),
        ]);
        // Ticks say 30 ms user + 10 ms system; schedstat says 48 ms in all.
        // The SQPOLL thread ran 4 ms, under a tick: all of it is system time.
        accounting.observe(&[
            with_run(sample(1, 10, worker, 130, 110), 253),
            with_run(sample(2, 10, sqpoll, 0, 0), 7),
        ]);
        let cpu = accounting.finish(Nanos(100 * MS));
        let worker_cpu = class_of(&cpu, worker);
        assert_eq!((worker_cpu.user_s, worker_cpu.system_s), (0.036, 0.012));
        assert!((worker_cpu.busiest_thread_pct - 48.0).abs() < 1e-9);
        let sqpoll_cpu = class_of(&cpu, sqpoll);
        assert_eq!((sqpoll_cpu.user_s, sqpoll_cpu.system_s), (0.0, 0.004));
    }

    #[test]
    fn runqueue_wait_adds_to_demand() {
        let with = |s: ThreadSample, run_ms: u64, wait_ms: u64| ThreadSample {
            run_ns: Some(run_ms * MS),
            wait_ns: wait_ms * MS,
            ..s
        };
        let worker = ThreadClass::Worker;
        let mut accounting = ThreadAccounting::new(&[
            with(sample(1, 10, worker, 100, 100), 200, 50),
            with(sample(2, 10, worker, 0, 0), 0, 0),
        ]);
        // Thread 1 ran 600 ms and waited 350 ms for a CPU of a 1 s window: it wanted 95% of a
        // core and got 60%. Thread 2 ran 100 ms and waited 10 ms.
        accounting.observe(&[
            with(sample(1, 10, worker, 400, 400), 800, 400),
            with(sample(2, 10, worker, 10, 0), 100, 10),
        ]);
        let cpu = accounting.finish(Nanos(1_000 * MS));
        let workers = class_of(&cpu, worker);
        assert!((workers.busiest_thread_pct - 60.0).abs() < 1e-9);
        assert!((workers.runqueue_wait_s - 0.36).abs() < 1e-9);
        assert!((workers.busiest_demand_pct - 95.0).abs() < 1e-9);
    }

    #[test]
    fn an_empty_window_reports_nothing() {
        let accounting = ThreadAccounting::new(&[sample(1, 10, ThreadClass::Other, 5, 5)]);
        assert_eq!(accounting.finish(Nanos(0)), []);
    }
}
