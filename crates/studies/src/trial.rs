//! Testing a verdict's advice: after `iolab run`'s jobs, each job whose verdict advises a change
//! runs again for about a second at the advised setting, on the same target, and the trial's
//! figures become a fact of the job, which is judged again with them (confirmed, or not and
//! undetermined). Studies run no trial: their points already show what a setting does.

use iolab_runner::{CpusPolling, Lab, Observer, RunError};
use iolab_spec::{GroupSpec, JobSpec, Nanos};
use iolab_stats::advice::{Change, Outcome, Trial};
use iolab_stats::result::{JobResult, StopReason};

/// How long a trial measures: long enough for thousands of I/Os on any device worth advising
/// about, short beside the job.
pub const TRIAL_RUNTIME: Nanos = Nanos::from_secs(1);
/// The most of the job's ramp a trial keeps before it measures.
const TRIAL_RAMP: Nanos = Nanos::from_millis(500);

/// `job` at the `change`d setting, for one trial second, without the job's I/O limit.
pub fn trial_job(job: &JobSpec, change: Change) -> JobSpec {
    let groups = job.groups.iter().map(|group| changed(group, change)).collect();
    JobSpec {
        name: format!("{} (trial: {})", job.name, change.flags()),
        runtime: TRIAL_RUNTIME,
        ramp: Nanos(job.ramp.0.min(TRIAL_RAMP.0)),
        io_limit: None,
        groups,
        ..job.clone()
    }
}

fn changed(group: &GroupSpec, change: Change) -> GroupSpec {
    let mut group = group.clone();
    match change {
        Change::QueueDepth { qd } => group.qd = qd,
        Change::Lanes { workers, qd } => {
            group.workers = workers;
            group.qd = qd;
        }
        Change::Sqpoll { on } => group.uring.sqpoll = on,
        // Not a setting of the job's: the trial holds the cores polling while it runs.
        Change::CpusPolling => {}
    }
    group
}

/// Runs a trial of each untested advice among the lab's jobs (one per job name and change:
/// repeats of a job share it) and has the lab judge each job again with its trial. Stops,
/// keeping what was tried, when the lab is interrupted.
pub fn test_advice(lab: &mut Lab<'_>, observer: &mut dyn Observer) -> Result<(), RunError> {
    let mut tried: Vec<(String, Trial)> = Vec::new();
    for index in 0..lab.jobs().len() {
        if lab.interrupted() {
            break;
        }
        let Some((name, change, job)) = advised(&lab.jobs()[index]) else { continue };
        let known = tried.iter().find(|(n, t)| *n == name && t.change == change).map(|(_, t)| t.clone());
        let trial = match (known, not_to_try(&job)) {
            (Some(trial), _) => trial,
            (None, Some(why)) => failed(change, why.into()),
            (None, None) => {
                observer.note(&format!(
                    "testing the verdict's advice on job '{name}': {} for 1 s",
                    change.flags()
                ));
                let polling = match change {
                    Change::CpusPolling => Some(CpusPolling::hold()),
                    _ => None,
                };
                let trial = match polling {
                    Some(Err(_)) => failed(change, "its trial needs root to keep the cores polling".into()),
                    _ => match lab.try_out(&trial_job(&job, change), observer) {
                        Ok(result) => measured(change, &result),
                        Err(e) if e.is_interruption() => return Err(e),
                        Err(e) => failed(change, format!("its trial could not start: {e}")),
                    },
                };
                drop(polling);
                tried.push((name, trial.clone()));
                trial
            }
        };
        lab.amend(index, |result| result.trial = Some(trial));
    }
    Ok(())
}

/// The job's name, the change its verdict advises untested, and the job as run.
fn advised(result: &JobResult) -> Option<(String, Change, JobSpec)> {
    let advice = result.verdict.advice.as_ref().filter(|a| a.outcome == Outcome::Untested)?;
    if result.trial.is_some() || result.spec.groups.is_empty() {
        return None;
    }
    Some((result.name.clone(), advice.change, result.spec.clone()))
}

/// Why a trial of `job` would mislead or harm: a verified job's record of what it wrote would
/// no longer match the target, and a rate-limited job's IOPS are the rate's, whatever the setting.
fn not_to_try(job: &JobSpec) -> Option<&'static str> {
    if job.groups.iter().any(|g| g.verify.verify) {
        Some("no trial: its writes would leave --verify's record of the target behind")
    } else if job.groups.iter().any(|g| g.rate.is_some()) {
        Some("no trial: under --rate-iops the rate, not the setting, sets the IOPS")
    } else {
        None
    }
}

/// What a trial that ran measured; one that was stopped early, completed nothing or met errors
/// says nothing of the advice.
fn measured(change: Change, result: &JobResult) -> Trial {
    let failed = if result.total.ios == 0 {
        Some("its trial completed no I/O".to_string())
    } else if result.errors.count > 0 {
        Some(format!("its trial met {} I/O errors", result.errors.count))
    } else if result.stop_reason == StopReason::Interrupted {
        Some("its trial was interrupted".to_string())
    } else if result.stop_reason != StopReason::Runtime {
        Some("its trial ended before its second was up".to_string())
    } else {
        None
    };
    Trial {
        change,
        measured_s: result.measured_s,
        iops: result.total.iops,
        mean_latency_ns: result.total.latency.as_ref().map_or(0.0, |l| l.mean_ns),
        failed,
    }
}

fn failed(change: Change, why: String) -> Trial {
    Trial { change, measured_s: 0.0, iops: 0.0, mean_latency_ns: 0.0, failed: Some(why) }
}
