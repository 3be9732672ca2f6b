//! `iolab suite quick|enterprise|pts`: the suite's steps over the user's target and timing
//! (iolab_studies::suite), in one lab, with a progress bar over the whole suite.

use std::process::ExitCode;

use iolab_report::{suite_json, suite_text};
use iolab_studies::suite::Suite;

use crate::args::{StoreArgs, SuiteArgs};
use crate::exit::say;
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::progress::ProgressLine;
use crate::{exit, job_source};

pub fn run(args: SuiteArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    let input = job_source::study_input(args.target, &args.workload.options);
    let suite = match input.and_then(|input| Suite::over(args.suite, &input).map_err(|e| e.to_string())) {
        Ok(suite) => suite,
        Err(message) => return exit::usage(message),
    };
    let name = args.suite.name();
    let progress =
        ProgressLine::with_plan(suite.plan.output.quiet, &format!("suite {name}"), suite.planned_s());
    Measurement::new("suite", &suite.plan).titled(format!("suite {name}")).with_progress(progress).run(
        store,
        place,
        |lab, progress| Ok(suite.run(lab, progress)),
        |ran, report| {
            let json = suite_json(name, &ran.sections, report);
            let delivery =
                Delivery::study(&suite.plan.output, json, || suite_text(name, &ran.sections, report));
            let Some(e) = ran.failure else { return Ok(delivery) };
            if report.jobs.is_empty() {
                return Err(exit::fail(exit::run_error_code(&e), &e.to_string()));
            }
            say!("iolab: a step of the suite could not run: {e}; the steps before it are reported");
            Ok(delivery.failed(&e, None))
        },
    )
}
