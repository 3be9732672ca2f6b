//! Parsers of the /proc texts the machine-wide accounting reads: a task's stat line, a
//! process's io file and /proc/interrupts. Text in, values out: the reading is the runner's.

/// The fields of /proc/<pid>/task/<tid>/stat that the machine-wide accounting reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStat {
    pub tid: u32,
    /// The thread's name as the kernel shows it (a kworker's with its workqueue).
    pub comm: String,
    /// A kernel thread (PF_KTHREAD in the flags field).
    pub kthread: bool,
    /// User and system clock ticks so far.
    pub utime: u64,
    pub stime: u64,
    /// Threads of its process (field 20).
    pub threads: u64,
    /// Ticks after boot when the thread started: tells a reused tid from the thread before.
    pub starttime: u64,
    /// The parent process (field 4): the one that reaps it, and whose /proc/<pid>/io then
    /// takes in its lifetime's I/O.
    pub ppid: u32,
}

/// PF_KTHREAD of include/linux/sched.h, stable since 2.6.
const PF_KTHREAD: u64 = 0x0020_0000;

// Fields of the stat line, numbered from 1 as in proc(5); the name is field 2, state field 3.
const PPID: usize = 4;
const FLAGS: usize = 9;
const UTIME: usize = 14;
const NUM_THREADS: usize = 20;
const STARTTIME: usize = 22;

impl TaskStat {
    /// Parses a stat line; `None` if it is not one.
    pub fn parse(stat: &str) -> Option<TaskStat> {
        // The name may hold spaces and parentheses; the kernel writes no ')' after it.
        let open = stat.find('(')?;
        let close = stat.rfind(')')?;
        if close < open {
            return None;
        }
        let tid = stat[..open].trim().parse().ok()?;
        let comm = stat[open + 1..close].to_string();
        // Field 3 (state) is the first word after the name.
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().take(STARTTIME - 2).collect();
        let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
        Some(TaskStat {
            tid,
            comm,
            kthread: field(FLAGS)? & PF_KTHREAD != 0,
            utime: field(UTIME)?,
            stime: field(UTIME + 1)?,
            threads: field(NUM_THREADS)?,
            starttime: field(STARTTIME)?,
            ppid: u32::try_from(field(PPID)?).ok()?,
        })
    }
}

/// Bytes a process caused to be read from and written to storage (/proc/<pid>/io's
/// read_bytes and write_bytes: block-layer I/O charged to it, page-cache hits excluded, writes
/// counted when the pages are dirtied).
pub fn parse_proc_io(text: &str) -> Option<(u64, u64)> {
    let value = |key: &str| -> Option<u64> {
        text.lines().find_map(|line| line.strip_prefix(key)?.strip_prefix(':')?.trim().parse().ok())
    };
    Some((value("read_bytes")?, value("write_bytes")?))
}

/// The value of `key` in a "key value" text such as /proc/vmstat ("nr_written 81234").
pub fn vmstat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok()).flatten()
    })
}

/// A "Dirty:   373708 kB" line of /proc/meminfo, in bytes.
pub fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
    let mut words = line.split_whitespace();
    let kib: u64 = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(kib * 1024)
}

/// One line of /proc/interrupts: its source ("45", "NMI", "LOC"), its description (the chip,
/// the hardware number and the handler's name, as the kernel wrote them), and counts per CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptLine {
    pub irq: String,
    pub name: String,
    pub per_cpu: Vec<u64>,
}

/// Parses /proc/interrupts: a header of CPU columns, then one line per source. Lines with
/// fewer counts than CPUs (ERR, MIS) keep what they have.
pub fn parse_interrupts(text: &str) -> Vec<InterruptLine> {
    let mut lines = text.lines();
    let cpus = lines.next().map_or(0, |header| header.split_whitespace().count());
    lines
        .filter_map(|line| {
            let (irq, rest) = line.split_once(':')?;
            let mut words = rest.split_whitespace().peekable();
            let mut per_cpu = Vec::with_capacity(cpus);
            while per_cpu.len() < cpus {
                match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                    Some(count) => {
                        per_cpu.push(count);
                        words.next();
                    }
                    None => break,
                }
            }
            let name = words.collect::<Vec<_>>().join(" ");
            Some(InterruptLine { irq: irq.trim().to_string(), name, per_cpu })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_threads_stat_line() {
        // As Linux 6.1 writes it for a loop device's worker.
        let line = "1234 (kworker/u8:3-loop0) I 2 0 0 0 -1 69238880 0 0 0 0 0 812 0 0 20 0 1 0 \
                    4455 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0";
        let stat = TaskStat::parse(line).expect("a stat line");
        assert_eq!(stat.comm, "kworker/u8:3-loop0");
        assert!(stat.kthread);
        assert_eq!((stat.tid, stat.utime, stat.stime, stat.starttime), (1234, 0, 812, 4455));
        assert_eq!(stat.threads, 1);
    }

    #[test]
    fn a_user_threads_stat_line_with_an_odd_name() {
        let line = "77 (a) (b 1) S 1 77 77 0 -1 4194560 12 0 0 0 5 6 0 0 20 0 3 0 99 25165824 \
                    900 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        let stat = TaskStat::parse(line).expect("a stat line");
        assert_eq!((stat.comm.as_str(), stat.kthread), ("a) (b 1", false));
        assert_eq!((stat.utime, stat.stime, stat.threads, stat.starttime), (5, 6, 3, 99));
        assert_eq!(TaskStat::parse("12 (cut) S 1 2"), None);
        assert_eq!(TaskStat::parse(""), None);
    }

    #[test]
    fn proc_io() {
        let text = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\n\
                    cancelled_write_bytes: 0\n";
        assert_eq!(parse_proc_io(text), Some((4096, 8192)));
        assert_eq!(parse_proc_io("rchar: 10\n"), None);
    }

    #[test]
    fn vmstat_and_meminfo() {
        let vmstat = "nr_dirty 100\nnr_written 81234\nnr_dirtied 90000\n";
        assert_eq!(vmstat_value(vmstat, "nr_written"), Some(81234));
        assert_eq!(vmstat_value(vmstat, "nr_writ"), None);
        let meminfo =
            "MemTotal:       24000000 kB\nDirty:            373708 kB\nWriteback:             0 kB\n";
        assert_eq!(meminfo_bytes(meminfo, "Dirty"), Some(373708 * 1024));
        assert_eq!(meminfo_bytes(meminfo, "Writeback"), Some(0));
        assert_eq!(meminfo_bytes(meminfo, "Shmem"), None);
    }

    #[test]
    fn interrupts_of_two_cpus() {
        let text = "           CPU0       CPU1       \n\
                    \x20 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n\
                    \x20 45:     120003       9001  PCI-MSIX-0000:00:04.0   1-edge      nvme0q1\n\
                    NMI:          0          0   Non-maskable interrupts\n\
                    ERR:          0\n";
        let lines = parse_interrupts(text);
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[1].irq, "45");
        assert_eq!(lines[1].per_cpu, [120003, 9001]);
        assert_eq!(lines[1].name, "PCI-MSIX-0000:00:04.0 1-edge nvme0q1");
        assert_eq!(lines[2].name, "Non-maskable interrupts");
        assert_eq!((lines[3].irq.as_str(), lines[3].per_cpu.as_slice()), ("ERR", &[0u64][..]));
    }
}
