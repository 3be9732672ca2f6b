//! Where a session's fileset run is, as its handlers see it: the stage (preparing, ready,
//! running, a phase's answer or failure) and the running phase's live counts.

use std::sync::{Arc, Mutex};

use iolab_files::PhaseProgress;

use crate::protocol::{FilesPhaseDone, FilesProgress};

use super::error::Failure;
use super::lock;

/// Where the session's fileset run is, for the handlers.
#[derive(Clone, Default)]
pub(super) enum FilesStage {
    #[default]
    None,
    Preparing,
    /// Prepared: ready for the first phase.
    Ready,
    Running,
    Done(Arc<FilesPhaseDone>),
    Failed(Failure),
}

#[derive(Default)]
pub struct FilesSlot {
    stage: Mutex<FilesStage>,
    /// The prepared run's live counts, which a result request answers with while a phase runs.
    progress: Mutex<Option<Arc<PhaseProgress>>>,
}

impl FilesSlot {
    pub(super) fn get(&self) -> FilesStage {
        lock(&self.stage).clone()
    }

    pub(super) fn set(&self, stage: FilesStage) {
        *lock(&self.stage) = stage;
    }

    /// A phase of the prepared run starts: refused unless one is ready (prepared, or the last
    /// phase done).
    pub(super) fn begin_phase(&self) -> Result<(), Failure> {
        let mut stage = lock(&self.stage);
        match *stage {
            FilesStage::Ready | FilesStage::Done(_) => *stage = FilesStage::Running,
            FilesStage::Running => return Err(Failure::conflict("a phase is running; wait for its result")),
            _ => {
                return Err(Failure::conflict(
                    "no fileset run is prepared; POST files/prepare first, then start",
                ))
            }
        }
        Ok(())
    }

    /// The prepared run's live counts (`None`: no run is prepared).
    pub(super) fn watch(&self, progress: Option<Arc<PhaseProgress>>) {
        *lock(&self.progress) = progress;
    }

    /// How far the running phase is, if a run is prepared and a phase has begun.
    pub(super) fn progress(&self) -> Option<FilesProgress> {
        let seen = lock(&self.progress).as_ref()?.snapshot()?;
        Some(FilesProgress {
            phase: seen.phase,
            done: seen.done,
            planned: seen.planned,
            elapsed_ns: u64::try_from(seen.elapsed.as_nanos()).unwrap_or(u64::MAX),
        })
    }
}
