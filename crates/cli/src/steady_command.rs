//! `iolab steady`: rounds of one workload until the SNIA steady-state detector decides.

use std::process::ExitCode;

use iolab_analysis::rounds::SteadyRounds;
use iolab_report::{steady_json, steady_text};
use iolab_studies::{plan, rounds};

use crate::args::{SteadyArgs, StoreArgs};
use crate::exit;
use crate::flow::{Delivery, Measurement};
use crate::place::Place;

pub fn run(args: SteadyArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    exit::of(measure(args, store, place))
}

fn measure(args: SteadyArgs, store: &StoreArgs, place: &mut Place<'_>) -> Result<ExitCode, ExitCode> {
    let fresh = SteadyRounds::new(args.steady.track, args.steady.rule().map_err(exit::usage)?);
    let (plan, job) =
        plan::one_workload(&rounds::round_defaults(), &args.workload.options, args.target, "steady")
            .map_err(exit::usage)?;
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
