//! `iolab scale`: each target alone, then all together (iolab_spec::scale), then the
//! efficiency and what stopped it (iolab_analysis::scale).

use std::process::ExitCode;

use iolab_analysis::scale::summarize;
use iolab_report::{scale_json, scale_text};
use iolab_runner::OnFailedStart;
use iolab_spec::{scale, RunPlan};

use crate::args::ScaleArgs;
use crate::place::Place;
use crate::recording::{Recording, StoreArgs};
use crate::{exit, session, study};

pub fn run(args: ScaleArgs, store: &StoreArgs) -> ExitCode {
    let base = match study::base_plan(&args.options, args.targets) {
        Ok(plan) => plan,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let jobs = match base.jobs.first().map(scale::plan) {
        Some(Ok(jobs)) => jobs,
        Some(Err(e)) => return exit::fail(exit::USAGE, &e.to_string()),
        None => return exit::fail(exit::USAGE, "nothing to run"),
    };
    let plan = RunPlan { jobs, output: base.output.clone() };
    let mut recording = match Recording::start(store, "scale", &plan) {
        Ok(recording) => recording,
        Err(code) => return code,
    };
    let outcome = match session::execute(&plan, OnFailedStart::Stop, &mut recording, &mut Place::here()) {
        Ok(outcome) => outcome,
        Err(code) => return code,
    };
    let report = &outcome.report;
    if let Some((_, e)) = outcome.failed.first() {
        return exit::fail(
            session::error_code(e),
            &format!("a step of the scaling run could not start: {e}"),
        );
    }
    let complete = report.jobs.len() == plan.jobs.len();
    let rendered = match report.jobs.split_last() {
        Some((together, singles)) if complete => {
            let singles: Vec<_> = singles.iter().collect();
            let summary = summarize(&singles, together);
            let json = scale_json(&summary, report);
            let rendered = if plan.output.json { json.clone() } else { scale_text(&summary, report) };
            (rendered, Some(json))
        }
        // Interrupted before the last step: the steps that ran, without a verdict.
        _ if plan.output.json => (iolab_report::render_json(report), None),
        _ => (iolab_report::render_text(report), None),
    };
    let (rendered, json) = rendered;
    session::deliver(&plan.output, &rendered, report, recording, json.as_deref())
}
