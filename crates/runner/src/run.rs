//! Running a whole plan: check what can fail before any I/O, then the jobs in order.

use iolab_spec::RunPlan;

use crate::error::RunError;
use crate::lab::{Lab, OnFailedStart};
use crate::observer::Observer;

/// Runs every job of `plan` in `lab` (here or on a fleet); stops after the current job when the
/// lab's interrupt is set. Fails outright only when nothing could run. Each job's result goes
/// to the lab's sink as it ends, and stays in the lab; returned are the jobs that could not
/// start (by index in the plan), with why (the jobs before them keep their results). A job
/// another load or a stolen CPU disturbed is measured again up to `retries` times
/// (`Lab::run_until_undisturbed`; 0 for a run, where the verdict names the disturbance).
pub fn run_jobs(
    lab: &mut Lab<'_>,
    plan: &RunPlan,
    on_failed_start: OnFailedStart,
    retries: u32,
    observer: &mut dyn Observer,
) -> Result<Vec<(usize, RunError)>, RunError> {
    // Open and check every job's targets before the first I/O, so a bad third job fails now.
    let targets = plan.jobs.iter().map(|job| lab.prepare(job, observer)).collect::<Result<Vec<_>, _>>()?;

    let mut failed = Vec::new();
    for (index, (job, targets)) in plan.jobs.iter().zip(&targets).enumerate() {
        if lab.interrupted() {
            break;
        }
        let ran = lab.run_until_undisturbed(job, targets, retries, observer).map(|result| result.stop_reason);
        let stop = match ran {
            Ok(stop) => stop,
            Err(e) if e.is_interruption() => return Err(e),
            Err(e) if on_failed_start == OnFailedStart::Skip => {
                failed.push((index, e));
                continue;
            }
            Err(e) if lab.jobs().is_empty() => return Err(e),
            Err(e) => {
                failed.push((index, e));
                break;
            }
        };
        if stop.ends_the_run() {
            break;
        }
    }
    Ok(failed)
}
