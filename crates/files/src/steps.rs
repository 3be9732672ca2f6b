//! A fileset run one phase at a time, on a directory already opened (`iolab fleet files`: an
//! agent opens it beneath its `--allow-write` without following links, and runs each phase when
//! the coordinator says, so every host starts a phase together). Everything happens relative
//! to that descriptor: the marker, the phases (`Ctx::dirfd`) and the clean-up
//! (`safety_at`); the directory's name is only shown, never opened again.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use iolab_engine::fileops::FileOps;

use crate::error::FilesError;
use crate::phases::Phases;
use crate::plan::{FilesPlan, Phase};
use crate::progress::PhaseProgress;
use crate::report::PhaseResult;
use crate::safety::Cleaned;
use crate::safety_at;

pub struct Steps {
    phases: Phases,
    top: OwnedFd,
    shown: PathBuf,
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
        // After an earlier tree was removed (its inodes are free again), before the first mkdir.
        if let Err(e) = crate::preflight::check_fits(&plan, top.as_fd(), &shown) {
            let _ = safety_at::clean_at(top.as_fd(), &shown);
            return Err(e);
        }
        let mut notes = Vec::new();
        if let Some(earlier) = earlier {
            notes.push(earlier.earlier_note(&shown));
        }
        let phases = Phases::new(plan, top.as_fd(), &mut notes);
        Ok(Steps { phases, top, shown, notes })
    }

    pub fn plan(&self) -> &FilesPlan {
        self.phases.plan()
    }

    /// The phases and their planned operations, in order.
    pub fn planned(&self) -> &[(Phase, u64)] {
        self.phases.planned()
    }

    /// How many phases ran so far: the index of the next.
    pub fn ran(&self) -> usize {
        self.phases.ran()
    }

    /// The phase the next `run_next` runs; none once all ran or one stopped the run.
    pub fn next_phase(&self) -> Option<Phase> {
        self.phases.next_phase()
    }

    /// Runs the next phase with every thread, publishing how far it is to `progress`; `None`
    /// when there is none left. A phase that fails or is interrupted is answered with what was
    /// done, and no later phase runs.
    pub fn run_next(
        &mut self,
        interrupt: &AtomicBool,
        progress: Option<&PhaseProgress>,
    ) -> Option<PhaseResult> {
        self.phases.run_next(
            self.top.as_raw_fd(),
            interrupt,
            &mut self.notes,
            &|_, engine| FileOps::new(engine),
            progress,
        )
    }

    /// Removes the tree (iolab's names only) and the marker, through the descriptor; the
    /// directory itself stays for whoever opened it. Entries of other names are answered.
    pub fn clean(&self) -> Result<Cleaned, FilesError> {
        safety_at::clean_at(self.top.as_fd(), &self.shown)
    }
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
        let top = OwnedFd::from(std::fs::File::open(temp.path()).expect("open"));
        let mut steps = Steps::prepare(plan, top, temp.path().to_path_buf(), false).expect("prepared");
        let interrupt = AtomicBool::new(false);
        let mut ran = Vec::new();
        while let Some(result) = steps.run_next(&interrupt, None) {
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
