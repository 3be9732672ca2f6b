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
    pub device_busy_pct: Option<f64>,
    /// What the device read and wrote over the phase, whoever asked.
    pub device_read_bytes: Option<u64>,
    pub device_written_bytes: Option<u64>,
    /// Time spent in fsync over the threads' wall time, in %.
    pub fsync_pct: f64,
    /// The journal thread's figures, where the directory's filesystem has one (ext4).
    pub journal: Option<JournalSeen>,
}

const BUSY_PCT: f64 = 80.0;
/// Threads past the cores are busy at this much of a core's share each.
const OWN_SHARE: f64 = BUSY_PCT / 100.0;
/// The threads' time blocked on the journal from which it is the limit.
const JOURNAL_PCT: f64 = 50.0;
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
    let journal_bound = |j: &&JournalSeen| {
        let queued = f.runq_wait_pct.max(j.runnable_pct);
        let not_queued = (100.0 - queued).max(1.0);
        let fsync_not_queued = (f.fsync_pct - queued).max(0.0);
        100.0 * j.wait_pct / not_queued >= JOURNAL_PCT
            || (f.fsync_pct >= FSYNC_PCT && j.wait_pct >= fsync_not_queued / 2.0)
    };
    if let Some(j) = f.journal.as_ref().filter(journal_bound) {
        return verdict(
            FilesCause::Journal,
            format!(
                "the journal thread ({}): the threads waited for its commits {:.0}% of their time (fsync {:.0}%); \
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
    if f.cpu_busy_pct < BUSY_PCT && f.cpu_busy_pct + f.runq_wait_pct >= BUSY_PCT {
        return verdict(
            FilesCause::Cpu,
            format!(
                "the CPU, shared with another load: the threads ran {:.0}% of the time and waited for a core {:.0}%",
                f.cpu_busy_pct, f.runq_wait_pct
            ),
        );
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
mod tests {
    use super::*;

    fn facts() -> PhaseFacts {
        PhaseFacts {
            threads: 2,
            cores: 2,
            shared_dir: false,
            modifies_entries: true,
            writes_nothing: false,
            elapsed_s: 2.0,
            ops: 10_000,
            cpu_busy_pct: 95.0,
            cpu_sys_pct: 80.0,
            runq_wait_pct: 0.0,
            device_busy_pct: None,
            device_read_bytes: None,
            device_written_bytes: None,
            fsync_pct: 0.0,
            journal: None,
        }
    }

    /// Captured on ext4 over a loop device (/dev/shm, direct I/O): `iolab files --fsync
    /// --engine sync --threads 2 --files 3000`, its create phase.
    fn fsync_on_ext4(wait_pct: f64) -> PhaseFacts {
        PhaseFacts {
            threads: 2,
            cores: 2,
            shared_dir: false,
            modifies_entries: true,
            writes_nothing: false,
            elapsed_s: 1.492,
            ops: 3000,
            cpu_busy_pct: 7.0,
            cpu_sys_pct: 6.0,
            runq_wait_pct: 14.0,
            device_busy_pct: Some(28.0),
            device_read_bytes: Some(0),
            device_written_bytes: Some(12 << 20),
            fsync_pct: 86.0,
            journal: Some(JournalSeen {
                thread: "jbd2/loop0-8".into(),
                wait_pct,
                cpu_pct: 4.0,
                device_wait_pct: 31.0,
                samples: 260,
                runnable_pct: 10.0,
            }),
        }
    }

    #[test]
    fn the_journal_from_the_threads_wait_on_its_commits() {
        let v = judge(&fsync_on_ext4(78.0));
        assert_eq!(v.cause, FilesCause::Journal, "{}", v.summary);
        assert!(v.summary.contains("jbd2/loop0-8") && v.summary.contains("78%"), "{}", v.summary);
        // Before the device: its busy time is the journal's commits.
        let busy = PhaseFacts { device_busy_pct: Some(95.0), ..fsync_on_ext4(78.0) };
        assert_eq!(judge(&busy).cause, FilesCause::Journal);
        // With io_uring (captured likewise): the wait is the workers', 44% beside fsync's 67%.
        let uring = PhaseFacts { fsync_pct: 67.0, ..fsync_on_ext4(44.0) };
        assert_eq!(judge(&uring).cause, FilesCause::Journal);
        // Waiting little on the journal: fsync's own time (flushes, data writeback) is the rule.
        assert_eq!(judge(&fsync_on_ext4(20.0)).cause, FilesCause::Fsync);
        // Both cores busy with other work (captured likewise beside two busy loops): the threads
        // waited for a CPU 44% of their time, inside their fsyncs too; the journal's 23% is
        // most of the rest.
        let crowded = PhaseFacts { fsync_pct: 71.0, runq_wait_pct: 44.0, ..fsync_on_ext4(23.0) };
        assert_eq!(judge(&crowded).cause, FilesCause::Journal, "{}", judge(&crowded).summary);
        let crowded_elsewhere = PhaseFacts { fsync_pct: 71.0, runq_wait_pct: 44.0, ..fsync_on_ext4(8.0) };
        assert_eq!(judge(&crowded_elsewhere).cause, FilesCause::Fsync);
        // With io_uring the waits for a CPU are the workers': seen runnable in the samples.
        let mut crowded_workers = PhaseFacts { fsync_pct: 80.0, runq_wait_pct: 5.0, ..fsync_on_ext4(22.0) };
        assert_eq!(judge(&crowded_workers).cause, FilesCause::Fsync, "22% of 80% is not the journal");
        if let Some(j) = crowded_workers.journal.as_mut() {
            j.runnable_pct = 45.0;
        }
        assert_eq!(judge(&crowded_workers).cause, FilesCause::Journal, "22% of the 35% not runnable is");
        // No journal thread (tmpfs, xfs): as before.
        assert_eq!(judge(&PhaseFacts { journal: None, ..fsync_on_ext4(0.0) }).cause, FilesCause::Fsync);
        let short = PhaseFacts { elapsed_s: 0.01, ..fsync_on_ext4(90.0) };
        assert_eq!(judge(&short).cause, FilesCause::Undetermined);
    }

    #[test]
    fn each_cause_from_its_figure() {
        assert_eq!(judge(&facts()).cause, FilesCause::Cpu);
        let device = PhaseFacts { device_busy_pct: Some(97.0), cpu_busy_pct: 20.0, ..facts() };
        assert_eq!(judge(&device).cause, FilesCause::Device);
        let lock = PhaseFacts { shared_dir: true, cpu_busy_pct: 40.0, ..facts() };
        assert_eq!(judge(&lock).cause, FilesCause::DirectoryLock);
        let fsync = PhaseFacts { fsync_pct: 70.0, cpu_busy_pct: 10.0, ..facts() };
        assert_eq!(judge(&fsync).cause, FilesCause::Fsync);
        let idle = PhaseFacts { cpu_busy_pct: 30.0, device_busy_pct: Some(10.0), ..facts() };
        assert_eq!(judge(&idle).cause, FilesCause::Waiting);
        let crowded = PhaseFacts { cpu_busy_pct: 30.0, runq_wait_pct: 60.0, ..facts() };
        assert_eq!(judge(&crowded).cause, FilesCause::Cpu);
        let short = PhaseFacts { elapsed_s: 0.001, ..facts() };
        assert_eq!(judge(&short).cause, FilesCause::Undetermined);
    }

    /// 8 threads of a mix on 2 cores ran 25% of their time and waited 93% for a core: their own
    /// number, not another load, held them (measured on tmpfs, `--profile fileserver --threads 8`).
    #[test]
    fn more_threads_than_cores_is_the_cpu_they_share_among_themselves() {
        let own =
            PhaseFacts { threads: 8, cpu_busy_pct: 25.0, cpu_sys_pct: 23.0, runq_wait_pct: 93.0, ..facts() };
        let v = judge(&own);
        assert_eq!(v.cause, FilesCause::Cpu);
        assert!(
            v.summary.contains("8 threads on 2 core(s)") && v.summary.contains("a core's share is 25%"),
            "{}",
            v.summary
        );
        let elsewhere = PhaseFacts { threads: 2, cpu_busy_pct: 30.0, runq_wait_pct: 60.0, ..facts() };
        assert!(judge(&elsewhere).summary.contains("shared with another load"));
        let waiting = PhaseFacts { cpu_busy_pct: 5.0, runq_wait_pct: 10.0, ..own };
        assert_ne!(judge(&waiting).summary, v.summary, "5% of a 25% share: not the CPU");
    }

    /// Issue 30 item 6: a stat phase's busy device that wrote 300 MiB wrote what the phase did
    /// not: the create phase's pages written back, or another process's.
    #[test]
    fn a_phase_that_writes_nothing_on_a_device_busy_writing_names_those_writes() {
        let stat = PhaseFacts {
            writes_nothing: true,
            modifies_entries: false,
            cpu_busy_pct: 20.0,
            device_busy_pct: Some(96.0),
            device_read_bytes: Some(8 << 20),
            device_written_bytes: Some(300 << 20),
            ..facts()
        };
        let v = judge(&stat);
        assert_eq!(v.cause, FilesCause::OtherWrites, "{}", v.summary);
        assert!(v.summary.contains("busy 96%") && v.summary.contains("wrote 300.0 MiB"), "{}", v.summary);
        // Its own reads were what the device did: the device.
        let reading = PhaseFacts { device_written_bytes: Some(64 << 10), ..stat };
        assert_eq!(judge(&reading).cause, FilesCause::Device);
        // A phase that writes (its own entries, through the journal) is judged on the device.
        let create = PhaseFacts {
            writes_nothing: false,
            modifies_entries: true,
            device_written_bytes: Some(300 << 20),
            ..reading
        };
        assert_eq!(judge(&create).cause, FilesCause::Device);
    }

    /// Issue 30 item 6: looking entries up takes no directory lock, so a shared directory's
    /// stat phase on idle CPUs and device is not held by one.
    #[test]
    fn the_directory_lock_only_for_phases_that_take_it() {
        let create = PhaseFacts { shared_dir: true, cpu_busy_pct: 40.0, ..facts() };
        assert_eq!(judge(&create).cause, FilesCause::DirectoryLock);
        let stat = PhaseFacts { modifies_entries: false, writes_nothing: true, ..create };
        assert_eq!(judge(&stat).cause, FilesCause::Waiting, "{}", judge(&stat).summary);
    }
}
