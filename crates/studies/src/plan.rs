//! The plan a study (ladder, scale, sweep, ...) starts from: the user's options over the
//! study's own defaults, since a study runs its workload several times.

use std::path::PathBuf;

use iolab_spec::{flag_name, resolve, JobSpec, Nanos, Options, RunPlan};

/// Measured time per step unless the user gives --runtime.
const STEP_RUNTIME: Nanos = Nanos(5_000_000_000);
/// Warm-up per step unless the user gives --ramp.
const STEP_RAMP: Nanos = Nanos(1_000_000_000);

/// Resolves `options` with `targets` (from the command's positional arguments) into the
/// one-job plan every step of the study varies, with 5 s + 1 s ramp per step by default.
pub fn base_plan(options: &Options, targets: Vec<PathBuf>) -> Result<RunPlan, String> {
    plan_over(&step_defaults(), options, targets)
}

/// A study step's timing: 5 s measured after 1 s of ramp.
pub fn step_defaults() -> Options {
    Options { runtime: Some(STEP_RUNTIME), ramp: Some(STEP_RAMP), ..Options::default() }
}

/// Resolves `options` with `targets` over the command's own `defaults` (which lie over the
/// built-in ones).
pub fn plan_over(defaults: &Options, options: &Options, targets: Vec<PathBuf>) -> Result<RunPlan, String> {
    let mut flags = options.clone();
    if !targets.is_empty() {
        if flags.target.is_some() {
            return Err("give the target either as an argument or with --target, not both".into());
        }
        flags.target = Some(targets);
    }
    resolve(Some(defaults), &flags).map_err(|e| e.to_string())
}

/// Refuses the options a command sets itself: "`iolab precondition` sets --rw itself; drop it".
pub fn refuse(options: &Options, keys: &[&str], command: &str, why: &str) -> Result<(), String> {
    match options.keys_set().into_iter().find(|k| keys.contains(k)) {
        Some(key) => Err(format!("`iolab {command}` {why}; drop {}", flag_name(key))),
        None => Ok(()),
    }
}

/// The one job of a command that measures one workload: `options` (with `target`) over
/// `defaults`.
pub fn one_workload(
    defaults: &Options,
    options: &Options,
    target: Option<PathBuf>,
    command: &str,
) -> Result<(RunPlan, JobSpec), String> {
    let plan = plan_over(defaults, options, target.into_iter().collect())?;
    match plan.jobs.as_slice() {
        [job] if job.groups.len() == 1 => {
            let job = job.clone();
            Ok((plan, job))
        }
        _ => Err(format!("`iolab {command}` measures one workload on one target or striped set")),
    }
}

/// `plan` with each job run `times` times in a row, under the same name (the store and
/// `iolab compare` take same-named points of a run as repeats).
pub fn repeated(plan: RunPlan, times: u32) -> RunPlan {
    let jobs = plan.jobs.iter().flat_map(|job| std::iter::repeat_n(job, times as usize).cloned()).collect();
    RunPlan { jobs, ..plan }
}
