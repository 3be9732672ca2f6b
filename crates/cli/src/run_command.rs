//! `iolab run`: resolve the plan, run it, write the results, and choose the exit code.

use std::process::ExitCode;

use iolab_report::{render_json, render_text};
use iolab_runner::OnFailedStart;
use iolab_spec::resolve;

use crate::args::RunArgs;
use crate::place::Place;
use crate::recording::StoreArgs;
use crate::{exit, study};
use crate::{job_source, session};

pub fn run(args: RunArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    let quiet = args.options.quiet == Some(true);
    let file = match args.job_file.as_deref().map(|path| job_source::load(path, quiet)).transpose() {
        Ok(file) => file,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let plan = match resolve(file.as_ref(), &args.options) {
        Ok(plan) => study::repeated(plan, args.repeat),
        Err(e) => return exit::fail(exit::USAGE, &e.to_string()),
    };
    let mut recording = match place.record(store, "run", &plan) {
        Ok(recording) => recording,
        Err(code) => return code,
    };
    let outcome = match session::execute(&plan, OnFailedStart::Stop, &mut recording, place) {
        Ok(outcome) => outcome,
        Err(code) => return code,
    };
    let report = outcome.report;
    let rendered = if plan.output.json { render_json(&report) } else { render_text(&report) };
    if !outcome.failed.is_empty() {
        recording.mark_failed();
    }
    // The jobs are the run's points; no report of its own is stored.
    let code = session::deliver(&plan.output, &rendered, &report, recording, None);
    if let Some((_, e)) = outcome.failed.first() {
        return exit::fail(session::error_code(e), &format!("a later job could not start: {e}"));
    }
    code
}
