//! The CPU io_uring's async workers spent for one submitting thread over a phase. A request
//! io_uring cannot issue inline (an open, a create, an unlink on most filesystems) runs in an
//! io-wq worker, a thread of our process named `iou-wrk-<submitting tid>`, so that work is the
//! engine's CPU as much as the submitting thread's own system calls are (issue 30 item 6).
//!
//! Each worker's schedstat gives its time on a CPU and its wait for one, in ns. A worker that
//! exits during the phase (after idling for seconds) takes its part with it: the figure is a
//! floor. Without schedstat (no CONFIG_SCHED_INFO) it is 0.

use std::collections::HashMap;

/// The io-wq workers of the calling thread, read when its phase starts.
pub struct IoWqCpu {
    /// "iou-wrk-<tid>", as /proc/self/task/<tid>/comm shows it.
    name: String,
    /// Each worker's (run, wait) ns at the start.
    start: HashMap<u32, (u64, u64)>,
}

impl IoWqCpu {
    /// Reads the calling thread's io-wq workers now.
    pub fn start() -> IoWqCpu {
        let name = format!("iou-wrk-{}", nix::unistd::gettid());
        let start = workers_of(&name);
        IoWqCpu { name, start }
    }

    /// Their time on a CPU and their wait for one since `start`, in ns: a worker that began
    /// since counts whole.
    pub fn since_start(&self) -> (u64, u64) {
        workers_of(&self.name).into_iter().fold((0, 0), |(run, wait), (tid, (r, w))| {
            let (r0, w0) = self.start.get(&tid).copied().unwrap_or((0, 0));
            (run + r.saturating_sub(r0), wait + w.saturating_sub(w0))
        })
    }
}

/// Every thread of this process named `name`, with its schedstat run and wait ns.
fn workers_of(name: &str) -> HashMap<u32, (u64, u64)> {
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
            Some((tid, parse_schedstat(&schedstat)?))
        })
        .collect()
}

/// (time on a CPU, time waiting on a run queue) in ns from a schedstat line.
fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    Some((fields.next()?.ok()?, fields.next()?.ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_gives_run_and_wait() {
        assert_eq!(parse_schedstat("123456 789 42\n"), Some((123_456, 789)));
        assert_eq!(parse_schedstat("12"), None);
        assert_eq!(parse_schedstat(""), None);
    }

    /// A thread with no ring has no workers: nothing counted, whatever else runs.
    #[test]
    fn a_thread_without_workers_counts_nothing() {
        let cpu = IoWqCpu::start();
        assert!(cpu.start.is_empty());
        assert_eq!(cpu.since_start(), (0, 0));
    }
}
