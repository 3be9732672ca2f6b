//! `iolab steady`: rounds of one workload until the SNIA steady-state detector decides.

use std::process::ExitCode;

use iolab_analysis::rounds::SteadyRounds;
use iolab_report::{steady_json, steady_text};
use iolab_runner::{Lab, OnFailedStart};
use iolab_spec::{Nanos, Options};

use crate::args::SteadyArgs;
use crate::progress::ProgressLine;
use crate::until_steady::run_rounds;
use crate::{exit, session, study};

/// One round unless --runtime says otherwise: the SNIA PTS's one-minute rounds.
const ROUND: Nanos = Nanos(60_000_000_000);

pub fn run(args: SteadyArgs) -> ExitCode {
    let rule = match args.steady.rule() {
        Ok(rule) => rule,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let defaults = Options { runtime: Some(ROUND), ramp: Some(Nanos(0)), ..Options::default() };
    let (plan, job) = match study::one_workload(&defaults, &args.options, args.target, "steady") {
        Ok(both) => both,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let interrupt = match session::install_signals() {
        Ok(interrupt) => interrupt,
        Err(code) => return code,
    };
    let mut progress = ProgressLine::new(plan.output.quiet);
    let ran = Lab::open(&plan, OnFailedStart::Stop, &interrupt, &mut progress).and_then(|mut lab| {
        let targets = lab.prepare(&job, &mut progress)?;
        let rounds = SteadyRounds::new(args.steady.track, rule);
        let rounds = run_rounds(&mut lab, &job, &targets, rounds, &mut progress)?;
        Ok((rounds, lab.into_report()))
    });
    let (rounds, report) = match ran {
        Ok(both) => both,
        Err(e) => return exit::fail(session::error_code(&e), &e.to_string()),
    };
    let rendered =
        if plan.output.json { steady_json(&rounds, &report) } else { steady_text(&rounds, &report) };
    session::deliver(&plan.output, &rendered, &report)
}
