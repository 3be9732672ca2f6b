//! `iolab run`: resolve the plan, run it, write the results, and choose the exit code.

use std::process::ExitCode;

use iolab_report::{render_json, render_text};
use iolab_runner::OnFailedStart;
use iolab_spec::{jobfile, resolve};

use crate::args::RunArgs;
use crate::exit;
use crate::session;

pub fn run(args: RunArgs) -> ExitCode {
    let file = match args.job_file.as_deref().map(jobfile::load).transpose() {
        Ok(file) => file,
        Err(e) => return exit::fail(exit::USAGE, &e.to_string()),
    };
    let plan = match resolve(file.as_ref(), &args.options) {
        Ok(plan) => plan,
        Err(e) => return exit::fail(exit::USAGE, &e.to_string()),
    };
    let outcome = match session::execute(&plan, OnFailedStart::Stop) {
        Ok(outcome) => outcome,
        Err(code) => return code,
    };
    let report = outcome.report;
    let rendered = if plan.output.json { render_json(&report) } else { render_text(&report) };
    if let Err(code) = session::write_output(&plan.output, &rendered) {
        return code;
    }
    session::warn_about_problems(&report);
    if let Some((_, e)) = outcome.failed.first() {
        return exit::fail(session::error_code(e), &format!("a later job could not start: {e}"));
    }
    ExitCode::from(session::exit_code(&report))
}
