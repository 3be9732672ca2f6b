//! The journal thread, seen from /proc while a phase runs. On ext4 (and ocfs2, anything on
//! jbd2) an fsync waits for the journal thread `jbd2/<dev>-8` to commit the running
//! transaction; metadata-heavy phases wait for it too when the journal is full. Neither the
//! device's busy time nor the threads' CPU shows that wait: the threads sleep in D state with
//! the journal's wait channel (`jbd2_log_wait_commit`, `wait_transaction_locked`), while the
//! journal thread commits one transaction at a time. So, every few milliseconds of a phase,
//! this counts the process's tasks (the phase's threads and the io_uring workers that run
//! their fsyncs) blocked there, and reads the journal thread's state and CPU time.
//!
//! Only where the directory's device has a journal thread: on tmpfs nothing is sampled.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How often the tasks' states are read: a few hundred file reads a second, nothing beside
/// operations that take milliseconds (and phases shorter than a sample are not judged).
const PERIOD: Duration = Duration::from_millis(5);

/// The journal thread of a block device.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalThread {
    pub pid: u32,
    /// Its name, `jbd2/loop0-8`.
    pub name: String,
}

/// What a phase showed of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalSeen {
    /// The journal thread's name (`jbd2/loop0-8`).
    pub thread: String,
    /// The phase's threads' and their io_uring workers' time blocked waiting for the journal,
    /// in % of their time at work (running, runnable or blocked; not idle).
    pub wait_pct: f64,
    /// The journal thread's time on a CPU, in % of the phase.
    pub cpu_pct: f64,
    /// The journal thread's time blocked (D: its commit's writes to the device), in % of the phase.
    pub device_wait_pct: f64,
    /// States read.
    pub samples: u64,
    /// The phase's threads' and their io_uring workers' time runnable or running (R), in % of
    /// their time at work: time no one waited on the journal in (on a busy machine, mostly
    /// waiting for a CPU, a worker's included).
    #[serde(default)]
    pub runnable_pct: f64,
}

/// The journal thread of the block device named `dev` (`loop0`, `nvme0n1p2`, `dm-0`): its
/// name is `jbd2/<dev>-<journal inode>`, cut to 15 bytes as the kernel keeps names.
pub fn find_journal_thread(dev: &str) -> Option<JournalThread> {
    let prefix = format!("jbd2/{dev}-");
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(comm) = std::fs::read_to_string(entry.path().join("comm")) else { continue };
        let comm = comm.trim_end();
        let cut = comm.len() == 15 && prefix.starts_with(comm);
        if comm.starts_with(&prefix) || cut {
            return Some(JournalThread { pid, name: comm.to_string() });
        }
    }
    None
}

/// The device's name for sysfs dir `/sys/dev/block/M:m` (a link to `.../block/loop0`).
pub fn device_name(sysfs_dev: &Path) -> Option<String> {
    let real = std::fs::canonicalize(sysfs_dev).ok()?;
    real.file_name()?.to_str().map(str::to_string)
}

/// The state letter of a `/proc/<pid>/stat` line (after the name, which may hold spaces and
/// parentheses).
pub fn state_of(stat: &str) -> Option<char> {
    stat.get(stat.rfind(')')? + 1..)?.trim_start().chars().next()
}

/// Whether a wait channel is the journal's: waiting for a commit (fsync), for room in the
/// running transaction, or for a metadata buffer the committing transaction still holds
/// (jbd2's `do_get_write_access`).
pub fn journal_wchan(wchan: &str) -> bool {
    let w = wchan.trim();
    w.contains("jbd2") || w.contains("transaction") || w.contains("journal") || w == "do_get_write_access"
}

/// Counts, while running, the samples in which the process's tasks waited for the journal.
pub struct JournalWatch {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Counts>,
    thread: JournalThread,
    cpu_ns_before: Option<u64>,
}

#[derive(Default)]
struct Counts {
    samples: u64,
    /// Sum over samples of the tasks at work: running, runnable or blocked (R or D), not idle
    /// in an interruptible sleep as a worker with nothing to do or a thread waiting for its
    /// ring are.
    at_work: u64,
    /// Sum over samples of the tasks blocked in the journal.
    blocked: u64,
    /// Samples in which the journal thread was in D.
    journal_blocked: u64,
    /// Sum over samples of the tasks runnable or running.
    runnable: u64,
}

impl Counts {
    /// Adds one task's state; `in_journal` (its wait channel read) is asked of a blocked one.
    fn add(&mut self, state: Option<char>, in_journal: impl FnOnce() -> bool) {
        match state {
            Some('D') => {
                self.at_work += 1;
                self.blocked += u64::from(in_journal());
            }
            Some('R') => {
                self.at_work += 1;
                self.runnable += 1;
            }
            _ => {}
        }
    }

    /// The tasks' time at work blocked on the journal, and running or runnable, in %.
    fn shares(&self) -> (f64, f64) {
        let per = |n: u64| 100.0 * n as f64 / self.at_work.max(1) as f64;
        (per(self.blocked), per(self.runnable))
    }
}

fn on_cpu_ns(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?.split_whitespace().next()?.parse().ok()
}

/// Adds one sample of the process's tasks: with io_uring, a thread's operations are under way
/// in as many io-wq workers as it keeps queued, so what each state holds is counted of the
/// tasks at work, not of the threads.
fn sample(journal: u32, sampler: &std::ffi::OsStr, counts: &mut Counts) {
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if task.file_name() == sampler {
                continue;
            }
            let path = task.path();
            let state = std::fs::read_to_string(path.join("stat")).ok().and_then(|s| state_of(&s));
            counts
                .add(state, || std::fs::read_to_string(path.join("wchan")).is_ok_and(|w| journal_wchan(&w)));
        }
    }
    counts.samples += 1;
    let state = std::fs::read_to_string(format!("/proc/{journal}/stat")).ok().and_then(|s| state_of(&s));
    counts.journal_blocked += u64::from(state == Some('D'));
}

impl JournalWatch {
    /// Starts sampling for a phase; none if the sampler cannot start.
    pub fn start(thread: &JournalThread) -> Option<JournalWatch> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let pid = thread.pid;
        let cpu_ns_before = on_cpu_ns(pid);
        let handle = std::thread::Builder::new()
            .name("iolab-journal".into())
            .spawn(move || {
                let mut counts = Counts::default();
                let me = std::ffi::OsString::from(nix::unistd::gettid().to_string());
                while !stopping.load(Relaxed) {
                    sample(pid, &me, &mut counts);
                    std::thread::sleep(PERIOD);
                }
                counts
            })
            .ok()?;
        Some(JournalWatch { stop, handle, thread: thread.clone(), cpu_ns_before })
    }

    /// Stops sampling; the figures over a phase of `elapsed_s`.
    pub fn finish(self, elapsed_s: f64) -> Option<JournalSeen> {
        self.stop.store(true, Relaxed);
        let counts = self.handle.join().ok()?;
        let cpu_ns = self.cpu_ns_before.zip(on_cpu_ns(self.thread.pid)).map(|(a, b)| b.saturating_sub(a));
        if counts.samples == 0 {
            return None;
        }
        let (wait_pct, runnable_pct) = counts.shares();
        Some(JournalSeen {
            thread: self.thread.name,
            wait_pct,
            cpu_pct: cpu_ns.map_or(0.0, |ns| (100.0 * ns as f64 / 1e9 / elapsed_s.max(1e-9)).min(100.0)),
            device_wait_pct: 100.0 * counts.journal_blocked as f64 / counts.samples as f64,
            samples: counts.samples,
            runnable_pct,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_wait_channels_as_proc_gives_them() {
        // Captured on ext4 over a loop device during `iolab files --fsync --engine sync`.
        assert_eq!(state_of("1402 (jbd2/loop0-8) D 2 0 0 0 -1 2129984 0 0"), Some('D'));
        assert_eq!(state_of("1888 (iou-wrk-1886) R 1 1886 60 0"), Some('R'));
        assert_eq!(state_of("7 (a) b) S 1"), Some('S'), "the last ')' ends the name");
        assert!(journal_wchan("jbd2_log_wait_commit"));
        assert!(journal_wchan("wait_transaction_locked\n"));
        // Seen beside two busy loops with io_uring: an io-wq worker waiting for a buffer that
        // the commit holds.
        assert!(journal_wchan("do_get_write_access"));
        assert!(journal_wchan("__jbd2_log_wait_for_space"));
        assert!(!journal_wchan("submit_bio_wait"), "the device, not the journal");
        assert!(!journal_wchan("io_cqring_wait"));
        assert!(!journal_wchan("0"));
    }

    /// 2 threads asleep on their rings and 32 io-wq workers: 10 running or runnable, 4 on the
    /// journal, 2 blocked elsewhere, 16 idle. The shares are of the 16 at work: the idle are
    /// no one's wait, and no cap at the thread count hides how many waited.
    #[test]
    fn shares_are_of_the_tasks_at_work() {
        let mut counts = Counts::default();
        let mut tasks = vec![(Some('S'), false); 18];
        tasks.extend([(Some('R'), false); 10]);
        tasks.extend([(Some('D'), true); 4]);
        tasks.extend([(Some('D'), false); 2]);
        tasks.push((None, false));
        for (state, in_journal) in tasks {
            counts.add(state, || in_journal);
        }
        assert_eq!(counts.shares(), (25.0, 62.5));
        assert_eq!(Counts::default().shares(), (0.0, 0.0));
    }
}
