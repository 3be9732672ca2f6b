//! The one flow every measuring command follows, whatever it measures: its study resolved
//! (by the command, before this), the run recorded, the study run in a lab (here or on a fleet)
//! with stop signals and a progress line, then the report delivered: written where the user
//! asked, the run's end recorded, its problems said on stderr, and the exit code it earned.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iolab_runner::{Lab, OnFailedStart, RunError};
use iolab_spec::{OutputSpec, RunPlan};
use iolab_stats::fleet::HostStatus;
use iolab_stats::result::RunReport;
use iolab_store::RunId;

use crate::args::StoreArgs;
use crate::exit::say;
use crate::place::Place;
use crate::progress::ProgressLine;
use crate::recording::{Kept, Recording};
use crate::{exit, output_file};

/// A measuring command's run, from recording it to its exit code.
pub struct Measurement<'p> {
    kind: &'p str,
    /// What ran, where the jobs cannot say it ("suite quick").
    title: Option<String>,
    /// Every job known in advance: what the run records, the lab checks and the output says.
    plan: &'p RunPlan,
    progress: ProgressLine,
    on_failed_start: OnFailedStart,
    /// An earlier run this one continues (`--resume`), instead of a new one.
    continuing: Option<Recording>,
}

/// What a finished study gives the user.
pub struct Delivery {
    /// The report, as text or JSON as the user asked.
    pub rendered: String,
    /// The study's JSON report, kept with the run (`None`: a plain run, whose points say it all).
    pub json: Option<String>,
    /// A job that could not start after others ran: the run is kept as failed, and this is its
    /// exit code, said (with the message, if any) after the report.
    pub failure: Option<(u8, Option<String>)>,
}

impl Delivery {
    /// A study's report: its JSON, or its text when the user did not ask for JSON.
    pub fn study(output: &OutputSpec, json: String, text: impl FnOnce() -> String) -> Delivery {
        let rendered = if output.json { json.clone() } else { text() };
        Delivery { rendered, json: Some(json), failure: None }
    }

    /// The run failed with `error` after the jobs reported had run.
    pub fn failed(self, error: &RunError, message: Option<String>) -> Delivery {
        Delivery { failure: Some((exit::run_error_code(error), message)), ..self }
    }
}

impl<'p> Measurement<'p> {
    /// A new `kind` run of `plan`, with a plain progress line, stopping at a job that cannot start.
    pub fn new(kind: &'p str, plan: &'p RunPlan) -> Self {
        let progress = ProgressLine::new(plan.output.quiet);
        Measurement {
            kind,
            title: None,
            plan,
            progress,
            on_failed_start: OnFailedStart::Stop,
            continuing: None,
        }
    }

    /// Names what ran in the results list, where the jobs cannot ("suite quick").
    pub fn titled(self, title: String) -> Self {
        Measurement { title: Some(title), ..self }
    }

    /// Shows `progress` instead (a bar over a study whose length is known).
    pub fn with_progress(self, progress: ProgressLine) -> Self {
        Measurement { progress, ..self }
    }

    /// Goes on past a job that cannot start (each rung of a ladder stands alone).
    pub fn skipping_failed_starts(self) -> Self {
        Measurement { on_failed_start: OnFailedStart::Skip, ..self }
    }

    /// Continues `recording`, an earlier run of the same plan.
    pub fn continuing(self, recording: Recording) -> Self {
        Measurement { continuing: Some(recording), ..self }
    }

    /// Records the run (refusing an output that would destroy something, before anything runs),
    /// runs `study` in a lab opened on the plan where `place` says, keeping each job's result as
    /// it ends, then delivers what `render` makes of it. An error that stops the study, or a
    /// report `render` refuses, ends the command with its code; the run keeps what it measured.
    pub fn run<T>(
        self,
        store: &StoreArgs,
        place: &mut Place<'_>,
        study: impl FnOnce(&mut Lab<'_>, &mut ProgressLine) -> Result<T, RunError>,
        render: impl FnOnce(T, &RunReport) -> Result<Delivery, ExitCode>,
    ) -> ExitCode {
        self.run_kept(store, place, study, render).0
    }

    /// As `run`, and the id the run was kept under, once it was recorded (`None` when the store
    /// is off or the run could not be recorded): for a command that reads the run back.
    pub fn run_kept<T>(
        self,
        store: &StoreArgs,
        place: &mut Place<'_>,
        study: impl FnOnce(&mut Lab<'_>, &mut ProgressLine) -> Result<T, RunError>,
        render: impl FnOnce(T, &RunReport) -> Result<Delivery, ExitCode>,
    ) -> (ExitCode, Option<RunId>) {
        let mut kept_as = None;
        let code = exit::of(self.measure(store, place, study, render, &mut kept_as));
        (code, kept_as)
    }

    fn measure<T>(
        self,
        store: &StoreArgs,
        place: &mut Place<'_>,
        study: impl FnOnce(&mut Lab<'_>, &mut ProgressLine) -> Result<T, RunError>,
        render: impl FnOnce(T, &RunReport) -> Result<Delivery, ExitCode>,
        kept_as: &mut Option<RunId>,
    ) -> Result<ExitCode, ExitCode> {
        let Measurement { kind, title, plan, mut progress, on_failed_start, continuing } = self;
        let mut recording = match continuing {
            Some(recording) => recording,
            None => place.record(store, kind, title.as_deref(), plan)?,
        };
        *kept_as = recording.run_id();
        let interrupt = install_signals()?;
        let ran = place.open_lab(plan, on_failed_start, &interrupt, &mut progress).and_then(|mut lab| {
            lab.keep_results_in(&mut recording);
            let found = study(&mut lab, &mut progress)?;
            Ok((found, lab.into_report()))
        });
        let (found, report) = ran.map_err(|e| exit::fail(exit::run_error_code(&e), &e.to_string()))?;
        let delivery = render(found, &report)?;
        let ending = Ending { interrupted: report.interrupted, code: exit::finished_run_code(&report) };
        Ok(deliver(&plan.output, delivery, ending, recording, |_| warn_about_problems(&report)))
    }
}

/// How a study ended, as its run's record and its exit code say it.
pub struct Ending {
    pub interrupted: bool,
    /// The code the study earned, before the keeping is counted.
    pub code: u8,
}

/// The same flow for a command that runs a workload of its own instead of a lab's jobs (the
/// fileset, here or on a fleet): `study` runs with the stop flag, keeping its points in
/// `recording` as they end, and what `render` makes of it is delivered as a lab's study is;
/// `problems` says on stderr what went wrong, after the report.
pub fn run_own<T>(
    output: &OutputSpec,
    mut recording: Recording,
    study: impl FnOnce(&mut Recording, &AtomicBool) -> Result<T, ExitCode>,
    render: impl FnOnce(T) -> (Delivery, Ending),
    problems: impl FnOnce(&Ending),
) -> ExitCode {
    let interrupt = match install_signals() {
        Ok(flag) => flag,
        Err(code) => return code,
    };
    let found = match study(&mut recording, &interrupt) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let (delivery, ending) = render(found);
    deliver(output, delivery, ending, recording, problems)
}

/// Installs SIGINT/SIGTERM/SIGHUP: the first asks the run to stop and keep its results, a second ends
/// the process at once (removing the scratch file first), for a run that does not stop by itself.
pub fn install_signals() -> Result<Arc<AtomicBool>, ExitCode> {
    iolab_engine::exit_cleanup::install_stop_signals()
        .map_err(|e| exit::fail(exit::INTERNAL, &format!("cannot install the signal handler: {e}")))
}

/// Writes `text` to the output file (whole, or not at all), or stdout. Broken pipe
/// (`iolab run | head`) is not an error; any other failure to write stdout (ENOSPC) is one
/// line on stderr and `INTERNAL`. Every write to stdout goes through here: `println!` panics.
pub fn write_output(output: &OutputSpec, text: &str) -> Result<(), ExitCode> {
    use std::io::Write;
    let written = match &output.path {
        Some(path) => output_file::write(path, text.as_bytes())
            .map_err(|e| format!("cannot write the results to {}: {e}", path.display())),
        None => {
            // Flushed here: what stdout still buffers at exit is written with its error ignored.
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(format!("cannot write the results to stdout: {e}"))
                }
                _ => Ok(()),
            }
        }
    };
    written.map_err(|message| exit::fail(exit::INTERNAL, &message))
}

/// Writes a finished command's report where the user asked, records its end (with its JSON
/// report) in the store, says its problems on stderr, and gives the exit code the run earned:
/// a failure the delivery names (with its message), else the study's own, else NOT_KEPT when
/// something it measured was not kept.
fn deliver(
    output: &OutputSpec,
    delivery: Delivery,
    ending: Ending,
    mut recording: Recording,
    problems: impl FnOnce(&Ending),
) -> ExitCode {
    if delivery.failure.is_some() {
        recording.mark_failed();
    }
    let written = write_output(output, &delivery.rendered);
    let kept = recording.finish(ending.interrupted, ending.code, delivery.json.as_deref(), output.quiet);
    if let Err(code) = written {
        return code;
    }
    problems(&ending);
    match delivery.failure {
        Some((code, Some(message))) => exit::fail(code, &message),
        Some((code, None)) => ExitCode::from(code),
        None if ending.code == exit::OK && kept == Kept::Partly => ExitCode::from(exit::NOT_KEPT),
        None => ExitCode::from(ending.code),
    }
}

/// Problems are also said on stderr, so they are seen even when stdout is JSON or a file.
pub fn warn_about_problems(report: &RunReport) {
    for job in &report.jobs {
        if job.errors.count > 0 {
            let first = job.errors.first.first().map_or(String::new(), |e| {
                format!(
                    "; first: {} {} at offset {} ({} bytes): {}",
                    e.target, e.op, e.offset, e.len, e.message
                )
            });
            say!("iolab: warning: job '{}': {} I/O errors{first}", job.name, job.errors.count);
        }
        if let Some(stuck) = &job.errors.stuck {
            say!(
                "iolab: error: job '{}': a request to {} has not completed after {} ms; the device or kernel is stuck",
                job.name, stuck.target, stuck.outstanding_ms
            );
        }
        for host in job.fleet.iter().flat_map(|f| &f.hosts).filter(|h| h.status == HostStatus::Failed) {
            say!(
                "iolab: warning: job '{}': host {} failed: {}; its I/Os are not in the merged result",
                job.name,
                host.host,
                host.failure.as_deref().unwrap_or("no reason given")
            );
        }
        if let Some(engine) = &job.errors.engine {
            say!("iolab: error: job '{}': {engine}", job.name);
        }
        let short: Vec<_> = job
            .groups
            .iter()
            .filter_map(|g| g.rate.as_ref().filter(|r| !r.sustained).map(|r| (g, r)))
            .collect();
        // Many groups (a job file's VM fleet) are said in one line; their figures are in the report.
        if short.len() > 8 {
            let most = short.iter().map(|(_, r)| r.shortfall_pct).fold(0.0, f64::max);
            let lag = short.iter().map(|(_, r)| r.max_lag_ns).max().unwrap_or(0);
            say!(
                "iolab: warning: job '{}': {} of {} groups did not sustain their rates (up to {most:.0}% short, I/Os started up to {} late)",
                job.name,
                short.len(),
                job.groups.len(),
                iolab_report::latency(lag as f64)
            );
            continue;
        }
        for (group, rate) in short {
            say!(
                "iolab: warning: job '{}', group '{}': {}",
                job.name,
                group.name,
                iolab_report::rate_summary(rate)
            );
        }
    }
    if report.interrupted {
        say!("iolab: interrupted; the results gathered so far were written");
    }
}
