//! Keeping a measuring command's results in the results database: the run is recorded before
//! the first I/O (so a database that cannot be used stops the command before it measures), each
//! job's result is committed as the job ends, and the command's own report when it finishes.

use std::path::PathBuf;
use std::process::ExitCode;

use iolab_environment::{Environment, TargetUse};
use iolab_runner::ResultSink;
use iolab_spec::{JobSpec, RunPlan};
use iolab_stats::result::{JobResult, RunReport, Verdict};
use iolab_store::{NewRun, Point, RunEnd, RunId, RunStatus, Store, StoreError};

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

/// A run being kept in the store, or nothing with --no-store.
pub struct Recording {
    active: Option<Active>,
    /// A job could not start: the run ends as failed, whatever its jobs say.
    failed: bool,
}

struct Active {
    store: Store,
    run: RunId,
    /// The fingerprint at the start, and the paths it covers: captured again at the end for
    /// the NVMe health delta.
    before: Environment,
    paths: Vec<PathBuf>,
    next_seq: u32,
    /// The run continues an earlier one (`--resume`).
    resumed: bool,
    /// The points that could not be written (each said as it was lost); the run goes on, its
    /// results still reach the output, and the exit code says so.
    lost: Vec<String>,
    /// The place in the run of each result kept so far, in the order they came (`None`: lost).
    kept: Vec<Option<u32>>,
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
        if args.no_store {
            return Ok(Recording { active: None, failed: false });
        }
        let path = args.path().map_err(|message| exit::fail(exit::USAGE, &message))?;
        // The default database that cannot be used costs only the keeping; a named one is the
        // user's to fix before anything runs.
        let unkept = |e: StoreError| match e {
            StoreError::Open { .. } | StoreError::Unwritable { .. } | StoreError::Full { .. }
                if !args.named() =>
            {
                not_kept(&e);
                Ok(Recording { active: None, failed: false })
            }
            e => Err(exit::store_failed(&e)),
        };
        let mut store = match Store::open(&path).and_then(writable) {
            Ok(store) => store,
            Err(e) => return unkept(e),
        };
        let run = match store.begin_run(&new_run(kind, title, &plan.jobs, &before)) {
            Ok(run) => run,
            Err(e) => return unkept(e),
        };
        let active = Active {
            store,
            run,
            before,
            paths,
            next_seq: 0,
            resumed: false,
            lost: Vec::new(),
            kept: Vec::new(),
        };
        Ok(Recording { active: Some(active), failed: false })
    }

    /// Continues run `run` of `plan`, which already holds `points` points.
    pub fn resume(store: Store, run: RunId, plan: &RunPlan, points: u32) -> Recording {
        let paths = fingerprint_paths(&plan.jobs);
        let before = Environment::capture(&paths);
        let active = Active {
            store,
            run,
            before,
            paths,
            next_seq: points,
            resumed: true,
            lost: Vec::new(),
            kept: Vec::new(),
        };
        Recording { active: Some(active), failed: false }
    }

    /// The run's number in the store; `None` when it is not kept.
    pub fn run_id(&self) -> Option<RunId> {
        self.active.as_ref().map(|active| active.run)
    }

    /// A job of the run could not start: the run is kept as failed.
    pub fn mark_failed(&mut self) {
        self.failed = true;
    }

    /// Records how the run ended and the command's own report (`study_json`, the JSON the
    /// command prints with --json), and says where the run was kept. Returns whether anything
    /// the run measured could not be kept (each lost point was named when it was lost).
    pub fn finish(mut self, report: &RunReport, study_json: Option<&str>, quiet: bool) -> Kept {
        let Some(mut active) = self.active.take() else { return Kept::All };
        let status = if report.interrupted {
            RunStatus::Interrupted
        } else if !self.failed && exit::finished_run_code(report) == exit::OK {
            RunStatus::Complete
        } else {
            RunStatus::Failed
        };
        let after = Environment::capture(&active.paths);
        for delta in active.before.health_deltas(&after) {
            say!("iolab: {}: NVMe health over the run: {}", delta.path.display(), delta.delta.describe());
        }
        let end = RunEnd {
            status,
            finished_at_unix_s: now_unix_s(),
            report: study_json.and_then(|json| serde_json::from_str(json).ok()),
            environment_after: serde_json::to_value(&after).ok(),
        };
        let ended = active.store.finish_run(active.run, &end);
        if let Err(e) = &ended {
            say!("iolab: error: the end of run {} was not recorded: {e}", active.run);
        }
        if !active.lost.is_empty() {
            say!(
                "iolab: error: {} of the run's {} points were not kept in {} (run {}): {}",
                active.lost.len(),
                active.next_seq,
                active.store.path().display(),
                active.run,
                active.lost.join(", ")
            );
            return Kept::Partly;
        }
        match ended {
            Ok(()) if !quiet => {
                say!("iolab: kept as run {} in {}", active.run, active.store.path().display());
                Kept::All
            }
            Ok(()) => Kept::All,
            Err(_) => Kept::Partly,
        }
    }
}

/// A command that ends without `finish` stopped on an error before or between jobs: a run
/// that measured nothing is forgotten, one that did keeps its points as failed. A resumed run
/// is never forgotten, even with no point kept yet (its health samples would go with it): it
/// stays resumable.
impl Drop for Recording {
    fn drop(&mut self) {
        let Some(mut active) = self.active.take() else { return };
        let ended = if active.next_seq == 0 && !active.resumed {
            active.store.delete_run(active.run)
        } else {
            let status = if active.resumed { RunStatus::Interrupted } else { RunStatus::Failed };
            let end =
                RunEnd { status, finished_at_unix_s: now_unix_s(), report: None, environment_after: None };
            active.store.finish_run(active.run, &end)
        };
        if let Err(e) = ended {
            say!("iolab: warning: the end of run {} was not recorded: {e}", active.run);
        }
    }
}

/// Measure, keep, then judge: the measured point is committed first (a crash in judging keeps
/// it), then judged by the same rules `results show --rejudge` applies, and its verdict kept
/// beside it.
impl ResultSink for Recording {
    fn keep_and_judge(&mut self, _job: &JobSpec, result: &JobResult) -> Verdict {
        let kept = self.active.as_mut().and_then(|active| {
            let seq = active.next_seq;
            active.next_seq += 1;
            match active.store.add_point(active.run, &Point::from_job(seq, result, now_unix_s())) {
                Ok(()) => {
                    active.kept.push(Some(seq));
                    Some((active, seq))
                }
                Err(e) => {
                    say!("iolab: error: point '{}' was not kept in the results database: {e}", result.name);
                    active.lost.push(format!("'{}'", result.name));
                    active.kept.push(None);
                    None
                }
            }
        });
        judge_kept(kept, result)
    }

    fn amend_and_judge(&mut self, index: usize, result: &JobResult) -> Verdict {
        let kept = self.active.as_mut().and_then(|active| {
            let seq = active.kept.get(index).copied().flatten()?;
            match active.store.amend_result(active.run, seq, result) {
                Ok(()) => Some((active, seq)),
                Err(e) => {
                    say!(
                        "iolab: error: what was measured after point '{}' was not kept in the results database: {e}",
                        result.name
                    );
                    active.lost.push(format!("what followed '{}'", result.name));
                    None
                }
            }
        });
        judge_kept(kept, result)
    }

    fn forget_last(&mut self) {
        let Some(active) = self.active.as_mut() else { return };
        let Some(kept) = active.kept.pop() else { return };
        active.next_seq -= 1;
        let Some(seq) = kept else {
            active.lost.pop();
            return;
        };
        if let Err(e) = active.store.truncate_points(active.run, seq) {
            say!("iolab: warning: the dropped attempt at point {seq} stays in the results database: {e}");
        }
    }
}

/// Judges `result` and keeps its verdict beside point `seq` of the run, when it was kept.
fn judge_kept(kept: Option<(&mut Active, u32)>, result: &JobResult) -> Verdict {
    let verdict = iolab_analysis::judge::judge(result);
    if let Some((active, seq)) = kept {
        if let Err(e) = active.store.set_verdict(active.run, seq, &verdict) {
            say!(
                "iolab: error: the verdict of point '{}' was not kept in the results database: {e}",
                result.name
            );
            active.lost.push(format!("the verdict of '{}'", result.name));
        }
    }
    verdict
}

/// The store, if this user may write it: SQLite opens a file it may only read without a word.
fn writable(store: Store) -> Result<Store, StoreError> {
    if !store.read_only() {
        return Ok(store);
    }
    let path = store.path().to_path_buf();
    Err(StoreError::Unwritable {
        path,
        detail: "opened read-only: no permission, or a read-only filesystem".into(),
    })
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
    run_record(
        kind,
        label(kind, title, jobs),
        serde_json::to_value(jobs).unwrap_or_default(),
        serde_json::to_value(environment).unwrap_or_default(),
    )
}

/// A run of `kind` starting now, on this host, by this command line: what it was (`label`),
/// its `plan` and `environment`.
pub(crate) fn run_record(
    kind: &str,
    label: String,
    plan: serde_json::Value,
    environment: serde_json::Value,
) -> NewRun {
    NewRun {
        kind: kind.to_string(),
        label,
        command: std::env::args().collect(),
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        host: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default(),
        started_at_unix_s: now_unix_s(),
        plan,
        environment,
    }
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
        [one] => one.access.describe(),
        groups => {
            let each: Vec<String> = groups.iter().map(|g| g.access.describe()).collect();
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

/// The time now, in whole seconds since the epoch, as the store keeps it.
pub(crate) fn now_unix_s() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}
