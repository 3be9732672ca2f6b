//! A fileset run from start to end: the directory made ready (and marked), each phase run by
//! every thread at once and handed to the caller as it ends (so it is kept even if a later one
//! fails), a failing or interrupted phase ending the run, and the tree removed unless kept.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use iolab_engine::fileops::FileOps;

use crate::error::FilesError;
use crate::kept::{self, KeptTree, Shape};
use crate::phases::{MakeOps, Phases};
use crate::plan::FilesPlan;
use crate::progress::PhaseProgress;
use crate::report::{FilesReport, PhaseResult, FILES_SCHEMA};
use crate::{preflight, safety};

pub struct RunOptions<'a> {
    pub dir: PathBuf,
    /// Leave the tree (and the directory) in place at the end.
    pub keep: bool,
    /// Set by a stop signal: the phase running ends, its figures kept, and the run stops.
    pub interrupt: &'a AtomicBool,
    /// Where the running phase's threads publish how far they are (a live display reads it).
    pub progress: Option<&'a PhaseProgress>,
}

/// Runs `plan` in `options.dir`, calling `on_phase` with each phase as it ends.
pub fn run(
    plan: &FilesPlan,
    options: &RunOptions<'_>,
    on_phase: impl FnMut(&PhaseResult),
) -> Result<FilesReport, FilesError> {
    run_with(plan, options, on_phase, &|_, engine| FileOps::new(engine))
}

/// As `run`, each thread of each phase with the operations `make_ops` gives it.
pub(crate) fn run_with(
    plan: &FilesPlan,
    options: &RunOptions<'_>,
    mut on_phase: impl FnMut(&PhaseResult),
    make_ops: MakeOps<'_>,
) -> Result<FilesReport, FilesError> {
    plan.check()?;
    let dir = &options.dir;
    // A plan that starts on a kept tree works it where it is; any other starts from nothing.
    let prepared = if plan.start.dirs { kept::reopen(dir, plan)? } else { safety::prepare(dir)? };
    let claim = safety::Claim(dir);
    let mut notes = Vec::new();
    if plan.start.dirs {
        notes.push(format!("began on the tree kept in {}: {}", dir.display(), plan.start.words()));
    }
    if let Some(earlier) = &prepared.earlier {
        notes.push(earlier.earlier_note(dir));
    }
    let top = File::open(dir).map_err(|e| FilesError::io("cannot open", dir, e))?;
    // After an earlier tree was removed (its inodes are free again), before the first mkdir.
    if let Err(e) = preflight::check_fits(plan, top.as_fd(), dir) {
        drop(top);
        let _ = claim.clean();
        return Err(e);
    }
    let mut runner = Phases::new(plan.clone(), top.as_fd(), &mut notes);
    let mut phases = Vec::new();
    while let Some(result) =
        runner.run_next(top.as_raw_fd(), options.interrupt, &mut notes, make_ops, options.progress)
    {
        on_phase(&result);
        phases.push(result);
    }
    drop(top);
    let mut kept = options.keep;
    if options.keep {
        // What the tree holds, where every phase ran to its end; else unknown, never worked again.
        let finished =
            phases.len() == plan.phases.len() && phases.iter().all(|p| p.failure.is_none() && !p.interrupted);
        let state = plan.phases.iter().fold(plan.start, |state, &phase| state.after(phase));
        // Which names a mix leaves holding files is its own: such a tree is not worked again.
        let recorded = (finished && !state.mixed).then(|| KeptTree { shape: Shape::of(plan), state });
        if let Err(e) = kept::record(dir, recorded.as_ref()) {
            notes.push(format!("what the kept tree holds could not be recorded in its marker: {e}"));
        }
        let again = if recorded.is_some() {
            "; a later run whose phases begin with anything but mkdir works it again"
        } else if state.mixed {
            "; a mix ran, so which files it holds is the mix's own and it is not worked again"
        } else {
            "; a phase stopped, so what it holds is unknown and it is not worked again"
        };
        notes.push(format!(
            "the tree was kept in {}: `iolab files --clean {0}` removes it{again}",
            dir.display()
        ));
    } else {
        if let Some(progress) = options.progress {
            progress.removing_tree();
        }
        match claim.clean() {
            Ok(cleaned) if cleaned.left.is_empty() => {}
            Ok(cleaned) => {
                kept = true;
                notes.push(format!(
                    "{} entries not made by iolab were left in {} with the marker",
                    cleaned.left.len(),
                    dir.display()
                ));
            }
            Err(e) => {
                kept = true;
                notes.push(format!(
                    "the tree could not be removed ({e}): `iolab files --clean {}`",
                    dir.display()
                ));
            }
        }
    }
    Ok(FilesReport {
        schema: FILES_SCHEMA.to_string(),
        dir: dir.display().to_string(),
        plan: plan.clone(),
        tree: plan.describe_tree(plan.total_files(), plan.total_dirs()),
        total_files: plan.total_files(),
        total_dirs: plan.total_dirs(),
        phases,
        notes,
        peak_rss_bytes: iolab_stats::cpu::peak_rss_bytes().unwrap_or(0),
        kept,
        repeats: Vec::new(),
    })
}

// The same phases one at a time, on an opened directory (`iolab fleet files`).
#[path = "steps.rs"]
pub mod steps;
