//! Advice is a hypothesis about the limit a rule found, and the job's trial (a short run at the
//! advised setting, kept with the job) tests it. A trial that gained what the advice promised
//! confirms the finding; one that did not overturns it: the cause becomes undetermined, with
//! what the figures ruled out. Advice no trial tested is said as untested.

use iolab_stats::advice::{Advice, Change, Outcome, Trial};
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::{Bottleneck, JobResult};
use iolab_stats::threads::ThreadClass;

use super::facts::{Facts, KERNEL_THREAD_LIMIT_PCT, LANE_HELD_SHARE};
use super::words::count;
use super::{Finding, Hypothesis};
use crate::cpu::SATURATED_PCT;

/// A trial that gains less than this share of the job's IOPS does not confirm the advice:
/// run-to-run noise on a quiet device stays well below it.
pub const CONFIRMING_GAIN_PCT: f64 = 10.0;

/// A gain confirms only beyond this many standard errors of the two counts of I/Os (the spread
/// of a count taken as its square root): a trial of 11 I/Os against a job's 10 per second is
/// +10% by one I/O, which a busy machine's wake-ups give or take.
const COUNTING_NOISE_SE: f64 = 1.0;

/// The setting that doubles what limited the job's own concurrency: the queue depth of a job
/// of one group (psync runs a thread per outstanding I/O, so this holds for every engine).
pub fn deeper_queue(job: &JobResult) -> Option<Change> {
    let [group] = job.groups.as_slice() else { return None };
    let qd = group.qd.max(1);
    (qd < 4096).then(|| Change::QueueDepth { qd: (qd * 2).min(4096) })
}

/// Whether `what` (a device, a target) was saturated or serves more at once than the job asked:
/// a trial at twice the queue depth decides between `holder` (saturated) and the job's own
/// concurrency. `None` for a job of several groups.
pub fn more_at_once(job: &JobResult, what: &str, holder: Bottleneck) -> Option<Hypothesis> {
    Some(Hypothesis {
        change: deeper_queue(job)?,
        if_confirmed: Some((
            Bottleneck::Concurrency,
            format!("{what} serves more requests at once, so the job's own outstanding I/Os were the limit"),
        )),
        if_refuted: Some((holder, format!("{what} serves no more at once: it was saturated"))),
    })
}

/// Twice the workers with the same outstanding I/Os in all (half the queue depth each), for a
/// job of one group whose lanes kept I/Os out of the device: worth a trial only while the
/// machine has a core for each new lane.
pub fn more_lanes(job: &JobResult) -> Option<Change> {
    let [group] = job.groups.as_slice() else { return None };
    let cores = job.cpu.machine_busy_pct.len() as u32;
    let workers = group.workers.max(1) * 2;
    (cores == 0 || workers <= cores).then(|| Change::Lanes { workers, qd: (group.qd / 2).max(1) })
}

/// Half the workers with twice the queue depth each, for lanes that took turns on too few cores.
pub fn fewer_lanes(job: &JobResult) -> Option<Change> {
    let [group] = job.groups.as_slice() else { return None };
    (group.workers >= 2).then(|| Change::Lanes { workers: group.workers / 2, qd: group.qd.max(1) * 2 })
}

/// The finding, with its advice said as tested or untested; and the advice, for the result.
pub fn settle(mut finding: Finding, facts: &Facts<'_>) -> (Finding, Option<Advice>) {
    let Some(hypothesis) = finding.advice.take() else { return (finding, None) };
    let change = hypothesis.change;
    let flags = change.flags();
    let trial = facts.job.trial.as_ref().filter(|t| t.change == change);
    let measured = trial.and_then(|t| gain(facts.job, t).map(|g| (t, g)));
    let Some((trial, (gain_pct, latency_ratio))) = measured else {
        let why = match trial.and_then(|t| t.failed.as_deref()) {
            Some(failed) => format!(" ({failed})"),
            None => String::new(),
        };
        let summary = format!("{} Advice, untested{why}: {flags}.", finding.summary);
        let advice = Advice { change, outcome: Outcome::Untested };
        return (Finding { summary, ..finding }, Some(advice));
    };
    let at_latency =
        if latency_ratio > 0.0 { format!(" at {latency_ratio:.1}x the mean latency") } else { String::new() };
    let figures = format!(
        "{flags} gave {gain_pct:+.0}% IOPS ({} against {}){at_latency}",
        thousands(trial.iops),
        thousands(facts.job.total.iops)
    );
    if gain_pct >= CONFIRMING_GAIN_PCT && beyond_counting_noise(facts.job, trial) {
        let advice =
            Advice { change, outcome: Outcome::Confirmed { iops_gain_pct: gain_pct, latency_ratio } };
        let (cause, summary) = match hypothesis.if_confirmed {
            Some((cause, why)) => (cause, format!("{} Confirmed: {figures}: {why}.", finding.summary)),
            None => (finding.cause, format!("{} Confirmed: {figures}.", finding.summary)),
        };
        return (Finding { cause, summary, ..finding }, Some(advice));
    }
    let advice = Advice { change, outcome: Outcome::NotConfirmed { iops_gain_pct: gain_pct, latency_ratio } };
    if let Some((cause, why)) = hypothesis.if_refuted {
        let summary = format!("{} Tested: {figures}: {why}.", finding.summary);
        return (Finding { cause, summary, ..finding }, Some(advice));
    }
    let ruled_out = ruled_out(facts);
    let summary = format!(
        "Not confirmed: {figures}, so the limit the figures pointed to ({}) was not it{}.",
        finding.cause.name(),
        if ruled_out.is_empty() { String::new() } else { format!("; ruled out: {}", ruled_out.join("; ")) }
    );
    let mut lead = vec![format!("the hypothesis tested: {}", finding.summary)];
    lead.extend(finding.lead);
    (Finding { cause: Bottleneck::Undetermined, summary, lead, advice: None }, Some(advice))
}

/// The trial's IOPS gain over the job's, in percent, and its mean latency over the job's; `None`
/// when either measured nothing to compare.
fn gain(job: &JobResult, trial: &Trial) -> Option<(f64, f64)> {
    let before = job.total.iops;
    let before_latency = job.total.latency.as_ref().map_or(0.0, |l| l.mean_ns);
    if trial.failed.is_some() || before <= 0.0 || trial.iops <= 0.0 {
        return None;
    }
    let ratio = if before_latency > 0.0 { trial.mean_latency_ns / before_latency } else { 0.0 };
    Some(((trial.iops / before - 1.0) * 100.0, ratio))
}

/// Whether the trial's IOPS exceed the job's by more than the spread of the two counts of I/Os
/// they are made of. Thousands of I/Os make the bound a fraction of a percent; a few dozen
/// (a slow network target) make it tens of percent.
fn beyond_counting_noise(job: &JobResult, trial: &Trial) -> bool {
    if job.measured_s <= 0.0 || trial.measured_s <= 0.0 {
        return true;
    }
    let (before_n, trial_n) = (job.total.iops * job.measured_s, trial.iops * trial.measured_s);
    let spread = (before_n / job.measured_s.powi(2) + trial_n / trial.measured_s.powi(2)).sqrt();
    trial.iops - job.total.iops > COUNTING_NOISE_SE * spread
}

/// What the job's own figures ruled out, each with its figure.
fn ruled_out(facts: &Facts<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let busiest_core = facts
        .job
        .cpu
        .machine_busy_pct
        .iter()
        .copied()
        .fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.max(c))));
    if let Some(busiest) = busiest_core.filter(|&b| b < SATURATED_PCT) {
        out.push(format!("a saturated core (the busiest was {busiest:.0}% busy)"));
    }
    let kernel = [ThreadClass::IoWq, ThreadClass::Sqpoll]
        .iter()
        .filter_map(|class| facts.class(*class))
        .map(|t| t.busiest_thread_pct)
        .reduce(f64::max);
    if let Some(kernel) = kernel.filter(|&k| k < KERNEL_THREAD_LIMIT_PCT) {
        out.push(format!("an io_uring kernel thread at its limit (the busiest ran {kernel:.0}% of a core)"));
    }
    for load in facts.loads.iter().filter(|l| !l.busy()) {
        out.push(format!(
            "{} (busy {:.0}%, holding {:.1} of the job's {} outstanding I/Os)",
            load.name(),
            load.busy_pct(),
            load.activity.avg_queue,
            count(load.asked)
        ));
    }
    if let Some(slots) =
        facts.job.slots.filter(|s| s.ios > 0 && s.awaiting_resubmission < s.slots * LANE_HELD_SHARE)
    {
        out.push(format!(
            "I/Os held back in iolab ({:.1} of {} slots awaited resubmission, a mean gap of {})",
            slots.awaiting_resubmission,
            count(slots.slots),
            latency(slots.mean_gap_ns)
        ));
    }
    out
}
