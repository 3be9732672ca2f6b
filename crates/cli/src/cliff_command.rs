//! `iolab cliff`: write the whole target (or --bytes) sequentially and log throughput against
//! bytes written at a fine interval, then find each cliff: where throughput drops by more than
//! --drop-pct and stays down (a write cache or a fast tier filling up).

use std::process::ExitCode;

use iolab_analysis::cliff::{find_cliffs, CliffRule, ThroughputSample};
use iolab_report::{cliff_json, cliff_text};
use iolab_spec::{Bytes, Nanos, Options};
use iolab_stats::result::JobResult;

use crate::args::CliffArgs;
use crate::fill::{self, FILL_KEYS};
use crate::place::Place;
use crate::progress::ProgressLine;
use crate::recording::{Recording, StoreArgs};
use crate::{exit, session, study};

/// Fine enough to place a cliff within a few hundred MB at several GB/s.
const SAMPLE: Nanos = Nanos(100_000_000);

pub fn run(args: CliffArgs, store: &StoreArgs) -> ExitCode {
    let refused = study::refuse(
        &args.options,
        FILL_KEYS,
        "cliff",
        "writes the region once, sequentially (give its length with --bytes)",
    );
    if let Err(message) = refused {
        return exit::fail(exit::USAGE, &message);
    }
    let rule = CliffRule { drop_pct: args.drop_pct, min_hold_samples: args.hold };
    if let Err(message) = rule.validate() {
        return exit::fail(exit::USAGE, &message);
    }
    let defaults = Options { interval: Some(SAMPLE), ..fill::defaults() };
    let (plan, job) = match study::one_workload(&defaults, &args.options, args.target, "cliff") {
        Ok(both) => both,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let mut recording = match Recording::start(store, "cliff", &plan) {
        Ok(recording) => recording,
        Err(code) => return code,
    };
    let progress = ProgressLine::new(plan.output.quiet);
    let ran = session::in_lab(
        &plan,
        &job,
        progress,
        &mut recording,
        &mut Place::here(),
        |lab, targets, progress| {
            let region: u64 = targets.iter().flatten().map(|t| t.region_size).sum();
            let bytes = args.bytes.map_or(region, |b| b.0);
            let job = fill::limited_to(&job, format!("cliff: {} of sequential writes", Bytes(bytes)), bytes);
            lab.run_prepared(&job, targets, progress).map(|_| ())
        },
    );
    let report = match ran {
        Ok(((), report)) => report,
        Err(code) => return code,
    };
    let samples = report.jobs.first().map(samples).unwrap_or_default();
    let found = find_cliffs(&samples, &rule);
    let json = cliff_json(&found, &samples, &report);
    let rendered = if plan.output.json { json.clone() } else { cliff_text(&found, &samples, &report) };
    session::deliver(&plan.output, &rendered, &report, recording, Some(&json))
}

/// Throughput against bytes written, one sample per interval of the series. The last interval
/// is cut short by the end of the fill; shorter than half an interval, it says too little.
fn samples(job: &JobResult) -> Vec<ThroughputSample> {
    let full = job.series.iter().map(|p| p.duration_s).fold(0.0, f64::max);
    let mut done = 0.0;
    job.series
        .iter()
        .filter(|p| p.duration_s >= full / 2.0)
        .map(|p| {
            done += p.mb_s * 1e6 * p.duration_s;
            ThroughputSample { bytes_done: done as u64, mb_s: p.mb_s }
        })
        .collect()
}
