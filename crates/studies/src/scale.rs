//! The studies of concurrency: `iolab scale` (the workload on each target alone, then on all of
//! them together) and `iolab run --each-alone` (each concurrent group alone, then together).
use std::path::PathBuf;

use iolab_spec::{scale, Options, RunPlan, SpecError};
use thiserror::Error;

use crate::plan::{self, Input, PlanError};

/// Why a scaling or interference run cannot be planned.
#[derive(Debug, Error)]
pub enum ScaleError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(
        "`iolab scale` runs one workload on each target alone, then on all; the job file's job has {0} groups: to see what concurrent groups cost each other, use `iolab run FILE --each-alone`"
    )]
    SeveralGroups(usize),
    #[error("--each-alone takes a job file of one job (its groups run alone, then together)")]
    EachAloneJobs,
}

/// The plan of a scaling run over `targets`: a job per target, then one over all of them.
pub fn plan(options: &Options, targets: Vec<PathBuf>) -> Result<RunPlan, ScaleError> {
    plan_of(&Input::flags(options, targets))
}

/// The scaling run of `input`: a job file's one workload over the targets given.
pub fn plan_of(input: &Input) -> Result<RunPlan, ScaleError> {
    let base = plan::resolve_input(&plan::step_defaults(), input)?;
    let job = plan::one_job(&base, "scale", "one workload, run on each target alone and then on all")?;
    if job.groups.len() > 1 {
        return Err(ScaleError::SeveralGroups(job.groups.len()));
    }
    let jobs = scale::plan(&job)?;
    Ok(RunPlan { jobs, output: base.output })
}

/// The plan of an interference run (`--each-alone`) of `plan`'s one job: each of its
/// concurrent groups alone, then all of them together.
pub fn each_alone(plan: RunPlan) -> Result<RunPlan, ScaleError> {
    let [job] = plan.jobs.as_slice() else {
        return Err(ScaleError::EachAloneJobs);
    };
    let jobs = scale::each_alone(job)?;
    Ok(RunPlan { jobs, output: plan.output })
}
