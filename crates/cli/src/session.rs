//! What every measuring command shares: stop signals, running a plan with a progress line,
//! writing the output where the user asked, warnings on stderr, and the exit code.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iolab_runner::{run_plan, Lab, OnFailedStart, PreparedTarget, RunError, RunOutcome};
use iolab_spec::{JobSpec, OutputSpec, RunPlan};
use iolab_stats::fleet::HostStatus;
use iolab_stats::result::{JobResult, RunReport, StopReason};

use crate::exit;
use crate::exit::say;
use crate::output_file::{self, Protected};
use crate::place::Place;
use crate::progress::ProgressLine;
use crate::recording::{Kept, Recording, StoreArgs};

/// Installs SIGINT/SIGTERM: the first asks the run to stop and keep its results, a second ends
/// the process at once (removing the scratch file first), for a run that does not stop by itself.
pub fn install_signals() -> Result<Arc<AtomicBool>, ExitCode> {
    iolab_engine::exit_cleanup::install_stop_signals()
        .map_err(|e| exit::fail(exit::INTERNAL, &format!("cannot install the signal handler: {e}")))
}

/// Runs `plan` with signals and a progress line; an error that kept anything from running
/// becomes the exit code.
/// Each job's result is kept in `recording` as it ends.
pub fn execute(
    plan: &RunPlan,
    on_failed_start: OnFailedStart,
    recording: &mut Recording,
    place: &mut Place<'_>,
) -> Result<RunOutcome, ExitCode> {
    let interrupt = install_signals()?;
    let mut progress = ProgressLine::new(plan.output.quiet);
    let ran = place.open_lab(plan, on_failed_start, &interrupt, &mut progress).and_then(|mut lab| {
        lab.keep_results_in(recording);
        run_plan(lab, plan, on_failed_start, &mut progress)
    });
    ran.map_err(|e| exit::fail(error_code(&e), &e.to_string()))
}

/// Runs a study of one workload in a lab: installs the signals, opens the lab on `plan`,
/// prepares `job`'s targets and hands them to `study`, which runs its jobs; returns what the
/// study found and the lab's report, or the exit code of what kept it from running.
pub fn in_lab<T>(
    plan: &RunPlan,
    job: &JobSpec,
    mut progress: ProgressLine,
    recording: &mut Recording,
    place: &mut Place<'_>,
    study: impl FnOnce(&mut Lab<'_>, &[Vec<PreparedTarget>], &mut ProgressLine) -> Result<T, RunError>,
) -> Result<(T, RunReport), ExitCode> {
    let interrupt = install_signals()?;
    let ran = place.open_lab(plan, OnFailedStart::Stop, &interrupt, &mut progress).and_then(|mut lab| {
        lab.keep_results_in(recording);
        let targets = lab.prepare(job, &mut progress)?;
        let found = study(&mut lab, &targets, &mut progress)?;
        Ok((found, lab.into_report()))
    });
    ran.map_err(|e| exit::fail(error_code(&e), &e.to_string()))
}

pub fn error_code(error: &RunError) -> u8 {
    if error.is_interruption() {
        exit::INTERRUPTED
    } else if error.is_user_error() {
        exit::USAGE
    } else {
        exit::INTERNAL
    }
}

/// Refuses, before anything runs, an output file that would destroy something: a target of
/// `jobs`, the results database `store` names, a device or a directory (`output_file`).
pub fn check_output(output: Option<&Path>, jobs: &[JobSpec], store: &StoreArgs) -> Result<(), ExitCode> {
    let Some(path) = output else { return Ok(()) };
    let targets = jobs.iter().flat_map(|job| &job.groups).flat_map(|group| &group.target.paths);
    let mut protected = targets.fold(Protected::default(), |p, target| p.target(target));
    if let Ok(db) = store.path() {
        protected = protected.database(&db);
    }
    output_file::check(path, &protected).map_err(|message| exit::fail(exit::USAGE, &message))
}

/// Writes `text` to the output file (whole, or not at all), or stdout. Broken pipe
/// (`iolab run | head`) is not an error.
pub fn write_output(output: &OutputSpec, text: &str) -> Result<(), ExitCode> {
    use std::io::Write;
    let written = match &output.path {
        Some(path) => output_file::write(path, text.as_bytes())
            .map_err(|e| format!("cannot write the results to {}: {e}", path.display())),
        None => match std::io::stdout().lock().write_all(text.as_bytes()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(format!("cannot write the results: {e}"))
            }
            _ => Ok(()),
        },
    };
    written.map_err(|message| exit::fail(exit::INTERNAL, &message))
}

/// Writes a finished command's `rendered` report where the user asked, records its end (with
/// its JSON report, `study_json`) in the store, says its problems on stderr, and gives the exit
/// code the run earned.
pub fn deliver(
    output: &OutputSpec,
    rendered: &str,
    report: &RunReport,
    recording: Recording,
    study_json: Option<&str>,
) -> ExitCode {
    let written = write_output(output, rendered);
    let kept = recording.finish(report, study_json, output.quiet);
    if let Err(code) = written {
        return code;
    }
    warn_about_problems(report);
    match exit_code(report) {
        exit::OK if kept == Kept::Partly => ExitCode::from(exit::NOT_KEPT),
        code => ExitCode::from(code),
    }
}

/// Problems are also said on stderr, so they are seen even when stdout is JSON or a file.
pub fn warn_about_problems(report: &RunReport) {
    for job in &report.jobs {
        if job.errors.count > 0 {
            let first = job.errors.first.first().map_or(String::new(), |e| {
                format!(
                    "; first: {} {} at offset {} ({} bytes): {}",
                    e.target, e.op, e.offset, e.len, e.message
                )
            });
            say!("iolab: warning: job '{}': {} I/O errors{first}", job.name, job.errors.count);
        }
        if let Some(stuck) = &job.errors.stuck {
            say!(
                "iolab: error: job '{}': a request to {} has not completed after {} ms; the device or kernel is stuck",
                job.name, stuck.target, stuck.outstanding_ms
            );
        }
        for host in job.fleet.iter().flat_map(|f| &f.hosts).filter(|h| h.status == HostStatus::Failed) {
            say!(
                "iolab: warning: job '{}': host {} failed: {}; its I/Os are not in the merged result",
                job.name,
                host.host,
                host.failure.as_deref().unwrap_or("no reason given")
            );
        }
        if let Some(engine) = &job.errors.engine {
            say!("iolab: error: job '{}': {engine}", job.name);
        }
        for group in &job.groups {
            if let Some(rate) = group.rate.as_ref().filter(|rate| !rate.sustained) {
                say!(
                    "iolab: warning: job '{}', group '{}': {}",
                    job.name,
                    group.name,
                    iolab_report::rate_summary(rate)
                );
            }
        }
    }
    if report.interrupted {
        say!("iolab: interrupted; the results gathered so far were written");
    }
}

/// A fleet job whose result lacks a host's I/Os: as much a partial result as one with I/O errors.
fn fleet_lost_a_host(job: &JobResult) -> bool {
    job.fleet.iter().flat_map(|f| &f.hosts).any(|h| h.status == HostStatus::Failed)
}

/// The exit code a finished run earns (README: exit codes).
pub fn exit_code(report: &RunReport) -> u8 {
    if report.interrupted {
        return exit::INTERRUPTED;
    }
    let reasons: Vec<StopReason> = report.jobs.iter().map(|j| j.stop_reason).collect();
    if reasons.contains(&StopReason::StuckIo) {
        exit::STUCK
    } else if reasons.contains(&StopReason::EngineError) {
        exit::INTERNAL
    } else if report.jobs.iter().any(|j| j.errors.count > 0 || fleet_lost_a_host(j)) {
        exit::IO_ERRORS
    } else {
        exit::OK
    }
}
