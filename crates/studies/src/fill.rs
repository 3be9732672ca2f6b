//! A sequential write over the whole region, ended by an I/O limit: what preconditioning and
//! the cliff test both run (the suites' preconditioning too), and `iolab precondition` itself.

use iolab_analysis::suite::Preconditioning;

use iolab_runner::{Lab, Observer, RunError};
use iolab_spec::{Axis, Bytes, IoLimit, JobSpec, Nanos, Options, RunPlan, Rw};
use thiserror::Error;

use crate::plan::{self, Input, PlanError};

/// Why `iolab precondition` cannot be planned.
#[derive(Debug, Error)]
pub enum PreconditionError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("--passes must be 1 or more")]
    NoPasses,
}

/// Why preconditioning takes one group.
const WHY_ONE: &str = "it writes one region sequentially, --passes times; precondition the whole target once, or each group's region with a file of its own";

/// Long enough never to end a fill early: the I/O limit ends the job.
const UNBOUNDED: Nanos = Nanos(100 * 365 * 24 * 3600 * 1_000_000_000);

/// The options a fill sets itself, which the user may not give.
pub const FILL_KEYS: &[&str] =
    &["rw", "read_pct", "random_pct", "runtime", "io_limit", "bs_split", "rate_iops", "burst"];

/// Sequential 128 KiB writes at QD 32, no ramp, no time limit. The user's flags lie over it.
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

/// `job` (from `defaults`) writing `bytes` and stopping: passes x region for preconditioning.
pub fn limited_to(job: &JobSpec, name: String, bytes: u64) -> JobSpec {
    JobSpec { name, io_limit: Some(IoLimit::Bytes(Bytes(bytes))), ..job.clone() }
}

/// The fill `job` writing a region of `region` bytes `passes` times.
pub fn passes(job: &JobSpec, passes: u32, region: u64) -> JobSpec {
    limited_to(
        job,
        format!("precondition: {passes} pass(es) of sequential writes"),
        region * u64::from(passes),
    )
}

/// `iolab precondition`: the SNIA way of putting a device in a known state before measuring.
pub struct Precondition {
    pub plan: RunPlan,
    job: JobSpec,
    passes: u32,
    trim: bool,
}

impl Precondition {
    /// Preconditions the region of `input`'s one group (a job file's target and region).
    pub fn over(input: &Input, passes: u32, trim: bool) -> Result<Precondition, PreconditionError> {
        plan::refuse_groups(input, "precondition", WHY_ONE)?;
        plan::refuse_input(
            input,
            FILL_KEYS,
            "precondition",
            "writes the whole region sequentially, --passes times",
        )?;
        if passes == 0 {
            return Err(PreconditionError::NoPasses);
        }
        let (plan, job) = plan::one_group(&defaults(), input, "precondition", WHY_ONE)?;
        Ok(Precondition { plan, job, passes, trim })
    }

    /// Discards the region first when asked (a device that refuses is said in the notes, and
    /// the passes go on), then writes it `passes` times.
    pub fn run(&self, lab: &mut Lab<'_>, observer: &mut dyn Observer) -> Result<Preconditioning, RunError> {
        let targets = lab.prepare(&self.job, observer)?;
        let region: u64 = targets.iter().flatten().map(|t| t.region_size).sum();
        let mut notes = Vec::new();
        if self.trim {
            for target in targets.iter().flatten() {
                observer.note(&format!(
                    "discarding {} of {}",
                    Bytes(target.region_size),
                    target.path.display()
                ));
                if let Err(e) = target.discard() {
                    notes.push(format!("{e}; preconditioning went on without it"));
                }
            }
        }
        lab.run_prepared(&passes(&self.job, self.passes, region), &targets, observer)?;
        Ok(Preconditioning {
            passes: self.passes,
            region_bytes: region,
            trimmed: self.trim && notes.is_empty(),
            notes,
        })
    }
}
