//! `iolab steady`: rounds of one workload until the SNIA steady-state detector decides.

use std::process::ExitCode;

use iolab_analysis::rounds::SteadyRounds;
use iolab_report::{steady_json, steady_text};
use iolab_studies::{plan, rounds};

use crate::args::{SteadyArgs, StoreArgs};
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::{exit, job_source};

pub fn run(args: SteadyArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    exit::of(measure(args, store, place))
}

fn measure(args: SteadyArgs, store: &StoreArgs, place: &mut Place<'_>) -> Result<ExitCode, ExitCode> {
    let fresh = SteadyRounds::new(args.steady.track, args.steady.rule().map_err(exit::usage)?);
    let input = job_source::study_input(args.target, &args.workload.options).map_err(exit::usage)?;
    // A job of several groups runs each round together; the rounds are judged on its total.
    let plan = plan::resolve_input(&rounds::round_defaults(), &input).map_err(exit::usage)?;
    let job =
        plan::one_job(&plan, "steady", "its rounds are judged on one job's figures").map_err(exit::usage)?;
    Ok(Measurement::new("steady", &plan).run(
        store,
        place,
        |lab, progress| {
            let targets = lab.prepare(&job, progress)?;
            rounds::run_rounds(lab, &job, &targets, fresh, progress)
        },
        |rounds, report| {
            Ok(Delivery::study(&plan.output, steady_json(&rounds, report), || steady_text(&rounds, report)))
        },
    ))
}
