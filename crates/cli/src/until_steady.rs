//! Rounds of one job in a lab until the steady-state detector decides (steady, or given up).

use iolab_analysis::rounds::SteadyRounds;
use iolab_runner::{Lab, Observer, PreparedTarget, RunError};
use iolab_spec::JobSpec;

/// Runs `job` on `targets` round after round, each named "<job> round N"; returns the
/// rounds' judgement. Stops early when interrupted or when a round ends the run (I/O errors).
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
        let ends_run = result.stop_reason.ends_the_run();
        if rounds.add(result) || ends_run || lab.interrupted() {
            break;
        }
    }
    Ok(rounds)
}
