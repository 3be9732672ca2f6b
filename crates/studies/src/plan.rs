//! The plan a study (ladder, scale, sweep, ...) starts from: the user's options over the
//! study's own defaults, since a study runs its workload several times. The options are the
//! flags, over a job file when the command was given one (`Input`).

use std::path::PathBuf;

use iolab_spec::{flag_name, resolve, JobSpec, Nanos, Options, RunPlan};

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
pub fn resolve_input(defaults: &Options, input: &Input) -> Result<RunPlan, String> {
    let mut flags = input.flags.clone();
    if !input.targets.is_empty() {
        if flags.target.is_some() {
            return Err("give the target either as an argument or with --target, not both".into());
        }
        flags.target = Some(input.targets.clone());
    }
    let file = match &input.file {
        None => defaults.clone(),
        Some(file) => Options { job: file.job.clone(), group: file.group.clone(), ..defaults.overlay(file) },
    };
    resolve(Some(&file), &flags).map_err(|e| e.to_string())
}

/// The one job of `plan`: a study over a job file of several [[job]]s is refused, saying why.
pub fn one_job(plan: &RunPlan, command: &str, why: &str) -> Result<JobSpec, String> {
    match plan.jobs.as_slice() {
        [job] => Ok(job.clone()),
        jobs => Err(format!(
            "`iolab {command}` takes a job file of one job ({why}); this one has {} [[job]]s: give each its own file",
            jobs.len()
        )),
    }
}

/// Refuses the options a command sets itself, in the flags or anywhere in the job file.
pub fn refuse_input(input: &Input, keys: &[&str], command: &str, why: &str) -> Result<(), String> {
    refuse(&input.flags, keys, command, why)?;
    match input.keys_set().into_iter().find(|k| keys.contains(k)) {
        Some(key) => Err(format!("`iolab {command}` {why}; the job file sets `{key}`: remove it")),
        None => Ok(()),
    }
}

/// Refuses a job file whose job lists several groups, before its keys are looked at: `why` says
/// why the command measures one stream.
pub fn refuse_groups(input: &Input, command: &str, why: &str) -> Result<(), String> {
    let Some(file) = &input.file else { return Ok(()) };
    let groups = file.group.len().max(file.job.iter().map(|j| j.group.len()).max().unwrap_or(0));
    if groups > 1 {
        return Err(format!("`iolab {command}` measures one group, and the job file has {groups}: {why}"));
    }
    Ok(())
}

/// The one job of a command that measures one workload of one group (a single stream): a job
/// of several groups is refused with `why`.
pub fn one_group(
    defaults: &Options,
    input: &Input,
    command: &str,
    why: &str,
) -> Result<(RunPlan, JobSpec), String> {
    let plan = resolve_input(defaults, input)?;
    let job = one_job(&plan, command, why)?;
    if job.groups.len() > 1 {
        return Err(format!(
            "`iolab {command}` measures one group, and the job has {}: {why}",
            job.groups.len()
        ));
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
pub fn plan_over(defaults: &Options, options: &Options, targets: Vec<PathBuf>) -> Result<RunPlan, String> {
    resolve_input(defaults, &Input::flags(options, targets))
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
