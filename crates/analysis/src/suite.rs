//! What a suite found, step by step (the model its report renders and the store keeps): a
//! table of jobs, a load curve with its sweet spot, preconditioning, steady-state rounds, a
//! matrix of IOPS. `iolab precondition` reports its `Preconditioning` alone.

use serde::{Deserialize, Serialize};

use crate::rounds::SteadyRounds;
use crate::sweep::SweepSummary;

/// One step of a suite as it ran; `jobs` are indices into the run report's jobs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SuiteSection {
    Table {
        title: String,
        jobs: Vec<usize>,
    },
    Curve {
        title: String,
        jobs: Vec<usize>,
        summary: SweepSummary,
    },
    Precondition {
        job: Option<usize>,
        done: Preconditioning,
    },
    Steady {
        title: String,
        jobs: Vec<usize>,
        rounds: SteadyRounds,
    },
    /// `jobs` row by row; `null` for a cell the target refused, said in `skipped`.
    Matrix {
        title: String,
        rows: Vec<String>,
        columns: Vec<String>,
        jobs: Vec<Option<usize>>,
        skipped: Vec<String>,
    },
}

/// What preconditioning set out to do, beside the run itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Preconditioning {
    pub passes: u32,
    /// The region written on each pass (all targets together).
    pub region_bytes: u64,
    /// The region was discarded (trimmed) before the first pass.
    pub trimmed: bool,
    /// Why a requested discard did not happen.
    pub notes: Vec<String>,
}
