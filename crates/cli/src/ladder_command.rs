//! `iolab ladder`: one workload through every I/O interface in turn (iolab_spec::ladder), then
//! the table and the verdict (iolab_analysis::ladder).

use std::process::ExitCode;

use iolab_analysis::ladder::{summarize, RungOutcome};
use iolab_engine::target::has_poll_queues_behind;
use iolab_report::{ladder_json, ladder_text};
use iolab_runner::OnFailedStart;
use iolab_spec::ladder::Rung;
use iolab_spec::{flag_name, JobSpec, RunPlan, URING_KEYS};

use crate::args::LadderArgs;
use crate::place::Place;
use crate::recording::{Recording, StoreArgs};
use crate::{exit, session, study};

pub fn run(args: LadderArgs, store: &StoreArgs) -> ExitCode {
    let engine_key = args.options.keys_set().into_iter().find(|k| *k == "engine" || URING_KEYS.contains(k));
    if let Some(key) = engine_key {
        return exit::fail(
            exit::USAGE,
            &format!("the ladder chooses the engine of each step itself; drop {}", flag_name(key)),
        );
    }
    let base = match study::base_plan(&args.options, args.target.into_iter().collect()) {
        Ok(plan) => plan,
        Err(message) => return exit::fail(exit::USAGE, &message),
    };
    let Some(base_job) = base.jobs.first() else {
        return exit::fail(exit::USAGE, "nothing to run");
    };
    let steps: Vec<(Rung, Result<JobSpec, String>)> =
        Rung::ALL.into_iter().map(|rung| (rung, step(rung, base_job))).collect();
    let plan = RunPlan {
        jobs: steps.iter().filter_map(|(_, job)| job.as_ref().ok().cloned()).collect(),
        output: base.output.clone(),
    };
    let mut recording = match Recording::start(store, "ladder", &plan) {
        Ok(recording) => recording,
        Err(code) => return code,
    };
    let outcome = match session::execute(&plan, OnFailedStart::Skip, &mut recording, &mut Place::here()) {
        Ok(outcome) => outcome,
        Err(code) => return code,
    };
    let report = &outcome.report;
    let outcomes: Vec<RungOutcome<'_>> = steps
        .iter()
        .map(|(rung, job)| {
            let result = match job {
                Err(why) => Err(why.clone()),
                Ok(job) => report.jobs.iter().find(|r| r.name == job.name).ok_or_else(|| {
                    let index = plan.jobs.iter().position(|j| j.name == job.name);
                    outcome
                        .failed
                        .iter()
                        .find(|(i, _)| Some(*i) == index)
                        .map_or_else(|| "not reached (interrupted)".to_string(), |(_, e)| e.to_string())
                }),
            };
            RungOutcome { rung: *rung, result }
        })
        .collect();
    let summary = summarize(&outcomes);
    let json = ladder_json(&summary, report);
    let rendered = if plan.output.json { json.clone() } else { ladder_text(&summary, report) };
    session::deliver(&plan.output, &rendered, report, recording, Some(&json))
}

/// The job of `rung`, or why the rung cannot run on this target.
fn step(rung: Rung, base: &JobSpec) -> Result<JobSpec, String> {
    if rung == Rung::UringIopoll {
        let group = base.groups.first().ok_or("no workload")?;
        if !group.target.direct {
            return Err("IOPOLL needs O_DIRECT".into());
        }
        // The scratch file goes in the current directory.
        let here = std::path::PathBuf::from(".");
        let paths = if group.target.paths.is_empty() { vec![here] } else { group.target.paths.clone() };
        if let Some(path) = paths.iter().find(|p| !has_poll_queues_behind(p)) {
            return Err(format!(
                "the device behind {} has no poll queues (queue/io_poll is not 1; NVMe gets them with the nvme module's poll_queues=N)",
                path.display()
            ));
        }
    }
    Ok(rung.apply(base))
}
