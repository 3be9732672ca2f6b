//! Whether a stored run may be continued as a burn-in (`iolab burnin --resume ID`), and which of
//! its segments the continuation keeps: only an interrupted burn-in of the very workload it
//! plans now is continued, from its first segment cut short; a run that is anything else is
//! refused, never changed.

use iolab_spec::JobSpec;
use iolab_store::{PointFigures, RunId, RunInfo, RunStatus};
use thiserror::Error;

use crate::burnin::segment_name;

/// Why a stored run is not continued as a burn-in.
#[derive(Debug, Error)]
pub enum ResumeRefused {
    #[error("run {run} is a {kind} run, not a burn-in")]
    NotBurnin { run: RunId, kind: String },
    #[error("run {0} is still running: its iolab process is alive")]
    Running(RunId),
    #[error("run {0} completed; there is nothing to resume")]
    Complete(RunId),
    #[error("run {0} ended as failed (a data error or a device fault stopped it); start a new burn-in")]
    Failed(RunId),
    #[error(
        "run {0}'s command line plans another workload here than it ran (a relative path, or another \
         iolab version); resume it from the directory it started in, with the same iolab"
    )]
    OtherWorkload(RunId),
    /// A stored point that is not the burn-in's segment at its place: the run is another one's.
    #[error("run {run} holds point {seq} '{name}', which is not this burn-in's segment {}; not resuming it", seq + 1)]
    ForeignSegment { run: RunId, seq: u32, name: String },
}

/// Whether run `info` may be continued: a burn-in, interrupted (killed, or stopped by a signal).
pub fn may_resume(info: &RunInfo) -> Result<(), ResumeRefused> {
    let run = info.id;
    if info.kind != "burnin" {
        return Err(ResumeRefused::NotBurnin { run, kind: info.kind.clone() });
    }
    match info.status {
        RunStatus::Interrupted => Ok(()),
        RunStatus::Running => Err(ResumeRefused::Running(run)),
        RunStatus::Complete => Err(ResumeRefused::Complete(run)),
        RunStatus::Failed => Err(ResumeRefused::Failed(run)),
    }
}

/// The segments of run `run` that its continuation keeps: the run's stored `plan` must be the
/// one its command line plans now (`planned`, of segment job `job`), and its stored points
/// (`stored`) this burn-in's segments in order; those completed are kept, up to the first one
/// cut short (run again, as every segment after it).
pub fn kept_segments(
    run: RunId,
    plan: &serde_json::Value,
    planned: &[JobSpec],
    job: &JobSpec,
    stored: Vec<PointFigures>,
) -> Result<Vec<PointFigures>, ResumeRefused> {
    if serde_json::to_value(planned).unwrap_or_default() != *plan {
        return Err(ResumeRefused::OtherWorkload(run));
    }
    let foreign = stored
        .iter()
        .enumerate()
        .find(|(i, point)| point.seq as usize != *i || point.name != segment_name(job, *i as u32 + 1));
    if let Some((_, point)) = foreign {
        return Err(ResumeRefused::ForeignSegment { run, seq: point.seq, name: point.name.clone() });
    }
    Ok(stored.into_iter().take_while(|point| point.summary.stop_reason != "interrupted").collect())
}
