//! `iolab ramp`: the workload closed-loop to find its maximum IOPS, then open-loop at each
//! level's share of it, stopping at the first level that crosses a limit.

use std::path::PathBuf;

use iolab_analysis::ramp::{row, RampLimits, RampRow};
use iolab_runner::{Lab, Observer, RunError};
use iolab_spec::{JobSpec, Options, RunPlan};

use crate::plan;

/// A ramp ready to run: every level's job resolves (a bad flag fails before any I/O).
pub struct Ramp {
    /// The closed-loop run's plan, as the run is recorded.
    pub plan: RunPlan,
    pub limits: RampLimits,
    closed: JobSpec,
    levels: Vec<u32>,
    options: Options,
    target: Option<PathBuf>,
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
        plan::refuse(options, &["rate_iops", "burst"], "ramp", "sets the rate of each level itself")?;
        if let Some(bad) = levels.iter().find(|&&l| l == 0 || l > 100) {
            return Err(format!("--levels are shares of the maximum, 1..100 (got {bad})"));
        }
        if let Some(bad) = limits.max_cpu_pct.filter(|c| !(*c > 0.0 && *c <= 100.0)) {
            return Err(format!(
                "--max-cpu is a share of the machine's CPU, above 0 and at most 100 (got {bad})"
            ));
        }
        let (plan, closed) = plan::one_workload(&plan::step_defaults(), options, target.clone(), "ramp")?;
        let ramp = Ramp { plan, limits, closed, levels, options: options.clone(), target };
        ramp.level_job(1, 100)?;
        Ok(ramp)
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
            let job = self
                .level_job((max_iops * f64::from(level) / 100.0).round() as u64, level)
                .map_err(RunError::Invalid)?;
            let level_row = row(level, lab.run_prepared(&job, &targets, observer)?, &self.limits);
            let crossed = level_row.crossed.is_some();
            rows.push(level_row);
            if crossed {
                break;
            }
        }
        Ok(RampFound { max_iops, rows })
    }

    /// The workload at `iops`, named after its `level`.
    fn level_job(&self, iops: u64, level: u32) -> Result<JobSpec, String> {
        let flags = Options { rate_iops: Some(iops.max(1)), ..self.options.clone() };
        let plan = plan::base_plan(&flags, self.target.clone().into_iter().collect())?;
        let job = plan.jobs.into_iter().next().ok_or("nothing to run")?;
        Ok(JobSpec { name: format!("{level}% of the maximum"), ..job })
    }
}
