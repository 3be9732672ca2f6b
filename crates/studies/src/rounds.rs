//! Rounds of a job in a lab until the steady-state detector decides (steady, or given up):
//! `iolab steady`, a sweep `--until-steady` and the suites' steady-state steps.

use iolab_analysis::rounds::SteadyRounds;
use iolab_runner::{Lab, Observer, PreparedTarget, RunError};
use iolab_spec::{JobSpec, Nanos, Options, RunPlan};
use iolab_stats::result::StopReason;

/// Runs `job` on `targets` round after round, each named "<job> round N"; returns the
/// rounds' judgement. Stops early when interrupted (the cut round is not judged) or when a round
/// ends the run (I/O errors).
pub fn run_rounds(
    lab: &mut Lab<'_>,
    job: &JobSpec,
    targets: &[Vec<PreparedTarget>],
    mut rounds: SteadyRounds,
    observer: &mut dyn Observer,
) -> Result<SteadyRounds, RunError> {
    for round in 1..=rounds.rule.max_rounds {
        let named = JobSpec { name: format!("{} round {round}", job.name), ..job.clone() };
        let result = lab.run_prepared(&named, targets, observer)?;
        // A round cut short by Ctrl-C is shorter than the others: it is kept in the run report
        // but not judged.
        if result.stop_reason == StopReason::Interrupted {
            break;
        }
        let ends_run = result.stop_reason.ends_the_run();
        if rounds.add(result) || ends_run || lab.interrupted() {
            break;
        }
    }
    Ok(rounds)
}

/// Runs each job of `plan` in rounds until steady (or given up), each from `fresh`; returns
/// the rounds of each job that ran, in order (the lab holds every round). Stops at an
/// interruption or at a round that ends the run.
pub fn each_until_steady(
    lab: &mut Lab<'_>,
    plan: &RunPlan,
    fresh: &SteadyRounds,
    observer: &mut dyn Observer,
) -> Result<Vec<SteadyRounds>, RunError> {
    let mut steady = Vec::new();
    for job in &plan.jobs {
        if lab.interrupted() {
            break;
        }
        let targets = lab.prepare(job, observer)?;
        let rounds = run_rounds(lab, job, &targets, fresh.clone(), observer)?;
        let ends_run = lab.jobs().last().is_some_and(|j| j.stop_reason.ends_the_run());
        if !rounds.values.is_empty() {
            steady.push(rounds);
        }
        if ends_run {
            break;
        }
    }
    Ok(steady)
}

/// `iolab steady`'s timing: one-minute rounds unless --runtime says otherwise (the SNIA PTS's),
/// no ramp.
pub fn round_defaults() -> Options {
    Options { runtime: Some(ROUND), ramp: Some(Nanos(0)), ..Options::default() }
}

/// One round of `iolab steady`.
const ROUND: Nanos = Nanos(60_000_000_000);
