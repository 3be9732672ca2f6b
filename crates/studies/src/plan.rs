//! The plan a study (ladder, scale, sweep, ...) starts from: the user's options over the
//! study's own defaults, since a study runs its workload several times. The options are the
//! flags, over a job file when the command was given one (`Input`).

use std::path::PathBuf;

use iolab_spec::{flag_name, resolve, JobSpec, Nanos, Options, RunPlan, SpecError};
use thiserror::Error;

/// Why a study's workload cannot be planned: the options do not resolve, or they ask for more
/// than the command measures (`command` is its name, `why` why it takes one of them).
#[derive(Debug, Error)]
pub enum PlanError {
    #[error("give the target either as an argument or with --target, not both")]
    TargetTwice,
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(
        "`iolab {command}` takes a job file of one job ({why}); this one has {jobs} [[job]]s: give each its own file"
    )]
    SeveralJobs { command: &'static str, why: &'static str, jobs: usize },
    #[error("`iolab {command}` {why}; drop {flag}")]
    SetByCommand { command: &'static str, why: &'static str, flag: String },
    #[error("`iolab {command}` {why}; the job file sets `{key}`: remove it")]
    SetInFile { command: &'static str, why: &'static str, key: &'static str },
    #[error("`iolab {command}` measures one group, and the job file has {groups}: {why}")]
    GroupsInFile { command: &'static str, why: &'static str, groups: usize },
    #[error("`iolab {command}` measures one group, and the job has {groups}: {why}")]
    GroupsInJob { command: &'static str, why: &'static str, groups: usize },
    #[error("`iolab {command}` measures one workload on one target or striped set")]
    NotOneWorkload { command: &'static str },
}

/// What a study measures, as the user gave it: a job file's options when the command's argument
/// was one (`iolab sweep blend.toml --qd 1..64`), the flags over them (as in `iolab run`), and
/// the targets given as arguments.
#[derive(Debug, Clone, Default)]
pub struct Input {
    /// The job file (iolab TOML, or a fio job file translated), its layers as written.
    pub file: Option<Options>,
    pub flags: Options,
    /// Targets given as arguments; with `--target` too, refused.
    pub targets: Vec<PathBuf>,
}

impl Input {
    /// Flags and targets, no job file.
    pub fn flags(flags: &Options, targets: Vec<PathBuf>) -> Input {
        Input { file: None, flags: flags.clone(), targets }
    }

    /// The same input with other flags.
    pub fn with_flags(&self, flags: Options) -> Input {
        Input { flags, ..self.clone() }
    }

    /// The keys set anywhere in the input: the flags, and every layer of the job file.
    pub fn keys_set(&self) -> Vec<&'static str> {
        let mut keys = self.flags.keys_set();
        if let Some(file) = &self.file {
            let jobs = std::iter::once(file).chain(&file.job);
            for layer in jobs.flat_map(|job| std::iter::once(job).chain(&job.group)) {
                for key in layer.keys_set() {
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
            }
        }
        keys
    }
}

/// Resolves `input` over the command's own `defaults` (which lie over the built-in ones, and
/// under the job file).
pub fn resolve_input(defaults: &Options, input: &Input) -> Result<RunPlan, PlanError> {
    let mut flags = input.flags.clone();
    if !input.targets.is_empty() {
        if flags.target.is_some() {
            return Err(PlanError::TargetTwice);
        }
        flags.target = Some(input.targets.clone());
    }
    let file = match &input.file {
        None => defaults.clone(),
        Some(file) => Options { job: file.job.clone(), group: file.group.clone(), ..defaults.overlay(file) },
    };
    Ok(resolve(Some(&file), &flags)?)
}

/// The one job of `plan`: a study over a job file of several [[job]]s is refused, saying why.
pub fn one_job(plan: &RunPlan, command: &'static str, why: &'static str) -> Result<JobSpec, PlanError> {
    match plan.jobs.as_slice() {
        [job] => Ok(job.clone()),
        jobs => Err(PlanError::SeveralJobs { command, why, jobs: jobs.len() }),
    }
}

/// Refuses the options a command sets itself, in the flags or anywhere in the job file.
pub fn refuse_input(
    input: &Input,
    keys: &[&str],
    command: &'static str,
    why: &'static str,
) -> Result<(), PlanError> {
    refuse(&input.flags, keys, command, why)?;
    match input.keys_set().into_iter().find(|k| keys.contains(k)) {
        Some(key) => Err(PlanError::SetInFile { command, why, key }),
        None => Ok(()),
    }
}

/// Refuses a job file whose job lists several groups, before its keys are looked at: `why` says
/// why the command measures one stream.
pub fn refuse_groups(input: &Input, command: &'static str, why: &'static str) -> Result<(), PlanError> {
    let Some(file) = &input.file else { return Ok(()) };
    let groups = file.group.len().max(file.job.iter().map(|j| j.group.len()).max().unwrap_or(0));
    if groups > 1 {
        return Err(PlanError::GroupsInFile { command, why, groups });
    }
    Ok(())
}

/// The one job of a command that measures one workload of one group (a single stream): a job
/// of several groups is refused with `why`.
pub fn one_group(
    defaults: &Options,
    input: &Input,
    command: &'static str,
    why: &'static str,
) -> Result<(RunPlan, JobSpec), PlanError> {
    let plan = resolve_input(defaults, input)?;
    let job = one_job(&plan, command, why)?;
    if job.groups.len() > 1 {
        return Err(PlanError::GroupsInJob { command, why, groups: job.groups.len() });
    }
    Ok((plan, job))
}

/// Measured time per step unless the user gives --runtime.
const STEP_RUNTIME: Nanos = Nanos(5_000_000_000);
/// Warm-up per step unless the user gives --ramp.
const STEP_RAMP: Nanos = Nanos(1_000_000_000);

/// A study step's timing: 5 s measured after 1 s of ramp.
pub fn step_defaults() -> Options {
    Options { runtime: Some(STEP_RUNTIME), ramp: Some(STEP_RAMP), ..Options::default() }
}

/// Resolves `options` with `targets` over the command's own `defaults` (which lie over the
/// built-in ones).
pub fn plan_over(defaults: &Options, options: &Options, targets: Vec<PathBuf>) -> Result<RunPlan, PlanError> {
    resolve_input(defaults, &Input::flags(options, targets))
}

/// Refuses the options a command sets itself: "`iolab precondition` sets --rw itself; drop it".
pub fn refuse(
    options: &Options,
    keys: &[&str],
    command: &'static str,
    why: &'static str,
) -> Result<(), PlanError> {
    match options.keys_set().into_iter().find(|k| keys.contains(k)) {
        Some(key) => Err(PlanError::SetByCommand { command, why, flag: flag_name(key) }),
        None => Ok(()),
    }
}

/// The one job of a command that measures one workload: `options` (with `target`) over
/// `defaults`.
pub fn one_workload(
    defaults: &Options,
    options: &Options,
    target: Option<PathBuf>,
    command: &'static str,
) -> Result<(RunPlan, JobSpec), PlanError> {
    let plan = plan_over(defaults, options, target.into_iter().collect())?;
    match plan.jobs.as_slice() {
        [job] if job.groups.len() == 1 => {
            let job = job.clone();
            Ok((plan, job))
        }
        _ => Err(PlanError::NotOneWorkload { command }),
    }
}

/// `plan` with each job run `times` times in a row, under the same name (the store and
/// `iolab compare` take same-named points of a run as repeats).
pub fn repeated(plan: RunPlan, times: u32) -> RunPlan {
    let jobs = plan.jobs.iter().flat_map(|job| std::iter::repeat_n(job, times as usize).cloned()).collect();
    RunPlan { jobs, ..plan }
}
