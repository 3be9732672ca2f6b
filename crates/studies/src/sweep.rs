//! `iolab sweep`: every point of the sweep (iolab_spec::sweep) as a job, run in order (in rounds
//! until steady when asked), then the curve's points from what was measured, including the
//! points an earlier, unfinished run of the same sweep kept (`--resume`).

use iolab_analysis::rounds::SteadyRounds;
use iolab_analysis::sweep::{summarize, with_steady_rounds, PointFigures, PointOutcome, SweepSummary};
use iolab_runner::{run_jobs, Lab, Observer, OnFailedStart, RunError};
use iolab_spec::sweep::{expand, LoadAxis, SweepPoint};
use iolab_spec::{Axis, GroupSpec, JobSpec, Options, RunPlan, SpecError};
use iolab_stats::result::{Bottleneck, RunReport, StopReason};
use iolab_store::{Point, RunId};
use thiserror::Error;

use crate::groups::{scaled, with_each_group};
use crate::plan::{self, Input, PlanError};
use crate::rounds::each_until_steady;

/// Why a sweep cannot be planned, or an earlier run of it cannot be resumed.
#[derive(Debug, Error)]
pub enum SweepError {
    /// The lists to sweep (`expand`'s refusal).
    #[error(transparent)]
    Axes(#[from] SpecError),
    #[error("sweep point {point}: {source}")]
    Point { point: String, source: PlanError },
    #[error("sweep point {point}: the job file's groups could not be found to scale")]
    GroupsNotFound { point: String },
    #[error("run {run} holds point {seq} '{name}', which this sweep does not plan there; not resuming it")]
    Foreign { run: RunId, seq: u32, name: String },
}

/// A sweep ready to run: each point's job resolved, repeated `repeat` times.
pub struct Sweep {
    /// Every job of the sweep, in order: what the run records and `--resume` matches.
    pub plan: RunPlan,
    load: LoadAxis,
    points: Vec<SweepPoint>,
    repeat: u32,
    /// Rounds until steady at each point, from this fresh state; `None` for one run a point.
    until_steady: Option<SteadyRounds>,
    /// Times a point another load or a stolen CPU disturbed is measured again (not in rounds
    /// until steady: their rounds already measure it again).
    retries: u32,
}

/// What the jobs still to run measured.
pub struct SweepRan {
    /// The rounds of each point, with `--until-steady`.
    pub steady: Vec<SteadyRounds>,
    /// A job that could not start (by index among the jobs run), after earlier ones ran.
    pub failed: Option<(usize, RunError)>,
}

impl Sweep {
    /// The sweep of `input`: its flags' lists (and those at the top of its job file) over the
    /// job file's one job; a swept QD or worker count scales each of several groups (`point_plan`).
    pub fn over(input: &Input, repeat: u32, until_steady: Option<SteadyRounds>) -> Result<Sweep, SweepError> {
        let (axes, input) = lift_lists(input);
        let (load, points) = expand(&axes)?;
        let mut jobs = Vec::with_capacity(points.len());
        let mut output = None;
        for point in &points {
            let plan = point_plan(&input, point)?;
            output.get_or_insert(plan.output);
            jobs.extend(plan.jobs.into_iter().map(|job| JobSpec { name: point.name.clone(), ..job }));
        }
        let plan = plan::repeated(RunPlan { jobs, output: output.unwrap_or_default() }, repeat);
        Ok(Sweep { plan, load, points, repeat, until_steady, retries: 0 })
    }

    /// The sweep measuring a disturbed point again up to `retries` times (`--retries`).
    pub fn with_retries(self, retries: u32) -> Sweep {
        Sweep { retries, ..self }
    }

    /// The run's kind in the store: rounds until steady make other points than a plain sweep,
    /// and are never resumed as one.
    pub fn kind(&self) -> &'static str {
        if self.until_steady.is_some() {
            "sweep-until-steady"
        } else {
            "sweep"
        }
    }

    /// The jobs after the first `kept` (which an earlier run measured).
    pub fn remaining(&self, kept: usize) -> RunPlan {
        RunPlan { jobs: self.plan.jobs[kept..].to_vec(), output: self.plan.output.clone() }
    }

    /// Runs the jobs of `remaining`: each once, or each in rounds until steady.
    pub fn run(
        &self,
        lab: &mut Lab<'_>,
        remaining: &RunPlan,
        observer: &mut dyn Observer,
    ) -> Result<SweepRan, RunError> {
        match &self.until_steady {
            Some(fresh) => {
                let steady = each_until_steady(lab, remaining, fresh, observer)?;
                Ok(SweepRan { steady, failed: None })
            }
            None => {
                let failed = run_jobs(lab, remaining, OnFailedStart::Stop, self.retries, observer)?;
                Ok(SweepRan { steady: Vec::new(), failed: failed.into_iter().next() })
            }
        }
    }

    /// The curve from the points `earlier` runs kept and what this one measured (`report`,
    /// `steady`). With rounds, a point's result is its last round. A point cut short by Ctrl-C
    /// measured less than the others and is no point of the curve; its partial result stays in
    /// the run report.
    pub fn summary(&self, earlier: &[Point], report: &RunReport, steady: Vec<SteadyRounds>) -> SweepSummary {
        let mut measured: Vec<(StopReason, PointFigures)> =
            earlier.iter().map(|point| (StopReason::Runtime, stored_figures(point))).collect();
        if steady.is_empty() {
            measured.extend(report.jobs.iter().map(|job| (job.stop_reason, PointFigures::of(job))));
        } else {
            let mut last = 0;
            for rounds in &steady {
                last += rounds.values.len();
                let job = &report.jobs[last - 1];
                measured.push((job.stop_reason, PointFigures::of(job)));
            }
        }
        let outcomes = outcomes(&self.points, &measured, self.repeat as usize);
        let summary = summarize(self.load, &outcomes);
        if steady.is_empty() {
            summary
        } else {
            with_steady_rounds(summary, steady)
        }
    }
}

/// The options a sweep lists (`expand`'s) taken from the top of the job file into the flags, and
/// the input without them: a file may hold the sweep (`qd = "1..64"`), and a list that stayed in
/// it would be refused as one value of one run.
pub(crate) fn lift_lists(input: &Input) -> (Options, Input) {
    let mut axes = input.flags.clone();
    let Some(mut file) = input.file.clone() else { return (axes, input.clone()) };
    let listed = |len: usize| len > 1;
    macro_rules! lift {
        ($($key:ident),*) => {$(
            if file.$key.as_ref().is_some_and(|a| listed(a.0.len())) {
                let list = file.$key.take();
                axes.$key = axes.$key.or(list);
            }
        )*};
    }
    lift!(qd, workers, bs, read_pct, random_pct);
    (axes.clone(), Input { file: Some(file), flags: axes, ..input.clone() })
}

/// The plan of one point. A job of several groups (a job file's blender) keeps their proportions
/// under a swept QD or worker count: the group with the largest value runs at the point's value
/// and every other group is scaled by the same factor (`groups::scaled`); the other swept
/// options, like any flag, set every group.
fn point_plan(input: &Input, point: &SweepPoint) -> Result<RunPlan, SweepError> {
    let at = |source| SweepError::Point { point: point.name.clone(), source };
    let defaults = plan::step_defaults();
    let swept = |axis: &Option<Axis<u32>>| axis.as_ref().is_some_and(|a| a.0.len() > 1);
    let (qd_swept, workers_swept) = (swept(&input.flags.qd), swept(&input.flags.workers));
    let mut own = point.flags.clone();
    if qd_swept {
        own.qd = None;
    }
    if workers_swept {
        own.workers = None;
    }
    // The groups as the file gives them, to scale from.
    let base = plan::resolve_input(&defaults, &input.with_flags(own.clone())).map_err(at)?;
    let job = plan::one_job(&base, "sweep", "its groups run together at every point").map_err(at)?;
    let file = match &input.file {
        Some(file) if job.groups.len() > 1 && (qd_swept || workers_swept) => file,
        _ => return plan::resolve_input(&defaults, &input.with_flags(point.flags.clone())).map_err(at),
    };
    let scale = |on: bool, value: &Option<Axis<u32>>, of: fn(&GroupSpec) -> u32| {
        let to = value.as_ref().and_then(Axis::single).filter(|_| on)?;
        Some(scaled(&job.groups.iter().map(of).collect::<Vec<_>>(), to))
    };
    let qds = scale(qd_swept, &point.flags.qd, |g| g.qd);
    let workers = scale(workers_swept, &point.flags.workers, |g| g.workers);
    let file = with_each_group(file, |index, group| {
        if let Some(qds) = &qds {
            group.qd = Some(Axis::one(qds[index]));
        }
        if let Some(workers) = &workers {
            group.workers = Some(Axis::one(workers[index]));
        }
    })
    .ok_or_else(|| SweepError::GroupsNotFound { point: point.name.clone() })?;
    plan::resolve_input(&defaults, &Input { file: Some(file), flags: own, targets: input.targets.clone() })
        .map_err(at)
}

/// The points of run `run` that a resumed sweep of `plan` keeps: those it completed, in order,
/// up to the first one cut short (measured again, with every point after it). Stored points
/// that are not the plan's, in its order, are refused, never deleted.
pub fn resumable(run: RunId, stored: Vec<Point>, plan: &RunPlan) -> Result<Vec<Point>, SweepError> {
    let foreign = stored.iter().enumerate().find(|(index, point)| {
        point.seq as usize != *index || plan.jobs.get(*index).is_none_or(|job| job.name != point.name)
    });
    if let Some((_, point)) = foreign {
        return Err(SweepError::Foreign { run, seq: point.seq, name: point.name.clone() });
    }
    Ok(stored.into_iter().take_while(|point| point.summary.stop_reason != "interrupted").collect())
}

/// The curve's points from what was measured, in plan order (`repeat` results a point): each
/// point that completed at least one repeat, shown by its repeat with the median IOPS.
fn outcomes<'a>(
    points: &'a [SweepPoint],
    measured: &[(StopReason, PointFigures)],
    repeat: usize,
) -> Vec<PointOutcome<'a>> {
    points
        .iter()
        .zip(measured.chunks(repeat))
        .filter_map(|(point, repeats)| {
            let mut done: Vec<&PointFigures> = repeats
                .iter()
                .filter(|(stop, _)| *stop != StopReason::Interrupted)
                .map(|(_, figures)| figures)
                .collect();
            done.sort_by(|a, b| a.total.iops.total_cmp(&b.total.iops));
            let median = done.get(done.len() / 2)?;
            Some(PointOutcome {
                name: &point.name,
                curve: point.curve,
                curve_name: &point.curve_name,
                figures: (*median).clone(),
                repeat_iops: done.iter().map(|f| f.total.iops).collect(),
            })
        })
        .collect()
}

/// QD x workers summed over the groups of a kept point's job (its summary has the first's).
fn stored_outstanding(point: &Point) -> Option<u32> {
    let groups = point.spec["groups"].as_array()?;
    let sum: u64 =
        groups.iter().map(|g| g["qd"].as_u64().unwrap_or(0) * g["workers"].as_u64().unwrap_or(0)).sum();
    u32::try_from(sum).ok().filter(|&n| n > 0)
}

/// A point kept by an earlier, unfinished run of this sweep.
fn stored_figures(point: &Point) -> PointFigures {
    PointFigures {
        access: point.summary.access.clone(),
        qd: point.summary.qd,
        workers: point.summary.workers,
        outstanding: stored_outstanding(point).unwrap_or(point.summary.qd * point.summary.workers),
        total: point.summary.total.clone(),
        cpu_us_per_io: point.summary.cpu_us_per_io.unwrap_or(0.0),
        bottleneck: point.verdict.as_ref().map_or(Bottleneck::Undetermined, |v| v.cause),
        retried: point.result["disturbed_attempts"].as_array().map_or(0, |a| a.len() as u32),
    }
}
