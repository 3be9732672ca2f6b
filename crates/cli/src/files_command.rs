//! `iolab files [DIR]`: the fileset workload (crates/files), each phase kept in the results
//! database as it ends (a point per phase, so `results`, `compare` and `report` see it), then
//! the report; `iolab files --clean DIR` removes a killed run's tree.

use std::path::PathBuf;
use std::process::ExitCode;

use iolab_files::{
    safety, Failure, FilesCause, FilesError, FilesOptions, FilesPlan, OpKind, PhaseProgress, PhaseResult,
    RunOptions,
};
use iolab_report::{files_json, files_text, thousands};
use iolab_stats::result::{Bottleneck, SeriesPoint, Verdict};
use iolab_stats::IntervalStats;
use iolab_store::{Point, PointSummary, RunEnd, RunId, RunStatus, Store};

use crate::args::{FilesArgs, StoreArgs};
use crate::exit::{self, say};
use crate::files_progress::FilesLine;
use crate::flow;
use crate::job_source;
use crate::recording::now_unix_s;

pub fn run(args: FilesArgs, store: &StoreArgs) -> ExitCode {
    let options = match options(&args) {
        Ok(options) => options,
        Err(message) => return exit::usage(message),
    };
    if args.clean {
        return match options.dir {
            Some(dir) => clean(dir),
            None => exit::usage("--clean needs DIR (or a job file's `dir`)"),
        };
    }
    let plan = match options.plan() {
        Ok(plan) => plan,
        Err(e) => return exit::usage(e),
    };
    let (json, quiet_flag, keep) =
        (options.json == Some(true), options.quiet == Some(true), options.keep == Some(true));
    let interrupt = match flow::install_signals() {
        Ok(flag) => flag,
        Err(code) => return code,
    };
    let dir =
        options.dir.clone().unwrap_or_else(|| PathBuf::from(format!("iolab-files.{}", std::process::id())));
    let mut keeping = match Keeping::start(store, &plan, &dir, false) {
        Ok(keeping) => keeping,
        Err(code) => return code,
    };
    let quiet = quiet_flag || json;
    let progress = PhaseProgress::new(plan.threads);
    let run_options = RunOptions { dir: dir.clone(), keep, interrupt: &interrupt, progress: Some(&progress) };
    let line = FilesLine::new(quiet);
    let ran = line.while_running(&progress, || {
        iolab_files::run(&plan, &run_options, |phase| {
            if !quiet {
                line.say(&format!(
                    "iolab: files: {} {} of {} in {:.2} s ({}/s)",
                    phase.phase,
                    thousands(phase.done as f64),
                    thousands(phase.planned as f64),
                    phase.elapsed_s,
                    thousands(phase.ops_per_s)
                ));
            }
            keeping.add(phase, |seq| point(seq, &plan, phase, &dir));
        })
    });
    let report = match ran {
        Ok(report) => report,
        Err(e) => {
            keeping.forget();
            let code = match e {
                FilesError::Plan(_) | FilesError::Refused(_) => exit::USAGE,
                FilesError::Io { .. } => exit::INTERNAL,
            };
            return exit::fail(code, &e.to_string());
        }
    };
    let kept = serde_json::to_value(&report).unwrap_or_default();
    let rendered = if json { files_json(&kept) } else { files_text(&kept) };
    let status = if report.interrupted() {
        RunStatus::Interrupted
    } else if report.failure().is_some() {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    keeping.finish(status, kept, quiet_flag);
    let output = iolab_spec::OutputSpec { json, ..Default::default() };
    if let Err(code) = flow::write_output(&output, &rendered) {
        return code;
    }
    if let Some((phase, failure)) = report.failure() {
        return stopped(phase, failure, "stopped", "");
    }
    if report.interrupted() {
        say!("iolab: interrupted; the phases done so far were reported");
        return ExitCode::from(exit::INTERRUPTED);
    }
    ExitCode::from(exit::OK)
}

/// The run's options: the command line's flags over the job file's keys.
pub(crate) fn options(args: &FilesArgs) -> Result<FilesOptions, String> {
    let (file, dir) = job_and_dir(&args.paths)?;
    let from_file = match file {
        Some(path) => iolab_files::job::load(path)?,
        None => FilesOptions::default(),
    };
    Ok(args.options(dir.cloned()).over(from_file))
}

/// `[JOB_FILE] [DIR]`: a lone argument is the job file when it reads as one (a directory never
/// does), else DIR.
fn job_and_dir(paths: &[PathBuf]) -> Result<(Option<&PathBuf>, Option<&PathBuf>), String> {
    let job = |p: &PathBuf| !p.is_dir() && job_source::is_job_file(p);
    match paths {
        [] => Ok((None, None)),
        [one] if job(one) => Ok((Some(one), None)),
        [one] => Ok((None, Some(one))),
        [file, dir] if job(file) => Ok((Some(file), Some(dir))),
        [file, _] => Err(format!(
            "{} is not a job file (a TOML file of `iolab files` keys): give [JOB_FILE] DIR, or DIR alone",
            file.display()
        )),
        _ => Err("give at most a job file and DIR".into()),
    }
}

fn clean(dir: PathBuf) -> ExitCode {
    match safety::clean(&dir) {
        Ok(cleaned) => {
            say!(
                "iolab: removed {} files and {} directories of iolab's tree in {}{}",
                thousands(cleaned.files as f64),
                thousands(cleaned.dirs as f64),
                dir.display(),
                if cleaned.removed_top { " and the directory itself" } else { "" }
            );
            if let Some(first) = cleaned.left.first() {
                say!(
                    "iolab: warning: {} entries not made by iolab were left (first: {}), with the marker",
                    cleaned.left.len(),
                    first.display()
                );
            }
            ExitCode::from(exit::OK)
        }
        Err(e @ FilesError::Refused(_)) => exit::usage(e),
        Err(e) => exit::fail(exit::INTERNAL, &e.to_string()),
    }
}

/// The run in the results database, a point per phase as it ends; nothing with --no-store,
/// and only a warning when the default database cannot be used. A fleet's run (`fleet`) is
/// kind `fleet files`, its file count per host.
pub(crate) struct Keeping {
    kept: Option<(Store, RunId)>,
    next_seq: u32,
}

impl Keeping {
    pub(crate) fn start(
        args: &StoreArgs,
        plan: &FilesPlan,
        dir: &std::path::Path,
        fleet: bool,
    ) -> Result<Keeping, ExitCode> {
        let none = Keeping { kept: None, next_seq: 0 };
        if args.no_store {
            return Ok(none);
        }
        let path = args.path().map_err(exit::usage)?;
        let phases: Vec<&str> = plan.phases.iter().map(|p| p.name()).collect();
        let (kind, count) = if fleet { ("fleet files", "files per host") } else { ("files", "files") };
        let label = format!(
            "{kind} {} ({} {count}, {}, {} thread(s){}) in {}",
            phases.join(","),
            thousands(plan.total_files() as f64),
            plan.engine.name(),
            plan.threads,
            if plan.shared_dir { ", shared dir" } else { "" },
            dir.display()
        );
        let plan = serde_json::to_value(plan).unwrap_or_default();
        let run = crate::recording::run_record(kind, label, plan, serde_json::Value::Null);
        let begun = Store::open(&path).and_then(|mut store| store.begin_run(&run).map(|id| (store, id)));
        match begun {
            Ok(kept) => Ok(Keeping { kept: Some(kept), next_seq: 0 }),
            Err(e) if !args.named() => {
                say!("iolab: warning: this run is not kept: {e}");
                Ok(none)
            }
            Err(e) => Err(exit::store_failed(&e)),
        }
    }

    /// Keeps `phase` as the point `make` builds from its sequence number.
    pub(crate) fn add(&mut self, phase: &PhaseResult, make: impl FnOnce(u32) -> Point) {
        let Some((store, run)) = &mut self.kept else { return };
        match store.add_point(*run, &make(self.next_seq)) {
            Ok(()) => self.next_seq += 1,
            Err(e) => say!("iolab: error: phase {} was not kept: {e}", phase.phase),
        }
    }

    /// The run measured nothing (refused, or a bad directory): it is not kept.
    pub(crate) fn forget(&mut self) {
        if let Some((store, run)) = &mut self.kept {
            let _ = store.delete_run(*run);
        }
        self.kept = None;
    }

    pub(crate) fn finish(mut self, status: RunStatus, report: serde_json::Value, quiet: bool) {
        let Some((mut store, run)) = self.kept.take() else { return };
        let end = RunEnd {
            status,
            finished_at_unix_s: now_unix_s(),
            report: Some(report),
            environment_after: None,
        };
        match store.finish_run(run, &end) {
            Ok(()) if !quiet => say!("iolab: kept as run {run} in {}", store.path().display()),
            Ok(()) => {}
            Err(e) => say!("iolab: error: the end of run {run} was not recorded: {e}"),
        }
    }
}

/// A phase as a stored point: its own operation kind's figures as reads (stat, readdir, read)
/// or writes (the rest), its series, its verdict and its whole result.
pub(crate) fn point(seq: u32, plan: &FilesPlan, phase: &PhaseResult, dir: &std::path::Path) -> Point {
    let main = OpKind::of_phase(phase.phase);
    let main_stats =
        phase.histograms.iter().find(|(k, _)| *k == main).map(|(_, s)| s.clone()).unwrap_or_default();
    let mut histograms = IntervalStats::default();
    let summary = main_stats.summary(phase.elapsed_s, &[]);
    let none = iolab_stats::OpStats::default().summary(phase.elapsed_s, &[]);
    let (read, write) = if phase.phase.modifies() {
        histograms.write = main_stats;
        (none, summary.clone())
    } else {
        histograms.read = main_stats;
        (summary.clone(), none)
    };
    let series = phase
        .series
        .iter()
        .map(|s| SeriesPoint {
            t_s: s.t_s,
            duration_s: 1.0,
            iops: s.ops as f64,
            read_iops: if phase.phase.modifies() { 0.0 } else { s.ops as f64 },
            write_iops: if phase.phase.modifies() { s.ops as f64 } else { 0.0 },
            mb_s: s.bytes as f64 / 1e6,
            mean_ns: 0.0,
            p99_ns: 0,
        })
        .collect();
    let cause = match phase.verdict.cause {
        FilesCause::Cpu => Bottleneck::SubmittingCpu,
        FilesCause::Device => Bottleneck::Device,
        FilesCause::Journal => Bottleneck::KernelThread,
        _ => Bottleneck::Undetermined,
    };
    let stop_reason = if phase.failure.is_some() {
        "io_error"
    } else if phase.interrupted {
        "interrupted"
    } else {
        "io_limit"
    };
    let cpu_us_per_io = (phase.done > 0).then(|| {
        phase.cpu_busy_pct / 100.0 * phase.elapsed_s * f64::from(plan.threads) * 1e6 / phase.done as f64
    });
    Point {
        seq,
        name: format!("files {}", phase.phase),
        source: "iolab".to_string(),
        completed_at_unix_s: now_unix_s(),
        spec: serde_json::to_value(plan).unwrap_or_default(),
        summary: PointSummary {
            engine: plan.engine.name().to_string(),
            access: format!("files {} {}", phase.phase, plan.sizes.describe()),
            qd: 1,
            workers: plan.threads,
            targets: vec![dir.display().to_string()],
            measured_s: phase.elapsed_s,
            read,
            write,
            total: summary,
            cpu_us_per_io,
            stop_reason: stop_reason.to_string(),
        },
        series,
        verdict: Some(Verdict::of(cause, phase.verdict.summary.clone(), Vec::new())),
        histograms: Some(iolab_stats::encoded::EncodedHistograms::encode(&histograms)),
        result: serde_json::to_value(phase).unwrap_or_default(),
    }
}

/// The exit for a phase that stopped on a failed operation: what failed, on which file, and how
/// far the phase got. `stopped` says what stopped ("stopped", "stopped the fleet"), `after`
/// what followed.
pub(crate) fn stopped(phase: &PhaseResult, failure: &Failure, stopped: &str, after: &str) -> ExitCode {
    let full = if failure.errno == Some(nix::errno::Errno::ENOSPC as i32) {
        " (the filesystem is full)"
    } else {
        ""
    };
    exit::fail(
        exit::IO_ERRORS,
        &format!(
            "{} {stopped}: {} of {} failed: {}{full}; {} of {} done{after}",
            phase.phase,
            failure.op,
            failure.path,
            failure.error,
            thousands(phase.done as f64),
            thousands(phase.planned as f64)
        ),
    )
}
