//! `iolab precondition`: the SNIA way of putting a device in a known state before measuring:
//! optionally discard it, then write the whole region sequentially in 128 KiB blocks, N times.

use std::process::ExitCode;

use iolab_report::{precondition_json, precondition_text, Preconditioning};
use iolab_runner::Observer;
use iolab_spec::{Bytes, JobSpec};

use crate::args::PreconditionArgs;
use crate::fill::{self, FILL_KEYS};
use crate::place::Place;
use crate::progress::ProgressLine;
use crate::recording::{Recording, StoreArgs};
use crate::{exit, session, study};

pub fn run(args: PreconditionArgs, store: &StoreArgs) -> ExitCode {
    let refused = study::refuse(
        &args.options,
        FILL_KEYS,
        "precondition",
        "writes the whole region sequentially, --passes times",
    );
    if let Err(message) = refused {
        return exit::fail(exit::USAGE, &message);
    }
    if args.passes == 0 {
        return exit::fail(exit::USAGE, "--passes must be 1 or more");
    }
    let (plan, job) = match study::one_workload(&fill::defaults(), &args.options, args.target, "precondition")
    {
        Ok(both) => both,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };

    let mut recording = match Recording::start(store, "precondition", &plan) {
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
            let mut discard_notes = Vec::new();
            if args.trim {
                for target in targets.iter().flatten() {
                    progress.note(&format!(
                        "discarding {} of {}",
                        Bytes(target.region_size),
                        target.path.display()
                    ));
                    if let Err(e) = target.discard() {
                        discard_notes.push(format!("{e}; preconditioning went on without it"));
                    }
                }
            }
            lab.run_prepared(&passes(&job, args.passes, region), targets, progress)?;
            Ok(Preconditioning {
                passes: args.passes,
                region_bytes: region,
                trimmed: args.trim && discard_notes.is_empty(),
                notes: discard_notes,
            })
        },
    );
    let (done, report) = match ran {
        Ok(both) => both,
        Err(code) => return code,
    };
    let json = precondition_json(&done, &report);
    let rendered = if plan.output.json { json.clone() } else { precondition_text(&done, &report) };
    session::deliver(&plan.output, &rendered, &report, recording, Some(&json))
}

/// The fill `job` writing a region of `region` bytes `passes` times.
pub fn passes(job: &JobSpec, passes: u32, region: u64) -> JobSpec {
    fill::limited_to(
        job,
        format!("precondition: {passes} pass(es) of sequential writes"),
        region * u64::from(passes),
    )
}
