//! The CPU io_uring's async workers spent for one submitting thread over a phase. A request
//! io_uring cannot issue inline (an open, a create, an unlink on most filesystems) runs in an
//! io-wq worker, a thread of our process named `iou-wrk-<submitting tid>`, so that work is the
//! engine's CPU as much as the submitting thread's own system calls are (issue 30 item 6).
//!
//! Each worker's schedstat gives its time on a CPU and its wait for one, in ns. A worker that
//! exits during the phase (after idling for seconds) takes its part with it: the figure is a
//! floor. Without schedstat (no CONFIG_SCHED_INFO) it is 0.
//!
//! Operations queued on a ring run in many workers at once, so their waits for a core are
//! summed over workers that waited side by side: 32 workers woken together by one journal
//! commit wait for the 2 cores in turn, and their sum passes the phase's length. That wait is
//! kept with the time the workers were alive in the phase, so that it can be told as the share
//! of a worker's time, which one worker doing one operation at a time gives as before.

use std::collections::HashMap;

/// The io-wq workers of the calling thread, read when its phase starts.
pub struct IoWqCpu {
    /// "iou-wrk-<tid>", as /proc/self/task/<tid>/comm shows it.
    name: String,
    /// Each worker's schedstat at the start.
    start: HashMap<u32, Schedstat>,
    /// When the phase began, in ns since boot (the clock a task's start time is on).
    start_ns: u64,
}

/// What a thread's io-wq workers did over a phase, summed over the workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoWqUse {
    /// Time on a CPU, in ns.
    pub run_ns: u64,
    /// Time runnable but waiting for a CPU, in ns.
    pub wait_ns: u64,
    /// Time alive within the phase, in ns: the phase's length for a worker there throughout.
    pub alive_ns: u64,
}

impl IoWqUse {
    /// Adds another thread's workers.
    pub fn add(&mut self, other: &IoWqUse) {
        self.run_ns += other.run_ns;
        self.wait_ns += other.wait_ns;
        self.alive_ns += other.alive_ns;
    }

    /// A worker's share of its time alive spent waiting for a CPU, in %: workers queued side
    /// by side wait in turn, and their sum is not any one operation's delay.
    pub fn wait_pct(&self) -> f64 {
        if self.alive_ns > 0 {
            (100.0 * self.wait_ns as f64 / self.alive_ns as f64).min(100.0)
        } else {
            0.0
        }
    }
}

/// A worker's schedstat: time on a CPU and waiting for one, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Schedstat {
    run_ns: u64,
    wait_ns: u64,
}

impl IoWqCpu {
    /// Reads the calling thread's io-wq workers now.
    pub fn start() -> IoWqCpu {
        let name = format!("iou-wrk-{}", nix::unistd::gettid());
        let start = workers_of(&name).into_iter().map(|(tid, (stat, _))| (tid, stat)).collect();
        IoWqCpu { name, start, start_ns: boot_ns() }
    }

    /// What the workers did since `start`: a worker that began since counts whole, and is
    /// alive from its start.
    pub fn since_start(&self) -> IoWqUse {
        let now_ns = boot_ns();
        let workers = workers_of(&self.name);
        workers.into_iter().fold(IoWqUse::default(), |sum, (tid, (stat, began_ns))| {
            let before = self.start.get(&tid).copied().unwrap_or_default();
            let from_ns =
                if self.start.contains_key(&tid) { self.start_ns } else { began_ns.max(self.start_ns) };
            IoWqUse {
                run_ns: sum.run_ns + stat.run_ns.saturating_sub(before.run_ns),
                wait_ns: sum.wait_ns + stat.wait_ns.saturating_sub(before.wait_ns),
                alive_ns: sum.alive_ns + now_ns.saturating_sub(from_ns),
            }
        })
    }
}

/// Now, in ns since boot.
fn boot_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME)
        .map_or(0, |t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

/// Every thread of this process named `name`, with its schedstat and when it began, in ns
/// since boot (to the kernel's clock tick).
fn workers_of(name: &str) -> HashMap<u32, (Schedstat, u64)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return HashMap::new() };
    tasks
        .flatten()
        .filter_map(|task| {
            let tid: u32 = task.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
            if comm.trim_end() != name {
                return None;
            }
            let schedstat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            Some((tid, (parse_schedstat(&schedstat)?, began_ns(&stat, ticks_per_s())?)))
        })
        .collect()
}

/// Time on a CPU and time waiting on a run queue, in ns, from a schedstat line.
fn parse_schedstat(text: &str) -> Option<Schedstat> {
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    Some(Schedstat { run_ns: fields.next()?.ok()?, wait_ns: fields.next()?.ok()? })
}

/// The kernel's clock ticks per second, in which /proc gives a task's start.
fn ticks_per_s() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().map_or(100, |t| t.max(1) as u64)
}

/// When a task began, in ns since boot, from its /proc stat line (field 22, in clock ticks,
/// counted after the command name, which may hold spaces and parentheses).
fn began_ns(stat: &str, ticks_per_s: u64) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    Some(ticks / ticks_per_s * 1_000_000_000 + ticks % ticks_per_s * 1_000_000_000 / ticks_per_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_gives_run_and_wait() {
        assert_eq!(parse_schedstat("123456 789 42\n"), Some(Schedstat { run_ns: 123_456, wait_ns: 789 }));
        assert_eq!(parse_schedstat("12"), None);
        assert_eq!(parse_schedstat(""), None);
    }

    /// A thread with no ring has no workers: nothing counted, whatever else runs.
    #[test]
    fn a_thread_without_workers_counts_nothing() {
        let cpu = IoWqCpu::start();
        assert!(cpu.start.is_empty());
        assert_eq!(cpu.since_start(), IoWqUse::default());
    }

    /// 32 workers alive for a 1 s phase that waited 3 s for a core between them waited
    /// 9% of their time each; one worker alive throughout that waited 0.3 s, 30%.
    #[test]
    fn workers_wait_as_a_share_of_their_own_time() {
        let side_by_side =
            IoWqUse { run_ns: 1_000_000_000, wait_ns: 3_000_000_000, alive_ns: 32_000_000_000 };
        assert!((side_by_side.wait_pct() - 9.375).abs() < 1e-9);
        let mut both = IoWqUse { run_ns: 0, wait_ns: 300_000_000, alive_ns: 1_000_000_000 };
        assert!((both.wait_pct() - 30.0).abs() < 1e-9);
        both.add(&side_by_side);
        assert_eq!(both.alive_ns, 33_000_000_000);
        assert_eq!(IoWqUse::default().wait_pct(), 0.0);
    }

    #[test]
    fn a_task_began_at_field_22_of_its_stat() {
        let stat = "4242 (iou-wrk-41 (x) y) S 1 4242 4242 0 -1 4194368 90 0 0 0 3 1 0 0 20 0 1 0 250 0 0";
        assert_eq!(began_ns(stat, 100), Some(2_500_000_000));
        assert_eq!(began_ns("4242 (short) S 1", 100), None);
    }

    /// This thread's own start, read as a worker's is, is before now and after boot.
    #[test]
    fn a_thread_s_start_is_read_on_the_boot_clock() {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("stat");
        let began = began_ns(&stat, ticks_per_s()).expect("field 22");
        assert!(began > 0 && began <= boot_ns(), "{began} against {}", boot_ns());
    }
}
