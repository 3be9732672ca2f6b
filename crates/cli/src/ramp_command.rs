//! `iolab ramp`: the latency-vs-IOPS curve. The workload first runs closed-loop to find its
//! maximum IOPS, then open-loop (--rate-iops) at each --levels share of it, stopping early at
//! --max-latency or --max-cpu.

use std::process::ExitCode;

use iolab_analysis::ramp::{row, summarize, RampLimits};
use iolab_report::{ramp_json, ramp_text};
use iolab_runner::RunError;
use iolab_spec::{JobSpec, Options};

use crate::args::RampArgs;
use crate::place::Place;
use crate::progress::ProgressLine;
use crate::recording::StoreArgs;
use crate::{exit, session, study};

pub fn run(args: RampArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    if let Err(message) =
        study::refuse(&args.options, &["rate_iops", "burst"], "ramp", "sets the rate of each level itself")
    {
        return exit::fail(exit::USAGE, &message);
    }
    let levels = args.levels.0.clone();
    if let Some(bad) = levels.iter().find(|&&l| l == 0 || l > 100) {
        return exit::fail(exit::USAGE, &format!("--levels are shares of the maximum, 1..100 (got {bad})"));
    }
    if let Some(bad) = args.max_cpu.filter(|c| !(*c > 0.0 && *c <= 100.0)) {
        return exit::fail(
            exit::USAGE,
            &format!("--max-cpu is a share of the machine's CPU, above 0 and at most 100 (got {bad})"),
        );
    }
    let limits = RampLimits { latency: args.max_latency, max_cpu_pct: args.max_cpu };
    let (base, closed) =
        match study::one_workload(&study::step_defaults(), &args.options, args.target.clone(), "ramp") {
            Ok(both) => both,
            Err(message) => return exit::fail(exit::USAGE, &message),
        };
    // Each level is the same workload with a rate: resolved now, so a bad flag fails before I/O.
    let level_job = |iops: u64, level: u32| -> Result<JobSpec, String> {
        let flags = Options { rate_iops: Some(iops.max(1)), ..args.options.clone() };
        let plan = study::base_plan(&flags, args.target.clone().into_iter().collect())?;
        let job = plan.jobs.into_iter().next().ok_or("nothing to run")?;
        Ok(JobSpec { name: format!("{level}% of the maximum"), ..job })
    };
    if let Err(message) = level_job(1, 100) {
        return exit::fail(exit::USAGE, &message);
    }
    let planned_s = (closed.ramp.0 + closed.runtime.0) as f64 / 1e9 * (levels.len() + 1) as f64;
    let progress = ProgressLine::with_plan(base.output.quiet, "ramp", planned_s);
    let mut recording = match place.record(store, "ramp", &base) {
        Ok(recording) => recording,
        Err(code) => return code,
    };
    let ran = session::in_lab(&base, &closed, progress, &mut recording, place, |lab, targets, progress| {
        let max = JobSpec { name: "maximum (closed loop)".into(), ..closed.clone() };
        let max_iops = lab.run_prepared(&max, targets, progress)?.total.iops;
        let mut rows = Vec::new();
        for &level in levels.iter().filter(|_| max_iops >= 1.0) {
            if lab.interrupted() || lab.jobs().iter().any(|j| j.stop_reason.ends_the_run()) {
                break;
            }
            let job = level_job((max_iops * f64::from(level) / 100.0).round() as u64, level)
                .map_err(RunError::Invalid)?;
            let level_row = row(level, lab.run_prepared(&job, targets, progress)?, &limits);
            let crossed = level_row.crossed.is_some();
            rows.push(level_row);
            if crossed {
                break;
            }
        }
        Ok((max_iops, rows))
    });
    let ((max_iops, rows), report) = match ran {
        Ok(found) => found,
        Err(code) => return code,
    };
    if max_iops < 1.0 && !report.interrupted {
        return exit::fail(
            exit::INTERNAL,
            "the closed-loop run completed no I/O, so there is no maximum to ramp to",
        );
    }
    let summary = summarize(max_iops, limits, rows);
    let json = ramp_json(&summary, &report);
    let rendered = if base.output.json { json.clone() } else { ramp_text(&summary, &report) };
    session::deliver(&base.output, &rendered, &report, recording, Some(&json))
}
