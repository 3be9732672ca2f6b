//! `iolab steady`: rounds of one workload until the SNIA steady-state detector decides.

use std::process::ExitCode;

use iolab_analysis::rounds::SteadyRounds;
use iolab_report::{steady_json, steady_text};
use iolab_spec::{Nanos, Options};

use crate::args::SteadyArgs;
use crate::place::Place;
use crate::progress::ProgressLine;
use crate::recording::StoreArgs;
use crate::until_steady::run_rounds;
use crate::{exit, session, study};

/// One round unless --runtime says otherwise: the SNIA PTS's one-minute rounds.
const ROUND: Nanos = Nanos(60_000_000_000);

pub fn run(args: SteadyArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    let rule = match args.steady.rule() {
        Ok(rule) => rule,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let defaults = Options { runtime: Some(ROUND), ramp: Some(Nanos(0)), ..Options::default() };
    let (plan, job) = match study::one_workload(&defaults, &args.options, args.target, "steady") {
        Ok(both) => both,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let mut recording = match place.record(store, "steady", &plan) {
        Ok(recording) => recording,
        Err(code) => return code,
    };
    let progress = ProgressLine::new(plan.output.quiet);
    let fresh = SteadyRounds::new(args.steady.track, rule);
    let ran = session::in_lab(&plan, &job, progress, &mut recording, place, |lab, targets, progress| {
        run_rounds(lab, &job, targets, fresh, progress)
    });
    let (rounds, report) = match ran {
        Ok(both) => both,
        Err(code) => return code,
    };
    let json = steady_json(&rounds, &report);
    let rendered = if plan.output.json { json.clone() } else { steady_text(&rounds, &report) };
    session::deliver(&plan.output, &rendered, &report, recording, Some(&json))
}
