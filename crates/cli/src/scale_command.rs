//! `iolab scale`: each target alone, then all together (iolab_studies::scale), then the
//! efficiency and what stopped it (iolab_analysis::scale).

use std::process::ExitCode;

use iolab_analysis::scale::summarize;
use iolab_report::{render_json, render_text, scale_json, scale_text};
use iolab_runner::{run_jobs, OnFailedStart, RunError};
use iolab_spec::RunPlan;
use iolab_stats::result::{JobResult, RunReport};
use iolab_studies::scale;

use crate::args::{ScaleArgs, StoreArgs};
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::{exit, job_source};

pub fn run(store: &StoreArgs, args: ScaleArgs) -> ExitCode {
    let input = job_source::scale_input(args.targets, &args.workload.options);
    let plan = match input.and_then(|input| scale::plan_of(&input).map_err(|e| e.to_string())) {
        Ok(plan) => plan,
        Err(message) => return exit::usage(message),
    };
    Measurement::new("scale", &plan).run(
        store,
        &mut Place::here(),
        |lab, progress| run_jobs(lab, &plan, OnFailedStart::Stop, 0, progress),
        |failed, report| {
            alone_then_together(&plan, &failed, report, "scaling run", |singles, together| {
                let summary = summarize(singles, together);
                Delivery::study(&plan.output, scale_json(&summary, report), || scale_text(&summary, report))
            })
        },
    )
}

/// The report of a run of singles then one together (`scale`, `run --each-alone`): `judge`
/// makes the study's report from them; a run cut short before the last step shows the
/// steps that ran, without a verdict; a step that could not start fails the command.
pub fn alone_then_together(
    plan: &RunPlan,
    failed: &[(usize, RunError)],
    report: &RunReport,
    what: &str,
    judge: impl FnOnce(&[&JobResult], &JobResult) -> Delivery,
) -> Result<Delivery, ExitCode> {
    if let Some((_, e)) = failed.first() {
        return Err(exit::fail(
            exit::run_error_code(e),
            &format!("a step of the {what} could not start: {e}"),
        ));
    }
    Ok(match report.jobs.split_last() {
        Some((together, singles)) if report.jobs.len() == plan.jobs.len() => {
            let singles: Vec<_> = singles.iter().collect();
            judge(&singles, together)
        }
        // Interrupted before the last step: the steps that ran, without a verdict.
        _ => {
            let rendered = if plan.output.json { render_json(report) } else { render_text(report) };
            Delivery { rendered, json: None, failure: None }
        }
    })
}
