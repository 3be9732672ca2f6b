//! `iolab cliff`: write the whole target (or --bytes) sequentially and log throughput against
//! bytes written at a fine interval (iolab_studies::cliff), then find each cliff: where
//! throughput drops by more than --drop-pct and stays down (a write cache or a fast tier
//! filling up; iolab_analysis::cliff).

use std::process::ExitCode;

use iolab_analysis::cliff::{find_cliffs, CliffRule, CliffSummary};
use iolab_report::{cliff_json, cliff_text};
use iolab_studies::cliff::{samples, Cliff};

use crate::args::{CliffArgs, StoreArgs};
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::{exit, job_source};

pub fn run(store: &StoreArgs, args: CliffArgs) -> ExitCode {
    let rule = CliffRule { drop_pct: args.drop_pct, min_hold_samples: args.hold };
    let input = job_source::study_input(args.target, &args.workload.options);
    let cliff = match input.and_then(|input| Cliff::over(&input, args.bytes, rule).map_err(|e| e.to_string()))
    {
        Ok(cliff) => cliff,
        Err(message) => return exit::usage(message),
    };
    Measurement::new("cliff", &cliff.plan).run(
        store,
        &mut Place::here(),
        |lab, progress| cliff.run(lab, progress),
        |(), report| {
            let samples = report.jobs.first().map(samples).unwrap_or_default();
            let summary = CliffSummary { found: find_cliffs(&samples, &cliff.rule), samples };
            Ok(Delivery::study(&cliff.plan.output, cliff_json(&summary, report), || {
                cliff_text(&summary, report)
            }))
        },
    )
}
