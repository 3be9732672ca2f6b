//! `iolab burnin`: one workload for hours to weeks in segments (iolab_studies::burnin), each
//! kept as it ends; the drive's health read every few minutes on a thread of its own and kept
//! in the run's samples as it is read; the report of the segments, the trend, the health and
//! the datasheet check (iolab_analysis::burnin, iolab_report). `--resume ID` continues a killed
//! or interrupted burn-in with the settings of its own command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use clap::Parser;
use iolab_analysis::burnin::{health_trend, perf_trend, whole, BurninSummary, Ending};
use iolab_analysis::rated::Rated;
use iolab_environment::HealthSource;
use iolab_report::{burnin_json, burnin_text};
use iolab_spec::RUN_KEYS;
use iolab_spec::{JobSpec, Nanos, RunPlan};
use iolab_stats::health::HealthSample;
use iolab_store::{now_unix_s, Recorder, RunId, Sampler};
use iolab_studies::burnin::{run_segments, segment_defaults, BurninSettings, Measured, Periodic};
use iolab_studies::burnin_resume::{kept_segments, may_resume};
use iolab_studies::plan;

use crate::args::{BurninArgs, Cli, Command, StoreArgs};
use crate::exit::say;
use crate::flow::{Delivery, Measurement};
use crate::job_source::is_job_file;
use crate::place::Place;
use crate::rated_input::load_rated;
use crate::recording::{open_store, Recording};
use crate::{exit, output_file};

const DEFAULT_DURATION: Nanos = Nanos::from_secs(24 * 3600);
const DEFAULT_SEGMENT: Nanos = Nanos::from_secs(600);
const DEFAULT_HEALTH_EVERY: Nanos = Nanos::from_secs(300);
/// Shorter segments are no burn-in; tests use a few of these.
const MIN_SEGMENT: Nanos = Nanos::from_millis(100);
/// Each segment is a stored point (~30 kB): 100,000 of them is already gigabytes.
const MAX_SEGMENTS: u64 = 100_000;
/// The kind of a run's health samples in the store.
const HEALTH: &str = "health";

pub fn run(args: BurninArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    exit::of(measure(args, store, place))
}

/// A burn-in resolved from its arguments: the segment's job, how many, and the rest.
struct Burnin {
    plan: RunPlan,
    job: JobSpec,
    settings: BurninSettings,
    segment: Nanos,
    health_every: Nanos,
    rated: Option<Rated>,
    /// The targets as the job resolved them (the positional argument or --target), absolute;
    /// empty for the scratch file in the current directory.
    targets: Vec<PathBuf>,
}

/// What earlier invocations of the burn-in kept: its segments (their figures and merged
/// histograms, not the points themselves) and its health samples.
#[derive(Default)]
struct Earlier {
    segments: u32,
    measured: Measured,
    samples: Vec<HealthSample>,
}

fn measure(args: BurninArgs, store: &StoreArgs, place: &mut Place<'_>) -> Result<ExitCode, ExitCode> {
    let (burnin, recording, mut earlier) = match args.resume {
        Some(run) => resume(run, args, store)?,
        None => {
            let burnin = resolve(&args)?;
            let recording = place.record(store, "burnin", None, &burnin.plan)?;
            (burnin, recording, Earlier::default())
        }
    };
    let run = recording.run_id();
    let samples = Arc::new(Mutex::new(std::mem::take(&mut earlier.samples)));
    let skipped = Arc::new(Mutex::new(None::<String>));
    let mut sampler = start_health(&burnin, recording.sampler(), &samples, &skipped);
    let done = earlier.segments;
    let earlier_measured = earlier.measured;
    let Burnin { plan, job, settings, segment, health_every, rated, targets } = burnin;
    Ok(Measurement::new("burnin", &plan).continuing(recording).run(
        store,
        place,
        |lab, progress| {
            let ran = lab
                .prepare(&job, progress)
                .and_then(|prepared| run_segments(lab, &job, &prepared, done, settings, progress));
            // Stopped here, on success or error, so its last sample is kept while the run is
            // still open (an error may end the recording right after this).
            if let Some(sampler) = sampler.take() {
                sampler.stop();
            }
            ran
        },
        |ran, report| {
            let all = earlier_measured.with_results(&report.jobs, &ran.merged);
            let ending = ran.ending;
            if !all.unmerged.is_empty() {
                let unmerged = all.unmerged.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
                say!(
                    "iolab: warning: the histograms of segments {unmerged} could not be read back; \
                     the whole burn-in's percentiles leave them out"
                );
            }
            let whole = (!all.segments.is_empty()).then(|| whole(&all.merged, all.measured_s, &job.slo));
            let samples = samples.lock().map(|s| s.clone()).unwrap_or_default();
            let rated_lines = match (&rated, &whole) {
                (Some(rated), Some(w)) => rated.check(&w.read, &w.write, &w.total),
                _ => Vec::new(),
            };
            let summary = BurninSummary {
                run,
                workload: iolab_report::planned_workload(&job),
                target: describe_targets(&targets),
                planned_segments: settings.segments,
                segment_s: segment.as_secs_f64(),
                health_every_s: health_every.as_secs_f64(),
                keep_going: settings.keep_going,
                perf: perf_trend(&all.segments),
                data_errors: all.segments.iter().map(|s| s.data_errors).sum(),
                segments: all.segments,
                resumed_from: done,
                whole,
                health: health_trend(&samples),
                health_samples: samples,
                health_skipped: skipped.lock().ok().and_then(|s| s.clone()),
                ending: ending.clone(),
                rated_model: rated.as_ref().and_then(|r| r.model.clone()),
                rated: rated_lines,
            };
            let delivery = Delivery::study(&plan.output, burnin_json(&summary), || burnin_text(&summary));
            Ok(match ending {
                Ending::DataErrors { segment, errors } => Delivery {
                    failure: Some((
                        exit::IO_ERRORS,
                        Some(format!("the burn-in stopped at segment {segment}: {errors} data errors")),
                    )),
                    ..delivery
                },
                _ => delivery,
            })
        },
    ))
}

/// The burn-in `args` describe, checked before anything runs.
fn resolve(args: &BurninArgs) -> Result<Burnin, ExitCode> {
    let segment = args.segment.unwrap_or(DEFAULT_SEGMENT);
    let duration = args.duration.unwrap_or(DEFAULT_DURATION);
    let health_every = args.health_every.unwrap_or(DEFAULT_HEALTH_EVERY);
    if segment < MIN_SEGMENT {
        return Err(exit::usage("--segment must be at least 100ms (each segment is one kept point)"));
    }
    if duration < segment {
        return Err(exit::usage(format!(
            "--duration ({}s) is shorter than one --segment ({}s)",
            duration.as_secs_f64(),
            segment.as_secs_f64()
        )));
    }
    let segments = duration.0.div_ceil(segment.0);
    if segments > MAX_SEGMENTS {
        return Err(exit::usage(format!(
            "--duration {}s in --segment {}s is {segments} segments, more than {MAX_SEGMENTS} (each a \
             stored point); give a longer --segment",
            duration.as_secs_f64(),
            segment.as_secs_f64()
        )));
    }
    if health_every.0 < Nanos::from_secs(1).0 {
        return Err(exit::usage("--health-every must be at least 1s"));
    }
    plan::refuse(
        &args.workload.options,
        &["runtime", "ramp", "io_limit"],
        "burnin",
        "times its segments itself (--segment, --duration)",
    )
    .map_err(exit::usage)?;
    let segments = segments as u32; // At most MAX_SEGMENTS.
    if let Some(file) = args.target.as_ref().filter(|t| is_job_file(t)) {
        return Err(exit::usage(format!(
            "{} is a job file; `iolab burnin` runs one workload given as flags (e.g. --rw randwrite \
             --bs 4k) on its TARGET (a target named like a job file is given with --target)",
            file.display()
        )));
    }
    let rated = args.rated.as_deref().map(load_rated).transpose().map_err(exit::usage)?;
    // Absolute targets (the argument's and --target's), so the plan `--resume` matches names
    // the same files whatever the directory, and the health is read from their drive.
    let target = args.target.as_deref().map(absolute);
    let mut options = args.workload.options.clone();
    if let Some(paths) = options.target.as_mut() {
        *paths = paths.iter().map(|p| absolute(p)).collect();
    }
    let defaults = segment_defaults(segment, args.keep_going);
    let (plan, job) = plan::one_workload(&defaults, &options, target, "burnin").map_err(exit::usage)?;
    let job = JobSpec { name: "burnin".into(), ..job };
    let plan = RunPlan { jobs: vec![job.clone()], ..plan };
    let settings = BurninSettings { segments, keep_going: args.keep_going };
    let targets = job.groups.first().map(|g| g.target.paths.clone()).unwrap_or_default();
    Ok(Burnin { plan, job, settings, segment, health_every, rated, targets })
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The targets as the report names them: the one path, a striped set with the drive whose
/// health is read, or the scratch file.
fn describe_targets(targets: &[PathBuf]) -> String {
    match targets {
        [] => "a scratch file in the current directory".to_string(),
        [one] => one.display().to_string(),
        [first, ..] => format!(
            "{} (striped; the drive health is read from {}'s drive only)",
            targets.iter().map(|t| t.display().to_string()).collect::<Vec<_>>().join(" + "),
            first.display()
        ),
    }
}

/// Reopens burn-in `run` to continue it: its settings from its own command line (only the
/// output may be given anew), the segments it completed, and its health samples.
fn resume(run: RunId, args: BurninArgs, store: &StoreArgs) -> Result<(Burnin, Recording, Earlier), ExitCode> {
    let failed = |e: iolab_store::StoreError| exit::store_failed(&e);
    if store.no_store {
        return Err(exit::usage("--resume does not combine with --no-store"));
    }
    refuse_with_resume(&args)?;
    let db = open_store(store)?;
    // The run without its points: a burn-in of weeks reads back only its segments' figures
    // and histograms (`point_figures`), never their series and whole results.
    let stored = db.run_head(run).map_err(failed)?;
    may_resume(&stored.info).map_err(exit::usage)?;
    let original = match Cli::try_parse_from(&stored.info.command).map(|cli| cli.command) {
        Ok(Command::Burnin(original)) => original,
        _ => {
            return Err(exit::usage(format!(
                "run {run}'s command line is not one this iolab reads as a burn-in"
            )))
        }
    };
    let mut original = original;
    let (mine, theirs) = (&args.workload.options, &mut original.workload.options);
    theirs.json = mine.json;
    theirs.output = mine.output.clone();
    theirs.quiet = mine.quiet;
    let burnin = resolve(&original)?;
    output_file::check_output(burnin.plan.output.path.as_deref(), &burnin.plan.jobs, store)?;
    let figures = db.point_figures(run).map_err(failed)?;
    let points =
        kept_segments(run, &stored.plan, &burnin.plan.jobs, &burnin.job, figures).map_err(exit::usage)?;
    let samples = db
        .samples(run, HEALTH)
        .map_err(failed)?
        .into_iter()
        .filter_map(|sample| serde_json::from_value(sample).ok())
        .collect();
    let recorder = Recorder::resume(db, run, points.len() as u32).map_err(failed)?;
    if !burnin.plan.output.quiet {
        say!(
            "iolab: resuming burn-in run {run}: {} of {} segments kept, {} to run",
            points.len(),
            burnin.settings.segments,
            burnin.settings.segments.saturating_sub(points.len() as u32)
        );
    }
    let recording = Recording::resume(recorder, &burnin.plan);
    let earlier = Earlier { segments: points.len() as u32, measured: Measured::of_points(&points), samples };
    Ok((burnin, recording, earlier))
}

/// With --resume the settings are the run's own: only the output (--json, -o, -q) is new.
fn refuse_with_resume(args: &BurninArgs) -> Result<(), ExitCode> {
    let mut given: Vec<String> = args
        .workload
        .options
        .keys_set()
        .into_iter()
        .filter(|key| !RUN_KEYS.contains(key))
        .map(iolab_spec::flag_name)
        .collect();
    let own = [
        (args.target.is_some(), "TARGET"),
        (args.duration.is_some(), "--duration"),
        (args.segment.is_some(), "--segment"),
        (args.health_every.is_some(), "--health-every"),
        (args.keep_going, "--keep-going"),
        (args.rated.is_some(), "--rated"),
    ];
    given.extend(own.iter().filter(|(set, _)| *set).map(|(_, name)| name.to_string()));
    if given.is_empty() {
        return Ok(());
    }
    Err(exit::usage(format!(
        "--resume takes the burn-in's settings from its own command line; drop {}",
        given.join(", ")
    )))
}

/// Starts reading the drive's health every `--health-every`, each sample kept in the run as
/// it is read (`db`: a connection of the sampler's own, whatever the segments are doing); `None` (with the reason in `skipped`) when the target's drive has no health to read.
fn start_health(
    burnin: &Burnin,
    mut db: Option<Sampler>,
    samples: &Arc<Mutex<Vec<HealthSample>>>,
    skipped: &Arc<Mutex<Option<String>>>,
) -> Option<Periodic> {
    // The scratch file is laid out in the current directory; of a striped set, the first
    // target's drive is read (the report says so).
    let target = burnin.targets.first().cloned().unwrap_or_else(|| absolute(Path::new(".")));
    let source = match HealthSource::for_target(&target) {
        Ok(source) => source,
        Err(reason) => {
            if let Ok(mut skipped) = skipped.lock() {
                *skipped = Some(reason);
            }
            return None;
        }
    };
    let (samples, skipped) = (Arc::clone(samples), Arc::clone(skipped));
    let mut lost = false;
    let tick = move || {
        let now = now_unix_s();
        match source.sample(now) {
            Ok(sample) => {
                if let Some(db) = db.as_mut() {
                    let body = serde_json::to_value(&sample).unwrap_or_default();
                    if let Err(e) = db.add(HEALTH, now, &body) {
                        if !lost {
                            say!("iolab: warning: a health sample was not kept in the results database: {e}");
                            lost = true;
                        }
                    }
                }
                if let Ok(mut samples) = samples.lock() {
                    samples.push(sample);
                }
            }
            Err(reason) => {
                if let Ok(mut skipped) = skipped.lock() {
                    skipped.get_or_insert(reason);
                }
            }
        }
    };
    match Periodic::start(burnin.health_every.as_duration(), tick) {
        Ok(periodic) => Some(periodic),
        Err(e) => {
            say!("iolab: warning: the drive's health will not be sampled: cannot start its thread: {e}");
            None
        }
    }
}
