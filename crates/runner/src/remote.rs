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
}
