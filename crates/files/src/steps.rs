//! A fileset run one phase at a time, on a directory already opened (`iolab fleet files`: an
//! agent opens it beneath its `--allow-write` without following links, and runs each phase when
//! the coordinator says, so every host starts a phase together). Everything happens relative
//! to that descriptor: the marker, the phases (`Ctx::dirfd`) and the clean-up
//! (`safety_at`); the directory's name is only shown, never opened again.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};

use super::{assemble, io_ticks_ms, run_threads};
use crate::error::FilesError;
use crate::gate::Gate;
use crate::journal::{self, JournalThread, JournalWatch};
use crate::plan::{FilesPlan, Phase};
use crate::report::PhaseResult;
use crate::safety::Cleaned;
use crate::safety_at;
use crate::tree::Tree;
use crate::worker::Ctx;

pub struct Steps {
    plan: FilesPlan,
    top: OwnedFd,
    shown: PathBuf,
    trees: Vec<Tree>,
    clock: quanta::Clock,
    base: u64,
    renamed: bool,
    copied: bool,
    planned: Vec<(Phase, u64)>,
    next: usize,
    /// A phase failed or was interrupted: no later one runs.
    stopped: bool,
    device: Option<PathBuf>,
    journal_thread: Option<JournalThread>,
    /// What the user should know (an earlier tree removed, ring operations done as calls).
    pub notes: Vec<String>,
}

impl Steps {
    /// Checks `plan` and makes the opened directory `top` ready (refusing a non-empty one that
    /// holds no iolab tree, untouched), marking it. `shown` is its name in messages; `created`:
    /// the caller made the directory.
    pub fn prepare(
        plan: FilesPlan,
        top: OwnedFd,
        shown: PathBuf,
        created: bool,
    ) -> Result<Steps, FilesError> {
        plan.check()?;
        let earlier = safety_at::prepare_at(top.as_fd(), &shown, created)?;
        let mut notes = Vec::new();
        if let Some(earlier) = earlier {
            notes.push(format!(
                "an earlier iolab tree in {} was removed first ({} files, {} directories)",
                shown.display(),
                earlier.files,
                earlier.dirs
            ));
        }
        let device = File::from(top.try_clone().map_err(|e| FilesError::io("cannot open", &shown, e))?)
            .metadata()
            .ok()
            .and_then(|meta| block_device(meta.dev()));
        let journal_thread = device
            .as_deref()
            .and_then(Path::parent)
            .and_then(journal::device_name)
            .and_then(|name| journal::find_journal_thread(&name));
        let trees = (0..plan.trees()).map(|t| Tree::new(&plan, t)).collect();
        let clock = quanta::Clock::new();
        let base = clock.raw();
        Ok(Steps {
            planned: plan.planned(),
            plan,
            top,
            shown,
            trees,
            clock,
            base,
            renamed: false,
            copied: false,
            next: 0,
            stopped: false,
            device,
            journal_thread,
            notes,
        })
    }

    pub fn plan(&self) -> &FilesPlan {
        &self.plan
    }

    /// The phases and their planned operations, in order.
    pub fn planned(&self) -> &[(Phase, u64)] {
        &self.planned
    }

    /// How many phases ran so far: the index of the next.
    pub fn ran(&self) -> usize {
        self.next
    }

    /// The phase the next `run_next` runs; none once all ran or one stopped the run.
    pub fn next_phase(&self) -> Option<Phase> {
        (!self.stopped).then(|| self.planned.get(self.next).map(|&(p, _)| p)).flatten()
    }

    /// Runs the next phase with every thread; `None` when there is none left. A phase that
    /// fails or is interrupted is answered with what was done, and no later phase runs.
    pub fn run_next(&mut self, interrupt: &AtomicBool) -> Option<PhaseResult> {
        let phase = self.next_phase()?;
        let planned_ops = self.planned[self.next].1;
        self.next += 1;
        let ctx = Ctx {
            plan: &self.plan,
            trees: &self.trees,
            dirfd: self.top.as_raw_fd(),
            clock: self.clock.clone(),
            base: self.base,
            failed: AtomicBool::new(false),
            interrupt,
            first_done_ns: AtomicU64::new(0),
            barrier: Gate::new(self.plan.threads as usize),
            renamed: self.renamed,
            copied: self.copied,
            phase_start_ns: 0,
        };
        let ticks_before = self.device.as_deref().and_then(io_ticks_ms);
        let ctx = Ctx { phase_start_ns: ctx.now_ns(), ..ctx };
        let watch = self.journal_thread.as_ref().and_then(|j| JournalWatch::start(j, self.plan.threads));
        let outcomes = run_threads(&ctx, phase, &mut self.notes);
        let device_busy = ticks_before.zip(self.device.as_deref().and_then(io_ticks_ms));
        let elapsed_s = ctx.now_ns().saturating_sub(ctx.phase_start_ns) as f64 / 1e9;
        let journal = watch.and_then(|w| w.finish(elapsed_s, self.plan.threads));
        let result = assemble(&self.plan, &ctx, phase, planned_ops, outcomes, device_busy, journal);
        match phase {
            Phase::Rename => self.renamed = !self.renamed,
            Phase::Copy => self.copied = true,
            Phase::Rmdir => self.copied = false,
            _ => {}
        }
        self.stopped = result.failure.is_some() || result.interrupted;
        Some(result)
    }

    /// Removes the tree (iolab's names only) and the marker, through the descriptor; the
    /// directory itself stays for whoever opened it. Entries of other names are answered.
    pub fn clean(&self) -> Result<Cleaned, FilesError> {
        safety_at::clean_at(self.top.as_fd(), &self.shown)
    }
}

/// The block device's sysfs stat file for the filesystem on `dev` (none for tmpfs and the like).
fn block_device(dev: u64) -> Option<PathBuf> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return None;
    }
    let path = PathBuf::from(format!("/sys/dev/block/{major}:{minor}/stat"));
    path.exists().then_some(path)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::job::FilesOptions;
    use crate::plan::FileEngine;

    #[test]
    fn runs_each_phase_on_the_descriptor_and_cleans_up() {
        let temp = tempfile::tempdir().expect("temp dir");
        let options = FilesOptions {
            files: Some(60),
            dirs_per_dir: Some(3),
            threads: Some(2),
            engine: Some(FileEngine::Sync),
            phases: Some(vec![Phase::Mkdir, Phase::Create, Phase::Stat, Phase::Unlink, Phase::Rmdir]),
            ..FilesOptions::default()
        };
        let plan = options.plan().expect("plan");
        let top = OwnedFd::from(File::open(temp.path()).expect("open"));
        let mut steps = Steps::prepare(plan, top, temp.path().to_path_buf(), false).expect("prepared");
        let interrupt = AtomicBool::new(false);
        let mut ran = Vec::new();
        while let Some(result) = steps.run_next(&interrupt) {
            assert!(result.complete(), "{:?} {:?}", result.phase, result.failure);
            ran.push((result.phase, result.done));
        }
        assert_eq!(ran, steps.planned().to_vec());
        assert_eq!(ran[1], (Phase::Create, 60));
        let cleaned = steps.clean().expect("clean");
        assert!(cleaned.left.is_empty());
        assert_eq!(std::fs::read_dir(temp.path()).expect("list").count(), 0);
    }
}
