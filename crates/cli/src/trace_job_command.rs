//! `iolab trace job TRACE`: the job file that reproduces a trace (crates/trace `synthesis`);
//! with `--check TARGET`, a run of it there, captured where it can be, and the trace beside it
//! figure by figure.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use iolab_report::{trace_job_json, trace_job_text};
use iolab_runner::{run_jobs, OnFailedStart};
use iolab_spec::{resolve, Options, OutputSpec};
use iolab_trace::capture::capture;
use iolab_trace::shape::{shape, Shape};
use iolab_trace::synthesis::{compare, synthesize, RunFigures};

use crate::args::{KeepArgs, StoreArgs};
use crate::exit::{self, say};
use crate::flow::{write_output, Delivery, Measurement};
use crate::place::Place;
use crate::{output_file, trace_command};

pub struct JobRequest {
    pub file: PathBuf,
    pub output: Option<PathBuf>,
    pub check: Option<PathBuf>,
    pub allow_destroy: bool,
    pub json: bool,
    pub keep: KeepArgs,
}

pub fn run(request: JobRequest, store: &StoreArgs) -> ExitCode {
    exit::of(job(request, store))
}

fn job(request: JobRequest, store: &StoreArgs) -> Result<ExitCode, ExitCode> {
    let trace = trace_command::open(&request.file)?;
    let traced = shape(&trace);
    let name = request.file.display().to_string();
    let job = synthesize(&trace.header, &traced, &name).map_err(exit::usage)?;
    match &request.output {
        Some(path) => {
            output_file::check(path, &output_file::Protected::default().target(&request.file))
                .map_err(exit::usage)?;
            output_file::write(path, job.text.as_bytes()).map_err(|e| {
                exit::fail(exit::INTERNAL, &format!("cannot write the job to {}: {e}", path.display()))
            })?;
            say!("iolab: the job is in {} (`iolab run {0} --target PATH`)", path.display());
        }
        None if request.check.is_none() => write_output(&OutputSpec::default(), &job.text)?,
        None => {}
    }
    let Some(target) = &request.check else { return Ok(ExitCode::from(exit::OK)) };
    check(&request, store, &job.text, &traced, target)
}

/// Runs the job on `target`, captured where iolab may, and compares.
fn check(
    request: &JobRequest,
    store: &StoreArgs,
    text: &str,
    traced: &Shape,
    target: &Path,
) -> Result<ExitCode, ExitCode> {
    let file = iolab_spec::jobfile::parse(text)
        .map_err(|e| exit::fail(exit::INTERNAL, &format!("the synthesized job does not read back: {e}")))?;
    let flags = Options {
        target: Some(vec![target.to_path_buf()]),
        allow_destroy: request.allow_destroy.then_some(true),
        json: request.json.then_some(true),
        ..Options::default()
    };
    let plan = resolve(Some(&file), &flags).map_err(exit::usage)?;
    let store = store.keeping(request.keep);
    let runtime = plan.jobs.first().map_or(Duration::ZERO, |j| j.runtime.as_duration());
    let capturing = nix::unistd::geteuid().is_root() && is_block_device(target);
    let stop = Arc::new(AtomicBool::new(false));
    let capture_thread = capturing.then(|| {
        let (target, stop) = (target.to_path_buf(), stop.clone());
        let (recording_tx, recording_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let mut recording = || {
                let _ = recording_tx.send(());
            };
            capture(&target, runtime + Duration::from_secs(30), &stop, &mut recording)
        });
        // The run starts once the kernel records (or the capture failed: its error is said below).
        let _ = recording_rx.recv();
        thread
    });
    let title = format!("job of {}", request.file.display());
    Ok(Measurement::new("run", &plan).titled(title).run(
        &store,
        &mut Place::here(),
        |lab, progress| run_jobs(lab, &plan, OnFailedStart::Stop, 0, progress),
        |_, report| {
            stop.store(true, Ordering::Relaxed);
            let captured = capture_thread.and_then(|t| t.join().ok()).and_then(|c| match c {
                Ok(captured) => Some(shape(&captured.trace)),
                Err(e) => {
                    say!("iolab: note: the run could not be captured ({e}); the figures are the run's own");
                    None
                }
            });
            let group = report.jobs.first().and_then(|j| j.groups.first());
            let figures = group.map_or_else(Vec::new, |g| {
                let ios = g.total.ios.max(1) as f64;
                let run = RunFigures {
                    iops: g.total.iops,
                    read_pct: 100.0 * g.read.ios as f64 / ios,
                    mean_size: g.total.bytes as f64 / ios,
                    captured: captured.clone(),
                };
                compare(traced, &run)
            });
            let captured = captured.is_some();
            Ok(Delivery::study(&plan.output, trace_job_json(text, captured, &figures, report), || {
                trace_job_text(captured, &figures, report)
            }))
        },
    ))
}

fn is_block_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}
