//! `iolab precondition`: the SNIA way of putting a device in a known state before measuring:
//! optionally discard it, then write the whole region sequentially in 128 KiB blocks, N times
//! (iolab_studies::fill).

use std::process::ExitCode;

use iolab_report::{precondition_json, precondition_text};
use iolab_studies::fill::Precondition;

use crate::args::{PreconditionArgs, StoreArgs};
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::{exit, job_source};

pub fn run(store: &StoreArgs, args: PreconditionArgs) -> ExitCode {
    let input = job_source::study_input(args.target, &args.workload.options);
    let precondition = match input
        .and_then(|input| Precondition::over(&input, args.passes, args.trim).map_err(|e| e.to_string()))
    {
        Ok(precondition) => precondition,
        Err(message) => return exit::usage(message),
    };
    let output = &precondition.plan.output;
    Measurement::new("precondition", &precondition.plan).run(
        store,
        &mut Place::here(),
        |lab, progress| precondition.run(lab, progress),
        |done, report| {
            let json = precondition_json(&done, report);
            Ok(Delivery::study(output, json, || precondition_text(&done, report)))
        },
    )
}
