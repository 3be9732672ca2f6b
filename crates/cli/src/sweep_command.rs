//! `iolab sweep`: every combination of the listed --qd, --workers, --bs, --read-pct and
//! --random-pct values (iolab_studies::sweep), run one after another in one process, then the
//! table per load curve and the sweet spot (iolab_analysis::sweep). Each point is kept in the
//! results database as it completes; `--resume` continues an unfinished sweep from there.

use std::process::ExitCode;

use iolab_analysis::rounds::SteadyRounds;
use iolab_report::{sweep_json, sweep_text};
use iolab_spec::RunPlan;
use iolab_store::{Point, Recorder};
use iolab_studies::sweep::{resumable, Sweep};

use crate::args::{StoreArgs, SweepArgs};
use crate::exit::say;
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::recording::{open_store, Recording};
use crate::{exit, job_source, output_file};

pub fn run(args: SweepArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    exit::of(measure(args, store, place))
}

fn measure(args: SweepArgs, store: &StoreArgs, place: &mut Place<'_>) -> Result<ExitCode, ExitCode> {
    if args.resume && (args.until_steady || store.no_store) {
        let other = if args.until_steady { "--until-steady" } else { "--no-store" };
        return Err(exit::usage(format!("--resume does not combine with {other}")));
    }
    let until_steady = match args.until_steady {
        true => Some(SteadyRounds::new(args.steady.track, args.steady.rule().map_err(exit::usage)?)),
        false => None,
    };
    let input = job_source::study_input(args.target, &args.workload.options).map_err(exit::usage)?;
    let sweep =
        Sweep::over(&input, args.repeat, until_steady).map_err(exit::usage)?.with_retries(args.retries);
    let mut measurement = Measurement::new(sweep.kind(), &sweep.plan);
    let mut earlier = Vec::new();
    if args.resume {
        if let Some((recording, kept)) = resume(store, &sweep.plan)? {
            measurement = measurement.continuing(recording);
            earlier = kept;
        }
    }
    let remaining = sweep.remaining(earlier.len());
    Ok(measurement.run(
        store,
        place,
        |lab, progress| sweep.run(lab, &remaining, progress),
        |ran, report| {
            if let Some((index, e)) = &ran.failed {
                say!(
                    "iolab: sweep point {} could not start: {e}; the points before it are reported",
                    remaining.jobs[*index].name
                );
            }
            let summary = sweep.summary(&earlier, report, ran.steady);
            let json = sweep_json(&summary, report);
            let delivery = Delivery::study(&sweep.plan.output, json, || sweep_text(&summary, report));
            Ok(match &ran.failed {
                Some((_, e)) => delivery.failed(e, None),
                None => delivery,
            })
        },
    ))
}

/// The newest unfinished sweep of exactly `plan`'s points, reopened, and the points it
/// completed in order (a point cut short is dropped and measured again); `None` when there is
/// none, and a new run starts.
fn resume(store: &StoreArgs, plan: &RunPlan) -> Result<Option<(Recording, Vec<Point>)>, ExitCode> {
    let failed = |e: iolab_store::StoreError| exit::store_failed(&e);
    output_file::check_output(plan.output.path.as_deref(), &plan.jobs, store)?;
    let db = open_store(store)?;
    let plan_json = serde_json::to_value(&plan.jobs).unwrap_or_default();
    let Some(run) = db.resumable("sweep", &plan_json).map_err(failed)? else {
        say!("iolab: no unfinished sweep of these points in {}: starting a new one", db.path().display());
        return Ok(None);
    };
    let kept = resumable(run, db.points(run).map_err(failed)?, plan).map_err(exit::usage)?;
    let recorder = Recorder::resume(db, run, kept.len() as u32).map_err(failed)?;
    if !plan.output.quiet {
        say!(
            "iolab: resuming sweep run {run}: {} of {} points kept, {} to measure",
            kept.len(),
            plan.jobs.len(),
            plan.jobs.len() - kept.len()
        );
    }
    Ok(Some((Recording::resume(recorder, plan), kept)))
}
