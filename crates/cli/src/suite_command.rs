//! `iolab suite quick|enterprise|pts`: the suite's steps (iolab_spec::suite) over the user's
//! target and timing, in one lab, with a progress bar over the whole suite.

use std::path::PathBuf;
use std::process::ExitCode;

use iolab_analysis::rounds::{SteadyRounds, Tracked};
use iolab_analysis::steady::SteadyRule;
use iolab_analysis::sweep::{summarize, PointFigures, PointOutcome};
use iolab_report::{suite_json, suite_text, Preconditioning, SuiteSection};
use iolab_runner::{Lab, OnFailedStart, RunError};
use iolab_spec::suite::{steps, SuiteStep, SUITE_KEYS};
use iolab_spec::sweep::LoadAxis;
use iolab_spec::{JobSpec, Options, RunPlan};

use crate::args::SuiteArgs;
use crate::exit::say;
use crate::place::Place;
use crate::progress::ProgressLine;
use crate::recording::StoreArgs;
use crate::until_steady::run_rounds;
use crate::{exit, fill, precondition_command, session, study};

/// A step resolved against the user's options: its jobs, ready to run.
enum Resolved {
    Table { title: String, jobs: Vec<JobSpec> },
    Curve { title: String, jobs: Vec<JobSpec> },
    Precondition { passes: u32, fill: JobSpec },
    Steady { title: String, job: JobSpec },
    Matrix { title: String, rows: Vec<String>, columns: Vec<String>, jobs: Vec<JobSpec> },
}

pub fn run(args: SuiteArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    if let Err(message) =
        study::refuse(&args.options, SUITE_KEYS, "suite", "sets the workload of each test itself")
    {
        return exit::fail(exit::USAGE, &message);
    }
    let rule = SteadyRule::default();
    let targets: Vec<PathBuf> = args.target.into_iter().collect();
    // Every job is resolved before the first I/O: a bad flag fails now, not an hour in.
    let resolved = match steps(args.suite)
        .iter()
        .map(|step| resolve(step, &args.options, &targets))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(resolved) => resolved,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let known: Vec<JobSpec> = resolved.iter().flat_map(known_jobs).cloned().collect();
    let Some(output) = study::base_plan(&args.options, targets.clone()).ok().map(|p| p.output) else {
        return exit::fail(exit::USAGE, "the options do not resolve");
    };
    let plan = RunPlan { jobs: known.clone(), output };
    // Steady rounds count at their most; preconditioning is paced when it runs.
    let planned_s: f64 = resolved
        .iter()
        .map(|step| match step {
            Resolved::Steady { job, .. } => seconds(job) * rule.max_rounds as f64,
            Resolved::Precondition { .. } => 0.0,
            other => known_jobs(other).iter().map(seconds).sum(),
        })
        .sum();
    let interrupt = match session::install_signals() {
        Ok(interrupt) => interrupt,
        Err(code) => return code,
    };
    let label = format!("suite {}", args.suite.name());
    let mut progress = ProgressLine::with_plan(plan.output.quiet, &label, planned_s);
    let mut recording = match place.record(store, "suite", &plan) {
        Ok(recording) => recording,
        Err(code) => return code,
    };
    let mut lab = match place.open_lab(&plan, OnFailedStart::Stop, &interrupt, &mut progress) {
        Ok(lab) => lab,
        Err(e) => return exit::fail(session::error_code(&e), &e.to_string()),
    };
    lab.keep_results_in(&mut recording);
    let mut sections = Vec::new();
    let mut failure = None;
    for step in &resolved {
        if lab.interrupted() {
            break;
        }
        match run_step(&mut lab, step, rule, &mut progress) {
            Ok(section) => sections.push(section),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
        if lab.jobs().iter().any(|j| j.stop_reason.ends_the_run()) {
            break;
        }
    }
    let report = lab.into_report();
    if let Some(e) = &failure {
        if report.jobs.is_empty() {
            return exit::fail(session::error_code(e), &e.to_string());
        }
        say!("iolab: a step of the suite could not run: {e}; the steps before it are reported");
    }
    if failure.is_some() {
        recording.mark_failed();
    }
    let json = suite_json(args.suite.name(), &sections, &report);
    let rendered =
        if plan.output.json { json.clone() } else { suite_text(args.suite.name(), &sections, &report) };
    let code = session::deliver(&plan.output, &rendered, &report, recording, Some(&json));
    match failure {
        Some(e) => ExitCode::from(session::error_code(&e)),
        None => code,
    }
}

fn seconds(job: &JobSpec) -> f64 {
    (job.ramp.0 + job.runtime.0) as f64 / 1e9
}

fn known_jobs(step: &Resolved) -> &[JobSpec] {
    match step {
        Resolved::Table { jobs, .. } | Resolved::Curve { jobs, .. } | Resolved::Matrix { jobs, .. } => jobs,
        Resolved::Steady { job, .. } | Resolved::Precondition { fill: job, .. } => std::slice::from_ref(job),
    }
}

fn resolve(step: &SuiteStep, options: &Options, targets: &[PathBuf]) -> Result<Resolved, String> {
    let one = |name: &str, flags: &Options, defaults: &Options| -> Result<JobSpec, String> {
        let plan = study::plan_over(defaults, &options.overlay(flags), targets.to_vec())?;
        match plan.jobs.as_slice() {
            [job] => Ok(JobSpec { name: name.to_string(), ..job.clone() }),
            _ => Err("a suite runs one workload per test; give flags, not a job file of several jobs".into()),
        }
    };
    let study_defaults = study::step_defaults();
    let many = |jobs: &[iolab_spec::suite::SuiteJob]| -> Result<Vec<JobSpec>, String> {
        jobs.iter().map(|j| one(&j.name, &j.flags, &study_defaults)).collect()
    };
    Ok(match step {
        SuiteStep::Table { title, jobs } => Resolved::Table { title: title.clone(), jobs: many(jobs)? },
        SuiteStep::Curve { title, points } => Resolved::Curve { title: title.clone(), jobs: many(points)? },
        SuiteStep::Matrix { title, rows, columns, jobs } => Resolved::Matrix {
            title: title.clone(),
            rows: rows.clone(),
            columns: columns.clone(),
            jobs: many(jobs)?,
        },
        SuiteStep::Steady { title, job } => {
            Resolved::Steady { title: title.clone(), job: one(&job.name, &job.flags, &study_defaults)? }
        }
        SuiteStep::Precondition { passes } => {
            // --runtime and --ramp time the tests, not preconditioning: its I/O limit ends it,
            // as in `iolab precondition` (a 100 ms runtime would cut the passes short).
            let defaults = fill::defaults();
            let untimed = Options { runtime: defaults.runtime, ramp: defaults.ramp, ..Options::default() };
            Resolved::Precondition { passes: *passes, fill: one("precondition", &untimed, &defaults)? }
        }
    })
}

/// Runs one step; its section names the jobs it ran by their index in the lab.
fn run_step(
    lab: &mut Lab<'_>,
    step: &Resolved,
    rule: SteadyRule,
    progress: &mut ProgressLine,
) -> Result<SuiteSection, RunError> {
    let first = lab.jobs().len();
    let run_all =
        |lab: &mut Lab<'_>, jobs: &[JobSpec], progress: &mut ProgressLine| -> Result<Vec<usize>, RunError> {
            for job in jobs {
                if lab.interrupted() {
                    break;
                }
                lab.run(job, progress)?;
            }
            Ok((first..lab.jobs().len()).collect())
        };
    Ok(match step {
        Resolved::Table { title, jobs } => {
            SuiteSection::Table { title: title.clone(), jobs: run_all(lab, jobs, progress)? }
        }
        Resolved::Matrix { title, rows, columns, jobs } => {
            // A cell the target refuses (512 B blocks with O_DIRECT on a 4 KiB-sector device)
            // is left empty, with why, and the matrix goes on.
            let (mut cells, mut skipped) = (Vec::new(), Vec::new());
            for job in jobs {
                if lab.interrupted() {
                    break;
                }
                match lab.run(job, progress) {
                    Ok(_) => cells.push(Some(lab.jobs().len() - 1)),
                    Err(e) if e.is_user_error() => {
                        skipped.push(format!("{}: {e}", job.name));
                        cells.push(None);
                    }
                    Err(e) => return Err(e),
                }
            }
            SuiteSection::Matrix {
                title: title.clone(),
                rows: rows.clone(),
                columns: columns.clone(),
                jobs: cells,
                skipped,
            }
        }
        Resolved::Curve { title, jobs } => {
            let ran = run_all(lab, jobs, progress)?;
            let points: Vec<PointOutcome<'_>> = ran
                .iter()
                .map(|&i| {
                    let result = &lab.jobs()[i];
                    PointOutcome {
                        name: &result.name,
                        curve: 0,
                        curve_name: "",
                        figures: PointFigures::of(result),
                        repeat_iops: vec![result.total.iops],
                    }
                })
                .collect();
            let summary = summarize(LoadAxis::Qd, &points);
            SuiteSection::Curve { title: title.clone(), jobs: ran, summary }
        }
        Resolved::Steady { title, job } => {
            let targets = lab.prepare(job, progress)?;
            let rounds = run_rounds(lab, job, &targets, SteadyRounds::new(Tracked::Iops, rule), progress)?;
            SuiteSection::Steady { title: title.clone(), jobs: (first..lab.jobs().len()).collect(), rounds }
        }
        Resolved::Precondition { passes, fill } => {
            let targets = lab.prepare(fill, progress)?;
            let region: u64 = targets.iter().flatten().map(|t| t.region_size).sum();
            lab.run_prepared(&precondition_command::passes(fill, *passes, region), &targets, progress)?;
            SuiteSection::Precondition {
                job: Some(first),
                done: Preconditioning {
                    passes: *passes,
                    region_bytes: region,
                    trimmed: false,
                    notes: Vec::new(),
                },
            }
        }
    })
}
