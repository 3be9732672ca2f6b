//! How a running job reports progress to whoever shows it (the CLI's progress line) or exports
//! it (the metrics endpoint, the fleet agent's live stream).

use iolab_spec::{JobSpec, Nanos};
use iolab_stats::result::{JobResult, SeriesPoint, Verdict};
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
    /// A job is about to run on `targets` (per group, the targets' paths; empty for a job run
    /// on a fleet, whose hosts open their own): live exporters label what follows with them.
    fn starting(&mut self, _job: &JobSpec, _targets: &[Vec<String>]) {}
    /// An interval has closed, ramp or measured, in detail: per group and target (a live
    /// exporter's figures; the series and results never see ramp intervals).
    fn interval_detail(&mut self, _detail: &IntervalDetail<'_>) {}
    /// The job has ended; clear any live display.
    fn finish(&mut self) {}
}

/// One closed interval of a local job, per group and per target (in the job's order).
#[derive(Debug)]
pub struct IntervalDetail<'a> {
    pub phase: Phase,
    pub duration: Nanos,
    /// Per group, per target: the I/Os completed in the interval.
    pub stats: &'a [Vec<IntervalStats>],
    /// Per group: the I/O errors of the job so far.
    pub errors: &'a [u64],
}

/// Tells two observers the same things: the caller's own (a progress line) and one that
/// watches every job of a lab (a metrics exporter).
pub struct Both<'a, 'b> {
    pub first: &'a mut dyn Observer,
    pub second: &'b mut dyn Observer,
}

impl<'a, 'b> Both<'a, 'b> {
    /// `first`, with `second` when there is one: the pair is held in the caller's `slot`, so it
    /// lives as long as the caller uses it.
    pub fn of<'s, 'o: 'b>(
        first: &'a mut dyn Observer,
        second: Option<&'b mut (dyn Observer + 'o)>,
        slot: &'s mut Option<Both<'a, 'b>>,
    ) -> &'s mut dyn Observer
    where
        'a: 's,
        'b: 's,
    {
        match second {
            Some(second) => slot.insert(Both { first, second }),
            None => first,
        }
    }
}

impl Observer for Both<'_, '_> {
    fn progress(&mut self, update: &ProgressUpdate<'_>) {
        self.first.progress(update);
        self.second.progress(update);
    }
    fn note(&mut self, message: &str) {
        self.first.note(message);
        self.second.note(message);
    }
    fn interval(&mut self, point: &SeriesPoint, stats: &IntervalStats) {
        self.first.interval(point, stats);
        self.second.interval(point, stats);
    }
    fn starting(&mut self, job: &JobSpec, targets: &[Vec<String>]) {
        self.first.starting(job, targets);
        self.second.starting(job, targets);
    }
    fn interval_detail(&mut self, detail: &IntervalDetail<'_>) {
        self.first.interval_detail(detail);
        self.second.interval_detail(detail);
    }
    fn finish(&mut self) {
        self.first.finish();
        self.second.finish();
    }
}

/// Shows nothing.
pub struct Silent;

impl Observer for Silent {
    fn progress(&mut self, _: &ProgressUpdate<'_>) {}
    fn note(&mut self, _: &str) {}
}

/// Where each job's measured result goes the moment the job ends: kept first (the results
/// database), so a later crash or interruption keeps it, then judged. The runner measures and
/// never judges: the verdict answered here is the one the lab sets on the result it holds.
pub trait ResultSink {
    fn keep_and_judge(&mut self, job: &JobSpec, result: &JobResult) -> Verdict;

    /// The result of the `index`th job this sink kept, with a fact measured after it (a trial
    /// of its verdict's advice, the attempts a study dropped before it): kept in place of what
    /// was kept, then judged again.
    fn amend_and_judge(&mut self, index: usize, result: &JobResult) -> Verdict;

    /// Drops the last job kept: an attempt a study measures again (another load disturbed it).
    fn forget_last(&mut self);
}
