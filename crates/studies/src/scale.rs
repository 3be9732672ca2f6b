//! The studies of concurrency: `iolab scale` (the workload on each target alone, then on all of
//! them together) and `iolab run --each-alone` (each concurrent group alone, then together).
use std::path::PathBuf;

use iolab_spec::{scale, Options, RunPlan};

use crate::plan;

/// The plan of a scaling run over `targets`: a job per target, then one over all of them.
pub fn plan(options: &Options, targets: Vec<PathBuf>) -> Result<RunPlan, String> {
    let base = plan::base_plan(options, targets)?;
    let jobs = match base.jobs.first().map(scale::plan) {
        Some(jobs) => jobs.map_err(|e| e.to_string())?,
        None => return Err("nothing to run".into()),
    };
    Ok(RunPlan { jobs, output: base.output })
}

/// The plan of an interference run (`--each-alone`) of `plan`'s one job: each of its
/// concurrent groups alone, then all of them together.
pub fn each_alone(plan: RunPlan) -> Result<RunPlan, String> {
    let [job] = plan.jobs.as_slice() else {
        return Err("--each-alone takes a job file of one job (its groups run alone, then together)".into());
    };
    let jobs = scale::each_alone(job).map_err(|e| e.to_string())?;
    Ok(RunPlan { jobs, output: plan.output })
}
