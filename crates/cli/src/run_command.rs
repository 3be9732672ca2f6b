//! `iolab run`: resolve the plan, run it, write the results, and choose the exit code; with
//! `--each-alone`, each concurrent group of the job alone, then together (iolab_analysis::blend).

use std::process::ExitCode;

use iolab_analysis::blend::summarize;
use iolab_report::{blend_json, blend_text, render_json, render_text};
use iolab_runner::{run_jobs, OnFailedStart};
use iolab_spec::{resolve, RunPlan};
use iolab_studies::{plan, scale};

use crate::args::{RunArgs, StoreArgs};
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::scale_command::alone_then_together;
use crate::{exit, job_source};

pub fn run(args: RunArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    exit::of(measure(args, store, place))
}

fn measure(args: RunArgs, store: &StoreArgs, place: &mut Place<'_>) -> Result<ExitCode, ExitCode> {
    let quiet = args.workload.options.quiet == Some(true);
    let file = args
        .job_file
        .as_deref()
        .map(|path| job_source::load(path, quiet))
        .transpose()
        .map_err(exit::usage)?;
    let plan = resolve(file.as_ref(), &args.workload.options).map_err(exit::usage)?;
    if args.each_alone {
        if args.repeat > 1 {
            return Err(exit::usage("--each-alone does not combine with --repeat"));
        }
        let plan = scale::each_alone(plan).map_err(exit::usage)?;
        return Ok(each_alone(&plan, store, place));
    }
    let plan = plan::repeated(plan, args.repeat);
    Ok(Measurement::new("run", &plan).run(
        store,
        place,
        |lab, progress| run_jobs(lab, &plan, OnFailedStart::Stop, progress),
        |failed, report| {
            let rendered = if plan.output.json { render_json(report) } else { render_text(report) };
            // The jobs are the run's points; no report of its own is stored.
            let delivery = Delivery { rendered, json: None, failure: None };
            Ok(match failed.first() {
                Some((_, e)) => delivery.failed(e, Some(format!("a later job could not start: {e}"))),
                None => delivery,
            })
        },
    ))
}

/// Each concurrent group alone, then all together, and what each lost to the others.
fn each_alone(plan: &RunPlan, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    let groups: Vec<&str> =
        plan.jobs.last().map_or(Vec::new(), |j| j.groups.iter().map(|g| g.name.as_str()).collect());
    Measurement::new("blend", plan).titled(format!("blend of {}", groups.join(", "))).run(
        store,
        place,
        |lab, progress| run_jobs(lab, plan, OnFailedStart::Stop, progress),
        |failed, report| {
            alone_then_together(plan, &failed, report, "interference run", |alone, together| {
                let summary = summarize(alone, together);
                Delivery::study(&plan.output, blend_json(&summary, report), || blend_text(&summary, report))
            })
        },
    )
}
