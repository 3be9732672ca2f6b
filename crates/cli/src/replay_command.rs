//! `iolab replay TRACE --target PATH`: a trace's reads and writes reissued on a target at their
//! recorded times (or faster, or as fast as possible), as a normal run of one group that the
//! runner paces from the trace (crates/trace `replay_plan`, runner `Router::Replay`); then how
//! faithfully it kept the trace and its latencies beside the capture's service times.

use std::fs::File;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use iolab_report::{replay_json, replay_text};
use iolab_runner::{run_jobs, OnFailedStart};
use iolab_spec::axis::Axis;
use iolab_spec::{resolve, BsWeight, Bytes, Nanos, Options, ReplaySpec, RunPlan};
use iolab_trace::replay_plan::{self, ReplayPlan, Speed};
use iolab_trace::shape::{outstanding, shape};
use iolab_trace::{fidelity, Trace};

use crate::args::{ReplayArgs, StoreArgs};
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::{exit, trace_command};

/// The queue a replay at its recorded times gets by default: room for twice what the trace
/// had outstanding, so a target as fast as the traced device never holds a request back.
const PACED_QD_MIN: u32 = 32;
const MOST_QD: u32 = 1024;
/// Time a replay has past its last request's due time (kept times) before the run ends.
const GRACE: Nanos = Nanos(60_000_000_000);
/// A replay as fast as possible gets at least this long per request before its window ends.
const SLOWEST_NS_PER_REQUEST: u64 = 1_000_000;
const SECTOR: u32 = 512;

pub fn run(args: ReplayArgs, store: &StoreArgs) -> ExitCode {
    exit::of(replay(args, store))
}

fn replay(args: ReplayArgs, store: &StoreArgs) -> Result<ExitCode, ExitCode> {
    let trace = trace_command::open(&args.trace)?;
    let room = TargetRoom::of(&args.target, &trace, args.buffered, args.fit.is_some())?;
    let laid = replay_plan::plan(&trace, args.speed, args.fit, room.region, room.direct_align)
        .map_err(exit::usage)?;
    if args.speed != Speed::Max && laid.speed.is_none() && !args.quiet {
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
            Ok(Delivery::study(&plan.output, replay_json(&versus, report), || replay_text(&versus, report)))
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
        let reach = trace.requests.iter().filter(|r| r.op.moves_data()).map(|r| r.end()).max().unwrap_or(0);
        // A file is made as large as the trace reaches, in whole MiB.
        let file_size = reach.div_ceil(1 << 20).max(1) << 20;
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
    let recorded = outstanding(trace).map(|o| o.max.max(1));
    let qd = args.qd.unwrap_or(match (laid.speed, recorded) {
        (Some(_), Some(most)) => (2 * most).clamp(PACED_QD_MIN, MOST_QD),
        (Some(_), None) => PACED_QD_MIN,
        (None, Some(most)) => most.min(MOST_QD),
        (None, None) => PACED_QD_MIN,
    });
    let runtime = match laid.speed {
        Some(_) => Nanos(laid.last_due_ns.saturating_add(GRACE.0)),
        // As fast as possible ends with its last request; the window only bounds a target
        // slower than both ten times the recorded pace and 1,000 requests a second.
        None => {
            let paced = trace.header.duration_ns.saturating_mul(10);
            let slow = (laid.ios.len() as u64).saturating_mul(SLOWEST_NS_PER_REQUEST);
            Nanos(paced.max(slow).saturating_add(GRACE.0))
        }
    };
    let options = Options {
        target: Some(vec![args.target.clone()]),
        size: room.make_file.map(Bytes),
        qd: Some(Axis::one(qd)),
        engine: args.engine,
        allow_destroy: args.allow_destroy.then_some(true),
        buffered: args.buffered.then_some(true),
        runtime: Some(runtime),
        ramp: Some(Nanos(0)),
        json: args.json.then_some(true),
        output: args.output.clone(),
        quiet: args.quiet.then_some(true),
        ..Options::default()
    };
    let mut plan = resolve(None, &options).map_err(exit::usage)?;
    let sequential = shape(trace).sequential_pct;
    let Some(group) = plan.jobs.first_mut().and_then(|j| j.groups.first_mut()) else {
        return Err(exit::fail(exit::INTERNAL, "the replay's job has no group"));
    };
    group.access.read_pct = laid.read_pct;
    group.access.random_pct = (100.0 - sequential).round().clamp(0.0, 100.0) as u32;
    group.access.bs_split = laid
        .sizes
        .iter()
        .map(|&(size, count)| BsWeight {
            bs: Bytes(u64::from(size)),
            weight: count.min(u64::from(u32::MAX)) as u32,
        })
        .collect();
    group.access.align = Bytes(u64::from(laid.align));
    group.replay = Some(ReplaySpec {
        source: args.trace.display().to_string(),
        speed: laid.speed,
        fit: laid.fit.map(|f| f.name().to_string()),
        skipped: laid.skipped,
        ios: Arc::from(laid.ios),
    });
    Ok(plan)
}
