//! CPU accounting: the process's own time (every thread, including the io_uring io-wq and
//! SQPOLL kernel threads, which belong to the process's thread group and so to its rusage) and
//! the whole machine's per-core busy share from /proc/stat.

use std::io;

/// User and system time of the whole process so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessCpu {
    pub user_ns: u64,
    pub system_ns: u64,
}

impl ProcessCpu {
    pub fn now() -> io::Result<Self> {
        use nix::sys::resource::{getrusage, UsageWho};
        let usage = getrusage(UsageWho::RUSAGE_SELF).map_err(io::Error::from)?;
        let ns =
            |tv: nix::sys::time::TimeVal| tv.tv_sec() as u64 * 1_000_000_000 + tv.tv_usec() as u64 * 1_000;
        Ok(ProcessCpu { user_ns: ns(usage.user_time()), system_ns: ns(usage.system_time()) })
    }

    /// Time spent between `earlier` and `self`.
    pub fn since(&self, earlier: &ProcessCpu) -> ProcessCpu {
        ProcessCpu {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            system_ns: self.system_ns.saturating_sub(earlier.system_ns),
        }
    }
}

/// The most resident memory this process has held so far, in bytes: the kernel's VmHWM of
/// /proc/self/status. Not getrusage's ru_maxrss: exec keeps that across, so under `cargo run`
/// it reports cargo's own high-water mark (140 MiB) instead of iolab's (7 MiB); VmHWM belongs
/// to the address space, which exec replaces.
pub fn peak_rss_bytes() -> io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    vm_hwm_bytes(&status)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no VmHWM in /proc/self/status"))
}

/// The `VmHWM:   7368 kB` line of a /proc/PID/status text, in bytes.
fn vm_hwm_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let mut words = line.split_whitespace();
    let kib: u64 = words.next()?.parse().ok()?;
    // The kernel always writes kB (kibibytes).
    (words.next() == Some("kB")).then_some(kib * 1024)
}

/// Busy and total ticks of each core.
#[derive(Debug, Clone, Default)]
pub struct MachineCpu {
    cores: Vec<(u64, u64)>,
}

impl MachineCpu {
    pub fn now() -> io::Result<Self> {
        let text = std::fs::read_to_string("/proc/stat")?;
        Ok(Self::parse(&text))
    }

    fn parse(stat: &str) -> Self {
        let cores = stat
            .lines()
            .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
            .map(|line| {
                let ticks: Vec<u64> =
                    line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
                // user nice system idle iowait irq softirq steal (guest time is inside user).
                let total: u64 = ticks.iter().take(8).sum();
                let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
                (total - idle, total)
            })
            .collect();
        MachineCpu { cores }
    }

    /// Busy share (0..100) of each core between `earlier` and `self`.
    pub fn busy_pct_since(&self, earlier: &MachineCpu) -> Vec<f64> {
        self.cores
            .iter()
            .zip(&earlier.cores)
            .map(|(&(busy, total), &(busy0, total0))| {
                let total = total.saturating_sub(total0);
                if total == 0 {
                    0.0
                } else {
                    100.0 * busy.saturating_sub(busy0) as f64 / total as f64
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_core_busy_share() {
        let before = MachineCpu::parse(
            "cpu  9 9 9 9 9 0 0 0\ncpu0 10 0 10 80 0 0 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0\nintr 5\n",
        );
        let after = MachineCpu::parse(
            "cpu  9 9 9 9 9 0 0 0\ncpu0 40 0 20 130 10 0 0 0 0 0\ncpu1 0 0 0 200 0 0 0 0\n",
        );
        assert_eq!(after.busy_pct_since(&before), vec![40.0, 0.0]);
    }

    #[test]
    fn peak_rss_covers_memory_touched() {
        let block = vec![1u8; 32 << 20];
        std::hint::black_box(&block);
        assert!(peak_rss_bytes().expect("VmHWM") >= 32 << 20);
    }

    #[test]
    fn peak_rss_is_not_inherited_across_exec() {
        // The defect: ru_maxrss kept cargo's high-water mark across exec. VmHWM is parsed from
        // the status text; a missing or odd line is no figure, not a wrong one.
        assert_eq!(
            vm_hwm_bytes("Name:\tiolab\nVmPeak:\t  9000 kB\nVmHWM:\t    7196 kB\n"),
            Some(7196 * 1024)
        );
        assert_eq!(vm_hwm_bytes("Name:\tiolab\n"), None);
        assert_eq!(vm_hwm_bytes("VmHWM:\t 12 MB\n"), None);
    }

    #[test]
    fn process_time_grows_with_work() {
        let start = ProcessCpu::now().expect("getrusage");
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let spent = ProcessCpu::now().expect("getrusage").since(&start);
        assert!(spent.user_ns > 0);
    }
}
