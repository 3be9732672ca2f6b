//! `iolab sweep`: every combination of the listed --qd, --workers, --bs, --read-pct and
//! --random-pct values (iolab_spec::sweep), run one after another in one process, then the
//! table per load curve and the sweet spot (iolab_analysis::sweep). Each point is kept in the
//! results database as it completes; `--resume` continues an unfinished sweep from there.

use std::process::ExitCode;

use iolab_analysis::rounds::SteadyRounds;
use iolab_analysis::sweep::{summarize, with_steady_rounds, PointFigures, PointOutcome};
use iolab_report::{sweep_json, sweep_text};
use iolab_runner::{OnFailedStart, RunError};
use iolab_spec::sweep::{expand, SweepPoint};
use iolab_spec::RunPlan;
use iolab_stats::result::{Bottleneck, RunReport, StopReason};
use iolab_store::Point;

use crate::args::SweepArgs;
use crate::exit::say;
use crate::place::Place;
use crate::progress::ProgressLine;
use crate::recording::{Recording, StoreArgs};
use crate::until_steady::run_rounds;
use crate::{exit, session, study};

pub fn run(args: SweepArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    let (load, points) = match expand(&args.options) {
        Ok(sweep) => sweep,
        Err(e) => return exit::fail(exit::USAGE, &e.to_string()),
    };
    if args.resume && (args.until_steady || store.no_store) {
        let other = if args.until_steady { "--until-steady" } else { "--no-store" };
        return exit::fail(exit::USAGE, &format!("--resume does not combine with {other}"));
    }
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
    let plan = study::repeated(RunPlan { jobs, output: output.unwrap_or_default() }, args.repeat);
    let (mut recording, earlier) = if args.resume {
        match resume(store, &plan) {
            Ok(resumed) => resumed,
            Err(code) => return code,
        }
    } else {
        // Rounds until steady make other points than a plain sweep: never resumed as one.
        let kind = if args.until_steady { "sweep-until-steady" } else { "sweep" };
        match place.record(store, kind, &plan) {
            Ok(recording) => (recording, Vec::new()),
            Err(code) => return code,
        }
    };
    let remaining = RunPlan { jobs: plan.jobs[earlier.len()..].to_vec(), output: plan.output.clone() };
    let (report, steady) = if args.until_steady {
        let rule = match args.steady.rule() {
            Ok(rule) => rule,
            Err(message) => return exit::fail(exit::USAGE, &message),
        };
        match until_steady(&remaining, SteadyRounds::new(args.steady.track, rule), &mut recording, place) {
            Ok(ran) => ran,
            Err(code) => return code,
        }
    } else {
        let outcome = match session::execute(&remaining, OnFailedStart::Stop, &mut recording, place) {
            Ok(outcome) => outcome,
            Err(code) => return code,
        };
        if let Some((index, e)) = outcome.failed.first() {
            recording.mark_failed();
            say!(
                "iolab: sweep point {} could not start: {e}; the points before it are reported",
                remaining.jobs[*index].name
            );
        }
        (outcome.report, Vec::new())
    };
    // With rounds, a point's result is its last round. A point cut short by Ctrl-C measured
    // less than the others and is no point of the curve; its partial result stays in the run
    // report.
    let mut measured: Vec<(StopReason, PointFigures)> =
        earlier.iter().map(|point| (StopReason::Runtime, stored_figures(point))).collect();
    if steady.is_empty() {
        measured.extend(report.jobs.iter().map(|job| (job.stop_reason, PointFigures::of(job))));
    } else {
        let mut last = 0;
        for rounds in &steady {
            last += rounds.values.len();
            let job = &report.jobs[last - 1];
            measured.push((job.stop_reason, PointFigures::of(job)));
        }
    }
    let outcomes = outcomes(&points, &measured, args.repeat as usize);
    let summary = summarize(load, &outcomes);
    let summary = if steady.is_empty() { summary } else { with_steady_rounds(summary, steady) };
    let json = sweep_json(&summary, &report);
    let rendered = if plan.output.json { json.clone() } else { sweep_text(&summary, &report) };
    session::deliver(&plan.output, &rendered, &report, recording, Some(&json))
}

/// The curve's points from what was measured, in plan order (`repeat` results a point): each
/// point that completed at least one repeat, shown by its repeat with the median IOPS.
fn outcomes<'a>(
    points: &'a [SweepPoint],
    measured: &[(StopReason, PointFigures)],
    repeat: usize,
) -> Vec<PointOutcome<'a>> {
    points
        .iter()
        .zip(measured.chunks(repeat))
        .filter_map(|(point, repeats)| {
            let mut done: Vec<&PointFigures> = repeats
                .iter()
                .filter(|(stop, _)| *stop != StopReason::Interrupted)
                .map(|(_, figures)| figures)
                .collect();
            done.sort_by(|a, b| a.total.iops.total_cmp(&b.total.iops));
            let median = done.get(done.len() / 2)?;
            Some(PointOutcome {
                name: &point.name,
                curve: point.curve,
                curve_name: &point.curve_name,
                figures: (*median).clone(),
                repeat_iops: done.iter().map(|f| f.total.iops).collect(),
            })
        })
        .collect()
}

/// A point kept by an earlier, unfinished run of this sweep.
fn stored_figures(point: &Point) -> PointFigures {
    PointFigures {
        access: point.summary.access.clone(),
        qd: point.summary.qd,
        workers: point.summary.workers,
        total: point.summary.total.clone(),
        cpu_us_per_io: point.summary.cpu_us_per_io.unwrap_or(0.0),
        bottleneck: point.verdict.as_ref().map_or(Bottleneck::Undetermined, |v| v.cause),
    }
}

/// Finds the newest unfinished sweep of exactly `plan`'s points and the points it completed
/// in order (a point cut short is dropped and measured again); without one, starts a new run.
fn resume(store: &StoreArgs, plan: &RunPlan) -> Result<(Recording, Vec<Point>), ExitCode> {
    let fail = |e: iolab_store::StoreError| exit::fail(crate::recording::code(&e), &e.to_string());
    crate::session::check_output(plan.output.path.as_deref(), &plan.jobs, store)?;
    let mut db = store.open()?;
    let plan_json = serde_json::to_value(&plan.jobs).unwrap_or_default();
    let Some(run) = db.resumable("sweep", &plan_json).map_err(fail)? else {
        say!("iolab: no unfinished sweep of these points in {}: starting a new one", db.path().display());
        drop(db);
        return Ok((Recording::start(store, "sweep", plan)?, Vec::new()));
    };
    let stored = db.points(run).map_err(fail)?;
    // The stored points must be the plan's, in order: anything else is refused, never deleted.
    let foreign = stored.iter().enumerate().find(|(index, point)| {
        point.seq as usize != *index || plan.jobs.get(*index).is_none_or(|job| job.name != point.name)
    });
    if let Some((_, point)) = foreign {
        return Err(exit::fail(
            exit::USAGE,
            &format!(
                "run {run} holds point {} '{}', which this sweep does not plan there; not resuming it",
                point.seq, point.name
            ),
        ));
    }
    // A point cut short is measured again, with every point after it.
    let kept: Vec<Point> =
        stored.into_iter().take_while(|point| point.summary.stop_reason != "interrupted").collect();
    db.truncate_points(run, kept.len() as u32).map_err(fail)?;
    db.reopen_run(run).map_err(fail)?;
    if !plan.output.quiet {
        say!(
            "iolab: resuming sweep run {run}: {} of {} points kept, {} to measure",
            kept.len(),
            plan.jobs.len(),
            plan.jobs.len() - kept.len()
        );
    }
    Ok((Recording::resume(db, run, plan, kept.len() as u32), kept))
}

/// Runs each point of `plan` in rounds until steady (or given up); the report holds every
/// round, and the rounds of each point that ran, in order.
fn until_steady(
    plan: &RunPlan,
    fresh: SteadyRounds,
    recording: &mut Recording,
    place: &mut Place<'_>,
) -> Result<(RunReport, Vec<SteadyRounds>), ExitCode> {
    let interrupt = session::install_signals()?;
    let mut progress = ProgressLine::new(plan.output.quiet);
    let fail = |e: RunError| exit::fail(session::error_code(&e), &e.to_string());
    let mut lab = place.open_lab(plan, OnFailedStart::Stop, &interrupt, &mut progress).map_err(fail)?;
    lab.keep_results_in(recording);
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
