//! The plan a study (ladder, scale) starts from: the user's options over the study's shorter
//! default timing, since a study runs its workload several times.

use std::path::PathBuf;

use iolab_spec::{resolve, Nanos, Options, RunPlan};

/// Measured time per step unless the user gives --runtime.
const STEP_RUNTIME: Nanos = Nanos(5_000_000_000);
/// Warm-up per step unless the user gives --ramp.
const STEP_RAMP: Nanos = Nanos(1_000_000_000);

/// Resolves `options` with `targets` (from the command's positional arguments) into the
/// one-job plan every step of the study varies.
pub fn base_plan(options: &Options, targets: Vec<PathBuf>) -> Result<RunPlan, String> {
    let mut flags = options.clone();
    if !targets.is_empty() {
        if flags.target.is_some() {
            return Err("give the target either as an argument or with --target, not both".into());
        }
        flags.target = Some(targets);
    }
    let study_defaults = Options { runtime: Some(STEP_RUNTIME), ramp: Some(STEP_RAMP), ..Options::default() };
    resolve(Some(&study_defaults), &flags).map_err(|e| e.to_string())
}
