//! What a replay runs, here (`iolab replay`) or on each host of a fleet (`iolab fleet ...
//! replay`): the queue and the window a trace's plan needs, the run's options, and the one
//! group laid out to issue the plan.

use std::sync::Arc;

use iolab_spec::axis::Axis;
use iolab_spec::{BsWeight, Bytes, GroupSpec, Nanos, Options, ReplaySpec};
use iolab_trace::replay_plan::ReplayPlan;
use iolab_trace::shape::{outstanding, shape};
use iolab_trace::Trace;

use crate::args::ReplayHow;

/// The queue a replay at its recorded times gets by default: room for twice what the trace
/// had outstanding, so a target as fast as the traced device never holds a request back.
const PACED_QD_MIN: u32 = 32;
const MOST_QD: u32 = 1024;
/// Time a replay has past its last request's due time (kept times) before the run ends.
const GRACE: Nanos = Nanos(60_000_000_000);
/// A replay as fast as possible gets at least this long per request before its window ends.
const SLOWEST_NS_PER_REQUEST: u64 = 1_000_000;

/// The most requests in flight: `asked`, else from what the trace had outstanding.
pub fn queue_depth(trace: &Trace, laid: &ReplayPlan, asked: Option<u32>) -> u32 {
    let recorded = outstanding(trace).map(|o| o.max.max(1));
    asked.unwrap_or(match (laid.speed, recorded) {
        (Some(_), Some(most)) => (2 * most).clamp(PACED_QD_MIN, MOST_QD),
        (Some(_), None) => PACED_QD_MIN,
        (None, Some(most)) => most.min(MOST_QD),
        (None, None) => PACED_QD_MIN,
    })
}

/// How long the run may last: at kept times, until a grace after the last request is due; as
/// fast as possible it ends with its last request, and the window only bounds a target slower
/// than both ten times the recorded pace and 1,000 requests a second.
pub fn window(trace: &Trace, laid: &ReplayPlan) -> Nanos {
    match laid.speed {
        Some(_) => Nanos(laid.last_due_ns.saturating_add(GRACE.0)),
        None => {
            let paced = trace.header.duration_ns.saturating_mul(10);
            let slow = (laid.ios.len() as u64).saturating_mul(SLOWEST_NS_PER_REQUEST);
            Nanos(paced.max(slow).saturating_add(GRACE.0))
        }
    }
}

/// A replay's run: on `how.target`, made `size` bytes large when given, `qd` deep, for
/// `runtime`, with no ramp (every request counts).
pub fn options(how: &ReplayHow, size: Option<u64>, qd: u32, runtime: Nanos) -> Options {
    Options {
        target: Some(vec![how.target.clone()]),
        size: size.map(Bytes),
        qd: Some(Axis::one(qd)),
        engine: how.engine,
        allow_destroy: how.allow_destroy.then_some(true),
        buffered: how.buffered.then_some(true),
        runtime: Some(runtime),
        ramp: Some(Nanos(0)),
        json: how.json.then_some(true),
        output: how.output.clone(),
        quiet: how.quiet.then_some(true),
        ..Options::default()
    }
}

/// The trace's mix as `group`'s access pattern (what the verdict and the report read), and
/// `laid` as what it issues.
pub fn lay_onto(group: &mut GroupSpec, trace: &Trace, laid: ReplayPlan, source: String) {
    group.access.read_pct = laid.read_pct;
    group.access.random_pct = (100.0 - shape(trace).sequential_pct).round().clamp(0.0, 100.0) as u32;
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
        source,
        speed: laid.speed,
        fit: laid.fit.map(|f| f.name().to_string()),
        skipped: laid.skipped,
        ios: Arc::from(laid.ios),
    });
}

/// The bytes from the start of the device the trace's reads and writes reach.
pub fn reach(trace: &Trace) -> u64 {
    trace.requests.iter().filter(|r| r.op.moves_data()).map(|r| r.end()).max().unwrap_or(0)
}

/// A file made for a replay: as large as the trace reaches, in whole MiB.
pub fn file_size(trace: &Trace) -> u64 {
    reach(trace).div_ceil(1 << 20).max(1) << 20
}
