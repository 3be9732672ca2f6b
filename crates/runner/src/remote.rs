//! Where a job's I/O runs when it is not in this process: a fleet of agents, behind the same
//! `Lab` as local threads, so every study (sweep, ramp, suite, steady rounds) runs across a
//! fleet unchanged, each of its jobs in lock-step on every host.

use std::sync::atomic::AtomicBool;

use iolab_spec::JobSpec;
use iolab_stats::result::JobResult;

use crate::error::RunError;
use crate::observer::Observer;

pub trait Remote {
    /// Checks on every host that `job` can run there (its targets open, its writes allowed),
    /// before any host does I/O; an error names the host and what it refused.
    fn check(&mut self, job: &JobSpec, observer: &mut dyn Observer) -> Result<(), RunError>;

    /// Runs `job` on every host at one instant and returns the merged result (with its
    /// per-host breakdown); stops the hosts when `interrupt` is set.
    fn run(
        &mut self,
        job: &JobSpec,
        interrupt: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<JobResult, RunError>;

    /// The hosts, as the user named them ("10.0.0.2:7878"), in the order `check_each` and
    /// `run_each` answer; empty for a remote that cannot run a job of its own on each host.
    fn host_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// Checks `job` on every host as `check` does, and answers each host's region of its first
    /// target (bytes; `None` for a host that dropped out or an agent too old to say), so that
    /// a study can size each host's jobs to its own region (`iolab fleet cache`).
    fn check_regions(
        &mut self,
        job: &JobSpec,
        observer: &mut dyn Observer,
    ) -> Result<Vec<Option<u64>>, RunError> {
        let _ = (job, observer);
        Err(RunError::Invalid("this remote runs one job on every host (a bug in iolab)".into()))
    }

    /// Runs `jobs[i]` on host i (same groups, own regions), every host at one instant: the
    /// merged result (merged as `run`'s, its spec `jobs[0]`'s), and each host's own result
    /// with its histograms (`None` for a host that failed or dropped out).
    fn run_each(
        &mut self,
        jobs: &[JobSpec],
        interrupt: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<EachHost, RunError> {
        let _ = (jobs, interrupt, observer);
        Err(RunError::Invalid("this remote runs one job on every host (a bug in iolab)".into()))
    }
}

/// A job run with its own spec on each host: the merged result and each host's own.
pub struct EachHost {
    pub merged: JobResult,
    pub hosts: Vec<Option<JobResult>>,
}
