//! `iolab precondition`: the SNIA way of putting a device in a known state before measuring:
//! optionally discard it, then write the whole region sequentially in 128 KiB blocks, N times.

use std::process::ExitCode;

use iolab_report::{precondition_json, precondition_text, Preconditioning};
use iolab_runner::{Lab, Observer, OnFailedStart};
use iolab_spec::{Axis, Bytes, IoLimit, JobSpec, Nanos, Options, Rw};

use crate::args::PreconditionArgs;
use crate::progress::ProgressLine;
use crate::{exit, session, study};

/// Long enough never to end a pass early: the I/O limit ends the job.
const UNBOUNDED: Nanos = Nanos(100 * 365 * 24 * 3600 * 1_000_000_000);

pub fn run(args: PreconditionArgs) -> ExitCode {
    let refused = study::refuse(
        &args.options,
        &["rw", "read_pct", "random_pct", "runtime", "io_limit", "bs_split", "rate_iops", "burst"],
        "precondition",
        "writes the whole region sequentially, --passes times",
    );
    if let Err(message) = refused {
        return exit::fail(exit::USAGE, &message);
    }
    if args.passes == 0 {
        return exit::fail(exit::USAGE, "--passes must be 1 or more");
    }
    let plan = match study::plan_over(&defaults(), &args.options, args.target.into_iter().collect()) {
        Ok(plan) => plan,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let Some(job) = plan.jobs.first().cloned() else {
        return exit::fail(exit::USAGE, "nothing to run");
    };
    if plan.jobs.len() > 1 || job.groups.len() > 1 {
        return exit::fail(
            exit::USAGE,
            "precondition takes one target or one striped set, not a job file of several jobs or groups",
        );
    }

    let interrupt = match session::install_signals() {
        Ok(interrupt) => interrupt,
        Err(code) => return code,
    };
    let mut progress = ProgressLine::new(plan.output.quiet);
    let prepared = Lab::open(&plan, OnFailedStart::Stop, &interrupt, &mut progress)
        .and_then(|lab| lab.prepare(&job, &mut progress).map(|targets| (lab, targets)));
    let (mut lab, targets) = match prepared {
        Ok(both) => both,
        Err(e) => return exit::fail(session::error_code(&e), &e.to_string()),
    };
    let region: u64 = targets.iter().flatten().map(|t| t.region_size).sum();
    let mut discard_notes = Vec::new();
    if args.trim {
        for target in targets.iter().flatten() {
            progress.note(&format!("discarding {} of {}", Bytes(target.region_size), target.path.display()));
            if let Err(e) = target.discard() {
                discard_notes.push(format!("{e}; preconditioning went on without it"));
            }
        }
    }
    let job = fill(&job, args.passes, region);
    if let Err(e) = lab.run_prepared(&job, &targets, &mut progress) {
        return exit::fail(session::error_code(&e), &e.to_string());
    }
    let report = lab.into_report();
    let done = Preconditioning {
        passes: args.passes,
        region_bytes: region,
        trimmed: args.trim && discard_notes.is_empty(),
        notes: discard_notes,
    };
    let rendered =
        if plan.output.json { precondition_json(&done, &report) } else { precondition_text(&done, &report) };
    if let Err(code) = session::write_output(&plan.output, &rendered) {
        return code;
    }
    session::warn_about_problems(&report);
    ExitCode::from(session::exit_code(&report))
}

/// The preconditioning workload: sequential 128 KiB writes at QD 32, no ramp, ended by the
/// I/O limit that `fill` sets. The user's flags lie over it.
pub fn defaults() -> Options {
    Options {
        rw: Some(Rw::Write),
        bs: Some(Axis::one(Bytes(128 << 10))),
        qd: Some(Axis::one(32)),
        runtime: Some(UNBOUNDED),
        ramp: Some(Nanos(0)),
        ..Options::default()
    }
}

/// `job` (from `defaults`) writing a region of `region` bytes `passes` times.
pub fn fill(job: &JobSpec, passes: u32, region: u64) -> JobSpec {
    JobSpec {
        name: format!("precondition: {passes} pass(es) of sequential writes"),
        io_limit: Some(IoLimit::Bytes(Bytes(region * u64::from(passes)))),
        ..job.clone()
    }
}
