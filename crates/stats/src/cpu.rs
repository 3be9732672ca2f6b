//! CPU accounting: the process's own time (every thread, including the io_uring io-wq and
//! SQPOLL kernel threads, which belong to the process's thread group and so to its rusage) and
//! the whole machine's per-core busy share from /proc/stat.

use std::io;

use serde::{Deserialize, Serialize};

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

/// Each core's tick counters from /proc/stat: user, nice, system, idle, iowait, irq, softirq,
/// steal (guest time is inside user and so not counted twice).
#[derive(Debug, Clone, Default)]
pub struct MachineCpu {
    cores: Vec<[u64; 8]>,
}

const IDLE: usize = 3;
const IOWAIT: usize = 4;

impl MachineCpu {
    pub fn now() -> io::Result<Self> {
        let text = std::fs::read_to_string("/proc/stat")?;
        Ok(Self::parse(&text))
    }

    pub fn parse(stat: &str) -> Self {
        let cores = stat
            .lines()
            .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
            .map(|line| {
                let mut ticks = [0u64; 8];
                for (slot, value) in ticks.iter_mut().zip(line.split_whitespace().skip(1)) {
                    *slot = value.parse().unwrap_or(0);
                }
                ticks
            })
            .collect();
        MachineCpu { cores }
    }

    /// Busy share (0..100) of each core between `earlier` and `self`: everything but idle and
    /// iowait.
    pub fn busy_pct_since(&self, earlier: &MachineCpu) -> Vec<f64> {
        self.breakdown_since(earlier).iter().map(CpuBreakdown::busy_pct).collect()
    }

    /// How each core spent the time between `earlier` and `self`.
    pub fn breakdown_since(&self, earlier: &MachineCpu) -> Vec<CpuBreakdown> {
        self.cores
            .iter()
            .zip(&earlier.cores)
            .enumerate()
            .map(|(cpu, (now, then))| {
                let delta: Vec<u64> = now.iter().zip(then).map(|(a, b)| a.saturating_sub(*b)).collect();
                let total: u64 = delta.iter().sum();
                let pct = |i: usize| if total == 0 { 0.0 } else { 100.0 * delta[i] as f64 / total as f64 };
                CpuBreakdown {
                    cpu: cpu as u32,
                    user_pct: pct(0),
                    nice_pct: pct(1),
                    system_pct: pct(2),
                    idle_pct: if total == 0 { 100.0 } else { pct(IDLE) },
                    iowait_pct: pct(IOWAIT),
                    irq_pct: pct(5),
                    softirq_pct: pct(6),
                    steal_pct: pct(7),
                }
            })
            .collect()
    }
}

/// How one core spent a window, each a share of it (0..100; together 100).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuBreakdown {
    pub cpu: u32,
    pub user_pct: f64,
    pub nice_pct: f64,
    pub system_pct: f64,
    /// Hardware interrupt handlers.
    pub irq_pct: f64,
    /// Softirqs (block completions, network receive), inline or in ksoftirqd.
    pub softirq_pct: f64,
    /// Idle with I/O outstanding: idle time, not busy.
    pub iowait_pct: f64,
    /// Time the hypervisor ran something else while this virtual CPU wanted to run.
    pub steal_pct: f64,
    pub idle_pct: f64,
}

impl CpuBreakdown {
    /// Busy share: everything but idle and iowait (steal included: the CPU was wanted).
    pub fn busy_pct(&self) -> f64 {
        (100.0 - self.idle_pct - self.iowait_pct).max(0.0)
    }

    /// Interrupt work: hardirq and softirq together.
    pub fn interrupts_pct(&self) -> f64 {
        self.irq_pct + self.softirq_pct
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
    fn per_core_breakdown_with_interrupts_and_steal() {
        let before = MachineCpu::parse("cpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\n");
        let after = MachineCpu::parse("cpu0 10 5 20 30 5 10 15 5 0 0\ncpu1 0 0 0 0 0 0 0 0\n");
        let cores = after.breakdown_since(&before);
        let cpu0 = cores[0];
        assert_eq!((cpu0.user_pct, cpu0.nice_pct, cpu0.system_pct), (10.0, 5.0, 20.0));
        assert_eq!((cpu0.idle_pct, cpu0.iowait_pct), (30.0, 5.0));
        assert_eq!((cpu0.irq_pct, cpu0.softirq_pct, cpu0.steal_pct), (10.0, 15.0, 5.0));
        assert_eq!((cpu0.busy_pct(), cpu0.interrupts_pct()), (65.0, 25.0));
        // No tick at all on a core: idle, not busy.
        assert_eq!((cores[1].cpu, cores[1].busy_pct()), (1, 0.0));
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
