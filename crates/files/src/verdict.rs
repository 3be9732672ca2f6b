//! What limited a phase, from the phase's own figures: the threads' CPU, the device under the
//! directory, a shared directory's lock, fsync. The block jobs' rules (`iolab-analysis`
//! verdicts) read a whole machine's facts about I/O queues; a metadata phase has none of
//! those, so its rules are these few, each with the figure that shows it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FilesCause {
    /// The threads were on the CPU nearly all the time (in iolab or in the kernel's code for
    /// each call): more threads or a faster CPU would go faster.
    Cpu,
    /// The block device under the directory was busy nearly all the time.
    Device,
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
    pub shared_dir: bool,
    pub elapsed_s: f64,
    pub ops: u64,
    /// The threads' CPU time over their wall time, in % (100: every thread always on a CPU).
    pub cpu_busy_pct: f64,
    pub cpu_sys_pct: f64,
    /// Time runnable but waiting for a core, over the threads' wall time, in %.
    pub runq_wait_pct: f64,
    pub device_busy_pct: Option<f64>,
    /// Time spent in fsync over the threads' wall time, in %.
    pub fsync_pct: f64,
}

const BUSY_PCT: f64 = 80.0;
const MIN_SECONDS: f64 = 0.05;

pub fn judge(f: &PhaseFacts) -> FilesVerdict {
    let verdict = |cause, summary: String| FilesVerdict { cause, summary };
    if f.ops == 0 || f.elapsed_s < MIN_SECONDS {
        return verdict(
            FilesCause::Undetermined,
            format!("too short to tell ({} operations in {:.3} s)", f.ops, f.elapsed_s),
        );
    }
    if let Some(busy) = f.device_busy_pct.filter(|&b| b >= BUSY_PCT) {
        return verdict(FilesCause::Device, format!("the device: busy {busy:.0}% of the phase"));
    }
    if f.fsync_pct >= 50.0 {
        return verdict(
            FilesCause::Fsync,
            format!(
                "fsync: {:.0}% of the threads' time waited for the journal or the device's flushes",
                f.fsync_pct
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
    if f.shared_dir && f.threads > 1 {
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
            shared_dir: false,
            elapsed_s: 2.0,
            ops: 10_000,
            cpu_busy_pct: 95.0,
            cpu_sys_pct: 80.0,
            runq_wait_pct: 0.0,
            device_busy_pct: None,
            fsync_pct: 0.0,
        }
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
}
