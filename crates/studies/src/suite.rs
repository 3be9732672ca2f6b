//! `iolab suite quick|enterprise|pts`: the suite's steps (iolab_spec::suite) resolved over the
//! user's options and target, then run in order in one lab, a section of the report per step.

use iolab_analysis::rounds::{SteadyRounds, Tracked};
use iolab_analysis::steady::SteadyRule;
use iolab_analysis::suite::{Preconditioning, SuiteSection};
use iolab_analysis::sweep::{summarize, PointFigures, PointOutcome};
use iolab_runner::{Lab, Observer, RunError};
use iolab_spec::suite::{steps, SuiteJob, SuiteStep, SUITE_KEYS};
use iolab_spec::sweep::LoadAxis;
use iolab_spec::{JobSpec, Options, RunPlan};
use thiserror::Error;

use crate::plan::{Input, PlanError};
use crate::rounds::run_rounds;
use crate::{fill, plan};

/// Why a suite's tests cannot be planned over the user's options.
#[derive(Debug, Error)]
pub enum SuiteError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("a suite runs one workload per test; give flags, not a job file of several jobs")]
    SeveralJobs,
    #[error("the options do not resolve")]
    Unresolved,
}

/// A suite ready to run: every step's jobs resolved before the first I/O, so a bad flag fails
/// now, not an hour in.
pub struct Suite {
    /// The jobs known in advance, as the run is recorded.
    pub plan: RunPlan,
    steps: Vec<Resolved>,
    rule: SteadyRule,
}

/// What the suite ran: a section per step that completed, and the error that stopped a step
/// (the steps before it keep their sections).
pub struct SuiteRan {
    pub sections: Vec<SuiteSection>,
    pub failure: Option<RunError>,
}

impl Suite {
    /// The suite over `input`: a job file gives the target, region and engine of every test.
    pub fn over(suite: iolab_spec::suite::Suite, input: &Input) -> Result<Suite, SuiteError> {
        let why = "each of its tests is one workload on one target; give a file of one group";
        plan::refuse_groups(input, "suite", why)?;
        plan::refuse_input(input, SUITE_KEYS, "suite", "sets the workload of each test itself")?;
        plan::one_group(&plan::step_defaults(), input, "suite", why)?;
        let steps = steps(suite).iter().map(|step| resolve(step, input)).collect::<Result<Vec<_>, _>>()?;
        let known: Vec<JobSpec> = steps.iter().flat_map(known_jobs).cloned().collect();
        let output =
            plan::resolve_input(&plan::step_defaults(), input).map_err(|_| SuiteError::Unresolved)?.output;
        Ok(Suite { plan: RunPlan { jobs: known, output }, steps, rule: SteadyRule::default() })
    }

    /// Seconds the suite takes: steady rounds count at their most; preconditioning is paced
    /// when it runs.
    pub fn planned_s(&self) -> f64 {
        self.steps
            .iter()
            .map(|step| match step {
                Resolved::Steady { job, .. } => seconds(job) * self.rule.max_rounds as f64,
                Resolved::Precondition { .. } => 0.0,
                other => known_jobs(other).iter().map(seconds).sum(),
            })
            .sum()
    }

    /// Runs the steps in order until one fails, the run is interrupted or a job ends it.
    pub fn run(&self, lab: &mut Lab<'_>, observer: &mut dyn Observer) -> SuiteRan {
        let mut sections = Vec::new();
        for step in &self.steps {
            if lab.interrupted() {
                break;
            }
            match run_step(lab, step, self.rule, observer) {
                Ok(section) => sections.push(section),
                Err(e) => return SuiteRan { sections, failure: Some(e) },
            }
            if lab.jobs().iter().any(|j| j.stop_reason.ends_the_run()) {
                break;
            }
        }
        SuiteRan { sections, failure: None }
    }
}

/// A step resolved against the user's options: its jobs, ready to run.
enum Resolved {
    Table { title: String, jobs: Vec<JobSpec> },
    Curve { title: String, jobs: Vec<JobSpec> },
    Precondition { passes: u32, fill: JobSpec },
    Steady { title: String, job: JobSpec },
    Matrix { title: String, rows: Vec<String>, columns: Vec<String>, jobs: Vec<JobSpec> },
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

fn resolve(step: &SuiteStep, input: &Input) -> Result<Resolved, SuiteError> {
    let one = |name: &str, flags: &Options, defaults: &Options| -> Result<JobSpec, SuiteError> {
        let plan = plan::resolve_input(defaults, &input.with_flags(input.flags.overlay(flags)))?;
        match plan.jobs.as_slice() {
            [job] => Ok(JobSpec { name: name.to_string(), ..job.clone() }),
            _ => Err(SuiteError::SeveralJobs),
        }
    };
    let study_defaults = plan::step_defaults();
    let many = |jobs: &[SuiteJob]| -> Result<Vec<JobSpec>, SuiteError> {
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
    observer: &mut dyn Observer,
) -> Result<SuiteSection, RunError> {
    let first = lab.jobs().len();
    let run_all =
        |lab: &mut Lab<'_>, jobs: &[JobSpec], observer: &mut dyn Observer| -> Result<Vec<usize>, RunError> {
            for job in jobs {
                if lab.interrupted() {
                    break;
                }
                lab.run(job, observer)?;
            }
            Ok((first..lab.jobs().len()).collect())
        };
    Ok(match step {
        Resolved::Table { title, jobs } => {
            SuiteSection::Table { title: title.clone(), jobs: run_all(lab, jobs, observer)? }
        }
        Resolved::Matrix { title, rows, columns, jobs } => {
            // A cell the target refuses (512 B blocks with O_DIRECT on a 4 KiB-sector device)
            // is left empty, with why, and the matrix goes on.
            let (mut cells, mut skipped) = (Vec::new(), Vec::new());
            for job in jobs {
                if lab.interrupted() {
                    break;
                }
                match lab.run(job, observer) {
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
            let ran = run_all(lab, jobs, observer)?;
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
            let targets = lab.prepare(job, observer)?;
            let rounds = run_rounds(lab, job, &targets, SteadyRounds::new(Tracked::Iops, rule), observer)?;
            SuiteSection::Steady { title: title.clone(), jobs: (first..lab.jobs().len()).collect(), rounds }
        }
        Resolved::Precondition { passes, fill } => {
            let targets = lab.prepare(fill, observer)?;
            let region: u64 = targets.iter().flatten().map(|t| t.region_size).sum();
            lab.run_prepared(&fill::passes(fill, *passes, region), &targets, observer)?;
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
