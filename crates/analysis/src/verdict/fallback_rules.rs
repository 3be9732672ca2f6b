//! The last rules, once nothing was saturated: missing figures, a target no block device
//! serves, a busy device that held too little, cores woken from idle for the completions, the
//! job's own concurrency; and "undetermined"
//! with what to run next when the evidence does not decide.

use iolab_stats::advice::Change;
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::Bottleneck;
use iolab_stats::threads::ThreadClass;

use super::advice;
use super::evidence::device_line;
use super::facts::{Facts, DEMAND_SATURATED_PCT, LANE_HELD_SHARE};
use super::words::count;
use super::{Finding, Hypothesis};

/// A submitting thread busy this share of the window or more sets the pace of its slots.
pub const LANE_BUSY_PCT: f64 = 50.0;

/// A busy device holding at least this share of the job's outstanding requests set the pace when
/// no lane kept the rest out.
pub const DEVICE_HELD_MOST: f64 = 0.5;

/// A device busy this share of the window or more, short of busy, and holding most of the job's
/// requests may have been at its limit: a trial at twice the queue depth that gains nothing
/// names it (the default job on this VM's virtio disk: 89% busy, 25.3 of 32 in it, and QD 64
/// gave -0%, where the verdict had been "undetermined").
pub const NEARLY_BUSY_DEVICE_PCT: f64 = 80.0;

/// The name iolab gives its scratch files: a next-step command names no such target.
const SCRATCH_PREFIX: &str = "iolab-scratch-";

pub fn no_cpu_figures(facts: &Facts<'_>) -> Option<Finding> {
    (!facts.cpu_known).then(|| Finding {
        advice: None,
        cause: Bottleneck::Undetermined,
        summary:
            "No CPU figures were taken, so a saturated core cannot be ruled out and nothing else stood out."
                .into(),
        lead: Vec::new(),
    })
}

/// A target no block device of this machine serves (FUSE, NFS, CephFS), with iolab's threads
/// idle much of the time: every outstanding I/O waited at the target.
pub fn target_without_device(facts: &Facts<'_>) -> Option<Finding> {
    let path = facts.unseen.first()?;
    let worker = facts.class(ThreadClass::Worker);
    let idle = worker.map_or(100.0, |w| 100.0 - w.busiest_demand_pct.max(w.busiest_thread_pct));
    let split = match facts.job.slots.filter(|s| s.ios > 0) {
        Some(s) => format!(
            " ({:.1} of the {} outstanding I/Os were in flight on average, {:.1} in iolab)",
            s.in_flight,
            count(s.slots),
            s.awaiting_resubmission
        ),
        None => String::new(),
    };
    // A lane that polls or watches for completions waited for them while busy too.
    let at_least = if facts.lanes_poll() { "at least " } else { "" };
    let head = format!(
        "No CPU was saturated and iolab's busiest submitting thread was idle {at_least}{idle:.0}% of the window, waiting for completions: the outstanding I/Os waited at {path}{split}, which no block device of this machine serves (a FUSE, network or btrfs filesystem), so the target (the filesystem or its server) set the pace at this load"
    );
    // Whether it was saturated, or serves more at once than the job asked, a deeper queue tells.
    let Some(advice) = advice::more_at_once(facts.job, path, Bottleneck::Target) else {
        return Finding::new(
            Bottleneck::Target,
            format!("{head}; whether it is saturated is a question for `{}`.", sweep_command(facts)),
            Vec::new(),
        );
    };
    Some(Finding {
        cause: Bottleneck::Target,
        summary: format!("{head}."),
        lead: Vec::new(),
        advice: Some(advice),
    })
}

/// A device busy all the time that held too few of the job's outstanding I/Os, while no CPU was
/// saturated: the rest were between the device and iolab. With the slot split and a lane busy
/// half the time or more, the lane kept them out (a gap per slot between reap and resubmission,
/// or completions waiting for it to reap): an answer, with what to change.
pub fn device_busy_not_holding(facts: &Facts<'_>) -> Option<Finding> {
    let load = facts.loads.iter().find(|l| l.busy() && !l.buffered && l.asked > 1.0)?;
    let worker = facts.class(ThreadClass::Worker);
    if let (Some(slots), Some(worker)) = (facts.job.slots.filter(|s| s.ios > 0), worker) {
        let held = load.activity.avg_queue;
        let outside = (slots.in_flight - held).max(0.0);
        let in_iolab = slots.awaiting_resubmission;
        let lane_busy = worker.busiest_thread_pct >= LANE_BUSY_PCT && !facts.lanes_poll();
        if lane_busy && in_iolab + outside >= slots.slots * LANE_HELD_SHARE {
            let total = worker.user_s + worker.system_s;
            let kernel = if total > 0.0 { worker.system_s / total * 100.0 } else { 0.0 };
            return Finding::new(
                Bottleneck::SubmittingCpu,
                format!(
                    "{} held {held:.1} of the {} outstanding I/Os on average; {in_iolab:.1} were reaped and waiting in iolab to be handed over again (a slot's mean gap {}) and {outside:.1} were in the kernel outside the device (being submitted, or completed and not yet reaped), because the submitting thread ({:.0}% busy, {kernel:.0}% of that in the kernel: its system calls) hands requests over and reaps completions in turns: the lane, not the device, kept them out.",
                    load.name(),
                    count(load.asked),
                    latency(slots.mean_gap_ns),
                    worker.busiest_thread_pct
                ),
                vec![device_line(load)],
            )
            .map(|f| f.advising(advice::more_lanes(facts.job)));
        }
    }
    // Not kept out by a busy lane: the device held most of them and set the pace. Whether it was
    // saturated, or serves more at once than the job asked, a deeper queue tells.
    let rest = match facts.job.slots.filter(|s| s.ios > 0) {
        Some(slots) => format!(
            "; of the rest, {:.1} were reaped and waiting in iolab to be handed over again (a slot's mean gap {}) and {:.1} were in the kernel outside the device (being submitted, or completed and not yet reaped)",
            slots.awaiting_resubmission,
            latency(slots.mean_gap_ns),
            (slots.in_flight - load.activity.avg_queue).max(0.0)
        ),
        None => "; the rest were being submitted or reaped".into(),
    };
    let head = format!(
        "{} was busy {:.0}% of the window and held {:.1} of the {} outstanding I/Os on average{rest}; no CPU was saturated",
        load.name(),
        load.busy_pct(),
        load.activity.avg_queue,
        count(load.asked),
    );
    // Holding under half of them, the device did not set the pace: where the rest were decides.
    let mostly_held = load.activity.avg_queue >= load.asked_requests() * DEVICE_HELD_MOST;
    match advice::more_at_once(facts.job, load.name(), Bottleneck::Device).filter(|_| mostly_held) {
        Some(advice) => Some(Finding {
            cause: Bottleneck::Device,
            summary: format!("{head}, so the device set the pace."),
            lead: vec![device_line(load)],
            advice: Some(advice),
        }),
        None => Finding::new(
            Bottleneck::Undetermined,
            format!("{head}; `{}` shows whether more outstanding I/Os add IOPS.", sweep_command(facts)),
            vec![device_line(load)],
        ),
    }
}

/// Nothing was saturated, a device idled part of the window (or served one request at a time),
/// and no thread of iolab's was at its limit: the job's own outstanding I/Os limited it.
pub fn concurrency(facts: &Facts<'_>) -> Option<Finding> {
    if facts.loads.is_empty() || !facts.unseen.is_empty() {
        return None;
    }
    let lane_limited = !facts.lanes_poll()
        && facts.class(ThreadClass::Worker).is_some_and(|w| w.busiest_demand_pct >= DEMAND_SATURATED_PCT);
    if lane_limited {
        return None;
    }
    let asked: f64 = facts.loads.iter().map(|l| l.asked).sum();
    let summary = match facts.loads.iter().find(|l| l.busy()) {
        Some(load) if load.asked <= 1.0 => format!("Nothing was saturated: {} was busy {:.0}% of the window but with one request at a time, and a device that serves requests in parallel can do more at once.", load.name(), load.busy_pct()),
        Some(_) => return None,
        None => format!("Nothing was saturated: the job kept {} I/O{} outstanding and the devices were idle part of the time.", count(asked), if asked == 1.0 { "" } else { "s" }),
    };
    // A device nearly busy with most of the job's requests in it: more at once, or saturated?
    let nearly = facts.loads.iter().find(|l| {
        l.busy_pct() >= NEARLY_BUSY_DEVICE_PCT
            && l.asked > 1.0
            && l.activity.avg_queue >= l.asked_requests() * DEVICE_HELD_MOST
    });
    if let Some(load) = nearly {
        let summary = format!(
            "No CPU or thread was saturated: the job kept {} I/Os outstanding, and {} was busy {:.0}% of the window with {:.1} of them in it on average.",
            count(asked),
            load.name(),
            load.busy_pct(),
            load.activity.avg_queue
        );
        return Some(Finding {
            cause: Bottleneck::Concurrency,
            summary,
            lead: vec![device_line(load)],
            advice: advice::more_at_once(facts.job, load.name(), Bottleneck::Device),
        });
    }
    Finding::new(Bottleneck::Concurrency, summary, Vec::new())
        .map(|f| f.advising(advice::deeper_queue(facts.job)))
}

/// Wake-ups from a halting or sleeping idle state per completed I/O from which the cores' idle
/// is worth a trial. Measured on this VM (haltpoll): a loop device at QD 1 woke them 0.61 times
/// per I/O (4.2x the IOPS with the cores polling), at QD 8 0.20 (2.6x), zram at QD 8 0.12
/// (2.4x); a load that keeps its cores busy wakes them far less.
pub const WAKEUPS_PER_IO: f64 = 0.1;

/// Nothing was saturated, as for `concurrency`, and the cores were woken from halting or
/// sleeping states often: each completion that finds its core there waits for it to wake (on
/// a VM that halts, a VM exit). A trial with the cores kept polling decides between the
/// cores' idle (the machine's configuration) and the job's own outstanding I/Os.
pub fn cpu_wake(facts: &Facts<'_>) -> Option<Finding> {
    let idle = facts.machine?.cpu_idle.as_ref()?;
    let per_io = idle.per_io(facts.job.total.ios);
    if per_io < WAKEUPS_PER_IO {
        return None;
    }
    let finding = concurrency(facts)?;
    let summary = format!(
        "{} The cores were woken from {} {:.2} times per I/O ({} wake-ups; {:.0}% of their time there), and a completion that finds its core there waits for it to wake.",
        finding.summary,
        idle.deepest,
        per_io,
        thousands(idle.wakeups as f64),
        idle.halted_pct
    );
    let advice = Hypothesis {
        change: Change::CpusPolling,
        if_confirmed: Some((
            Bottleneck::ConfiguredLimit,
            format!(
                "the cores' idle policy, which made completions wait for cores woken from {}",
                idle.deepest
            ),
        )),
        if_refuted: Some((
            Bottleneck::Concurrency,
            "the cores' wake-ups cost little, so the job's own outstanding I/Os were the limit".into(),
        )),
    };
    Some(Finding { summary, advice: Some(advice), ..finding })
}

/// When no rule holds: say what is missing and what to run next.
pub fn undetermined(facts: &Facts<'_>) -> Finding {
    let summary = if facts.loads.is_empty() {
        "No CPU was saturated and no device activity was recorded, so nothing shows what limited the run."
            .to_string()
    } else {
        format!(
            "No CPU, kernel thread or device queue was saturated, yet iolab's threads were near their limit; `{}` shows whether more outstanding I/Os or workers add IOPS.",
            sweep_command(facts)
        )
    };
    Finding { cause: Bottleneck::Undetermined, summary, lead: Vec::new(), advice: None }
}

/// "iolab sweep /dev/loop0 --qd 8..256 --workers 1,2": the sweep that answers what one job
/// cannot, around the job's own QD.
pub fn sweep_command(facts: &Facts<'_>) -> String {
    let group = facts.job.groups.first();
    let qd = group.map_or(32, |g| g.qd.max(1));
    let workers = group.map_or(1, |g| g.workers.max(1));
    let target = group
        .and_then(|g| g.targets.first())
        .map(|t| t.path.as_str())
        .filter(|path| !path.rsplit('/').next().unwrap_or(path).starts_with(SCRATCH_PREFIX))
        .map(|path| format!(" {}", shell_word(path)))
        .unwrap_or_default();
    format!(
        "iolab sweep{target} --qd {}..{} --workers {},{}",
        (qd / 4).max(1),
        (qd * 8).min(4096),
        workers,
        workers * 2
    )
}

/// A path as one shell word: quoted when it holds anything but plain characters.
fn shell_word(path: &str) -> String {
    if path.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:,@".contains(c)) {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}
