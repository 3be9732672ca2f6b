//! `iolab ladder`: one workload through every I/O interface in turn (iolab_spec::ladder); a rung
//! the target cannot take is said, and the ladder goes on.

use std::path::PathBuf;

use iolab_analysis::ladder::RungOutcome;
use iolab_engine::target::has_poll_queues_behind;
use iolab_runner::{run_jobs, Lab, Observer, OnFailedStart, RunError};
use iolab_spec::ladder::Rung;
use iolab_spec::{flag_name, JobSpec, RunPlan, URING_KEYS};
use iolab_stats::result::RunReport;
use thiserror::Error;

use crate::plan::{self, Input, PlanError};

/// Why a ladder cannot be planned: it chooses the engine itself, or its workload is refused.
#[derive(Debug, Error)]
pub enum LadderError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("the ladder chooses the engine of each step itself; drop {0}")]
    EngineFlag(String),
    #[error("the ladder chooses the engine of each step itself; the job file sets `{0}`: remove it")]
    EngineKey(&'static str),
}

/// Why a rung cannot run on this target; the ladder says it and goes on.
#[derive(Debug, Error)]
pub enum RungSkipped {
    #[error("IOPOLL needs O_DIRECT")]
    NotDirect,
    #[error(
        "the device behind {} has no poll queues (queue/io_poll is not 1; NVMe gets them with the nvme module's poll_queues=N)",
        .0.display()
    )]
    NoPollQueues(PathBuf),
}

/// A ladder ready to run: each rung's job, or why the rung cannot run here.
pub struct Ladder {
    /// The rungs that can run, as the run is recorded.
    pub plan: RunPlan,
    rungs: Vec<(Rung, Result<JobSpec, RungSkipped>)>,
}

impl Ladder {
    /// The ladder of `input`'s one job; every group of it climbs each rung together.
    pub fn over(input: &Input) -> Result<Ladder, LadderError> {
        let engine_keys = |k: &&str| *k == "engine" || URING_KEYS.contains(k);
        if let Some(key) = input.flags.keys_set().into_iter().find(engine_keys) {
            return Err(LadderError::EngineFlag(flag_name(key)));
        }
        if let Some(key) = input.keys_set().into_iter().find(engine_keys) {
            return Err(LadderError::EngineKey(key));
        }
        let base = plan::resolve_input(&plan::step_defaults(), input)?;
        let base_job = plan::one_job(&base, "ladder", "its groups climb every rung together")?;
        let rungs: Vec<(Rung, Result<JobSpec, RungSkipped>)> =
            Rung::ALL.into_iter().map(|rung| (rung, rung_job(rung, &base_job))).collect();
        let jobs = rungs.iter().filter_map(|(_, job)| job.as_ref().ok().cloned()).collect();
        Ok(Ladder { plan: RunPlan { jobs, output: base.output }, rungs })
    }

    /// Runs every rung that can run; one that cannot start is skipped, with why.
    pub fn run(
        &self,
        lab: &mut Lab<'_>,
        observer: &mut dyn Observer,
    ) -> Result<Vec<(usize, RunError)>, RunError> {
        run_jobs(lab, &self.plan, OnFailedStart::Skip, 0, observer)
    }

    /// Each rung's result in `report`, or why it has none (`failed`: the rungs that could not
    /// start, by index in the plan).
    pub fn outcomes<'a>(&self, report: &'a RunReport, failed: &[(usize, RunError)]) -> Vec<RungOutcome<'a>> {
        self.rungs
            .iter()
            .map(|(rung, job)| {
                let result = match job {
                    Err(why) => Err(why.to_string()),
                    Ok(job) => report.jobs.iter().find(|r| r.name == job.name).ok_or_else(|| {
                        let index = self.plan.jobs.iter().position(|j| j.name == job.name);
                        failed
                            .iter()
                            .find(|(i, _)| Some(*i) == index)
                            .map_or_else(|| "not reached (interrupted)".to_string(), |(_, e)| e.to_string())
                    }),
                };
                RungOutcome { rung: *rung, result }
            })
            .collect()
    }
}

/// The job of `rung`, or why the rung cannot run on this target.
fn rung_job(rung: Rung, base: &JobSpec) -> Result<JobSpec, RungSkipped> {
    if rung == Rung::UringIopoll {
        if base.groups.iter().any(|g| !g.target.direct) {
            return Err(RungSkipped::NotDirect);
        }
        // The scratch file goes in the current directory.
        let here = PathBuf::from(".");
        let paths: Vec<PathBuf> = base
            .groups
            .iter()
            .flat_map(|g| if g.target.paths.is_empty() { vec![here.clone()] } else { g.target.paths.clone() })
            .collect();
        if let Some(path) = paths.into_iter().find(|p| !has_poll_queues_behind(p)) {
            return Err(RungSkipped::NoPollQueues(path));
        }
    }
    Ok(rung.apply(base))
}
