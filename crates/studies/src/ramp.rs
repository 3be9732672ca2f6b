//! `iolab ramp`: the workload closed-loop to find its maximum IOPS, then open-loop at each
//! level's share of it, stopping at the first level that crosses a limit. A job of several
//! groups shares each level's rate among them in proportion to their own rates, or without
//! rates to their outstanding I/Os (QD x workers): `groups::shares`.

use iolab_analysis::ramp::{row, MeasuredCurve, RampLimits};
use iolab_runner::{Lab, Observer, RunError};
use iolab_spec::{GroupSpec, JobSpec, Options, RateSpec, RunPlan, SpecError, MAX_RATE_IOPS};

use iolab_spec::sweep::expand;
use thiserror::Error;

use crate::groups::shares;
use crate::plan::{self, Input, PlanError};
use crate::sweep::lift_lists;

/// Why a ramp cannot be planned: its levels or limits, a listed load, or its workload.
#[derive(Debug, Error)]
pub enum RampError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The lists that make the ramp's curves (`expand`'s refusal).
    #[error(transparent)]
    Axes(#[from] SpecError),
    #[error("--levels are shares of the maximum, 1..100 (got {0})")]
    Level(u32),
    #[error("--max-cpu is a share of the machine's CPU, above 0 and at most 100 (got {0})")]
    MaxCpu(f64),
    #[error(
        "a ramp's load is its rate, not {0}: give one value (a list of --bs, --read-pct or --random-pct ramps each), or sweep {0} with `iolab sweep`"
    )]
    ListedLoad(&'static str),
    #[error(
        "the job file gives some groups a rate_iops and not group '{0}'; a ramp shares each level's rate by the groups' own rates: give every group one, or none to share it by QD x workers"
    )]
    UnratedGroup(String),
}

/// A ramp ready to run: every level's job resolves (a bad flag fails before any I/O).
pub struct Ramp {
    /// The closed-loop runs' plan (one per curve), as the run is recorded.
    pub plan: RunPlan,
    pub limits: RampLimits,
    levels: Vec<u32>,
    curves: Vec<Curve>,
    /// Times a run another load or a stolen CPU disturbed is measured again.
    retries: u32,
}

/// One workload of the ramp: the only one, or one combination of the listed values.
struct Curve {
    /// "read 90%"; empty for a plain ramp.
    name: String,
    closed: JobSpec,
    /// The job as every level runs it, each group with its schedule's arrival; the level sets
    /// the rates.
    scheduled: JobSpec,
    /// Each group's weight in a level's rate.
    weights: Vec<u64>,
}

/// What the ramp measured: each curve that ran.
pub struct RampFound {
    pub curves: Vec<MeasuredCurve>,
}

impl Ramp {
    /// The ramp of `input`, one curve per combination of the values listed for --bs, --read-pct
    /// and --random-pct (in the flags or at the top of the job file); the rates a job file gives
    /// its groups are their weights.
    pub fn over(input: &Input, levels: Vec<u32>, limits: RampLimits) -> Result<Ramp, RampError> {
        let why = "sets the rate of each level itself";
        plan::refuse(&input.flags, &["rate_iops", "burst"], "ramp", why)?;
        plan::refuse_input(input, &["burst"], "ramp", why)?;
        if let Some(bad) = levels.iter().find(|&&l| l == 0 || l > 100) {
            return Err(RampError::Level(*bad));
        }
        if let Some(bad) = limits.max_cpu_pct.filter(|c| !(*c > 0.0 && *c <= 100.0)) {
            return Err(RampError::MaxCpu(bad));
        }
        let (axes, input) = lift_lists(input);
        let listed = |axis: Option<usize>| axis.is_some_and(|n| n > 1);
        if let Some(flag) = [("--qd", axes.qd.as_ref()), ("--workers", axes.workers.as_ref())]
            .into_iter()
            .find_map(|(flag, axis)| listed(axis.map(|a| a.0.len())).then_some(flag))
        {
            return Err(RampError::ListedLoad(flag));
        }
        let lists = [axes.bs.as_ref().map(|a| a.0.len()), axes.read_pct.as_ref().map(|a| a.0.len())]
            .into_iter()
            .chain([axes.random_pct.as_ref().map(|a| a.0.len())])
            .any(listed);
        let workloads: Vec<(String, Input)> = if lists {
            let (_, points) = expand(&axes)?;
            points.into_iter().map(|p| (p.name, input.with_flags(p.flags))).collect()
        } else {
            vec![(String::new(), input)]
        };
        let mut curves = Vec::with_capacity(workloads.len());
        let mut output = None;
        for (name, input) in workloads {
            let (curve, plan) = Curve::of(name, &input)?;
            output.get_or_insert(plan.output);
            curves.push(curve);
        }
        let jobs = curves.iter().map(|c| c.closed.clone()).collect();
        Ok(Ramp {
            plan: RunPlan { jobs, output: output.unwrap_or_default() },
            limits,
            levels,
            curves,
            retries: 0,
        })
    }

    /// The ramp measuring a disturbed closed-loop run or level again up to `retries` times
    /// (`--retries`): a disturbed maximum would set every level's rate from another load's.
    pub fn with_retries(self, retries: u32) -> Ramp {
        Ramp { retries, ..self }
    }

    /// Seconds the closed-loop runs and every level take, at most (without retries).
    pub fn planned_s(&self) -> f64 {
        let each = |c: &Curve| (c.closed.ramp.0 + c.closed.runtime.0) as f64 / 1e9;
        self.curves.iter().map(|c| each(c) * (self.levels.len() + 1) as f64).sum()
    }

    /// Runs each curve: the closed loop, then the levels in order until one crosses a limit.
    pub fn run(&self, lab: &mut Lab<'_>, observer: &mut dyn Observer) -> Result<RampFound, RunError> {
        let mut found = Vec::new();
        for curve in &self.curves {
            if lab.interrupted() || lab.jobs().iter().any(|j| j.stop_reason.ends_the_run()) {
                break;
            }
            found.push(self.run_curve(curve, lab, observer)?);
        }
        Ok(RampFound { curves: found })
    }

    fn run_curve(
        &self,
        curve: &Curve,
        lab: &mut Lab<'_>,
        observer: &mut dyn Observer,
    ) -> Result<MeasuredCurve, RunError> {
        let targets = lab.prepare(&curve.closed, observer)?;
        let max = JobSpec { name: curve.named("maximum (closed loop)"), ..curve.closed.clone() };
        let closed = lab.run_until_undisturbed(&max, &targets, self.retries, observer)?;
        let max_iops = closed.total.iops;
        let max_disturbed =
            closed.verdict.cause.disturbs_the_measure().then(|| closed.verdict.summary.clone());
        let mut rows = Vec::new();
        for &level in self.levels.iter().filter(|_| max_iops >= 1.0) {
            if lab.interrupted() || lab.jobs().iter().any(|j| j.stop_reason.ends_the_run()) {
                break;
            }
            let iops = (max_iops * f64::from(level) / 100.0).round() as u64;
            let groups = curve.weights.len() as u64;
            if iops < groups {
                observer.note(&format!(
                    "{}{level}% of the maximum is {iops} IOPS, less than one a second for each of the {groups} groups: skipped",
                    curve.prefix()
                ));
                continue;
            }
            let job = curve.level_job(iops, level);
            let measured = lab.run_until_undisturbed(&job, &targets, self.retries, observer)?;
            let level_row = row(level, measured, &self.limits);
            let crossed = level_row.crossed.is_some();
            rows.push(level_row);
            if crossed {
                break;
            }
        }
        Ok(MeasuredCurve { name: curve.name.clone(), max_iops, max_disturbed, rows })
    }
}

impl Curve {
    /// The curve of `input`'s one job, and its plan (for the output settings).
    fn of(name: String, input: &Input) -> Result<(Curve, RunPlan), RampError> {
        // Without rates in the file, the job is resolved at a stand-in rate, so that a schedule's
        // options (--arrival) are checked once; each level sets its own rates.
        let rated = input.keys_set().contains(&"rate_iops");
        let flags =
            Options { rate_iops: input.flags.rate_iops.or((!rated).then_some(1)), ..input.flags.clone() };
        let plan = plan::resolve_input(&plan::step_defaults(), &input.with_flags(flags))?;
        let scheduled = plan::one_job(&plan, "ramp", "its groups share each level's rate")?;
        let weights = scheduled
            .groups
            .iter()
            .map(|g| match (rated, g.rate) {
                (false, _) => Ok(u64::from(g.qd) * u64::from(g.workers)),
                (true, Some(rate)) => Ok(rate.iops),
                (true, None) => Err(RampError::UnratedGroup(g.name.clone())),
            })
            .collect::<Result<Vec<u64>, RampError>>()?;
        let closed = JobSpec {
            groups: scheduled.groups.iter().map(|g| GroupSpec { rate: None, ..g.clone() }).collect(),
            ..scheduled.clone()
        };
        Ok((Curve { name, closed, scheduled, weights }, plan))
    }

    /// What leads a note about this curve: "read 90%: ", or nothing for a ramp of one curve.
    fn prefix(&self) -> String {
        if self.name.is_empty() {
            String::new()
        } else {
            format!("{}: ", self.name)
        }
    }

    /// A job's name, led by the curve's when it has one: "read 90%: 50% of the maximum".
    fn named(&self, what: &str) -> String {
        format!("{}{what}", self.prefix())
    }

    /// The workload at `iops` in all, shared by its groups' weights, named after its `level`.
    fn level_job(&self, iops: u64, level: u32) -> JobSpec {
        let rates = shares(&self.weights, iops.clamp(1, MAX_RATE_IOPS));
        let groups = self
            .scheduled
            .groups
            .iter()
            .zip(rates)
            .map(|(group, iops)| {
                let arrival = group.rate.map(|r| r.arrival).unwrap_or_default();
                let rate = RateSpec { iops: iops.min(MAX_RATE_IOPS), arrival };
                GroupSpec { rate: Some(rate), ..group.clone() }
            })
            .collect();
        JobSpec { name: self.named(&format!("{level}% of the maximum")), groups, ..self.scheduled.clone() }
    }
}
