//! Keeping a measuring command's results in the results database: the run is recorded before
//! the first I/O (so a database that cannot be used stops the command before it measures), each
//! job's result is committed as the job ends, and the command's own report when it finishes.

use std::path::PathBuf;
use std::process::ExitCode;

use iolab_environment::{Environment, TargetUse};
use iolab_runner::ResultSink;
use iolab_spec::{JobSpec, RunPlan};
use iolab_stats::result::{JobResult, Verdict};
use iolab_store::{now_unix_s, NewRun, Point, Recorder, RunId, RunStatus, Sampler, Store, StoreError};

use crate::args::StoreArgs;
use crate::exit::say;
use crate::{exit, output_file};

/// Opens the results database `args` names (or the default one).
pub fn open_store(args: &StoreArgs) -> Result<Store, ExitCode> {
    let path = args.path().map_err(exit::usage)?;
    Store::open(&path).map_err(|e| exit::store_failed(&e))
}

/// Whether everything a finished command measured reached the results database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    All,
    /// A point, or the run's end, could not be written (a full disk, say).
    Partly,
}

/// A run being kept in the store (`iolab_store::Recorder`), or nothing with --no-store; with
/// this machine's fingerprint at the start, captured again at the end for the NVMe health delta.
pub struct Recording {
    recorder: Option<Recorder>,
    before: Environment,
    /// The paths the fingerprint covers.
    paths: Vec<PathBuf>,
    /// A job could not start: the run ends as failed, whatever its jobs say.
    failed: bool,
}

impl Recording {
    /// Records the start of a `kind` run of `plan` (its jobs are what `--resume` matches).
    /// A database that is not iolab's, damaged or newer stops the command; the default one
    /// that cannot be opened (no writable home) only costs the keeping, with a warning.
    /// The output file is checked first: nothing is recorded or run for an output that would
    /// destroy a target or the database.
    /// `title` names what ran where the jobs cannot ("suite quick").
    pub fn start(
        args: &StoreArgs,
        kind: &str,
        title: Option<&str>,
        plan: &RunPlan,
    ) -> Result<Recording, ExitCode> {
        output_file::check_output(plan.output.path.as_deref(), &plan.jobs, args)?;
        Recording::start_covering(args, (kind, title), plan, fingerprint_paths(&plan.jobs))
    }

    /// Records the start of a run whose targets are on other hosts (a fleet): this machine's
    /// fingerprint covers none of them, and their settings are not this machine's to warn about.
    pub fn start_remote(
        args: &StoreArgs,
        kind: &str,
        title: Option<&str>,
        plan: &RunPlan,
    ) -> Result<Recording, ExitCode> {
        output_file::check_output(plan.output.path.as_deref(), &[], args)?;
        Recording::start_covering(args, (kind, title), plan, Vec::new())
    }

    fn start_covering(
        args: &StoreArgs,
        (kind, title): (&str, Option<&str>),
        plan: &RunPlan,
        paths: Vec<PathBuf>,
    ) -> Result<Recording, ExitCode> {
        let before = Environment::capture(&paths);
        if !plan.output.quiet && !paths.is_empty() {
            for warning in iolab_environment::warnings(&before, &uses(&plan.jobs)) {
                say!("iolab: warning: {warning}");
            }
        }
        let run = new_run(kind, title, &plan.jobs, &before);
        Recording::begin(args, &run, before, paths)
    }

    /// Records the start of `run`, described by its command (a fileset), with the host's
    /// fingerprint covering no target.
    pub fn start_described(
        args: &StoreArgs,
        run: impl FnOnce(&Environment) -> NewRun,
    ) -> Result<Recording, ExitCode> {
        let before = Environment::capture(&[]);
        let run = run(&before);
        Recording::begin(args, &run, before, Vec::new())
    }

    fn begin(
        args: &StoreArgs,
        run: &NewRun,
        before: Environment,
        paths: Vec<PathBuf>,
    ) -> Result<Recording, ExitCode> {
        let unkept = |before| Recording { recorder: None, before, paths: Vec::new(), failed: false };
        if args.no_store {
            return Ok(unkept(before));
        }
        let path = args.path().map_err(|message| exit::fail(exit::USAGE, &message))?;
        match Store::open(&path).and_then(|store| Recorder::begin(store, run)) {
            Ok(recorder) => Ok(Recording { recorder: Some(recorder), before, paths, failed: false }),
            // The default database that cannot be used costs only the keeping; a named one is
            // the user's to fix before anything runs.
            Err(e @ (StoreError::Open { .. } | StoreError::Unwritable { .. } | StoreError::Full { .. }))
                if !args.named() =>
            {
                not_kept(&e);
                Ok(unkept(before))
            }
            Err(e) => Err(exit::store_failed(&e)),
        }
    }

    /// Continues `recorder`'s run of `plan`.
    pub fn resume(recorder: Recorder, plan: &RunPlan) -> Recording {
        let paths = fingerprint_paths(&plan.jobs);
        let before = Environment::capture(&paths);
        Recording { recorder: Some(recorder), before, paths, failed: false }
    }

    /// The run's number in the store; `None` when it is not kept.
    pub fn run_id(&self) -> Option<RunId> {
        self.recorder.as_ref().map(Recorder::run)
    }

    /// A connection of its own for samples of the run, taken on another thread; `None` when the
    /// run is not kept (or the database cannot be opened again, which is said).
    pub fn sampler(&self) -> Option<Sampler> {
        let recorder = self.recorder.as_ref()?;
        recorder.sampler().map_err(|e| say!("iolab: warning: the run's samples will not be kept: {e}")).ok()
    }

    /// A job of the run could not start: the run is kept as failed.
    pub fn mark_failed(&mut self) {
        self.failed = true;
    }

    /// Keeps the next point, the `kind` (point, phase) `name`, which `make` builds from its
    /// sequence number; one that cannot be written is said and counted as lost.
    pub fn keep(&mut self, kind: &str, name: &str, make: impl FnOnce(u32) -> Point) -> Option<u32> {
        let recorder = self.recorder.as_mut()?;
        recorder
            .keep(&format!("'{name}'"), make)
            .map_err(|e| say!("iolab: error: {kind} '{name}' was not kept in the results database: {e}"))
            .ok()
    }

    /// Records how the run ended (interrupted, complete when nothing failed and it earned
    /// `code` OK, else failed) and the command's own report (`study_json`, the JSON the command
    /// prints with --json), and says where the run was kept. Returns whether anything the run
    /// measured could not be kept (each lost point was named when it was lost).
    pub fn finish(mut self, interrupted: bool, code: u8, study_json: Option<&str>, quiet: bool) -> Kept {
        let Some(recorder) = self.recorder.take() else { return Kept::All };
        let status = if interrupted {
            RunStatus::Interrupted
        } else if !self.failed && code == exit::OK {
            RunStatus::Complete
        } else {
            RunStatus::Failed
        };
        let after = Environment::capture(&self.paths);
        for delta in self.before.health_deltas(&after) {
            say!("iolab: {}: NVMe health over the run: {}", delta.path.display(), delta.delta.describe());
        }
        let report = study_json.and_then(|json| serde_json::from_str(json).ok());
        let finished = recorder.finish(status, report, serde_json::to_value(&after).ok());
        if let Err(e) = &finished.ended {
            say!("iolab: error: the end of run {} was not recorded: {e}", finished.run);
        }
        if !finished.lost.is_empty() {
            say!(
                "iolab: error: {} of the run's {} points were not kept in {} (run {}): {}",
                finished.lost.len(),
                finished.points,
                finished.path.display(),
                finished.run,
                finished.lost.join(", ")
            );
        }
        if !finished.complete() {
            return Kept::Partly;
        }
        if !quiet {
            say!("iolab: kept as run {} in {}", finished.run, finished.path.display());
        }
        Kept::All
    }
}

/// A command that ends without `finish` stopped on an error before or between jobs: the
/// recorder's policy (`Recorder::abandon`) applies, and a failure to apply it is said.
impl Drop for Recording {
    fn drop(&mut self) {
        let Some(recorder) = self.recorder.take() else { return };
        let run = recorder.run();
        if let Err(e) = recorder.abandon() {
            say!("iolab: warning: the end of run {run} was not recorded: {e}");
        }
    }
}

/// Measure, keep, then judge: the measured point is committed first (a crash in judging keeps
/// it), then judged by the same rules `results show --rejudge` applies, and its verdict kept
/// beside it.
impl ResultSink for Recording {
    fn keep_and_judge(&mut self, _job: &JobSpec, result: &JobResult) -> Verdict {
        let seq = self.keep("point", &result.name, |seq| Point::from_job(seq, result, now_unix_s()));
        self.judge_kept(seq, result)
    }

    fn amend_and_judge(&mut self, index: usize, result: &JobResult) -> Verdict {
        let what = format!("what followed '{}'", result.name);
        let amended = self.recorder.as_mut().and_then(|recorder| recorder.amend(index, result, &what));
        let seq = amended.and_then(|amended| {
            amended
                .map_err(|e| {
                    say!(
                        "iolab: error: what was measured after point '{}' was not kept in the results database: {e}",
                        result.name
                    )
                })
                .ok()
        });
        self.judge_kept(seq, result)
    }

    fn forget_last(&mut self) {
        let Some(recorder) = self.recorder.as_mut() else { return };
        if let Err(e) = recorder.forget_last() {
            say!("iolab: warning: the dropped attempt at the last point stays in the results database: {e}");
        }
    }
}

impl Recording {
    /// Judges `result` and keeps its verdict beside point `seq` of the run, when it was kept.
    fn judge_kept(&mut self, seq: Option<u32>, result: &JobResult) -> Verdict {
        let verdict = iolab_analysis::judge::judge(result);
        if let (Some(recorder), Some(seq)) = (self.recorder.as_mut(), seq) {
            if let Err(e) = recorder.judged(seq, &verdict, &format!("the verdict of '{}'", result.name)) {
                say!(
                    "iolab: error: the verdict of point '{}' was not kept in the results database: {e}",
                    result.name
                );
            }
        }
        verdict
    }
}

/// Says once, before the run, that the default database will not keep it, and how to keep it.
fn not_kept(error: &StoreError) {
    match error {
        StoreError::Open { path, detail } => say!(
            "iolab: warning: this run is not kept: cannot open {} ({detail}); give --db PATH or --no-store",
            path.display()
        ),
        StoreError::Unwritable { path, detail } => say!(
            "iolab: warning: this run is not kept: cannot write the results database {} ({detail}); to keep runs, give --db PATH or make it and its directory writable (--no-store silences this)",
            path.display()
        ),
        other => say!("iolab: warning: this run is not kept: {other}"),
    }
}

/// What the store records of a run as it starts.
fn new_run(kind: &str, title: Option<&str>, jobs: &[JobSpec], environment: &Environment) -> NewRun {
    NewRun::starting_now(
        kind,
        label(kind, title, jobs),
        serde_json::to_value(jobs).unwrap_or_default(),
        serde_json::to_value(environment).unwrap_or_default(),
    )
}

/// What the run was, in one line: "sweep randread 4KiB on /dev/loop0, 8 points", "run of 2
/// groups (randread 4KiB; write 1MiB) on a scratch file", "run randread 4KiB on f, 3 repeats",
/// "suite quick on /dev/loop0" (a `title` says what the jobs cannot).
fn label(kind: &str, title: Option<&str>, jobs: &[JobSpec]) -> String {
    let targets = target_paths(jobs);
    let on = if targets.is_empty() { "a scratch file".to_string() } else { targets.join(", ") };
    if let Some(title) = title {
        return format!("{title} on {on}");
    }
    let Some(first) = jobs.first() else { return kind.to_string() };
    let what = match first.groups.as_slice() {
        [one] => one.describe_access(),
        groups => {
            let each: Vec<String> = groups.iter().map(|g| g.describe_access()).collect();
            format!("of {} groups ({})", groups.len(), each.join("; "))
        }
    };
    // Repeats run under one name, one after the other.
    let mut names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    names.dedup();
    let distinct = names.len();
    let repeats = if jobs.len() % distinct == 0 { jobs.len() / distinct } else { 1 };
    let mut counts = Vec::new();
    if distinct > 1 {
        counts.push(format!("{distinct} {}", if kind.ends_with("sweep") { "points" } else { "jobs" }));
    }
    if repeats > 1 {
        counts.push(format!("{repeats} repeats"));
    }
    let counts = if counts.is_empty() { String::new() } else { format!(", {}", counts.join(" x ")) };
    format!("{kind} {what} on {on}{counts}")
}

/// Each distinct target the jobs name, in order (none: the scratch file).
fn target_paths(jobs: &[JobSpec]) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for path in jobs.iter().flat_map(|j| &j.groups).flat_map(|g| &g.target.paths) {
        let path = path.display().to_string();
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

/// The paths whose devices the fingerprint describes: the targets, and the current directory
/// for a job on the scratch file.
fn fingerprint_paths(jobs: &[JobSpec]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = target_paths(jobs).into_iter().map(PathBuf::from).collect();
    if jobs.iter().flat_map(|j| &j.groups).any(|g| g.target.paths.is_empty()) {
        paths.push(PathBuf::from("."));
    }
    paths
}

/// How the jobs use each target, for the warnings about settings that distort results.
fn uses(jobs: &[JobSpec]) -> Vec<TargetUse> {
    jobs.iter()
        .flat_map(|j| &j.groups)
        .flat_map(|g| {
            let paths =
                if g.target.paths.is_empty() { vec![PathBuf::from(".")] } else { g.target.paths.clone() };
            paths.into_iter().map(|path| TargetUse {
                path,
                direct: g.target.direct,
                writes: g.access.writes(),
            })
        })
        .collect()
}
