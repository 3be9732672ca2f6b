//! The bottleneck verdict of one job: what limited it, in one plain sentence, with the figures
//! that show it. The rules are tried in a fixed order and the first that holds wins; the order
//! and every threshold are written down in docs/bottleneck-verdict.md, which this file follows.
//!
//! Why this order: a result that measured RAM (page cache) must say so whatever else it shows;
//! a full device queue explains a busy submitting thread (it had nothing more it could hand
//! over), while a busy thread with requests missing from the device explains the device's idle
//! time; and "raise --qd" is only advice once nothing else was saturated.

use iolab_spec::Bytes;
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::{Bottleneck, DeviceActivity, JobResult, Verdict};
use iolab_stats::threads::ThreadClass;

use crate::cpu::{self, MACHINE_SATURATED_PCT, SATURATED_PCT};

/// A device busy this share of the window or more is "busy all the time".
pub const BUSY_DEVICE_PCT: f64 = 90.0;
/// A device holding this share of the job's outstanding I/Os on average held all of them (the
/// rest is the moment between a completion and the next submission).
pub const HELD_SHARE: f64 = 0.8;
/// A queue averaging this share of its limit or more sat at the limit.
pub const FULL_QUEUE_SHARE: f64 = 0.9;
/// Buffered I/O whose devices saw less than this share of the job's bytes was served from the
/// page cache.
pub const CACHED_BYTES_SHARE: f64 = 0.1;
/// A device holding less than this share of the outstanding I/Os on average was kept waiting.
pub const STARVED_SHARE: f64 = 0.5;
/// A device queue above the job's outstanding I/Os by more than this factor, or requests above
/// the job's by more, means other I/O shared the device.
pub const FOREIGN_QUEUE_SLACK: f64 = 1.1;
pub const FOREIGN_IOS_SLACK: f64 = 1.2;

/// What limited `job`, judged from its results alone.
pub fn judge(job: &JobResult) -> Verdict {
    let facts = Facts::of(job);
    let (cause, summary, lead) = decide(job, &facts);
    let rest: Vec<String> = facts.evidence(job).into_iter().filter(|line| !lead.contains(line)).collect();
    Verdict { cause, summary, evidence: lead.into_iter().chain(rest).collect() }
}

/// One device as this job loaded it.
struct Load<'a> {
    activity: &'a DeviceActivity,
    /// Outstanding I/Os the job's groups kept on it: each group's QD x workers, shared evenly
    /// among its targets.
    asked: f64,
    /// Threads that issued I/O to it (a share of each group's, as above).
    threads: f64,
    /// The bytes the job read and wrote, and its I/Os, on its targets on this device.
    job_read_bytes: u64,
    job_write_bytes: u64,
    job_ios: u64,
    /// Some group on it used the page cache, or did not.
    buffered: bool,
    direct: bool,
}

impl Load<'_> {
    fn name(&self) -> &str {
        &self.activity.device
    }

    /// The share of the window the device was busy: io_ticks' figure, or, when the job's own
    /// requests fill its queue, at least their mean over the most the job kept outstanding (a
    /// device holding 30 requests on average when at most 32 were outstanding cannot have been
    /// idle more than 1/16 of the time). io_ticks advances in jiffies, sampled as requests start
    /// and end, and undercounts on some kernels (a virtio disk holding 32.7 requests on average
    /// read 85% busy on Linux 6.18), so the larger figure is the better one.
    fn busy_pct(&self) -> f64 {
        // Other I/O on the device (a queue above what the job kept outstanding) voids the bound.
        let own_queue = self.activity.avg_queue <= self.asked * FOREIGN_QUEUE_SLACK;
        let implied = if self.direct && !self.buffered && self.asked > 0.0 && own_queue {
            (self.activity.avg_queue / self.asked * 100.0).min(100.0)
        } else {
            0.0
        };
        self.activity.util_pct.max(implied)
    }

    fn busy(&self) -> bool {
        self.busy_pct() >= BUSY_DEVICE_PCT
    }

    /// Whether the device moved under `CACHED_BYTES_SHARE` of the job's bytes in every direction
    /// the job moved any (counting each direction alone keeps other processes' writes from
    /// hiding a cached read job): the larger share, and what the job did.
    fn cached(&self) -> Option<(f64, &'static str)> {
        let a = self.activity;
        let directions = [(self.job_read_bytes, a.read_bytes), (self.job_write_bytes, a.write_bytes)];
        let used: Vec<(u64, u64)> = directions.into_iter().filter(|&(job, _)| job > 0).collect();
        let cached = !used.is_empty()
            && used.iter().all(|&(job, device)| (device as f64) < job as f64 * CACHED_BYTES_SHARE);
        let share = used.iter().map(|&(job, device)| pct(device as f64, job as f64)).fold(0.0, f64::max);
        let words = match (self.job_read_bytes > 0, self.job_write_bytes > 0) {
            (true, false) => "read",
            (false, true) => "wrote",
            _ => "read and wrote",
        };
        cached.then_some((share, words))
    }

    /// "31.6 requests in it on average of the 32 the job kept outstanding".
    fn queue_words(&self) -> String {
        format!(
            "{:.1} requests in it on average of the {} the job kept outstanding",
            self.activity.avg_queue,
            count(self.asked)
        )
    }

    /// The requests the device takes before the rest wait: the smaller of `nr_requests` and the
    /// hardware queue depth, per hardware queue the job's threads could reach (blk-mq maps each
    /// CPU to one hardware queue).
    fn queue_limit(&self) -> Option<(f64, String)> {
        let a = self.activity;
        let (limit, what) = match (a.nr_requests, a.hw_queue_depth) {
            (Some(nr), Some(hw)) if hw < nr => (hw, format!("the device takes {hw} commands at once")),
            (Some(nr), _) => (nr, format!("its queue holds {nr} requests (nr_requests)")),
            (None, Some(hw)) => (hw, format!("the device takes {hw} commands at once")),
            (None, None) => return None,
        };
        let queues = f64::from(a.hw_queues.unwrap_or(1).max(1)).min(self.threads.ceil().max(1.0));
        let what = if queues > 1.0 { format!("{what} on each of {queues} hardware queues") } else { what };
        Some((f64::from(limit) * queues, what))
    }
}

/// What the rules read, gathered once.
struct Facts<'a> {
    loads: Vec<Load<'a>>,
    /// Targets in memory (tmpfs): no device sees their I/O.
    in_memory: Vec<&'a str>,
    /// Targets with no device sysfs lists, or none measured (FUSE, NFS, btrfs).
    unseen: Vec<&'a str>,
    /// iolab's worker threads poll for completions (IOPOLL): they are busy by design.
    iopoll: bool,
    /// Every group ran io_uring, whose kernel threads are part of the process.
    uring: bool,
    /// CPU figures exist: per thread, or per core.
    cpu_known: bool,
}

impl<'a> Facts<'a> {
    fn of(job: &'a JobResult) -> Self {
        let mut loads: Vec<Load<'a>> = job
            .devices
            .iter()
            .map(|activity| Load {
                activity,
                asked: 0.0,
                threads: 0.0,
                job_read_bytes: 0,
                job_write_bytes: 0,
                job_ios: 0,
                buffered: false,
                direct: false,
            })
            .collect();
        let (mut in_memory, mut unseen) = (Vec::new(), Vec::new());
        for (g, group) in job.groups.iter().enumerate() {
            let direct = job.spec.groups.get(g).is_none_or(|spec| spec.target.direct);
            let share = 1.0 / group.targets.len().max(1) as f64;
            for target in &group.targets {
                let load = target.device.as_ref().and_then(|d| loads.iter_mut().find(|l| l.name() == d));
                match load {
                    Some(load) => {
                        load.asked += f64::from(group.qd) * f64::from(group.workers) * share;
                        load.threads += f64::from(group.threads) * share;
                        load.job_read_bytes += target.read.bytes;
                        load.job_write_bytes += target.write.bytes;
                        load.job_ios += target.total.ios;
                        load.buffered |= !direct;
                        load.direct |= direct;
                    }
                    None if target.in_memory => in_memory.push(target.path.as_str()),
                    None => unseen.push(target.path.as_str()),
                }
            }
        }
        Facts {
            loads,
            in_memory,
            unseen,
            iopoll: job.groups.iter().any(|g| g.engine_setup.iter().any(|s| s == "iopoll")),
            uring: job.groups.iter().all(|g| g.engine == "uring"),
            cpu_known: !job.cpu.threads.is_empty() || !job.cpu.machine_busy_pct.is_empty(),
        }
    }

    /// The figures worth showing whatever the cause: each device, each target no device
    /// served, the submitting threads and the cores.
    fn evidence(&self, job: &JobResult) -> Vec<String> {
        let mut lines: Vec<String> = self.loads.iter().map(device_line).collect();
        for load in self.loads.iter().filter(|l| l.direct && !l.buffered) {
            let device_ios = load.activity.reads + load.activity.writes;
            if device_ios as f64 > load.job_ios as f64 * FOREIGN_IOS_SLACK {
                lines.push(format!(
                    "{} also served other I/O (other processes', or the filesystem's own): it completed {device_ios} requests, the job {}; its figures include that load",
                    load.name(),
                    load.job_ios
                ));
            } else if load.activity.avg_queue > load.asked * FOREIGN_QUEUE_SLACK {
                lines.push(format!(
                    "{} held more requests on average ({:.1}) than the job kept outstanding ({}): other I/O shared it, and its queue and await figures include that load",
                    load.name(),
                    load.activity.avg_queue,
                    count(load.asked)
                ));
            }
        }
        lines.extend(
            self.in_memory.iter().map(|p| format!("{p} lives in memory (tmpfs): no device served it")),
        );
        lines.extend(self.unseen.iter().map(|p| format!("no block device behind {p} that iolab can read")));
        if let Some(line) = worker_line(job) {
            lines.push(line);
        }
        let sqpoll = cpu::busiest_pct(job, ThreadClass::Sqpoll);
        if cpu::class_s(job, ThreadClass::Sqpoll).1 > 0 {
            lines.push(format!("the SQPOLL thread was {sqpoll:.0}% busy (it spins while it waits for work)"));
        }
        let (io_wq_s, io_wq_threads) = cpu::class_s(job, ThreadClass::IoWq);
        let process_s = cpu::process_s(job);
        if io_wq_threads > 0 && process_s > 0.0 {
            lines.push(format!(
                "{io_wq_threads} io-wq kernel thread(s) used {:.0}% of iolab's CPU (requests io_uring punted)",
                io_wq_s / process_s * 100.0
            ));
        }
        if let Some(line) = machine_line(job) {
            lines.push(line);
        }
        if !self.cpu_known {
            lines.push("no CPU figures were taken".into());
        }
        lines
    }
}

/// "vda: busy 97% of the window, 31.6 requests in it on average of the 32 the job kept
/// outstanding, 12,345 IOPS, read await 2.51 ms".
fn device_line(load: &Load<'_>) -> String {
    let a = load.activity;
    let busy = if load.busy_pct() > a.util_pct + 5.0 {
        format!(
            "busy {:.0}% of the window by io_ticks, at least {:.0}% by its queue",
            a.util_pct,
            load.busy_pct()
        )
    } else {
        format!("busy {:.0}% of the window", a.util_pct)
    };
    let mut line = format!("{}: {busy}, {}, {:.0} IOPS", a.device, load.queue_words(), a.iops);
    for (what, value) in [("read", a.read_await_us), ("write", a.write_await_us)] {
        if let Some(us) = value {
            line.push_str(&format!(", {what} await {}", micros(us)));
        }
    }
    line
}

fn worker_line(job: &JobResult) -> Option<String> {
    let worker = job.cpu.threads.iter().find(|t| t.class == ThreadClass::Worker)?;
    let total = worker.user_s + worker.system_s;
    let kernel = if total > 0.0 { worker.system_s / total * 100.0 } else { 0.0 };
    Some(format!(
        "busiest submitting thread {:.0}% busy; the submitting threads spent {kernel:.0}% of their CPU in the kernel",
        worker.busiest_thread_pct
    ))
}

fn machine_line(job: &JobResult) -> Option<String> {
    let cores = &job.cpu.machine_busy_pct;
    if cores.is_empty() {
        return None;
    }
    let each: Vec<String> = cores.iter().map(|p| format!("{p:.0}%")).collect();
    let mut line = format!("cores busy {} (mean {:.0}%)", each.join(" "), cpu::machine_busy_pct(job));
    if job.measured_s > 0.0 {
        line.push_str(&format!(
            "; iolab used {:.2} of the {} cores",
            cpu::process_s(job) / job.measured_s,
            cores.len()
        ));
    }
    Some(line)
}

/// The rules, in order; the first that holds decides. Returns the cause, the summary and the
/// evidence that decided it.
fn decide(job: &JobResult, facts: &Facts<'_>) -> (Bottleneck, String, Vec<String>) {
    use Bottleneck::*;
    // 1. Nothing to judge.
    if job.total.ios == 0 {
        return (
            Undetermined,
            "No I/O completed in the measured window, so there is nothing to judge.".into(),
            Vec::new(),
        );
    }
    // 2. Rate limit: an open-loop job (--rate-iops) that kept to its schedule did what it was
    //    asked and no more, whatever else idled. One that fell behind is judged by the rules
    //    below: they say what held it back.
    let rates: Vec<_> = job.groups.iter().filter_map(|g| g.rate.as_ref()).collect();
    if !rates.is_empty() && rates.len() == job.groups.len() && rates.iter().all(|r| r.sustained) {
        let asked: f64 = rates.iter().map(|r| r.target_iops).sum();
        let achieved: f64 = rates.iter().map(|r| r.achieved_iops).sum();
        return (
            RateLimit,
            "The rate limit set the load: every I/O was issued on its schedule (--rate-iops), so the target was not pushed to its limit; run without --rate-iops, or `iolab ramp`, to find it.".into(),
            vec![format!(
                "{} IOPS asked, {} achieved; the latest start was {} behind its schedule",
                thousands(asked),
                thousands(achieved),
                latency(rates.iter().map(|r| r.max_lag_ns).max().unwrap_or(0) as f64)
            )],
        );
    }

    // 3. The null engine does no I/O.
    if job.groups.iter().all(|g| g.engine == "null") {
        return (
            SubmittingCpu,
            "The null engine does no I/O: the figures measure iolab's own cost per I/O, so the run is CPU-bound by construction.".into(),
            vec![format!("{:.3} us of CPU per I/O", job.cpu.us_per_io)],
        );
    }
    // 4. Page cache or memory.
    if let Some(path) = facts.in_memory.first() {
        return (
            PageCache,
            format!("{path} lives in memory (tmpfs): the result measures RAM and the kernel's memory copies, not a device."),
            Vec::new(),
        );
    }
    for load in facts.loads.iter().filter(|l| l.buffered) {
        if let Some((share, words)) = load.cached() {
            return (
                PageCache,
                format!("The page cache served this buffered I/O: {} saw {share:.1}% of the bytes the job {words}, so the result measures RAM, not the device; drop --buffered to measure the device.", load.name()),
                vec![format!(
                    "the job read {} and wrote {} on {}; the device read {} and wrote {}",
                    Bytes(load.job_read_bytes),
                    Bytes(load.job_write_bytes),
                    load.name(),
                    Bytes(load.activity.read_bytes),
                    Bytes(load.activity.write_bytes)
                )],
            );
        }
    }
    // 5. The device's queue is smaller than what the job kept outstanding. Buffered I/O is left
    //    out: readahead and writeback, not --qd, decide what reaches the device.
    for load in facts.loads.iter().filter(|l| !l.buffered) {
        let Some((limit, what)) = load.queue_limit() else { continue };
        if load.asked > limit && load.activity.avg_queue >= limit * FULL_QUEUE_SHARE {
            return (
                Queue,
                format!("The job kept {} I/Os outstanding on {}, but {what}: the queue sat full ({:.1} on average) and the rest waited in the kernel, so more QD adds latency, not IOPS.", count(load.asked), load.name(), load.activity.avg_queue),
                vec![device_line(load)],
            );
        }
    }
    // 6. The device: busy all the time, holding what the job kept outstanding.
    for load in facts.loads.iter().filter(|l| l.busy()) {
        // One request at a time keeps any device busy without showing what it could do with
        // more: that is the job's concurrency (rule 9), even for a disk, which reorders a queue.
        let one_at_a_time = load.asked <= 1.0;
        let held = load.buffered || load.activity.avg_queue >= load.asked * HELD_SHARE;
        if held && !one_at_a_time {
            return (
                Device,
                format!("{} was busy {:.0}% of the window with the job's requests waiting in it, not in iolab; utilization alone does not prove saturation for a device that serves requests in parallel (SSD, NVMe): a QD sweep does.", load.name(), load.busy_pct()),
                vec![device_line(load)],
            );
        }
    }
    // 7. A submitting thread, or the cores mostly busy with them.
    let worker = cpu::busiest_pct(job, ThreadClass::Worker);
    if worker >= SATURATED_PCT && !facts.iopoll {
        let mut summary =
            format!("A submitting thread was the limit: the busiest was {worker:.0}% busy, a whole core");
        if let Some(kernel) = worker_kernel_pct(job).filter(|&k| k >= 50.0) {
            summary.push_str(&format!(", {kernel:.0}% of it in the kernel (system calls, and for a synchronous device such as zram the I/O itself)"));
        }
        summary.push_str("; add --workers or use a cheaper engine.");
        return (SubmittingCpu, summary, worker_line(job).into_iter().collect());
    }
    if let Some(verdict) = saturated_machine(job, facts) {
        return verdict;
    }
    // 8. Kernel CPU outside the submitting threads: an SQPOLL thread that could not keep the
    //    device fed.
    let sqpoll = cpu::busiest_pct(job, ThreadClass::Sqpoll);
    if sqpoll >= SATURATED_PCT
        && !facts.loads.is_empty()
        && facts.loads.iter().all(|l| !l.busy() && l.activity.avg_queue < l.asked * STARVED_SHARE)
    {
        return (
            KernelCpu,
            format!("The SQPOLL kernel thread was {sqpoll:.0}% busy while the devices held under half of the job's outstanding I/Os: requests waited to be submitted; compare with --sqpoll off (SQPOLL also spins while idle)."),
            facts.loads.iter().map(device_line).collect(),
        );
    }
    // 9. Concurrency, when every target's device was seen and no CPU was saturated.
    if !facts.cpu_known {
        return (
            Undetermined,
            "No CPU figures were taken, so a saturated core cannot be ruled out and nothing else stood out."
                .into(),
            Vec::new(),
        );
    }
    if let Some(path) = facts.unseen.first() {
        return (
            Undetermined,
            format!("No CPU was saturated, but iolab cannot see a block device behind {path} (a FUSE, network or btrfs filesystem?), so what served the I/O is unknown."),
            Vec::new(),
        );
    }
    if facts.loads.is_empty() {
        return (
            Undetermined,
            "No CPU was saturated and no device activity was recorded, so nothing shows what limited the run.".into(),
            Vec::new(),
        );
    }
    if let Some(load) = facts.loads.iter().find(|l| l.busy() && !l.buffered && l.asked > 1.0) {
        // Busy, but many requests were outside the device, and no CPU was saturated.
        return (
            Undetermined,
            format!("{} was busy {:.0}% of the window but held only {:.1} of the {} outstanding I/Os on average; the rest were being submitted or reaped, yet no CPU was saturated.", load.name(), load.busy_pct(), load.activity.avg_queue, count(load.asked)),
            vec![device_line(load)],
        );
    }
    let asked: f64 = facts.loads.iter().map(|l| l.asked).sum();
    let summary = match facts.loads.iter().find(|l| l.busy()) {
        Some(load) => format!("Nothing was saturated: {} was busy {:.0}% of the window but with one request at a time, and a device that serves requests in parallel can do more at once; raise --qd or --workers.", load.name(), load.busy_pct()),
        None => format!("Nothing was saturated: the job kept {} I/O{} outstanding and the devices were idle part of the time; raise --qd or --workers.", count(asked), if asked == 1.0 { "" } else { "s" }),
    };
    (Concurrency, summary, Vec::new())
}

/// The cores were saturated: by whom. iolab's submitting threads -> SubmittingCpu; its io_uring
/// kernel threads (io-wq, SQPOLL) -> KernelCpu; mostly work outside iolab (other processes, or
/// kernel threads that serve the device such as a loop device's) -> Undetermined.
fn saturated_machine(job: &JobResult, facts: &Facts<'_>) -> Option<(Bottleneck, String, Vec<String>)> {
    let machine = cpu::machine_busy_pct(job);
    if machine < MACHINE_SATURATED_PCT || job.measured_s <= 0.0 {
        return None;
    }
    let cores = job.cpu.machine_busy_pct.len();
    let busy_s = machine / 100.0 * cores as f64 * job.measured_s;
    let process_s = cpu::process_s(job);
    let outside_s = (busy_s - process_s).max(0.0);
    let evidence: Vec<String> = machine_line(job).into_iter().collect();
    let head = format!("The machine's {cores} cores were {machine:.0}% busy");
    if outside_s > process_s {
        return Some((
            Bottleneck::Undetermined,
            format!("{head}, mostly outside iolab ({:.1} of {:.1} core-seconds): other processes or kernel threads that serve the device (a loop device's workers, interrupts); iolab cannot tell which, so rerun on a quiet machine.", outside_s, busy_s),
            evidence,
        ));
    }
    if job.cpu.threads.is_empty() && facts.uring {
        return Some((
            Bottleneck::Undetermined,
            format!("{head}, mostly by iolab, but without per-thread CPU figures its submitting threads cannot be told from its io_uring kernel threads."),
            evidence,
        ));
    }
    let worker_s = cpu::class_s(job, ThreadClass::Worker).0;
    let kernel_s = cpu::class_s(job, ThreadClass::IoWq).0 + cpu::class_s(job, ThreadClass::Sqpoll).0;
    if facts.iopoll && kernel_s <= worker_s {
        return Some((
            Bottleneck::Undetermined,
            format!("{head}, mostly with iolab's submitting threads, but they poll for completions (IOPOLL) and so are busy by design; compare with --hipri off."),
            evidence,
        ));
    }
    if kernel_s > worker_s {
        return Some((
            Bottleneck::KernelCpu,
            format!("{head}, mostly with io_uring's kernel threads (io-wq workers, SQPOLL: {kernel_s:.1} core-seconds against {worker_s:.1} for the submitting threads); requests punted to io-wq cost a thread hand-off each."),
            evidence,
        ));
    }
    Some((
        Bottleneck::SubmittingCpu,
        format!("{head}, mostly with iolab's submitting threads: the CPU, not the device, was the limit; a cheaper engine or fewer threads per core would help."),
        evidence,
    ))
}

/// The share of the submitting threads' CPU spent in the kernel.
fn worker_kernel_pct(job: &JobResult) -> Option<f64> {
    let worker = job.cpu.threads.iter().find(|t| t.class == ThreadClass::Worker)?;
    let total = worker.user_s + worker.system_s;
    (total > 0.0).then(|| worker.system_s / total * 100.0)
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole * 100.0
    } else {
        0.0
    }
}

/// Outstanding I/Os: whole when they are (they are unless targets split a group unevenly).
fn count(value: f64) -> String {
    if (value - value.round()).abs() < 0.05 {
        format!("{:.0}", value)
    } else {
        format!("{value:.1}")
    }
}

fn micros(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} us")
    }
}
