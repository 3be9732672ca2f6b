//! `iolab ramp`: the latency-vs-IOPS curve. The workload first runs closed-loop to find its
//! maximum IOPS, then open-loop (--rate-iops) at each --levels share of it, stopping early at
//! --max-latency or --max-cpu (iolab_studies::ramp, judged by iolab_analysis::ramp).

use std::process::ExitCode;

use iolab_analysis::ramp::{summarize_curves, RampLimits};
use iolab_report::{ramp_json, ramp_text};
use iolab_studies::ramp::Ramp;

use crate::args::{RampArgs, StoreArgs};
use crate::exit::say;
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::progress::ProgressLine;
use crate::{exit, job_source};

pub fn run(args: RampArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    exit::of(measure(args, store, place))
}

fn measure(args: RampArgs, store: &StoreArgs, place: &mut Place<'_>) -> Result<ExitCode, ExitCode> {
    let limits = RampLimits { latency: args.max_latency, max_cpu_pct: args.max_cpu };
    let input = job_source::study_input(args.target, &args.workload.options).map_err(exit::usage)?;
    let ramp =
        Ramp::over(&input, args.levels.0.clone(), limits).map_err(exit::usage)?.with_retries(args.retries);
    let progress = ProgressLine::with_plan(ramp.plan.output.quiet, "ramp", ramp.planned_s());
    Ok(Measurement::new("ramp", &ramp.plan).with_progress(progress).run(
        store,
        place,
        |lab, progress| ramp.run(lab, progress),
        |found, report| {
            let empty: Vec<&str> = found
                .curves
                .iter()
                .filter(|curve| curve.max_iops < 1.0)
                .map(|curve| curve.name.as_str())
                .collect();
            if !report.interrupted && !empty.is_empty() {
                if empty.len() == found.curves.len() {
                    return Err(exit::fail(
                        exit::INTERNAL,
                        "the closed-loop run completed no I/O, so there is no maximum to ramp to",
                    ));
                }
                say!(
                    "iolab: warning: the closed loop of {} completed no I/O, so that curve has no levels",
                    empty.join(", ")
                );
            }
            let summary = summarize_curves(ramp.limits, found.curves);
            Ok(Delivery::study(&ramp.plan.output, ramp_json(&summary, report), || {
                ramp_text(&summary, report)
            }))
        },
    ))
}
