//! `iolab ramp`: the workload closed-loop to find its maximum IOPS, then open-loop at each
//! level's share of it, stopping at the first level that crosses a limit. A job of several
//! groups shares each level's rate among them in proportion to their own rates, or without
//! rates to their outstanding I/Os (QD x workers): `groups::shares`.

use std::path::PathBuf;

use iolab_analysis::ramp::{row, RampLimits, RampRow};
use iolab_runner::{Lab, Observer, RunError};
use iolab_spec::{GroupSpec, JobSpec, Options, RateSpec, RunPlan, MAX_RATE_IOPS};

use crate::groups::shares;
use crate::plan::{self, Input};

/// A ramp ready to run: every level's job resolves (a bad flag fails before any I/O).
pub struct Ramp {
    /// The closed-loop run's plan, as the run is recorded.
    pub plan: RunPlan,
    pub limits: RampLimits,
    closed: JobSpec,
    levels: Vec<u32>,
    /// The job as every level runs it, each group with its schedule's arrival; the level sets
    /// the rates.
    scheduled: JobSpec,
    /// Each group's weight in a level's rate.
    weights: Vec<u64>,
}

/// What the ramp measured: the closed-loop maximum and a row per level that ran.
pub struct RampFound {
    pub max_iops: f64,
    pub rows: Vec<RampRow>,
}

impl Ramp {
    /// `levels` are shares of the maximum, 1..100; `limits.max_cpu_pct` a share of the machine.
    pub fn new(
        options: &Options,
        target: Option<PathBuf>,
        levels: Vec<u32>,
        limits: RampLimits,
    ) -> Result<Ramp, String> {
        Ramp::over(&Input::flags(options, target.into_iter().collect()), levels, limits)
    }

    /// The ramp of `input`; the rates a job file gives its groups are their weights.
    pub fn over(input: &Input, levels: Vec<u32>, limits: RampLimits) -> Result<Ramp, String> {
        let why = "sets the rate of each level itself";
        plan::refuse(&input.flags, &["rate_iops", "burst"], "ramp", why)?;
        plan::refuse_input(input, &["burst"], "ramp", why)?;
        if let Some(bad) = levels.iter().find(|&&l| l == 0 || l > 100) {
            return Err(format!("--levels are shares of the maximum, 1..100 (got {bad})"));
        }
        if let Some(bad) = limits.max_cpu_pct.filter(|c| !(*c > 0.0 && *c <= 100.0)) {
            return Err(format!(
                "--max-cpu is a share of the machine's CPU, above 0 and at most 100 (got {bad})"
            ));
        }
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
                (true, None) => Err(format!(
                    "the job file gives some groups a rate_iops and not group '{}'; a ramp shares each level's rate by the groups' own rates: give every group one, or none to share it by QD x workers",
                    g.name
                )),
            })
            .collect::<Result<Vec<u64>, String>>()?;
        let closed = JobSpec {
            groups: scheduled.groups.iter().map(|g| GroupSpec { rate: None, ..g.clone() }).collect(),
            ..scheduled.clone()
        };
        let plan = RunPlan { jobs: vec![closed.clone()], output: plan.output };
        Ok(Ramp { plan, limits, closed, levels, scheduled, weights })
    }

    /// Seconds the closed-loop run and every level take, at most.
    pub fn planned_s(&self) -> f64 {
        (self.closed.ramp.0 + self.closed.runtime.0) as f64 / 1e9 * (self.levels.len() + 1) as f64
    }

    /// The closed-loop job, whose targets the lab prepares once for every level.
    pub fn closed_job(&self) -> &JobSpec {
        &self.closed
    }

    /// Runs the closed loop, then the levels in order until one crosses a limit.
    pub fn run(&self, lab: &mut Lab<'_>, observer: &mut dyn Observer) -> Result<RampFound, RunError> {
        let targets = lab.prepare(&self.closed, observer)?;
        let max = JobSpec { name: "maximum (closed loop)".into(), ..self.closed.clone() };
        let max_iops = lab.run_prepared(&max, &targets, observer)?.total.iops;
        let mut rows = Vec::new();
        for &level in self.levels.iter().filter(|_| max_iops >= 1.0) {
            if lab.interrupted() || lab.jobs().iter().any(|j| j.stop_reason.ends_the_run()) {
                break;
            }
            let job = self.level_job((max_iops * f64::from(level) / 100.0).round() as u64, level);
            let level_row = row(level, lab.run_prepared(&job, &targets, observer)?, &self.limits);
            let crossed = level_row.crossed.is_some();
            rows.push(level_row);
            if crossed {
                break;
            }
        }
        Ok(RampFound { max_iops, rows })
    }

    /// The workload at `iops` in all, shared by its groups' weights, named after its `level`.
    pub fn level_job(&self, iops: u64, level: u32) -> JobSpec {
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
        JobSpec { name: format!("{level}% of the maximum"), groups, ..self.scheduled.clone() }
    }
}
