//! `iolab replay TRACE --target PATH`: a trace's reads and writes reissued on a target at their
//! recorded times (or faster, or as fast as possible), as a normal run of one group that the
//! runner paces from the trace (crates/trace `replay_plan`, runner `Router::Replay`); then how
//! faithfully it kept the trace and its latencies beside the capture's service times.

use std::fs::File;
use std::path::Path;
use std::process::ExitCode;

use iolab_report::{replay_json, replay_text};
use iolab_runner::{run_jobs, OnFailedStart};
use iolab_spec::{resolve, RunPlan};
use iolab_trace::replay_plan::{self, ReplayPlan, Speed};
use iolab_trace::{fidelity, Trace};

use crate::args::{ReplayArgs, StoreArgs};
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::{exit, replay_job, trace_command};

const SECTOR: u32 = 512;

pub fn run(args: ReplayArgs, store: &StoreArgs) -> ExitCode {
    exit::of(replay(args, store))
}

fn replay(args: ReplayArgs, store: &StoreArgs) -> Result<ExitCode, ExitCode> {
    let trace = trace_command::open(&args.trace)?;
    let how = &args.how;
    let room = TargetRoom::of(&how.target, &trace, how.buffered, how.fit.is_some())?;
    let laid =
        replay_plan::plan(&trace, how.speed, how.fit, room.region, room.direct_align).map_err(exit::usage)?;
    if how.speed != Speed::Max && laid.speed.is_none() && !how.quiet {
        crate::exit::say!(
            "iolab: note: {} has no times ({}): it is replayed as fast as the queue allows",
            args.trace.display(),
            trace.header.source.describe()
        );
    }
    let plan = run_plan(&args, &trace, &room, laid)?;
    let title = format!("replay of {}", args.trace.display());
    Ok(Measurement::new("replay", &plan).titled(title).run(
        store,
        &mut Place::here(),
        |lab, progress| run_jobs(lab, &plan, OnFailedStart::Stop, 0, progress),
        |_, report| {
            let group = report.jobs.first().and_then(|j| j.groups.first());
            let versus = group.map_or_else(Vec::new, |g| fidelity::versus(&trace, &g.read, &g.write));
            Ok(Delivery::study(&plan.output, replay_json(&versus, &[], report), || {
                replay_text(&versus, &[], report)
            }))
        },
    ))
}

/// How much of the target a replay may use, and what its direct I/O needs.
struct TargetRoom {
    region: u64,
    direct_align: u32,
    /// A file to make (or extend) this large first.
    make_file: Option<u64>,
}

impl TargetRoom {
    /// `fitting`: a file keeps its size and the trace is fitted onto it (else it is extended
    /// to the trace's reach).
    fn of(target: &Path, trace: &Trace, buffered: bool, fitting: bool) -> Result<TargetRoom, ExitCode> {
        let file_size = replay_job::file_size(trace);
        let opened = match File::open(target) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Direct I/O needs at least the sector; the runner checks the new file's own
                // alignment once it is made.
                let direct_align = if buffered { 1 } else { SECTOR };
                return Ok(TargetRoom { region: file_size, direct_align, make_file: Some(file_size) });
            }
            Err(e) => return Err(exit::usage(format!("cannot open the target {}: {e}", target.display()))),
        };
        let info = iolab_engine::target::inspect(target, &opened).map_err(exit::usage)?;
        let direct_align = if buffered { 1 } else { info.direct_align.max(1) };
        Ok(match info.kind {
            iolab_engine::target::TargetKind::BlockDevice => {
                TargetRoom { region: info.size, direct_align, make_file: None }
            }
            iolab_engine::target::TargetKind::File if info.size < file_size && !fitting => {
                TargetRoom { region: file_size, direct_align, make_file: Some(file_size) }
            }
            iolab_engine::target::TargetKind::File => {
                TargetRoom { region: info.size, direct_align, make_file: None }
            }
        })
    }
}

/// One job of one group: the target as `iolab run` would open it (its safety checks
/// included), the trace's mix as its access pattern, and the trace as what it issues.
fn run_plan(
    args: &ReplayArgs,
    trace: &Trace,
    room: &TargetRoom,
    laid: ReplayPlan,
) -> Result<RunPlan, ExitCode> {
    let qd = replay_job::queue_depth(trace, &laid, args.how.qd);
    let runtime = replay_job::window(trace, &laid);
    let options = replay_job::options(&args.how, room.make_file, qd, runtime);
    let mut plan = resolve(None, &options).map_err(exit::usage)?;
    let Some(group) = plan.jobs.first_mut().and_then(|j| j.groups.first_mut()) else {
        return Err(exit::fail(exit::INTERNAL, "the replay's job has no group"));
    };
    replay_job::lay_onto(group, trace, laid, args.trace.display().to_string());
    Ok(plan)
}
