//! How a running job reports progress to whoever shows it (the CLI's progress line).

use iolab_spec::{JobSpec, Nanos};
use iolab_stats::result::{JobResult, SeriesPoint};
use iolab_stats::IntervalStats;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Ramp,
    Measure,
}

/// The state of a job about five times a second.
#[derive(Debug, Clone)]
pub struct ProgressUpdate<'a> {
    pub job: &'a str,
    pub phase: Phase,
    pub elapsed: Nanos,
    pub total: Nanos,
    /// Of the last complete second (of the ramp, until the first measured one).
    pub iops: f64,
    pub mean_ns: f64,
    pub p99_ns: u64,
    /// With an I/O limit: the share of it done, 0..1 (the job ends at 1, whatever the time).
    pub limit_done: Option<f64>,
    /// A fleet job: each host's IOPS of its last second; empty for a local job.
    pub hosts: &'a [HostRate],
}

/// One host of a fleet in a progress update.
#[derive(Debug, Clone, PartialEq)]
pub struct HostRate {
    pub host: String,
    pub iops: f64,
    /// The host dropped out of the job (its reason is in the result).
    pub failed: bool,
}

pub trait Observer {
    fn progress(&mut self, update: &ProgressUpdate<'_>);
    /// Something the user should know before the results (a file being laid out, ...).
    fn note(&mut self, message: &str);
    /// A measured interval has closed: its series point and the job's histograms over it (a
    /// fleet agent streams these, so that its coordinator merges the fleet's series exactly).
    fn interval(&mut self, _point: &SeriesPoint, _stats: &IntervalStats) {}
    /// The job has ended; clear any live display.
    fn finish(&mut self) {}
}

/// Shows nothing.
pub struct Silent;

impl Observer for Silent {
    fn progress(&mut self, _: &ProgressUpdate<'_>) {}
    fn note(&mut self, _: &str) {}
}

/// Where each job's result goes the moment the job ends (the results database), so a later
/// crash or interruption keeps it.
pub trait ResultSink {
    fn keep(&mut self, job: &JobSpec, result: &JobResult);
}
