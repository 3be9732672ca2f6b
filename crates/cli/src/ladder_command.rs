//! `iolab ladder`: one workload through every I/O interface in turn (iolab_studies::ladder),
//! then the table and the verdict (iolab_analysis::ladder).

use std::process::ExitCode;

use iolab_analysis::ladder::summarize;
use iolab_report::{ladder_json, ladder_text};
use iolab_studies::ladder::Ladder;

use crate::args::{LadderArgs, StoreArgs};
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::{exit, job_source};

pub fn run(store: &StoreArgs, args: LadderArgs) -> ExitCode {
    let input = job_source::study_input(args.target, &args.workload.options);
    let ladder = match input.and_then(|input| Ladder::over(&input).map_err(|e| e.to_string())) {
        Ok(ladder) => ladder,
        Err(message) => return exit::usage(message),
    };
    Measurement::new("ladder", &ladder.plan).skipping_failed_starts().run(
        store,
        &mut Place::here(),
        |lab, progress| ladder.run(lab, progress),
        |failed, report| {
            let summary = summarize(&ladder.outcomes(report, &failed));
            Ok(Delivery::study(&ladder.plan.output, ladder_json(&summary, report), || {
                ladder_text(&summary, report)
            }))
        },
    )
}
