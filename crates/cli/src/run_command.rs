//! `iolab run`: resolve the plan, install the stop signals, run, write the results, and choose
//! the exit code.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iolab_report::{render_json, render_text};
use iolab_spec::{jobfile, resolve};
use iolab_stats::result::{RunReport, StopReason};

use crate::args::RunArgs;
use crate::exit;
use crate::progress::ProgressLine;

pub fn run(args: RunArgs) -> ExitCode {
    let file = match args.job_file.as_deref().map(jobfile::load).transpose() {
        Ok(file) => file,
        Err(e) => return exit::fail(exit::USAGE, &e.to_string()),
    };
    let plan = match resolve(file.as_ref(), &args.options) {
        Ok(plan) => plan,
        Err(e) => return exit::fail(exit::USAGE, &e.to_string()),
    };

    let interrupt = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal ends the process at once, for a run that does not stop by itself.
        let installed = signal_hook::flag::register_conditional_shutdown(
            signal,
            exit::INTERRUPTED.into(),
            interrupt.clone(),
        )
        .and_then(|_| signal_hook::flag::register(signal, interrupt.clone()));
        if let Err(e) = installed {
            return exit::fail(exit::INTERNAL, &format!("cannot install the signal handler: {e}"));
        }
    }

    let mut progress = ProgressLine::new(plan.output.quiet);
    let (report, late_error) = match iolab_runner::run_plan(&plan, &interrupt, &mut progress) {
        Ok(outcome) => (outcome.report, outcome.error),
        Err(e) => return exit::fail(error_code(&e), &e.to_string()),
    };

    let rendered = if plan.output.json { render_json(&report) } else { render_text(&report) };
    let written = match &plan.output.path {
        Some(path) => std::fs::write(path, rendered)
            .map_err(|e| format!("cannot write the results to {}: {e}", path.display())),
        None => write_stdout(&rendered),
    };
    if let Err(message) = written {
        return exit::fail(exit::INTERNAL, &message);
    }
    warn_about_problems(&report);
    if let Some(e) = late_error {
        return exit::fail(error_code(&e), &format!("a later job could not start: {e}"));
    }
    ExitCode::from(exit_code(&report))
}

fn error_code(error: &iolab_runner::RunError) -> u8 {
    if error.is_interruption() {
        exit::INTERRUPTED
    } else if error.is_user_error() {
        exit::USAGE
    } else {
        exit::INTERNAL
    }
}

/// Broken pipe (`iolab run | head`) is not an error.
fn write_stdout(text: &str) -> Result<(), String> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("cannot write the results: {e}")),
        _ => Ok(()),
    }
}

/// Problems are also said on stderr, so they are seen even when stdout is JSON or a file.
fn warn_about_problems(report: &RunReport) {
    for job in &report.jobs {
        if job.errors.count > 0 {
            let first = job.errors.first.first().map_or(String::new(), |e| {
                format!(
                    "; first: {} {} at offset {} ({} bytes): {}",
                    e.target, e.op, e.offset, e.len, e.message
                )
            });
            eprintln!("iolab: warning: job '{}': {} I/O errors{first}", job.name, job.errors.count);
        }
        if let Some(stuck) = &job.errors.stuck {
            eprintln!(
                "iolab: error: job '{}': a request to {} has not completed after {} ms; the device or kernel is stuck",
                job.name, stuck.target, stuck.outstanding_ms
            );
        }
        if let Some(engine) = &job.errors.engine {
            eprintln!("iolab: error: job '{}': {engine}", job.name);
        }
    }
    if report.interrupted {
        eprintln!("iolab: interrupted; the results gathered so far were written");
    }
}

fn exit_code(report: &RunReport) -> u8 {
    if report.interrupted {
        return exit::INTERRUPTED;
    }
    let reasons: Vec<StopReason> = report.jobs.iter().map(|j| j.stop_reason).collect();
    if reasons.contains(&StopReason::StuckIo) {
        exit::STUCK
    } else if reasons.contains(&StopReason::EngineError) {
        exit::INTERNAL
    } else if report.jobs.iter().any(|j| j.errors.count > 0) {
        exit::IO_ERRORS
    } else {
        exit::OK
    }
}
