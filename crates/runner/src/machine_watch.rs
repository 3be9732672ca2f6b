//! Reads the whole machine from /proc over a job's measured window, for the verdict: every
//! thread's CPU (/proc/<pid>/task/<tid>/stat), each process's storage I/O (/proc/<pid>/io, where
//! readable), each core's time (/proc/stat) and the interrupts (/proc/interrupts). The
//! arithmetic is `iolab_stats::machine`; this file only reads.
//!
//! Cost: one small read per thread per sample (`proc_reader.rs`), once a second, on the
//! collector's thread, within a budget of 0.5% of one core (`BUDGET_SHARE`). The report carries
//! the sampler's own CPU time so that its cost is visible; `IOLAB_NO_MACHINE_SAMPLER=1` turns it
//! off for the benchmarks that measure that cost.

use iolab_spec::Nanos;
use iolab_stats::cpu::MachineCpu;
use iolab_stats::cpu_idle::{IdleActivity, StateCounter};
use iolab_stats::machine::{
    sort_owners, CpuOwner, InterruptActivity, MachineAccounting, MachineReport, MachineSlice, OwnerKind,
    PageCacheActivity, SliceOwner, SLICE_OWNERS,
};
use iolab_stats::proc_text::{parse_interrupts, vmstat_value, InterruptLine};
use iolab_stats::threads::{ThreadClass, ThreadClassCpu};

use crate::limits_reader::LimitsStart;
use crate::pressure_reader::PressureStart;
use crate::proc_reader::{page_bytes, ProcReader};

/// The sampler's budget: the share of one core it may take between samples. A sample that cost
/// more stretches the time to the next (the window's first and last samples are always taken),
/// so a machine with tens of thousands of threads gets a coarser series, not a slower job.
const BUDGET_SHARE: u64 = 200; // 1/200 = 0.5% of one core

/// The environment variable that turns machine-wide sampling off (benchmarks of its cost).
pub const NO_SAMPLER_ENV: &str = "IOLAB_NO_MACHINE_SAMPLER";

pub struct MachineWatch {
    reader: ProcReader,
    accounting: MachineAccounting,
    cpu_start: MachineCpu,
    cpu_previous: MachineCpu,
    interrupts_start: Vec<InterruptLine>,
    page_cache_start: Option<(u64, u64)>,
    /// Dirty and under-writeback bytes at each sample: where the kernel's throttle stood.
    dirty_samples: Vec<u64>,
    limits: LimitsStart,
    pressure: PressureStart,
    idle_start: Vec<StateCounter>,
    start_ns: u64,
    previous_ns: u64,
    series: Vec<MachineSlice>,
    sampler_ns: u64,
    /// The CPU the last sample took.
    last_cost_ns: u64,
}

impl MachineWatch {
    /// Reads the machine now, at `now_ns` of the job's clock: the window starts. `None` when
    /// sampling is turned off or /proc cannot be read.
    pub fn start(now_ns: u64) -> Option<Self> {
        if std::env::var_os(NO_SAMPLER_ENV).is_some_and(|v| v != "0") {
            return None;
        }
        let before = thread_cpu_ns();
        let mut reader = ProcReader::new();
        reader.read_all().ok()?;
        let accounting = MachineAccounting::new(&reader.threads, &reader.io);
        let cpu_start = MachineCpu::now().ok()?;
        let interrupts_start = read_interrupts();
        let page_cache_start = read_page_cache();
        let limits = LimitsStart::read();
        let pressure = PressureStart::read();
        let idle_start = crate::idle_reader::read_counters();
        Some(MachineWatch {
            reader,
            accounting,
            cpu_previous: cpu_start.clone(),
            cpu_start,
            interrupts_start,
            page_cache_start,
            dirty_samples: Vec::new(),
            limits,
            pressure,
            idle_start,
            start_ns: now_ns,
            previous_ns: now_ns,
            series: Vec::new(),
            sampler_ns: thread_cpu_ns().saturating_sub(before),
            last_cost_ns: thread_cpu_ns().saturating_sub(before),
        })
    }

    /// Takes a sample at `now_ns`: the CPU each owner used since the last one becomes a point
    /// of the series, and threads that exit later are counted up to here.
    pub fn sample(&mut self, now_ns: u64) {
        if now_ns.saturating_sub(self.previous_ns) < self.last_cost_ns.saturating_mul(BUDGET_SHARE) {
            return;
        }
        self.take_sample(now_ns);
    }

    fn take_sample(&mut self, now_ns: u64) {
        let before = thread_cpu_ns();
        if self.reader.read_all().is_ok() {
            let slice = self.accounting.observe(&self.reader.threads, &self.reader.io);
            let cpu = MachineCpu::now().unwrap_or_default();
            let cores = cpu.busy_pct_since(&self.cpu_previous);
            let duration_ns = now_ns.saturating_sub(self.previous_ns);
            if duration_ns > 0 {
                self.series.push(MachineSlice {
                    t_s: self.previous_ns.saturating_sub(self.start_ns) as f64 / 1e9,
                    duration_s: duration_ns as f64 / 1e9,
                    busy_pct: iolab_stats::central::mean(&cores).unwrap_or(0.0),
                    top: slice
                        .into_iter()
                        .take(SLICE_OWNERS)
                        .map(|(name, ns)| SliceOwner {
                            name,
                            core_pct: 100.0 * ns as f64 / duration_ns as f64,
                        })
                        .collect(),
                });
            }
            self.cpu_previous = cpu;
            self.previous_ns = now_ns;
        }
        if let Some((dirty, _)) = read_page_cache() {
            self.dirty_samples.push(dirty);
        }
        self.last_cost_ns = thread_cpu_ns().saturating_sub(before);
        self.sampler_ns += self.last_cost_ns;
    }

    /// Ends the window of length `window`: the report, with iolab's own thread classes (`own`,
    /// measured precisely by the runner's own accounting) among the owners.
    pub fn finish(mut self, now_ns: u64, window: Nanos, own: &[ThreadClassCpu]) -> MachineReport {
        self.take_sample(now_ns);
        let cpus = MachineCpu::now().map(|end| end.breakdown_since(&self.cpu_start)).unwrap_or_default();
        let cores = cpus.len() as u32;
        let window_s = window.as_secs_f64();
        let threads_sampled = self.reader.threads.len() as u32 + own.iter().map(|c| c.threads).sum::<u32>();
        let children = self.accounting.children();
        let mut owners = self.accounting.finish(cores, window_s, &device_name);
        // Where each process with I/O in the window could have sent it: the verdict names only one
        // that could have loaded the device. The parent of other commands (a shell's loop of dd)
        // may hold their bytes, sent wherever their files were: left unknown.
        for owner in owners.iter_mut().filter(|o| o.kind == OwnerKind::Process && o.io_bytes() > 0) {
            let others = |pid: &u32| {
                children.get(pid).is_some_and(|kids| kids.iter().any(|k| !owner.pids.contains(k)))
            };
            if owner.pids.iter().any(others) {
                continue;
            }
            let writer = owner.write_bytes.unwrap_or(0) >= owner.read_bytes.unwrap_or(0);
            owner.devices = crate::open_devices::of(&owner.pids, writer);
        }
        owners.extend(own.iter().map(|class| iolab_owner(class, cores, window_s)));
        sort_owners(&mut owners);
        MachineReport {
            cores,
            window_s,
            owners,
            cpus,
            interrupts: interrupts_since(&self.interrupts_start, &read_interrupts()),
            page_cache: self.page_cache_start.zip(read_page_cache()).map(
                |((dirty0, written0), (dirty1, written1))| {
                    let (threshold, background) = read_dirty_thresholds();
                    let mut cache = PageCacheActivity {
                        dirty_start_bytes: dirty0,
                        dirty_end_bytes: dirty1,
                        written_back_bytes: written1.saturating_sub(written0).saturating_mul(page_bytes()),
                        dirty_threshold_bytes: threshold.saturating_mul(page_bytes()),
                        dirty_background_threshold_bytes: background.saturating_mul(page_bytes()),
                        ..PageCacheActivity::default()
                    };
                    cache.dirty_samples(&self.dirty_samples);
                    cache
                },
            ),
            series: self.series,
            limits: self.limits.finish(),
            pressure: self.pressure.finish(window_s),
            cpu_idle: IdleActivity::between(
                &self.idle_start,
                &crate::idle_reader::read_counters(),
                window_s,
                cores,
            ),
            threads_sampled,
            sampler_cpu_s: self.sampler_ns as f64 / 1e9,
        }
    }
}

/// iolab's own thread class as an owner of the machine's CPU.
fn iolab_owner(class: &ThreadClassCpu, cores: u32, window_s: f64) -> CpuOwner {
    let cpu_s = class.user_s + class.system_s;
    let busiest_thread = match class.class {
        ThreadClass::Worker => "iolab-lane",
        ThreadClass::Sqpoll => "iou-sqp",
        ThreadClass::IoWq => "iou-wrk",
        ThreadClass::Other => "iolab",
    };
    let capacity = f64::from(cores) * window_s;
    CpuOwner {
        name: format!("iolab {}", class.class.name()),
        kind: OwnerKind::Iolab,
        role: None,
        serves: None,
        threads: class.threads,
        cpu_s,
        machine_pct: if capacity > 0.0 { 100.0 * cpu_s / capacity } else { 0.0 },
        busiest_thread: busiest_thread.to_string(),
        busiest_thread_pct: class.busiest_thread_pct,
        pids: vec![std::process::id()],
        read_bytes: None,
        write_bytes: None,
        devices: None,
    }
}

/// The interrupt sources that fired between two readings, most first.
fn interrupts_since(start: &[InterruptLine], end: &[InterruptLine]) -> Vec<InterruptActivity> {
    let mut fired: Vec<InterruptActivity> = end
        .iter()
        .filter_map(|line| {
            let before = start.iter().find(|b| b.irq == line.irq);
            let per_cpu: Vec<u64> = line
                .per_cpu
                .iter()
                .enumerate()
                .map(|(cpu, &n)| {
                    n.saturating_sub(before.and_then(|b| b.per_cpu.get(cpu).copied()).unwrap_or(0))
                })
                .collect();
            let count = per_cpu.iter().sum();
            (count > 0).then(|| InterruptActivity {
                irq: line.irq.clone(),
                name: line.name.clone(),
                count,
                per_cpu,
            })
        })
        .collect();
    fired.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.irq.cmp(&b.irq)));
    fired
}

/// The dirty limits now, in pages (hard, background); 0 where vmstat does not say.
fn read_dirty_thresholds() -> (u64, u64) {
    dirty_thresholds(&std::fs::read_to_string("/proc/vmstat").unwrap_or_default())
}

fn dirty_thresholds(vmstat: &str) -> (u64, u64) {
    let value = |key| vmstat_value(vmstat, key).unwrap_or(0);
    (value("nr_dirty_threshold"), value("nr_dirty_background_threshold"))
}

/// The page cache that is dirty or under writeback, in bytes (what the kernel's dirty throttle
/// counts: balance_dirty_pages adds NR_WRITEBACK to NR_FILE_DIRTY), and the pages written back
/// so far. From vmstat: meminfo's Dirty stood still at 5,136 kB for seconds while vmstat's
/// nr_dirty moved between 1,284 and 3,337 pages under a buffered writer.
fn read_page_cache() -> Option<(u64, u64)> {
    page_cache(&std::fs::read_to_string("/proc/vmstat").ok()?, page_bytes())
}

fn page_cache(vmstat: &str, page_bytes: u64) -> Option<(u64, u64)> {
    let pages = vmstat_value(vmstat, "nr_dirty")? + vmstat_value(vmstat, "nr_writeback").unwrap_or(0);
    Some((pages.saturating_mul(page_bytes), vmstat_value(vmstat, "nr_written")?))
}

fn read_interrupts() -> Vec<InterruptLine> {
    std::fs::read_to_string("/proc/interrupts").map(|text| parse_interrupts(&text)).unwrap_or_default()
}

/// The kernel name of block device "major:minor", from /sys/dev/block.
fn device_name(devnum: &str) -> Option<String> {
    let link = std::fs::read_link(format!("/sys/dev/block/{devnum}")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// CPU time of the calling thread: what the sampling costs.
fn thread_cpu_ns() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_machine() {
        let Some(watch) = MachineWatch::start(0) else {
            panic!("/proc is readable here");
        };
        let report = watch.finish(100_000_000, Nanos(100_000_000), &[]);
        assert!(report.cores >= 1);
        assert_eq!(report.cpus.len(), report.cores as usize);
        assert!(report.threads_sampled > 1, "kernel threads at least: {report:?}");
        assert!(report.owners.iter().all(|o| o.kind != OwnerKind::Iolab), "own threads are the caller's");
        assert!(report.sampler_cpu_s > 0.0);
        let ids: Vec<u32> = report.owners.iter().flat_map(|o| o.pids.iter().copied()).collect();
        assert!(!ids.contains(&std::process::id()), "this process is never read as another's");
    }

    /// /proc/vmstat's lines as this kernel prints them (an excerpt of this machine's, under a
    /// buffered writer): the limits and the page cache the dirty throttle counts.
    #[test]
    fn dirty_limits_and_the_page_cache_they_count_from_vmstat() {
        let vmstat = "nr_free_pages 5091712\nnr_dirty 29873\nnr_writeback 1200\nnr_writeback_temp 0\nnr_dirty_threshold 1146535\nnr_dirty_background_threshold 572567\nnr_written 64081492\nnr_dirtied 64111365\n";
        assert_eq!(dirty_thresholds(vmstat), (1_146_535, 572_567));
        assert_eq!(page_cache(vmstat, 4096), Some(((29_873 + 1_200) * 4096, 64_081_492)));
        // A kernel without the thresholds says no limits (0), one without nr_dirty no cache.
        assert_eq!(dirty_thresholds("nr_dirty 1\n"), (0, 0));
        assert_eq!(page_cache("nr_written 5\n", 4096), None);
        assert_eq!(page_cache("nr_dirty 3\nnr_written 5\n", 4096), Some((3 * 4096, 5)));
    }

    #[test]
    fn interrupts_in_the_window_most_first() {
        let line = |irq: &str, per_cpu: &[u64]| InterruptLine {
            irq: irq.into(),
            name: format!("name of {irq}"),
            per_cpu: per_cpu.to_vec(),
        };
        let start = [line("24", &[1, 0]), line("45", &[100, 10]), line("LOC", &[5, 5])];
        let end = [line("24", &[1, 0]), line("45", &[130, 90]), line("LOC", &[6, 5]), line("46", &[3, 0])];
        let fired = interrupts_since(&start, &end);
        let summary: Vec<(&str, u64)> = fired.iter().map(|i| (i.irq.as_str(), i.count)).collect();
        assert_eq!(summary, [("45", 110), ("46", 3), ("LOC", 1)]);
        assert_eq!(fired[0].per_cpu, [30, 80]);
    }
}
