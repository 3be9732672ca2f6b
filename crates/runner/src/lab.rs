//! A measuring session: what every job of a command shares (the io_uring check, the scratch
//! file, the start time) and the results so far. A fixed plan runs through `run_jobs`; a study
//! that decides its next job from the last result (a ramp, steady-state rounds) runs jobs here
//! one at a time, in the same process and on the same scratch file.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use iolab_engine::probe;
use iolab_spec::{EngineKind, JobSpec, RunPlan};
use iolab_stats::result::{HostInfo, JobResult, RunReport, StopReason, SCHEMA};
use iolab_stats::retry::DisturbedAttempt;

use crate::error::RunError;
use crate::job::run_job;
use crate::observer::{Both, Observer, ResultSink};
use crate::prepare::{self, OpenedTargets, PreparedTarget, Scratch};
use crate::remote::Remote;

/// What to do when a job cannot start (its engine or target refuses), after an earlier job ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailedStart {
    /// Keep the results so far and stop (a job file: later jobs may depend on it).
    Stop,
    /// Record it and go on with the next job (a ladder: each rung stands alone).
    Skip,
}

pub struct Lab<'a> {
    interrupt: &'a AtomicBool,
    scratch: Option<Scratch>,
    /// Jobs run there instead of in this process.
    remote: Option<&'a mut dyn Remote>,
    started_at_unix_s: u64,
    jobs: Vec<JobResult>,
    sink: Option<&'a mut dyn ResultSink>,
    /// Hears every job this lab runs, beside each call's own observer (`--metrics`).
    watcher: Option<&'a mut dyn Observer>,
}

impl<'a> Lab<'a> {
    /// Checks what `plan` needs before any I/O (io_uring, unless steps that cannot start are
    /// to be skipped; buffer memory) and lays out the scratch file if a job has no target. The
    /// plan holds every job known in advance, or a representative one for a study that makes
    /// its jobs as it goes.
    pub fn open(
        plan: &RunPlan,
        on_failed_start: OnFailedStart,
        interrupt: &'a AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<Self, RunError> {
        if on_failed_start == OnFailedStart::Stop
            && plan.jobs.iter().flat_map(|j| &j.groups).any(|g| g.engine == EngineKind::Uring)
        {
            probe::uring_available()?;
        }
        prepare::check_buffer_memory(&plan.jobs)?;
        let started_at_unix_s = unix_now_s();
        let scratch = prepare::scratch(plan, interrupt, observer)?;
        Ok(Lab {
            interrupt,
            scratch,
            remote: None,
            started_at_unix_s,
            jobs: Vec::new(),
            sink: None,
            watcher: None,
        })
    }

    /// A lab whose jobs run on `remote` (a fleet): the hosts check and lay out their own
    /// targets, so nothing is checked or created here.
    pub fn remote(remote: &'a mut dyn Remote, interrupt: &'a AtomicBool) -> Self {
        Lab {
            interrupt,
            scratch: None,
            remote: Some(remote),
            started_at_unix_s: unix_now_s(),
            jobs: Vec::new(),
            sink: None,
            watcher: None,
        }
    }

    /// Hands every job's result to `sink` as the job ends.
    pub fn keep_results_in(&mut self, sink: &'a mut dyn ResultSink) {
        self.sink = Some(sink);
    }

    /// Has `watcher` hear every job this lab runs, as well as the observer each run is given:
    /// a metrics exporter sees a study's jobs without each study knowing of it.
    pub fn watched_by(&mut self, watcher: &'a mut dyn Observer) {
        self.watcher = Some(watcher);
    }

    pub fn interrupted(&self) -> bool {
        self.interrupt.load(Relaxed)
    }

    /// Opens and checks the targets of `job` (on the scratch file where it names none); in a
    /// remote lab, every host checks its own and nothing is opened here.
    pub fn prepare(
        &mut self,
        job: &JobSpec,
        observer: &mut dyn Observer,
    ) -> Result<Vec<Vec<PreparedTarget>>, RunError> {
        if let Some(remote) = self.remote.as_mut() {
            remote.check(job, observer)?;
            return Ok(Vec::new());
        }
        let scratch = self.scratch.as_ref().map(|s| s.path.as_path());
        prepare::targets(job, scratch, None, self.interrupt, observer)
    }

    /// As `prepare`, on targets the caller opened and checked itself (a fleet agent, beneath
    /// its `--allow-write`): they are laid out and run on through those descriptors, never
    /// opened again by name. Not for a remote lab.
    pub fn prepare_opened(
        &mut self,
        job: &JobSpec,
        opened: OpenedTargets,
        observer: &mut dyn Observer,
    ) -> Result<Vec<Vec<PreparedTarget>>, RunError> {
        if self.remote.is_some() {
            return Err(RunError::Invalid("a remote lab opens no targets here (a bug in iolab)".into()));
        }
        let scratch = self.scratch.as_ref().map(|s| s.path.as_path());
        prepare::targets(job, scratch, Some(opened), self.interrupt, observer)
    }

    /// Runs `job` on targets from `prepare` and keeps its result.
    pub fn run_prepared(
        &mut self,
        job: &JobSpec,
        targets: &[Vec<PreparedTarget>],
        observer: &mut dyn Observer,
    ) -> Result<&JobResult, RunError> {
        self.run_prepared_at(job, targets, None, observer)
    }

    /// As `run_prepared`, measured again up to `retries` times while its verdict says another
    /// load or a stolen CPU disturbed it (a study's point): each disturbed attempt is said and
    /// dropped, and the last attempt kept with the dropped ones listed in it. A result never
    /// judged (no sink) or cut short is kept as it is.
    pub fn run_until_undisturbed(
        &mut self,
        job: &JobSpec,
        targets: &[Vec<PreparedTarget>],
        retries: u32,
        observer: &mut dyn Observer,
    ) -> Result<&JobResult, RunError> {
        let mut dropped = Vec::new();
        loop {
            let result = self.run_prepared(job, targets, observer)?;
            let whole = matches!(result.stop_reason, StopReason::Runtime | StopReason::IoLimit);
            let disturbed = DisturbedAttempt::of(&result.verdict, result.total.iops).filter(|_| whole);
            let Some(attempt) = disturbed.filter(|_| dropped.len() < retries as usize && !self.interrupted())
            else {
                break;
            };
            observer.note(&format!(
                "{}: measured again ({} of {retries}): {}",
                job.name,
                dropped.len() + 1,
                attempt.summary
            ));
            dropped.push(attempt);
            self.jobs.pop();
            if let Some(sink) = self.sink.as_mut() {
                sink.forget_last();
            }
        }
        let index = self.jobs.len() - 1;
        if !dropped.is_empty() {
            self.amend(index, |result| result.disturbed_attempts = dropped);
        }
        Ok(&self.jobs[index])
    }

    /// As `run_prepared`, with the I/O beginning at `start_at` (a fleet agent's start instant):
    /// the threads are started and the engines opened before it.
    pub fn run_prepared_at(
        &mut self,
        job: &JobSpec,
        targets: &[Vec<PreparedTarget>],
        start_at: Option<std::time::SystemTime>,
        observer: &mut dyn Observer,
    ) -> Result<&JobResult, RunError> {
        let mut both = None;
        let observer = Both::of(observer, self.watcher.as_deref_mut(), &mut both);
        observer.starting(job, &target_paths(targets));
        let mut result = match self.remote.as_mut() {
            Some(remote) => remote.run(job, self.interrupt, observer)?,
            None => {
                prepare::check_buffer_memory(std::slice::from_ref(job))?;
                run_job(job, targets, start_at, self.interrupt, observer)?
            }
        };
        if let Some(sink) = self.sink.as_mut() {
            result.verdict = sink.keep_and_judge(job, &result);
        }
        self.jobs.push(result);
        Ok(self.jobs.last().expect("just pushed"))
    }

    /// Runs `job` to learn something about a job already run (a trial of its verdict's
    /// advice): neither kept nor judged, and not part of the report.
    pub fn try_out(&mut self, job: &JobSpec, observer: &mut dyn Observer) -> Result<JobResult, RunError> {
        if self.remote.is_some() {
            return Err(RunError::Invalid(
                "a trial runs in a lab here, not on a fleet (a bug in iolab)".into(),
            ));
        }
        let targets = self.prepare(job, observer)?;
        observer.starting(job, &target_paths(&targets));
        prepare::check_buffer_memory(std::slice::from_ref(job))?;
        run_job(job, &targets, None, self.interrupt, observer)
    }

    /// Applies `amend` to the result of job `index` (a fact measured after it) and has the
    /// sink keep the amended result and judge it again.
    pub fn amend(&mut self, index: usize, amend: impl FnOnce(&mut JobResult)) {
        let Some(result) = self.jobs.get_mut(index) else { return };
        amend(result);
        if let Some(sink) = self.sink.as_mut() {
            result.verdict = sink.amend_and_judge(index, result);
        }
    }

    /// Prepares and runs one job.
    pub fn run(&mut self, job: &JobSpec, observer: &mut dyn Observer) -> Result<&JobResult, RunError> {
        let targets = self.prepare(job, observer)?;
        self.run_prepared(job, &targets, observer)
    }

    /// Lets go of the latency histograms of the jobs run so far, the job's and its groups'
    /// (each ~100 KiB or more; the sink has kept them): a study of thousands of jobs, a burn-in
    /// of weeks, keeps what it merged of them and their figures, not every histogram.
    pub fn release_histograms(&mut self) {
        let release = |stats: &mut iolab_stats::IntervalStats| {
            // Released already (or never filled): nothing to let go of.
            if stats.ios() > 0 || stats.response.is_some() {
                *stats = iolab_stats::IntervalStats::default();
            }
        };
        for job in &mut self.jobs {
            release(&mut job.histograms);
            job.groups.iter_mut().for_each(|group| release(&mut group.histograms));
        }
    }

    /// The hosts of a remote lab that runs a job of its own on each (empty here).
    pub fn host_names(&self) -> Vec<String> {
        self.remote.as_ref().map(|r| r.host_names()).unwrap_or_default()
    }

    /// Checks `job` on every host of a remote lab and answers each host's region (see
    /// `Remote::check_regions`); not for a lab here.
    pub fn check_regions(
        &mut self,
        job: &JobSpec,
        observer: &mut dyn Observer,
    ) -> Result<Vec<Option<u64>>, RunError> {
        match self.remote.as_mut() {
            Some(remote) => remote.check_regions(job, observer),
            None => Err(RunError::Invalid("a lab here has no hosts to ask (a bug in iolab)".into())),
        }
    }

    /// Runs `jobs[i]` on host i of a remote lab, every host at one instant, and keeps the
    /// merged result as `run_prepared` keeps a job's; answers each host's own result too.
    pub fn run_each(
        &mut self,
        jobs: &[JobSpec],
        observer: &mut dyn Observer,
    ) -> Result<Vec<Option<JobResult>>, RunError> {
        let Some(first) = jobs.first() else {
            return Err(RunError::Invalid("no job to run on the hosts (a bug in iolab)".into()));
        };
        let mut both = None;
        let observer = Both::of(observer, self.watcher.as_deref_mut(), &mut both);
        observer.starting(first, &[]);
        let mut each = match self.remote.as_mut() {
            Some(remote) => remote.run_each(jobs, self.interrupt, observer)?,
            None => {
                return Err(RunError::Invalid("a lab here has no hosts to run on (a bug in iolab)".into()))
            }
        };
        if let Some(sink) = self.sink.as_mut() {
            each.merged.verdict = sink.keep_and_judge(first, &each.merged);
        }
        self.jobs.push(each.merged);
        Ok(each.hosts)
    }

    /// The results of every job run so far.
    pub fn jobs(&self) -> &[JobResult] {
        &self.jobs
    }

    /// The report of the session; the scratch file goes with the lab.
    pub fn into_report(self) -> RunReport {
        RunReport {
            schema: SCHEMA,
            iolab_version: env!("CARGO_PKG_VERSION"),
            host: host_info(),
            started_at_unix_s: self.started_at_unix_s,
            interrupted: self.interrupt.load(Relaxed),
            peak_rss_bytes: iolab_stats::cpu::peak_rss_bytes().unwrap_or(0),
            jobs: self.jobs,
        }
    }
}

/// Each group's target paths, as an observer hears them.
fn target_paths(targets: &[Vec<PreparedTarget>]) -> Vec<Vec<String>> {
    targets.iter().map(|group| group.iter().map(|t| t.path.display().to_string()).collect()).collect()
}

fn unix_now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn host_info() -> HostInfo {
    let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default();
    HostInfo {
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

#[cfg(test)]
#[path = "lab_tests.rs"]
mod tests;
