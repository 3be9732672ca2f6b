//! `iolab sweep`: every combination of the listed --qd, --workers, --bs, --read-pct and
//! --random-pct values (iolab_spec::sweep), run one after another in one process, then the
//! table per load curve and the sweet spot (iolab_analysis::sweep).

use std::process::ExitCode;

use iolab_analysis::sweep::{summarize, PointOutcome};
use iolab_report::{sweep_json, sweep_text};
use iolab_runner::OnFailedStart;
use iolab_spec::sweep::expand;
use iolab_spec::RunPlan;
use iolab_stats::result::StopReason;

use crate::args::SweepArgs;
use crate::{exit, session, study};

pub fn run(args: SweepArgs) -> ExitCode {
    if args.until_steady {
        // Accepted by the parser but not wired to the rounds loop yet: refuse rather than run
        // single measurements the user did not ask for.
        return exit::fail(
            exit::USAGE,
            "sweep --until-steady is not available yet; run `iolab steady` at the point of interest",
        );
    }
    let (load, points) = match expand(&args.options) {
        Ok(sweep) => sweep,
        Err(e) => return exit::fail(exit::USAGE, &e.to_string()),
    };
    let targets: Vec<_> = args.target.into_iter().collect();
    let mut jobs = Vec::with_capacity(points.len());
    let mut output = None;
    for point in &points {
        let plan = match study::base_plan(&point.flags, targets.clone()) {
            Ok(plan) => plan,
            Err(message) => {
                return exit::fail(exit::USAGE, &format!("sweep point {}: {message}", point.name))
            }
        };
        output.get_or_insert(plan.output);
        jobs.extend(plan.jobs.into_iter().map(|job| iolab_spec::JobSpec { name: point.name.clone(), ..job }));
    }
    let plan = RunPlan { jobs, output: output.unwrap_or_default() };
    let outcome = match session::execute(&plan, OnFailedStart::Stop) {
        Ok(outcome) => outcome,
        Err(code) => return code,
    };
    let report = &outcome.report;
    if let Some((index, e)) = outcome.failed.first() {
        eprintln!(
            "iolab: sweep point {} could not start: {e}; the points before it are reported",
            points[*index].name
        );
    }
    // A point cut short by Ctrl-C measured less than the others and is no point of the curve;
    // its partial result stays in the run report.
    let outcomes: Vec<PointOutcome<'_>> = points
        .iter()
        .zip(&report.jobs)
        .filter(|(_, result)| result.stop_reason != StopReason::Interrupted)
        .map(|(point, result)| PointOutcome {
            name: &point.name,
            curve: point.curve,
            curve_name: &point.curve_name,
            result,
        })
        .collect();
    let summary = summarize(load, &outcomes);
    let rendered = if plan.output.json { sweep_json(&summary, report) } else { sweep_text(&summary, report) };
    if let Err(code) = session::write_output(&plan.output, &rendered) {
        return code;
    }
    session::warn_about_problems(report);
    ExitCode::from(session::exit_code(report))
}
