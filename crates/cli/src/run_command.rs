//! `iolab run`: resolve the plan, run it, write the results, and choose the exit code; with
//! `--each-alone`, each concurrent group of the job alone, then together (iolab_analysis::blend).

use std::process::ExitCode;

use iolab_analysis::blend::summarize;
use iolab_analysis::rated::Rated;
use iolab_report::{blend_json, blend_text, rated_text, render_json, render_text};
use iolab_runner::{run_jobs, OnFailedStart};
use iolab_spec::{resolve, RunPlan};
use iolab_stats::result::RunReport;
use iolab_studies::{plan, scale, trial};

use crate::args::{RunArgs, StoreArgs};
use crate::exit::say;
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
        if args.repeat > 1 || args.rated.is_some() {
            let other = if args.repeat > 1 { "--repeat" } else { "--rated" };
            return Err(exit::usage(format!("--each-alone does not combine with {other}")));
        }
        let plan = scale::each_alone(plan).map_err(exit::usage)?;
        return Ok(each_alone(&plan, store, place));
    }
    let rated = args.rated.as_deref().map(crate::rated_input::load_rated).transpose().map_err(exit::usage)?;
    let plan = plan::repeated(plan, args.repeat);
    let confirm = !args.no_confirm;
    Ok(Measurement::new("run", &plan).run(
        store,
        place,
        |lab, progress| {
            let failed = run_jobs(lab, &plan, OnFailedStart::Stop, 0, progress)?;
            if confirm {
                trial::test_advice(lab, progress)?;
            }
            Ok(failed)
        },
        |failed, report| {
            let mut rendered = if plan.output.json { render_json(report) } else { render_text(report) };
            if let Some(rated) = &rated {
                datasheet_check(rated, report, plan.output.json, &mut rendered);
            }
            // The jobs are the run's points; no report of its own is stored.
            let delivery = Delivery { rendered, json: None, failure: None };
            Ok(match failed.first() {
                Some((_, e)) => delivery.failed(e, Some(format!("a later job could not start: {e}"))),
                None => delivery,
            })
        },
    ))
}

/// `--rated`: each job's figures against the datasheet, after the text report, or on stderr
/// beside JSON (whose schema is the run's alone).
fn datasheet_check(rated: &Rated, report: &RunReport, json: bool, rendered: &mut String) {
    for job in &report.jobs {
        let of = match (report.jobs.len(), rated.model.as_deref()) {
            (1, model) => model.map(str::to_string),
            (_, Some(model)) => Some(format!("{model}, job '{}'", job.name)),
            (_, None) => Some(format!("job '{}'", job.name)),
        };
        let text = rated_text(of.as_deref(), &rated.check(&job.read, &job.write, &job.total));
        if json {
            for line in text.lines().filter(|l| !l.is_empty()) {
                say!("iolab: {}", line.trim_start());
            }
        } else {
            rendered.push_str(&text);
        }
    }
}

/// Each concurrent group alone, then all together, and what each lost to the others.
fn each_alone(plan: &RunPlan, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    let groups: Vec<&str> =
        plan.jobs.last().map_or(Vec::new(), |j| j.groups.iter().map(|g| g.name.as_str()).collect());
    Measurement::new("blend", plan).titled(format!("blend of {}", groups.join(", "))).run(
        store,
        place,
        |lab, progress| run_jobs(lab, plan, OnFailedStart::Stop, 0, progress),
        |failed, report| {
            alone_then_together(plan, &failed, report, "interference run", |alone, together| {
                let summary = summarize(alone, together);
                Delivery::study(&plan.output, blend_json(&summary, report), || blend_text(&summary, report))
            })
        },
    )
}
