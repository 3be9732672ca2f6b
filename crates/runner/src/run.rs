//! Running a whole plan: check what can fail before any I/O, then the jobs in order.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use iolab_engine::probe;
use iolab_spec::{EngineKind, RunPlan};
use iolab_stats::result::{HostInfo, RunReport, StopReason, SCHEMA};

use crate::error::RunError;
use crate::job::run_job;
use crate::observer::Observer;
use crate::prepare;

/// What a run produced: the report of every job that ran, and the error that kept a later job
/// from starting, if one did (the jobs before it keep their results).
pub struct RunOutcome {
    pub report: RunReport,
    pub error: Option<RunError>,
}

/// Runs every job of `plan`; stops after the current job when `interrupt` is set. Fails
/// outright only when nothing could run.
pub fn run_plan(
    plan: &RunPlan,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    if plan.jobs.iter().flat_map(|j| &j.groups).any(|g| g.engine == EngineKind::Uring) {
        probe::uring_available()?;
    }
    let started_at_unix_s =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    prepare::check_buffer_memory(plan)?;
    let scratch = prepare::scratch(plan, interrupt, observer)?;
    let scratch_path = scratch.as_ref().map(|s| s.path.as_path());
    // Open and check every job's targets before the first I/O, so a bad third job fails now.
    let targets = plan
        .jobs
        .iter()
        .map(|job| prepare::targets(job, scratch_path, interrupt, observer))
        .collect::<Result<Vec<_>, _>>()?;

    let mut jobs = Vec::new();
    let mut error = None;
    for (job, targets) in plan.jobs.iter().zip(&targets) {
        if interrupt.load(Relaxed) {
            break;
        }
        let result = match run_job(job, targets, interrupt, observer) {
            Ok(result) => result,
            Err(e) if jobs.is_empty() => return Err(e),
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        let stop = result.stop_reason;
        jobs.push(result);
        if matches!(stop, StopReason::IoError | StopReason::StuckIo | StopReason::EngineError) {
            break;
        }
    }
    let report = RunReport {
        schema: SCHEMA,
        iolab_version: env!("CARGO_PKG_VERSION"),
        host: host_info(),
        started_at_unix_s,
        interrupted: interrupt.load(Relaxed),
        jobs,
    };
    Ok(RunOutcome { report, error })
}

fn host_info() -> HostInfo {
    let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default();
    HostInfo {
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}
