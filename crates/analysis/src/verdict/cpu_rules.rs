//! The rules about CPU, wherever on the machine it went: a kernel thread serving the target at
//! its limit, io_uring's own worker at its limit, a core drowned in interrupts, the hypervisor's
//! steal, a saturated submitting thread, saturated cores (named by who held them), a lane that
//! wanted a core others held, and an SQPOLL thread that could not keep the device fed.

use iolab_stats::machine::{CpuOwner, OwnerKind};
use iolab_stats::result::Bottleneck;
use iolab_stats::threads::ThreadClass;

use iolab_stats::advice::Change;

use super::advice;
use super::evidence::{device_line, machine_line, worker_line};
use super::facts::{Facts, DEMAND_SATURATED_PCT, KERNEL_THREAD_LIMIT_PCT, STARVED_SHARE};
use super::words::owner;
use super::{Finding, Hypothesis};
use crate::cpu::{self, MACHINE_SATURATED_PCT, SATURATED_PCT};

/// A core at least this busy, this share of it in hardirq and softirq, was drowned in
/// interrupt work.
pub const IRQ_CORE_BUSY_PCT: f64 = 90.0;
pub const IRQ_SHARE_PCT: f64 = 50.0;
/// The hypervisor taking this share of the VM's CPU (steal) or more distorts every figure.
pub const STEAL_PCT: f64 = 10.0;
/// A submitting thread that wanted a whole core (`DEMAND_SATURATED_PCT`) and waited at least
/// this share of the window for a CPU: others held the core.
pub const CROWDED_WAIT_PCT: f64 = 10.0;

/// A kernel thread serving the job's device (the loop driver's worker, an md RAID thread,
/// dm-crypt) ran at its limit: that layer, not the storage below it, is the wall.
pub fn kernel_thread_at_limit(facts: &Facts<'_>) -> Option<Finding> {
    let (serving, load) =
        facts.serving_owners().into_iter().find(|(o, _)| o.busiest_thread_pct >= KERNEL_THREAD_LIMIT_PCT)?;
    let (what, layer) = layer_words(serving);
    Finding::new(
        Bottleneck::KernelThread,
        format!(
            "{}'s {what} {} ran at {:.0}% of one core: {layer}, not the storage below it, is the limit; one thread serves it, so more QD or workers only queue behind it.",
            load.name(),
            serving.busiest_thread,
            serving.busiest_thread_pct
        ),
        vec![owner(serving), device_line(load)],
    )
}

/// How to name a device-serving kernel thread and the layer it stands for.
fn layer_words(serving: &CpuOwner) -> (&'static str, &'static str) {
    let name = serving.name.as_str();
    if name.starts_with("loop") {
        ("kernel worker", "the loop driver")
    } else if name.ends_with("(md)") {
        ("RAID thread", "the software RAID layer")
    } else if name.starts_with("kcryptd") || name.starts_with("dmcrypt") {
        ("encryption thread", "dm-crypt")
    } else if serving.role == Some(iolab_stats::kernel_threads::KernelRole::RaidOrMapper) {
        ("device-mapper thread", "the device-mapper layer")
    } else {
        ("kernel worker", "its driver")
    }
}

/// An io-wq thread serving this share of one core or more, with at least `QUEUED_SHARE` of the
/// job's slots queued outside the device, was the server its requests waited for: utilized and
/// saturated, in the USE method's terms. (A thread sleeps between bursts of work, so one with
/// a standing queue in front of it rarely shows 100%; zram at QD 32 showed 87% with 29.5 of 32
/// I/Os outside the device.)
pub const QUEUED_SERVER_PCT: f64 = 70.0;
pub const QUEUED_SHARE: f64 = 0.5;

/// One io-wq thread of iolab's ran at its limit, or near it with the job's I/Os queued in front
/// of it: requests io_uring could not issue inline (zram and other synchronous devices,
/// buffered I/O, a full queue) are served there, one at a time per thread, so raising QD only
/// queues behind it.
pub fn io_wq_thread_at_limit(facts: &Facts<'_>) -> Option<Finding> {
    let io_wq = facts.class(ThreadClass::IoWq).filter(|t| t.busiest_thread_pct >= QUEUED_SERVER_PCT)?;
    let slots = facts.job.slots.map_or(0.0, |s| s.slots);
    let queued = facts
        .in_flight_split()
        .filter(|&(_, _, outside)| slots > 0.0 && outside >= slots * QUEUED_SHARE)
        .map(|(names, _, outside)| {
            format!(
                ", while {outside:.1} of the job's {slots:.0} outstanding I/Os waited outside {} for it",
                names.join(" + ")
            )
        });
    if io_wq.busiest_thread_pct < KERNEL_THREAD_LIMIT_PCT && queued.is_none() {
        return None;
    }
    let summary = format!(
        "An io-wq kernel thread of iolab's ran at {:.0}% of one core{}: io_uring could not issue these requests inline (a synchronous device such as zram, buffered I/O, or a full queue) and served them in its worker threads, which were the limit.",
        io_wq.busiest_thread_pct,
        queued.unwrap_or_default()
    );
    // More lanes bring more io-wq threads. If they gain nothing, the kernel's work per request
    // filled what CPU there was: still the kernel's CPU, no longer one thread's.
    let advice = advice::more_lanes(facts.job).map(|change| Hypothesis {
        change,
        if_confirmed: None,
        if_refuted: Some((
            Bottleneck::KernelCpu,
            "more io-wq threads went no faster, so the kernel's work for each request (served outside the submitting thread), not the one thread, set the rate on this machine's cores".into(),
        )),
    });
    Some(Finding { cause: Bottleneck::KernelCpu, summary, lead: Vec::new(), advice })
}

/// A core saturated mostly by hardirq and softirq work: completions piled onto one CPU.
pub fn interrupt_cpu(facts: &Facts<'_>) -> Option<Finding> {
    let core = facts
        .cores()
        .iter()
        .filter(|c| c.busy_pct() >= IRQ_CORE_BUSY_PCT && c.interrupts_pct() >= IRQ_SHARE_PCT)
        .max_by(|a, b| a.interrupts_pct().total_cmp(&b.interrupts_pct()))?;
    let sources: Vec<String> = facts
        .machine
        .into_iter()
        .flat_map(|m| m.interrupts.iter())
        .filter(|i| i.per_cpu.get(core.cpu as usize).is_some_and(|&n| n > 0))
        .take(3)
        .map(|i| format!("{} ({})", i.name, i.per_cpu[core.cpu as usize]))
        .collect();
    let from = if sources.is_empty() { String::new() } else { format!("; most from {}", sources.join(", ")) };
    Finding::new(
        Bottleneck::Interrupts,
        format!(
            "cpu{} was {:.0}% busy, {:.0}% of it in interrupt handlers and softirqs (hardirq {:.0}%, softirq {:.0}%){from}: completions are processed on one core, which is the limit; spread the device's interrupts over more cores (more hardware queues, irqbalance) or keep iolab's threads off it (--cpus).",
            core.cpu,
            core.busy_pct(),
            core.interrupts_pct(),
            core.irq_pct,
            core.softirq_pct
        ),
        Vec::new(),
    )
}

/// The hypervisor took a large share of the VM's CPU, and the lanes did not sleep it through on
/// a slow target (the target's rule judges those).
pub fn steal(facts: &Facts<'_>) -> Option<Finding> {
    let steal = facts.steal_pct();
    (steal >= STEAL_PCT && !lanes_asleep_on_a_target(facts)).then(|| Finding {
        advice: None,
        cause: Bottleneck::Steal,
        summary: format!("The hypervisor took {steal:.0}% of this VM's CPU time (steal): its CPUs were not all its own, so these figures say as much about the host's other guests as about the device; measure on a quiet host or with dedicated CPUs."),
        lead: Vec::new(),
    })
}

/// A submitting thread was busy a whole core (not IOPOLL's or a completion watch's, which poll
/// by design).
pub fn submitting_thread(facts: &Facts<'_>) -> Option<Finding> {
    let worker = facts.class(ThreadClass::Worker)?;
    if worker.busiest_thread_pct < SATURATED_PCT || facts.lanes_poll() {
        return None;
    }
    let mut summary = format!(
        "A submitting thread was the limit: the busiest was {:.0}% busy, a whole core",
        worker.busiest_thread_pct
    );
    let total = worker.user_s + worker.system_s;
    let kernel = if total > 0.0 { worker.system_s / total * 100.0 } else { 0.0 };
    if kernel >= 50.0 {
        summary.push_str(&format!(", {kernel:.0}% of it in the kernel (system calls, and for a synchronous device such as zram the I/O itself)"));
    }
    summary.push('.');
    Finding::new(Bottleneck::SubmittingCpu, summary, worker_line(facts).into_iter().collect())
        .map(|f| f.advising(advice::more_lanes(facts.job)))
}

/// Who held the machine's cores in the window, in core-seconds.
struct Holders<'a> {
    workers_s: f64,
    iolab_kernel_s: f64,
    /// Kernel threads serving the job's devices.
    device_s: f64,
    device: Vec<&'a CpuOwner>,
    /// Interrupt work: hardirq and softirq time of the cores (ksoftirqd's included).
    interrupts_s: f64,
    processes_s: f64,
    processes: Vec<&'a CpuOwner>,
    other_kernel_s: f64,
}

impl<'a> Holders<'a> {
    fn of(facts: &Facts<'a>) -> Option<Holders<'a>> {
        let machine = facts.machine?;
        let device: Vec<&CpuOwner> = facts.serving_owners().into_iter().map(|(o, _)| o).collect();
        let interrupt_threads: f64 = facts
            .outside_owners()
            .filter(|o| {
                matches!(
                    o.role,
                    Some(
                        iolab_stats::kernel_threads::KernelRole::Softirq
                            | iolab_stats::kernel_threads::KernelRole::Interrupt
                    )
                )
            })
            .map(|o| o.cpu_s)
            .sum();
        let core_interrupts: f64 =
            machine.cpus.iter().map(|c| c.interrupts_pct() / 100.0 * machine.window_s).sum();
        let interrupts_s = interrupt_threads.max(core_interrupts);
        let processes: Vec<&CpuOwner> =
            facts.outside_owners().filter(|o| o.kind == OwnerKind::Process).collect();
        let device_s: f64 = device.iter().map(|o| o.cpu_s).sum();
        let kernel_s: f64 =
            facts.outside_owners().filter(|o| o.kind == OwnerKind::Kernel).map(|o| o.cpu_s).sum();
        Some(Holders {
            workers_s: cpu::class_s(facts.job, ThreadClass::Worker).0,
            iolab_kernel_s: cpu::class_s(facts.job, ThreadClass::IoWq).0
                + cpu::class_s(facts.job, ThreadClass::Sqpoll).0,
            device_s,
            device,
            interrupts_s,
            processes_s: processes.iter().map(|o| o.cpu_s).sum(),
            processes,
            other_kernel_s: (kernel_s - device_s - interrupt_threads).max(0.0),
        })
    }

    /// The holder that outweighs the others outside iolab's submitting threads, with the cause
    /// and the words that name it; `None` when the submitting threads themselves held the most.
    fn named(&self) -> Option<(Bottleneck, String)> {
        let device_kernel = self.device_s + self.interrupts_s;
        let largest =
            [self.workers_s, self.iolab_kernel_s, device_kernel, self.processes_s, self.other_kernel_s]
                .into_iter()
                .fold(0.0, f64::max);
        if largest <= 0.0 || largest == self.workers_s {
            return None;
        }
        if largest == self.iolab_kernel_s {
            return Some((
                Bottleneck::KernelCpu,
                format!("io_uring's kernel threads (io-wq, SQPOLL) held the most, {:.2} core-seconds against {:.2} for the submitting threads: requests punted to io-wq cost a thread hand-off each", self.iolab_kernel_s, self.workers_s),
            ));
        }
        if largest == device_kernel {
            let mut parts: Vec<String> = self.device.iter().take(2).map(|o| owner(o)).collect();
            if self.interrupts_s > 0.0 {
                parts.push(format!(
                    "interrupts and softirqs {:.2} core-seconds (block completions)",
                    self.interrupts_s
                ));
            }
            let cause = if self.device_s >= self.interrupts_s {
                Bottleneck::KernelThread
            } else {
                Bottleneck::Interrupts
            };
            return Some((
                cause,
                format!("the device's own kernel work held more of them than iolab's submitting threads ({:.2} core-seconds): {}; on this machine that work, not the storage behind it, is the limit, and more cores (or fewer of iolab's threads per core) would move it", self.workers_s, parts.join("; ")),
            ));
        }
        if largest == self.processes_s {
            // The first is the largest; a second is named only if it did a tenth of that.
            let first = self.processes.first().map_or(0.0, |o| o.cpu_s);
            let named: Vec<String> =
                self.processes.iter().take(2).filter(|o| o.cpu_s >= first / 10.0).map(|o| owner(o)).collect();
            return Some((
                Bottleneck::OtherLoad,
                format!("other processes held more of them than iolab ({}), so the run competed for CPU and its figures are not the device's alone; measure on a quiet machine", named.join("; ")),
            ));
        }
        Some((
            Bottleneck::OtherLoad,
            format!("kernel work that does not serve the target held {:.2} core-seconds, more than iolab's submitting threads; measure on a quiet machine", self.other_kernel_s),
        ))
    }
}

/// Lanes that slept waiting for a target no block device serves most of the window (each
/// running or waiting for a CPU under half of it): the target's time was the larger part of
/// every cycle, so the cores, however busy, held them back less than it did. Seen beside a
/// load: a lane at QD 1 on a 28 ms FUSE target ran or waited for a CPU 10% of the window, on
/// cores 100% busy with 22% steal.
fn lanes_asleep_on_a_target(facts: &Facts<'_>) -> bool {
    !facts.unseen.is_empty()
        && facts
            .class(ThreadClass::Worker)
            .is_some_and(|w| w.busiest_demand_pct.max(w.busiest_thread_pct) < ASLEEP_ON_TARGET_PCT)
}

/// A lane running or waiting for a CPU under this share of the window slept on its target the
/// rest, most of it.
const ASLEEP_ON_TARGET_PCT: f64 = 50.0;

/// The cores were saturated: named by who held them (unless the lanes slept on their target).
pub fn saturated_machine(facts: &Facts<'_>) -> Option<Finding> {
    let job = facts.job;
    let machine = cpu::machine_busy_pct(job);
    if machine < MACHINE_SATURATED_PCT || job.measured_s <= 0.0 || lanes_asleep_on_a_target(facts) {
        return None;
    }
    let cores = job.cpu.machine_busy_pct.len();
    let head = format!("The machine's {cores} cores were {machine:.0}% busy");
    let evidence: Vec<String> = machine_line(facts).into_iter().collect();
    if let Some(holders) = Holders::of(facts) {
        if let Some((cause, words)) = holders.named() {
            return Finding::new(cause, format!("{head}, and {words}."), evidence);
        }
    } else {
        // No machine-wide figures (a result from before they were taken): only iolab's own.
        let busy_s = machine / 100.0 * cores as f64 * job.measured_s;
        let process_s = cpu::process_s(job);
        let outside_s = (busy_s - process_s).max(0.0);
        if outside_s > process_s {
            return Finding::new(
                Bottleneck::Undetermined,
                format!("{head}, mostly outside iolab ({outside_s:.1} of {busy_s:.1} core-seconds), and this result has no machine-wide figures to say whose; run it again with this iolab, which names them."),
                evidence,
            );
        }
    }
    if job.cpu.threads.is_empty() && facts.uring {
        return Finding::new(
            Bottleneck::Undetermined,
            format!("{head}, mostly by iolab, but without per-thread CPU figures its submitting threads cannot be told from its io_uring kernel threads."),
            evidence,
        );
    }
    let worker_s = cpu::class_s(job, ThreadClass::Worker).0;
    let kernel_s = cpu::class_s(job, ThreadClass::IoWq).0 + cpu::class_s(job, ThreadClass::Sqpoll).0;
    if facts.lanes_poll() && kernel_s <= worker_s {
        let (how, without) = if facts.iopoll {
            ("poll for completions (IOPOLL)", "with --hipri off")
        } else {
            ("watch the completion queue before they sleep (--completion-watch)", "without it")
        };
        return Finding::new(
            Bottleneck::Undetermined,
            format!("{head}, mostly with iolab's submitting threads, but they {how} and so are busy by design; compare {without}."),
            evidence,
        );
    }
    if kernel_s > worker_s {
        return Finding::new(
            Bottleneck::KernelCpu,
            format!("{head}, mostly with io_uring's kernel threads (io-wq workers, SQPOLL: {kernel_s:.1} core-seconds against {worker_s:.1} for the submitting threads); requests punted to io-wq cost a thread hand-off each."),
            evidence,
        );
    }
    Finding::new(
        Bottleneck::SubmittingCpu,
        format!("{head}, mostly with iolab's submitting threads: the CPU, not the device, was the limit."),
        evidence,
    )
}

/// A submitting thread wanted a whole core (running or waiting to run nearly all the window)
/// but waited for it a good part of the time: whatever held the cores held the lane back.
pub fn crowded_lane(facts: &Facts<'_>) -> Option<Finding> {
    let worker = facts.class(ThreadClass::Worker)?;
    let waited = worker.busiest_demand_pct - worker.busiest_thread_pct;
    if worker.busiest_demand_pct < DEMAND_SATURATED_PCT || waited < CROWDED_WAIT_PCT || facts.lanes_poll() {
        return None;
    }
    let head = format!(
        "The busiest submitting thread wanted a whole core (running or ready to run {:.0}% of the window) but ran only {:.0}%: it waited {waited:.0}% of the window for a CPU",
        worker.busiest_demand_pct, worker.busiest_thread_pct
    );
    let cores = facts.job.cpu.machine_busy_pct.len() as u32;
    if let Some((cause, words)) = Holders::of(facts).and_then(|h| h.named()) {
        return Finding::new(
            cause,
            format!("{head}, and {words}."),
            worker_line(facts).into_iter().collect(),
        );
    }
    let threads: u32 = facts.job.groups.iter().map(|g| g.threads).sum();
    if cores > 0 && threads > cores {
        return Finding::new(
            Bottleneck::SubmittingCpu,
            format!("{head}: iolab ran {threads} submitting threads on {cores} cores, which took turns."),
            worker_line(facts).into_iter().collect(),
        )
        .map(|f| f.advising(advice::fewer_lanes(facts.job)));
    }
    None
}

/// An SQPOLL thread busy all the time while the devices held under half of what the job kept
/// outstanding: requests waited to be submitted. (It also spins while idle, so its 100% alone
/// proves nothing; beside a busy, full device it is not blamed.)
pub fn sqpoll_starving(facts: &Facts<'_>) -> Option<Finding> {
    let sqpoll = cpu::busiest_pct(facts.job, ThreadClass::Sqpoll);
    let starving = !facts.loads.is_empty()
        && facts.loads.iter().all(|l| !l.busy() && l.activity.avg_queue < l.asked_requests() * STARVED_SHARE);
    (sqpoll >= SATURATED_PCT && starving).then(|| Finding {
        cause: Bottleneck::KernelCpu,
        summary: format!("The SQPOLL kernel thread was {sqpoll:.0}% busy while the devices held under half of the job's outstanding I/Os: requests waited to be submitted (SQPOLL also spins while idle, so its 100% alone proves nothing)."),
        advice: Some(Hypothesis { change: Change::Sqpoll { on: false }, if_confirmed: None, if_refuted: None }),
        lead: facts.loads.iter().map(device_line).collect(),
    })
}
