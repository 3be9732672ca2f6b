//! `iolab scale`: each target alone, then all together (iolab_spec::scale), then the
//! efficiency and what stopped it (iolab_analysis::scale).

use std::process::ExitCode;

use iolab_analysis::scale::summarize;
use iolab_report::{scale_json, scale_text};
use iolab_runner::OnFailedStart;
use iolab_spec::{scale, RunPlan};

use crate::args::ScaleArgs;
use crate::{exit, session, study};

pub fn run(args: ScaleArgs) -> ExitCode {
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
    let outcome = match session::execute(&plan, OnFailedStart::Stop) {
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
            if plan.output.json {
                scale_json(&summary, report)
            } else {
                scale_text(&summary, report)
            }
        }
        // Interrupted before the last step: the steps that ran, without a verdict.
        _ if plan.output.json => iolab_report::render_json(report),
        _ => iolab_report::render_text(report),
    };
    session::deliver(&plan.output, &rendered, report)
}
