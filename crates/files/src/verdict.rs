//! What limited a phase, from the phase's own figures: the threads' CPU, the device under the
//! directory, the filesystem's journal thread, a shared directory's lock, fsync. The block jobs' rules (`iolab-analysis`
//! verdicts) read a whole machine's facts about I/O queues; a metadata phase has none of
//! those, so its rules are these few, each with the figure that shows it.

use serde::{Deserialize, Serialize};

use iolab_stats::format::binary_bytes;

use crate::journal::JournalSeen;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FilesCause {
    /// The threads were on the CPU nearly all the time (in iolab or in the kernel's code for
    /// each call): more threads or a faster CPU would go faster.
    Cpu,
    /// The block device under the directory was busy nearly all the time.
    Device,
    /// The device was busy writing what the phase did not write (a phase that writes nothing):
    /// an earlier phase's dirty pages written back, or another process's writes.
    OtherWrites,
    /// The threads waited for the filesystem's journal thread (jbd2) to commit: fsync, or a
    /// full journal. Fewer fsyncs, a larger or faster journal, or more threads per commit.
    Journal,
    /// Threads sharing one directory waited for its lock (neither CPU nor device was busy).
    DirectoryLock,
    /// fsync took most of the threads' time: the journal or the device's cache flushes.
    Fsync,
    /// The threads waited on something else (the journal thread, writeback, another load).
    Waiting,
    /// Too few operations or too short to tell.
    Undetermined,
}

impl FilesCause {
    pub fn name(self) -> &'static str {
        match self {
            FilesCause::Cpu => "cpu",
            FilesCause::Device => "device",
            FilesCause::OtherWrites => "other_writes",
            FilesCause::Journal => "journal",
            FilesCause::DirectoryLock => "directory_lock",
            FilesCause::Fsync => "fsync",
            FilesCause::Waiting => "waiting",
            FilesCause::Undetermined => "undetermined",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilesVerdict {
    pub cause: FilesCause,
    /// One plain sentence with its figures.
    pub summary: String,
}

/// The figures a phase's verdict reads.
pub struct PhaseFacts {
    pub threads: u32,
    /// The CPUs the threads may run on.
    pub cores: u32,
    pub shared_dir: bool,
    /// The phase adds or removes directory entries, each under its directory's lock.
    pub modifies_entries: bool,
    /// The phase makes the device write nothing of its own (stat, readdir).
    pub writes_nothing: bool,
    pub elapsed_s: f64,
    pub ops: u64,
    /// The threads' CPU time over their wall time, in % (100: every thread always on a CPU).
    pub cpu_busy_pct: f64,
    pub cpu_sys_pct: f64,
    /// Time runnable but waiting for a core, over the threads' wall time, in %.
    pub runq_wait_pct: f64,
    /// The threads' io_uring io-wq workers alive at a time, on average (0 on the sync engine).
    pub io_wq_workers: f64,
    /// A worker's time waiting for a core, over its time alive in the phase, in %.
    pub io_wq_wait_pct: f64,
    pub device_busy_pct: Option<f64>,
    /// What the device read and wrote over the phase, whoever asked.
    pub device_read_bytes: Option<u64>,
    pub device_written_bytes: Option<u64>,
    /// Time spent in fsync over the threads' wall time, or over the operations' own time
    /// where they overlapped (queued on a ring), in %.
    pub fsync_pct: f64,
    /// The journal thread's figures, where the directory's filesystem has one (ext4).
    pub journal: Option<JournalSeen>,
}

const BUSY_PCT: f64 = 80.0;
/// Threads past the cores are busy at this much of a core's share each.
const OWN_SHARE: f64 = BUSY_PCT / 100.0;
/// The threads' time blocked on the journal from which it is the limit.
const JOURNAL_PCT: f64 = 50.0;
/// The tasks' time at work blocked on the journal below which it is not the limit, however
/// little of the rest they were blocked: tasks runnable 90% of the time and on the journal the
/// other 10% were held by the CPU.
const JOURNAL_MIN_PCT: f64 = 15.0;
/// The threads' time in fsync from which fsync is the limit.
const FSYNC_PCT: f64 = 50.0;
const MIN_SECONDS: f64 = 0.05;
/// Writes a phase that writes nothing must see on its busy device, at least, before they are
/// what kept it busy: more than stray atime updates of a directory or two.
const OTHER_WRITES_MIN_BYTES: u64 = 1 << 20;

pub fn judge(f: &PhaseFacts) -> FilesVerdict {
    let verdict = |cause, summary: String| FilesVerdict { cause, summary };
    if f.ops == 0 || f.elapsed_s < MIN_SECONDS {
        return verdict(
            FilesCause::Undetermined,
            format!("too short to tell ({} operations in {:.3} s)", f.ops, f.elapsed_s),
        );
    }
    // Before the device: when the threads sleep on the journal's commits, the device's busy
    // time is the journal's one-commit-at-a-time writes, and the journal is what to change.
    // Or when fsync took most of the threads' time and the journal's commits most of that
    // (with io_uring the wait is an io-wq worker's, seen less often than a thread's own).
    // On a busy machine a thread (or its io_uring worker) whose commit is done waits for a CPU
    // before it runs again: that time is in its fsync but is no one's wait on the journal, so
    // the journal's share is of the time the threads were not runnable (the threads' own wait
    // for a CPU, or what the samples saw runnable of them and their workers, the larger).
    // Fsync's time all queued for a CPU is no one's wait on the journal, however little of it
    // the samples saw there.
    let journal_bound = |j: &&JournalSeen| {
        let queued = f.runq_wait_pct.max(j.runnable_pct);
        let not_queued = (100.0 - queued).max(1.0);
        let fsync_not_queued = (f.fsync_pct - queued).max(0.0);
        (j.wait_pct >= JOURNAL_MIN_PCT && 100.0 * j.wait_pct / not_queued >= JOURNAL_PCT)
            || (f.fsync_pct >= FSYNC_PCT && fsync_not_queued > 0.0 && j.wait_pct >= fsync_not_queued / 2.0)
    };
    if let Some(j) = f.journal.as_ref().filter(journal_bound) {
        return verdict(
            FilesCause::Journal,
            format!(
                "the journal thread ({}): the threads (and their io_uring workers) waited for its commits {:.0}% of their time at work (fsync {:.0}%); \
                 it ran on a CPU {:.0}% of the phase and waited for the device {:.0}%, the device {}",
                j.thread,
                j.wait_pct,
                f.fsync_pct.min(100.0),
                j.cpu_pct,
                j.device_wait_pct,
                f.device_busy_pct.map_or("absent".to_string(), |b| format!("busy {b:.0}%"))
            ),
        );
    }
    if let Some(busy) = f.device_busy_pct.filter(|&b| b >= BUSY_PCT) {
        let (read, written) = (f.device_read_bytes.unwrap_or(0), f.device_written_bytes.unwrap_or(0));
        if f.writes_nothing && written >= OTHER_WRITES_MIN_BYTES && written >= read {
            return verdict(
                FilesCause::OtherWrites,
                format!(
                    "writes this phase did not make: the device was busy {busy:.0}% of it and wrote {} (it read {}) while the phase wrote nothing; an earlier phase's dirty pages written back, or another process's writes",
                    binary_bytes(written),
                    binary_bytes(read)
                ),
            );
        }
        return verdict(FilesCause::Device, format!("the device: busy {busy:.0}% of the phase"));
    }
    if f.fsync_pct >= FSYNC_PCT {
        return verdict(
            FilesCause::Fsync,
            format!(
                "fsync: {:.0}% of the threads' time waited for the journal or the device's flushes",
                f.fsync_pct
            ),
        );
    }
    // More threads than cores: each can run only its share, and waits for a core the rest.
    let core_share_pct = 100.0 * f64::from(f.cores.max(1)) / f64::from(f.threads.max(1));
    if f.threads > f.cores && f.cpu_busy_pct >= OWN_SHARE * core_share_pct {
        return verdict(
            FilesCause::Cpu,
            format!(
                "the CPU: {} threads on {} core(s), each on a CPU {:.0}% of the time (a core's share is {:.0}%) and waiting for one {:.0}%",
                f.threads, f.cores, f.cpu_busy_pct, core_share_pct, f.runq_wait_pct
            ),
        );
    }
    // A thread and the io_uring workers doing its operations are one chain: its wait for a
    // core, then theirs. Operations queued on a ring run in as many workers at once, and more
    // of them than cores crowd the cores themselves.
    let waited_pct = f.runq_wait_pct + f.io_wq_wait_pct;
    if f.cpu_busy_pct < BUSY_PCT && f.cpu_busy_pct + waited_pct >= BUSY_PCT {
        let tasks = f64::from(f.threads) + f.io_wq_workers;
        let summary = if f.io_wq_workers >= 1.0 && tasks > f64::from(f.cores) {
            format!(
                "the CPU, shared among the {} thread(s) and their io_uring workers ({:.1} at a time on average) on {} core(s): the threads ran {:.0}% of the time and waited for a core {:.0}%, and a worker waited {:.0}% of its time",
                f.threads, f.io_wq_workers, f.cores, f.cpu_busy_pct, f.runq_wait_pct, f.io_wq_wait_pct
            )
        } else {
            let workers = if f.io_wq_wait_pct > 0.0 {
                format!(", and their io_uring workers {:.0}% of theirs", f.io_wq_wait_pct)
            } else {
                String::new()
            };
            format!(
                "the CPU, shared with another load: the threads ran {:.0}% of the time and waited for a core {:.0}%{workers}",
                f.cpu_busy_pct, f.runq_wait_pct
            )
        };
        return verdict(FilesCause::Cpu, summary);
    }
    if f.cpu_busy_pct >= BUSY_PCT {
        return verdict(
            FilesCause::Cpu,
            format!(
                "the CPU: the {} thread(s) were on a CPU {:.0}% of the time ({:.0}% in the kernel's system calls)",
                f.threads, f.cpu_busy_pct, f.cpu_sys_pct
            ),
        );
    }
    if f.shared_dir && f.threads > 1 && f.modifies_entries {
        return verdict(
            FilesCause::DirectoryLock,
            format!(
                "the shared directory's lock: {} threads on a CPU only {:.0}% of the time, the device {}",
                f.threads,
                f.cpu_busy_pct,
                f.device_busy_pct.map_or("absent".to_string(), |b| format!("busy {b:.0}%"))
            ),
        );
    }
    verdict(
        FilesCause::Waiting,
        format!(
            "waiting: threads on a CPU {:.0}% of the time, the device {}; the journal, writeback or another load",
            f.cpu_busy_pct,
            f.device_busy_pct.map_or("absent".to_string(), |b| format!("busy {b:.0}%"))
        ),
    )
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
