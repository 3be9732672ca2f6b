//! Running a whole plan: check what can fail before any I/O, then the jobs in order.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use iolab_engine::probe;
use iolab_spec::{EngineKind, RunPlan};
use iolab_stats::result::{HostInfo, RunReport, StopReason, SCHEMA};

use crate::error::RunError;
use crate::job::run_job;
use crate::observer::Observer;
use crate::prepare;

/// What a run produced: the report of every job that ran, and the jobs that could not start
/// (by index in the plan), with why (the jobs before them keep their results).
pub struct RunOutcome {
    pub report: RunReport,
    pub failed: Vec<(usize, RunError)>,
}

/// What to do when a job cannot start (its engine or target refuses), after an earlier job ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailedStart {
    /// Keep the results so far and stop (a job file: later jobs may depend on it).
    Stop,
    /// Record it and go on with the next job (a ladder: each rung stands alone).
    Skip,
}

/// Runs every job of `plan`; stops after the current job when `interrupt` is set. Fails
/// outright only when nothing could run.
pub fn run_plan(
    plan: &RunPlan,
    on_failed_start: OnFailedStart,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    if on_failed_start == OnFailedStart::Stop
        && plan.jobs.iter().flat_map(|j| &j.groups).any(|g| g.engine == EngineKind::Uring)
    {
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
    let mut failed = Vec::new();
    for (index, (job, targets)) in plan.jobs.iter().zip(&targets).enumerate() {
        if interrupt.load(Relaxed) {
            break;
        }
        let result = match run_job(job, targets, interrupt, observer) {
            Ok(result) => result,
            Err(e) if e.is_interruption() => return Err(e),
            Err(e) if on_failed_start == OnFailedStart::Skip => {
                failed.push((index, e));
                continue;
            }
            Err(e) if jobs.is_empty() => return Err(e),
            Err(e) => {
                failed.push((index, e));
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
        peak_rss_bytes: iolab_stats::cpu::peak_rss_bytes().unwrap_or(0),
        jobs,
    };
    Ok(RunOutcome { report, failed })
}

fn host_info() -> HostInfo {
    let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default();
    HostInfo {
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}
