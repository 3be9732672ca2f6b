//! A thread's figures for one phase, and the readings of its CPU behind them.

use std::io;

use iolab_stats::OpStats;

use crate::io_wq::{IoWqCpu, IoWqUse};
use crate::mix::MIX_OPS;
use crate::report::{Failure, OP_KINDS};

/// A thread's figures for one phase.
pub struct Outcome {
    pub kinds: Vec<OpStats>,
    /// Per second of the phase: the phase's operations and bytes.
    pub series: Vec<[u64; 2]>,
    pub done: u64,
    pub bytes: u64,
    pub entries: u64,
    pub finished_ns: u64,
    /// (operations, bytes) when the first thread finished.
    pub stonewall: Option<[u64; 2]>,
    pub failure: Option<Failure>,
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    /// Time the thread was runnable but waited for a core (schedstat): a busy machine.
    pub runq_wait_ns: u64,
    /// The thread's io_uring io-wq workers: their time on a CPU, waiting for one, and alive.
    pub io_wq: IoWqUse,
    /// A mix's creates done as unlinks and unlinks as creates, to hold the population.
    pub swapped: u64,
    /// A mix's draws, per operation, that found no file in the state the operation needs.
    pub unplaced: [u64; MIX_OPS.len()],
}

impl Outcome {
    /// Nothing done yet.
    pub fn empty() -> Outcome {
        Outcome {
            kinds: OP_KINDS.iter().map(|_| OpStats::default()).collect(),
            series: Vec::new(),
            done: 0,
            bytes: 0,
            entries: 0,
            finished_ns: 0,
            stonewall: None,
            failure: None,
            cpu_user_ns: 0,
            cpu_sys_ns: 0,
            runq_wait_ns: 0,
            io_wq: IoWqUse::default(),
            swapped: 0,
            unplaced: [0; MIX_OPS.len()],
        }
    }

    /// A thread that could not start (its ring, say, or it panicked): nothing done, and
    /// `error` the phase's failure.
    pub fn not_started(thread: u32, error: &io::Error) -> Outcome {
        let failure = Failure {
            op: "start".to_string(),
            path: format!("thread {thread}"),
            error: error.to_string(),
            errno: error.raw_os_error(),
            ran_out_of: None,
        };
        Outcome { failure: Some(failure), ..Outcome::empty() }
    }
}

fn thread_cpu_ns() -> (u64, u64) {
    use nix::sys::resource::{getrusage, UsageWho};
    let Ok(usage) = getrusage(UsageWho::RUSAGE_THREAD) else {
        return (0, 0);
    };
    let ns = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000_000 + t.tv_usec() as u64 * 1_000;
    (ns(usage.user_time()), ns(usage.system_time()))
}

/// The thread's time waiting on a run queue, in ns (0 where the kernel keeps no schedstat).
fn runq_wait_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| text.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// A thread's CPU readings when its phase began: its own, and its io_uring io-wq workers'.
pub(super) struct CpuAtStart {
    user_ns: u64,
    sys_ns: u64,
    wait_ns: u64,
    io_wq: IoWqCpu,
}

impl CpuAtStart {
    pub(super) fn now() -> CpuAtStart {
        let (user_ns, sys_ns) = thread_cpu_ns();
        CpuAtStart { user_ns, sys_ns, wait_ns: runq_wait_ns(), io_wq: IoWqCpu::start() }
    }

    /// Sets `out`'s CPU figures to what the thread and its workers used since.
    pub(super) fn since(self, out: &mut Outcome) {
        let (user_ns, sys_ns) = thread_cpu_ns();
        out.cpu_user_ns = user_ns.saturating_sub(self.user_ns);
        out.cpu_sys_ns = sys_ns.saturating_sub(self.sys_ns);
        out.runq_wait_ns = runq_wait_ns().saturating_sub(self.wait_ns);
        out.io_wq = self.io_wq.since_start();
    }
}
