//! `iolab fleet ... replay TRACE...`: each host replays its own trace (or every host one
//! trace) on its own target, every host starting at one instant. The coordinator reads the
//! traces, asks each host for its target's region, lays each trace onto its host's region
//! (`--fit` as `iolab replay`), and sends each host its requests; the fleet's lags and
//! latencies are merged exactly (the union of the hosts' histograms) and each host's own
//! fidelity is shown beside its trace.

use std::path::PathBuf;
use std::process::ExitCode;

use iolab_report::{replay_json, replay_text, HostReplay};
use iolab_runner::RunError;
use iolab_spec::{resolve, JobSpec, RunPlan};
use iolab_stats::result::JobResult;
use iolab_trace::replay_plan::{self, ReplayPlan};
use iolab_trace::{fidelity, Trace};

use crate::args::{FleetReplayArgs, ReplayHow, StoreArgs};
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::{exit, replay_job, trace_command};

pub fn run(args: FleetReplayArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    exit::of(replay(args, store, place))
}

/// The traces, each with its path and its plan as recorded (laid onto its own reach: what the
/// run's queue, window and mix come from before any host's target is known).
struct Traces {
    paths: Vec<PathBuf>,
    traces: Vec<Trace>,
    as_recorded: Vec<ReplayPlan>,
}

impl Traces {
    fn open(paths: Vec<PathBuf>, how: &ReplayHow) -> Result<Traces, ExitCode> {
        let traces = paths.iter().map(|path| trace_command::open(path)).collect::<Result<Vec<_>, _>>()?;
        let as_recorded = paths
            .iter()
            .zip(&traces)
            .map(|(path, trace)| {
                let reach = replay_job::reach(trace).max(1);
                replay_plan::plan(trace, how.speed, None, reach, 1)
                    .map_err(|e| exit::usage(format!("{}: {e}", path.display())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Traces { paths, traces, as_recorded })
    }

    /// Host `i`'s trace: its own, or the one every host replays.
    fn of_host(&self, i: usize) -> usize {
        if self.traces.len() == 1 {
            0
        } else {
            i
        }
    }
}

fn replay(args: FleetReplayArgs, store: &StoreArgs, place: &mut Place<'_>) -> Result<ExitCode, ExitCode> {
    let how = &args.how;
    let traces = Traces::open(args.traces, how)?;
    let base = base_plan(&traces, how)?;
    let names: Vec<String> = traces.paths.iter().map(|p| p.display().to_string()).collect();
    let title = format!("fleet replay of {}", names.join(", "));
    Ok(Measurement::new("replay", &base).titled(title).run(
        store,
        place,
        |lab, progress| {
            let hosts = lab.host_names();
            let trace_count = traces.traces.len();
            if trace_count != 1 && trace_count != hosts.len() {
                return Err(RunError::Invalid(format!(
                    "{trace_count} traces for {} hosts: give one trace per host, in the order the hosts are named, or one trace that every host replays",
                    hosts.len()
                )));
            }
            let job = &base.jobs[0];
            let regions = lab.check_regions(job, progress).map_err(|e| hint_fit(e, how))?;
            let jobs = regions
                .iter()
                .zip(&hosts)
                .enumerate()
                .map(|(i, (region, host))| host_job(job, &traces, traces.of_host(i), *region, host, how))
                .collect::<Result<Vec<_>, _>>()?;
            let results = lab.run_each(&jobs, progress)?;
            Ok((hosts, results))
        },
        |(hosts, results), report| {
            let versus = match report.jobs.first().and_then(|j| j.groups.first()) {
                Some(group) => fidelity::versus(&union(&traces.traces), &group.read, &group.write),
                None => Vec::new(),
            };
            let each = each_host(&traces, &hosts, &results);
            Ok(Delivery::study(&base.output, replay_json(&versus, &each, report), || {
                replay_text(&versus, &each, report)
            }))
        },
    ))
}

/// The run every host is first checked with: the target (made as large as the furthest trace
/// reaches, unless the traces are fitted onto the targets as they are), the deepest queue and
/// the longest window any trace needs, and the mix of the trace that writes most (so every
/// host is checked for the writes it may be sent).
fn base_plan(traces: &Traces, how: &ReplayHow) -> Result<RunPlan, ExitCode> {
    let pairs = || traces.traces.iter().zip(&traces.as_recorded);
    let qd = pairs().map(|(t, laid)| replay_job::queue_depth(t, laid, how.qd)).max().unwrap_or(1);
    let runtime = pairs().map(|(t, laid)| replay_job::window(t, laid)).max().unwrap_or_default();
    let size = how.fit.is_none().then(|| traces.traces.iter().map(replay_job::file_size).max().unwrap_or(0));
    let options = replay_job::options(how, size, qd, runtime);
    let mut plan = resolve(None, &options).map_err(exit::usage)?;
    let most_writes = (0..traces.traces.len()).min_by_key(|&i| traces.as_recorded[i].read_pct).unwrap_or(0);
    let Some(group) = plan.jobs.first_mut().and_then(|j| j.groups.first_mut()) else {
        return Err(exit::fail(exit::INTERNAL, "the replay's job has no group"));
    };
    let (trace, laid) = (&traces.traces[most_writes], traces.as_recorded[most_writes].clone());
    replay_job::lay_onto(group, trace, laid, String::new());
    // Checked without its requests: each host gets its own once its region is known.
    group.replay = None;
    Ok(plan)
}

/// Host `i`'s job: `base` with trace `t` laid onto the host's region.
fn host_job(
    base: &JobSpec,
    traces: &Traces,
    t: usize,
    region: Option<u64>,
    host: &str,
    how: &ReplayHow,
) -> Result<JobSpec, RunError> {
    let trace = &traces.traces[t];
    // A host that dropped out runs nothing: its job only has to be well formed.
    let region = region.unwrap_or_else(|| replay_job::reach(trace).max(1));
    // The host's own direct I/O alignment is checked there, against the job's.
    let laid = replay_plan::plan(trace, how.speed, how.fit, region, 1)
        .map_err(|e| RunError::Invalid(format!("{host}: {}: {e}", traces.paths[t].display())))?;
    let mut job = base.clone();
    if let Some(group) = job.groups.first_mut() {
        replay_job::lay_onto(group, trace, laid, traces.paths[t].display().to_string());
    }
    Ok(job)
}

/// A target too small for a trace fails the check with the size it was asked for: say how to
/// replay the trace on it anyway.
fn hint_fit(error: RunError, how: &ReplayHow) -> RunError {
    match error {
        RunError::Invalid(message) if how.fit.is_none() && message.contains("beyond the end") => {
            RunError::Invalid(format!(
                "{message}; the target is made as large as the trace reaches: lay the trace onto a smaller target with --fit scale or --fit wrap"
            ))
        }
        other => other,
    }
}

/// Every trace's requests as one (the fleet's latencies beside every traced device's service
/// times).
fn union(traces: &[Trace]) -> Trace {
    Trace {
        header: traces[0].header.clone(),
        requests: traces.iter().flat_map(|t| t.requests.iter().cloned()).collect(),
    }
}

fn each_host(traces: &Traces, hosts: &[String], results: &[Option<JobResult>]) -> Vec<HostReplay> {
    hosts
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let t = traces.of_host(i);
            let group = results.get(i).and_then(Option::as_ref).and_then(|r| r.groups.first());
            HostReplay {
                host: host.clone(),
                trace: traces.paths[t].display().to_string(),
                replay: group.and_then(|g| g.replay.clone()),
                versus_capture: group
                    .map(|g| fidelity::versus(&traces.traces[t], &g.read, &g.write))
                    .unwrap_or_default(),
            }
        })
        .collect()
}
