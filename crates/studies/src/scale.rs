//! `iolab scale`: the workload on each target alone, then on all of them together
//! (iolab_spec::scale), one job after another.

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
