//! `iolab files [DIR]`: the fileset workload (crates/files), each phase kept in the results
//! database as it ends (a point per phase, so `results`, `compare` and `report` see it), then
//! the report; `iolab files --clean DIR` removes a killed run's tree.

use std::path::PathBuf;
use std::process::ExitCode;

use iolab_files::stored::{self, Tree};
use iolab_files::{
    safety, Failure, FilesError, FilesOptions, FilesPlan, PhaseProgress, PhaseResult, RunOptions,
};
use iolab_report::{files_json, files_text, thousands};
use iolab_store::NewRun;

use crate::args::{FilesArgs, StoreArgs};
use crate::exit::{self, say};
use crate::files_progress::FilesLine;
use crate::flow::{self, Delivery, Ending};
use crate::job_source;
use crate::recording::Recording;

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
    let dir =
        options.dir.clone().unwrap_or_else(|| PathBuf::from(format!("iolab-files.{}", std::process::id())));
    // Phases that begin on what exists work the tree a run kept in DIR (its marker says what).
    let plan = match iolab_files::plan_in(&options, &dir) {
        Ok(plan) => plan,
        Err(e) => return exit::usage(e),
    };
    let (json, quiet_flag, keep) =
        (options.json == Some(true), options.quiet == Some(true), options.keep == Some(true));
    let repeats = options.repeat.unwrap_or(1);
    if let Err(e) = iolab_files::check_repeats(&plan, repeats) {
        return exit::usage(e);
    }
    let recording = match start(store, &plan, &dir.display().to_string(), false) {
        Ok(recording) => recording,
        Err(code) => return code,
    };
    let quiet = quiet_flag || json;
    let output = iolab_spec::OutputSpec { json, quiet: quiet_flag, path: None };
    flow::run_own(
        &output,
        recording,
        |recording, interrupt| {
            let progress = PhaseProgress::new(plan.threads);
            let run_options = RunOptions { dir: dir.clone(), keep, interrupt, progress: Some(&progress) };
            let line = FilesLine::new(quiet);
            let tree = dir.display().to_string();
            let ran = line.while_running(&progress, || {
                iolab_files::run_repeated(&plan, &run_options, repeats, |phase| {
                    if !quiet {
                        let repeat = if repeats > 1 {
                            format!(" (repeat {} of {repeats})", phase.repeat)
                        } else {
                            String::new()
                        };
                        line.say(&format!("iolab: files: {}{repeat} {}", phase.phase, done_line(phase)));
                    }
                    let trees = [Tree { name: tree.clone(), phase }];
                    recording
                        .keep("phase", phase.phase.name(), |seq| stored::point(seq, &plan, phase, &trees));
                })
            });
            ran.map_err(|e| {
                let code = match e {
                    FilesError::Plan(_) | FilesError::Refused(_) => exit::USAGE,
                    FilesError::Io { .. } => exit::INTERNAL,
                };
                exit::fail(code, &e.to_string())
            })
        },
        |report| {
            let kept = serde_json::to_value(&report).unwrap_or_default();
            let rendered = if json { files_json(&kept) } else { files_text(&kept) };
            let failure = report.failure().map(|(phase, failure)| stopped(phase, failure, "stopped", ""));
            ended(Delivery { rendered, json: Some(kept.to_string()), failure }, report.interrupted())
        },
        said_interrupted,
    )
}

/// "412,000 of 1,000,000 in 3.10 s (132,900/s)"; a mix, which runs for a time: "390,894
/// operations in 60.00 s (6,514/s)".
pub(crate) fn done_line(phase: &PhaseResult) -> String {
    let done = thousands(phase.done as f64);
    let count = match phase.mix {
        Some(_) => format!("{done} operations"),
        None => format!("{done} of {}", thousands(phase.planned as f64)),
    };
    format!("{count} in {:.2} s ({}/s)", phase.elapsed_s, thousands(phase.ops_per_s))
}

/// Records the start of a fileset run of `plan` in `dir` (on every host of a fleet: `fleet`).
pub(crate) fn start(
    store: &StoreArgs,
    plan: &FilesPlan,
    dir: &str,
    fleet: bool,
) -> Result<Recording, ExitCode> {
    let kind = if fleet { "fleet files" } else { "files" };
    Recording::start_described(store, |environment| {
        NewRun::starting_now(
            kind,
            stored::label(plan, dir, fleet),
            serde_json::to_value(plan).unwrap_or_default(),
            serde_json::to_value(environment).unwrap_or_default(),
        )
    })
}

/// How a fileset run ended: a phase that failed (said by `delivery`), interrupted, or done.
pub(crate) fn ended(delivery: Delivery, interrupted: bool) -> (Delivery, Ending) {
    let code = if interrupted { exit::INTERRUPTED } else { exit::OK };
    (delivery, Ending { interrupted, code })
}

/// Says, after the report, that an interrupted run reported the phases it did.
pub(crate) fn said_interrupted(ending: &Ending) {
    if ending.interrupted {
        say!("iolab: interrupted; the phases done so far were reported");
    }
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

/// The failure of a phase that stopped on a failed operation: what failed, on which file, and
/// how far the phase got. `stopped` says what stopped ("stopped", "stopped the fleet"), `after`
/// what followed.
pub(crate) fn stopped(
    phase: &PhaseResult,
    failure: &Failure,
    stopped: &str,
    after: &str,
) -> (u8, Option<String>) {
    let full = match (failure.errno == Some(nix::errno::Errno::ENOSPC as i32), failure.ran_out_of) {
        (_, Some(what)) => format!(" ({})", what.words()),
        (true, None) => " (the filesystem is full)".to_string(),
        (false, None) => String::new(),
    };
    let message = format!(
        "{} {stopped}: {} of {} failed: {}{full}; {} of {} done{after}",
        phase.phase,
        failure.op,
        failure.path,
        failure.error,
        thousands(phase.done as f64),
        thousands(phase.planned as f64)
    );
    (exit::IO_ERRORS, Some(message))
}
