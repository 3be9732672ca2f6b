//! Rounds of one job in a lab until the steady-state detector decides (steady, or given up).

use iolab_analysis::rounds::SteadyRounds;
use iolab_runner::{Lab, Observer, PreparedTarget, RunError};
use iolab_spec::JobSpec;
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
