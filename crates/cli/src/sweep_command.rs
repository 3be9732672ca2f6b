//! `iolab sweep`: every combination of the listed --qd, --workers, --bs, --read-pct and
//! --random-pct values (iolab_spec::sweep), run one after another in one process, then the
//! table per load curve and the sweet spot (iolab_analysis::sweep).

use std::process::ExitCode;

use iolab_analysis::rounds::SteadyRounds;
use iolab_analysis::sweep::{summarize, with_steady_rounds, PointOutcome};
use iolab_report::{sweep_json, sweep_text};
use iolab_runner::{Lab, OnFailedStart, RunError};
use iolab_spec::sweep::expand;
use iolab_spec::RunPlan;
use iolab_stats::result::{JobResult, RunReport, StopReason};

use crate::args::SweepArgs;
use crate::progress::ProgressLine;
use crate::until_steady::run_rounds;
use crate::{exit, session, study};

pub fn run(args: SweepArgs) -> ExitCode {
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
    let (report, steady) = if args.until_steady {
        let rule = match args.steady.rule() {
            Ok(rule) => rule,
            Err(message) => return exit::fail(exit::USAGE, &message),
        };
        match until_steady(&plan, SteadyRounds::new(args.steady.track, rule)) {
            Ok(ran) => ran,
            Err(code) => return code,
        }
    } else {
        let outcome = match session::execute(&plan, OnFailedStart::Stop) {
            Ok(outcome) => outcome,
            Err(code) => return code,
        };
        if let Some((index, e)) = outcome.failed.first() {
            eprintln!(
                "iolab: sweep point {} could not start: {e}; the points before it are reported",
                points[*index].name
            );
        }
        (outcome.report, Vec::new())
    };
    // With rounds, a point's result is its last round.
    let results: Vec<&JobResult> = if steady.is_empty() {
        report.jobs.iter().collect()
    } else {
        let mut last = 0;
        steady
            .iter()
            .map(|rounds| {
                last += rounds.values.len();
                &report.jobs[last - 1]
            })
            .collect()
    };
    // A point cut short by Ctrl-C measured less than the others and is no point of the curve;
    // its partial result stays in the run report.
    let outcomes: Vec<PointOutcome<'_>> = points
        .iter()
        .zip(results)
        .filter(|(_, result)| result.stop_reason != StopReason::Interrupted)
        .map(|(point, result)| PointOutcome {
            name: &point.name,
            curve: point.curve,
            curve_name: &point.curve_name,
            result,
        })
        .collect();
    let report = &report;
    let summary = summarize(load, &outcomes);
    let summary = if steady.is_empty() { summary } else { with_steady_rounds(summary, steady) };
    let rendered = if plan.output.json { sweep_json(&summary, report) } else { sweep_text(&summary, report) };
    session::deliver(&plan.output, &rendered, report)
}

/// Runs each point of `plan` in rounds until steady (or given up); the report holds every
/// round, and the rounds of each point that ran, in order.
fn until_steady(plan: &RunPlan, fresh: SteadyRounds) -> Result<(RunReport, Vec<SteadyRounds>), ExitCode> {
    let interrupt = session::install_signals()?;
    let mut progress = ProgressLine::new(plan.output.quiet);
    let fail = |e: RunError| exit::fail(session::error_code(&e), &e.to_string());
    let mut lab = Lab::open(plan, OnFailedStart::Stop, &interrupt, &mut progress).map_err(fail)?;
    let mut steady = Vec::new();
    for job in &plan.jobs {
        if lab.interrupted() {
            break;
        }
        let targets = lab.prepare(job, &mut progress).map_err(fail)?;
        let rounds = run_rounds(&mut lab, job, &targets, fresh.clone(), &mut progress).map_err(fail)?;
        let ends_run = lab.jobs().last().is_some_and(|j| j.stop_reason.ends_the_run());
        if !rounds.values.is_empty() {
            steady.push(rounds);
        }
        if ends_run {
            break;
        }
    }
    Ok((lab.into_report(), steady))
}
