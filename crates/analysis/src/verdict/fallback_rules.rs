//! The last rules, once nothing was saturated: missing figures, a target no block device
//! serves, a busy device that held too little, the job's own concurrency; and "undetermined"
//! with what to run next when the evidence does not decide.

use iolab_stats::result::Bottleneck;
use iolab_stats::threads::ThreadClass;

use super::cpu_rules::DEMAND_SATURATED_PCT;
use super::evidence::device_line;
use super::facts::Facts;
use super::words::count;
use super::Finding;

/// The name iolab gives its scratch files: a next-step command names no such target.
const SCRATCH_PREFIX: &str = "iolab-scratch-";

pub fn no_cpu_figures(facts: &Facts<'_>) -> Option<Finding> {
    (!facts.cpu_known).then(|| Finding {
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
    Finding::new(
        Bottleneck::Target,
        format!(
            "No CPU was saturated and iolab's busiest submitting thread was idle {idle:.0}% of the window, waiting for completions: the outstanding I/Os waited at {path}, which no block device of this machine serves (a FUSE, network or btrfs filesystem), so the target (the filesystem or its server) is the limit at this load; whether it is saturated is a question for `{}`.",
            sweep_command(facts)
        ),
        Vec::new(),
    )
}

/// A device busy all the time that held too few of the job's outstanding I/Os, while no CPU was
/// saturated: the rest were between the device and iolab.
pub fn device_busy_not_holding(facts: &Facts<'_>) -> Option<Finding> {
    let load = facts.loads.iter().find(|l| l.busy() && !l.buffered && l.asked > 1.0)?;
    Finding::new(
        Bottleneck::Undetermined,
        format!(
            "{} was busy {:.0}% of the window but held only {:.1} of the {} outstanding I/Os on average; the rest were being submitted or reaped, yet no CPU was saturated; `{}` shows whether more outstanding I/Os add IOPS.",
            load.name(),
            load.busy_pct(),
            load.activity.avg_queue,
            count(load.asked),
            sweep_command(facts)
        ),
        vec![device_line(load)],
    )
}

/// Nothing was saturated, a device idled part of the window (or served one request at a time),
/// and no thread of iolab's was at its limit: the job's own outstanding I/Os limited it.
pub fn concurrency(facts: &Facts<'_>) -> Option<Finding> {
    if facts.loads.is_empty() || !facts.unseen.is_empty() {
        return None;
    }
    let lane_limited =
        facts.class(ThreadClass::Worker).is_some_and(|w| w.busiest_demand_pct >= DEMAND_SATURATED_PCT);
    if lane_limited {
        return None;
    }
    let asked: f64 = facts.loads.iter().map(|l| l.asked).sum();
    let summary = match facts.loads.iter().find(|l| l.busy()) {
        Some(load) if load.asked <= 1.0 => format!("Nothing was saturated: {} was busy {:.0}% of the window but with one request at a time, and a device that serves requests in parallel can do more at once; raise --qd or --workers.", load.name(), load.busy_pct()),
        Some(_) => return None,
        None => format!("Nothing was saturated: the job kept {} I/O{} outstanding and the devices were idle part of the time; raise --qd or --workers.", count(asked), if asked == 1.0 { "" } else { "s" }),
    };
    Finding::new(Bottleneck::Concurrency, summary, Vec::new())
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
    Finding { cause: Bottleneck::Undetermined, summary, lead: Vec::new() }
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
