//! The session's thread: owns the `Lab` (and so the scratch file) and the prepared targets,
//! waits for the start instant, runs the job and hands its result and events to the session.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime};

use axum::http::StatusCode;
use iolab_metrics::MetricsObserver;
use iolab_runner::{Both, Lab, Observer, OnFailedStart, Phase, PreparedTarget, ProgressUpdate, RunError};
use iolab_spec::{JobSpec, RunPlan};
use iolab_stats::encoded::EncodedHistograms;
use iolab_stats::result::{JobResult, SeriesPoint};
use iolab_stats::IntervalStats;

use crate::protocol::{AgentResult, LiveEvent, Prepared};

use super::command::Command;
use super::config::Judge;
use super::error::Failure;
use super::live::EventLog;
use super::replay::Replay;
use super::session::{unix_ns, Session, Stage};
use super::targets::{self, AllowList};

/// Opens a session and starts its thread, which runs its commands (`run`).
pub fn open_session(
    id: String,
    coordinator: String,
    lease: Duration,
    allow: Arc<AllowList>,
    metrics: Option<MetricsObserver>,
    judge: Judge,
) -> Result<Arc<Session>, Failure> {
    let (tx, rx) = mpsc::channel();
    let session = Arc::new(Session::new(id, coordinator, lease, tx));
    let for_thread = Arc::clone(&session);
    let thread = std::thread::Builder::new()
        .name(format!("session-{}", &session.id[..8.min(session.id.len())]))
        .spawn(move || run(&for_thread, &allow, &rx, metrics, judge))
        .map_err(|e| {
            Failure::internal(format!(
                "cannot start the session's thread: {e}; check the agent's thread limit"
            ))
        })?;
    session.attach(thread);
    Ok(session)
}

/// The scratch file a job needs (size, kept), if any: a lab is reused while this stays the
/// same, so a study's jobs share one scratch file as they do locally.
type ScratchNeed = Option<(u64, bool)>;

/// Runs the session's commands; `metrics` (`iolab agent --metrics`) hears each job it runs,
/// and `judge` judges each result once it is measured.
pub fn run(
    session: &Session,
    allow: &AllowList,
    commands: &mpsc::Receiver<Command>,
    mut metrics: Option<MetricsObserver>,
    judge: Judge,
) {
    let interrupt = Arc::clone(&session.interrupt);
    let mut lab: Option<(Lab<'_>, ScratchNeed)> = None;
    let mut ready: Option<(JobSpec, Vec<Vec<PreparedTarget>>)> = None;
    let mut files: Option<super::files_session::FilesRun> = None;
    while let Ok(command) = commands.recv() {
        match command {
            Command::Prepare { job, replay, reply } => {
                ready = None;
                session.rearm();
                session.log.reset();
                match prepare(&job, replay, allow, &interrupt, &mut lab, &session.log) {
                    Ok((spec, opened, prepared)) => {
                        ready = Some((spec, opened));
                        session.set_stage(Stage::Prepared);
                        let _ = reply.send(Ok(prepared));
                    }
                    Err(failure) => {
                        session.set_stage(Stage::Idle);
                        let _ = reply.send(Err(failure));
                    }
                }
            }
            Command::Start { at } => {
                let (Some((job, opened)), Some((lab, _))) = (ready.take(), lab.as_mut()) else {
                    finish(session, Err(Failure::conflict("no job is prepared; POST prepare first")));
                    continue;
                };
                let mut observer =
                    LiveObserver { log: &session.log, intervals: Vec::new(), notes: Vec::new() };
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    let result = match metrics.as_mut() {
                        Some(metrics) => {
                            let mut both = Both { first: &mut observer, second: metrics };
                            lab.run_prepared_at(&job, &opened, Some(at), &mut both)?
                        }
                        None => lab.run_prepared_at(&job, &opened, Some(at), &mut observer)?,
                    };
                    let groups =
                        result.groups.iter().map(|g| EncodedHistograms::encode(&g.histograms)).collect();
                    let histograms = EncodedHistograms::encode(&result.histograms);
                    let result = JobResult { verdict: judge(result), ..result.clone() };
                    Ok::<_, RunError>(AgentResult {
                        histograms,
                        result,
                        groups,
                        intervals: std::mem::take(&mut observer.intervals),
                    })
                }));
                let outcome = match outcome {
                    Ok(Ok(result)) => Ok(result),
                    Ok(Err(error)) => Err(failure_of(&error)),
                    Err(_) => Err(Failure::internal("the job crashed the agent's session thread (a bug in iolab: see the agent's log); close the session and open another")),
                };
                finish(session, outcome);
            }
            Command::Close => break,
            Command::Files(command) => super::files_session::handle(session, allow, &mut files, command),
        }
    }
    // Dropping a fileset run removes its tree.
    drop(files);
    // Dropping the lab removes its scratch file.
    drop(ready);
    drop(lab);
}

fn finish(session: &Session, outcome: Result<AgentResult, Failure>) {
    match outcome {
        Ok(result) => {
            session.set_stage(Stage::Done(Arc::new(result)));
            session.log.push(LiveEvent::Finished);
        }
        Err(failure) => {
            let message = failure.message.clone();
            session.set_stage(Stage::Failed(failure));
            session.log.push(LiveEvent::Failed { message });
        }
    }
}

/// Checks the job against what the operator allowed, and opens its targets in `lab` (a new
/// one when the job needs another scratch file than the last).
fn prepare<'a>(
    text: &str,
    replay: Option<Replay>,
    allow: &AllowList,
    interrupt: &'a AtomicBool,
    lab: &mut Option<(Lab<'a>, ScratchNeed)>,
    log: &EventLog,
) -> Result<(JobSpec, Vec<Vec<PreparedTarget>>, Prepared), Failure> {
    // The one way the agent builds a `JobSpec`: job-file text, parsed and validated as a user's.
    let mut job = iolab_spec::wire::job_from_text(text).map_err(|e| Failure::bad_request(e.to_string()))?;
    // Every target is opened here, once; the lab lays out and runs on these descriptors.
    let targets = targets::check(&mut job, allow)?;
    let mut observer = LiveObserver { log, intervals: Vec::new(), notes: Vec::new() };
    let need = scratch_need(&job);
    // A lab with the same scratch file is kept (laying out 1 GiB per job would dominate a
    // study); otherwise a new one, whose opening checks the engine and the buffer memory up
    // front (a kept lab checks the memory when the job runs).
    if need.is_none() || lab.as_ref().is_none_or(|(_, had)| *had != need) {
        // The old lab's scratch file goes before the new one is laid out at the same path.
        *lab = None;
        let plan = RunPlan { jobs: vec![job.clone()], output: Default::default() };
        let opened =
            Lab::open(&plan, OnFailedStart::Stop, interrupt, &mut observer).map_err(|e| failure_of(&e))?;
        *lab = Some((opened, need));
    }
    let Some((lab, _)) = lab.as_mut() else { return Err(Failure::internal("no lab after opening one")) };
    let opened = lab.prepare_opened(&job, targets, &mut observer).map_err(|e| failure_of(&e))?;
    if let Some(replay) = replay {
        super::replay::lay(&mut job, &opened, replay)?;
    }
    let targets = opened.iter().flatten().map(|t| t.path.display().to_string()).collect();
    let region_bytes = opened.first().and_then(|g| g.first()).map(|t| t.region_size);
    Ok((job, opened, Prepared { targets, notes: observer.notes, region_bytes }))
}

fn scratch_need(job: &JobSpec) -> ScratchNeed {
    let groups: Vec<_> = job.groups.iter().filter(|g| g.target.paths.is_empty()).collect();
    let size = groups.iter().map(|g| g.target.offset.0 + g.target.size.map_or(0, |s| s.0)).max()?;
    Some((size, groups.iter().any(|g| g.target.keep)))
}

/// A run error as an answer: the user's to fix (400) or the agent's (500), with its message.
fn failure_of(error: &RunError) -> Failure {
    let status =
        if error.is_user_error() { StatusCode::BAD_REQUEST } else { StatusCode::INTERNAL_SERVER_ERROR };
    Failure::new(status, error.to_string())
}

/// Turns what the runner reports into live events, and keeps each interval's histograms for
/// the result.
struct LiveObserver<'a> {
    log: &'a EventLog,
    intervals: Vec<EncodedHistograms>,
    notes: Vec<String>,
}

impl Observer for LiveObserver<'_> {
    fn progress(&mut self, update: &ProgressUpdate<'_>) {
        self.log.push(LiveEvent::Progress {
            phase: match update.phase {
                Phase::Ramp => "ramp",
                Phase::Measure => "measure",
            }
            .to_string(),
            elapsed_ns: update.elapsed.0,
            total_ns: update.total.0,
            iops: update.iops,
            mean_ns: update.mean_ns,
            p99_ns: update.p99_ns,
            unix_ns: unix_ns(SystemTime::now()),
        });
    }

    fn note(&mut self, message: &str) {
        self.notes.push(message.to_string());
        self.log.push(LiveEvent::Note { message: message.to_string() });
    }

    fn interval(&mut self, point: &SeriesPoint, stats: &IntervalStats) {
        let histograms = EncodedHistograms::encode(stats);
        self.intervals.push(histograms.clone());
        self.log.push(LiveEvent::Interval {
            index: self.intervals.len() as u64 - 1,
            point: point.clone(),
            histograms,
            unix_ns: unix_ns(SystemTime::now()),
        });
    }
}
