//! Advice as a hypothesis: the one setting a verdict says would lift the limit it found, and the
//! short trial run at that setting that tests it. The trial's figures are a fact of the job
//! (kept with its result, so a stored point judged again meets the same trial); whether they
//! confirm the advice is the verdict's to say.

use serde::{Deserialize, Serialize};

/// A setting of the job's, changed: what the verdict advises, and what a trial runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// More outstanding I/Os per worker, on the same workers.
    QueueDepth { qd: u32 },
    /// The same or a similar number of outstanding I/Os spread over another number of workers
    /// (each its own submitting thread and ring).
    Lanes { workers: u32, qd: u32 },
    /// The SQPOLL kernel thread on or off.
    Sqpoll { on: bool },
    /// Every core kept polling instead of halting or sleeping when idle (`--cpu-idle poll`).
    CpusPolling,
}

impl Change {
    /// The flags that ask for it: "--qd 64", "--workers 2 --qd 16", "--sqpoll=false".
    pub fn flags(&self) -> String {
        match self {
            Change::QueueDepth { qd } => format!("--qd {qd}"),
            Change::Lanes { workers, qd } => format!("--workers {workers} --qd {qd}"),
            Change::Sqpoll { on } => format!("--sqpoll={on}"),
            Change::CpusPolling => "--cpu-idle poll".into(),
        }
    }
}

/// What a trial at an advised setting measured: about a second, on the same target, right
/// after the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    #[serde(flatten)]
    pub change: Change,
    pub measured_s: f64,
    pub iops: f64,
    /// Mean response time of every I/O, in ns.
    pub mean_latency_ns: f64,
    /// Why the trial says nothing, as a clause ("its trial met 3 I/O errors", "no trial: under
    /// --rate-iops ..."); `None` when its figures stand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// The advice a verdict gives, and what its trial showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    #[serde(flatten)]
    pub change: Change,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Whether a trial bore the advice out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// No trial ran (`--no-confirm`, a study, a run judged again without one, or a trial that
    /// failed): a hypothesis, labelled as one.
    Untested,
    /// The advised setting gave at least the confirming gain.
    Confirmed { iops_gain_pct: f64, latency_ratio: f64 },
    /// It did not: the limit is elsewhere.
    NotConfirmed { iops_gain_pct: f64, latency_ratio: f64 },
}
