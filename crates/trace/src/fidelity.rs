//! A replay beside its capture: per operation, the device's service time in the trace against
//! the replay's latency on the new target (both from the hand-over to the driver, or to the
//! kernel, to the completion). Sizes are not split: a run's latencies are kept per operation.

use iolab_stats::result::OpSummary;
use serde::Serialize;

use crate::shape::percentile;
use crate::{Trace, TraceOp};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServiceVersus {
    pub op: TraceOp,
    pub capture_requests: u64,
    pub capture_mean_us: f64,
    pub capture_p50_us: f64,
    pub capture_p99_us: f64,
    pub replay_ios: u64,
    pub replay_mean_us: Option<f64>,
    pub replay_p50_us: Option<f64>,
    pub replay_p99_us: Option<f64>,
}

/// Reads and writes of `trace` that carry a service time, beside the replay's `read` and
/// `write`; empty when the trace has no service times (an iolog).
pub fn versus(trace: &Trace, read: &OpSummary, write: &OpSummary) -> Vec<ServiceVersus> {
    let mut rows = Vec::new();
    for (op, replay) in [(TraceOp::Read, read), (TraceOp::Write, write)] {
        let mut us: Vec<f64> = trace
            .requests
            .iter()
            .filter(|r| r.op == op)
            .filter_map(|r| r.service_ns)
            .map(|ns| ns as f64 / 1e3)
            .collect();
        if us.is_empty() {
            continue;
        }
        us.sort_by(f64::total_cmp);
        let latency = replay.latency.as_ref();
        let at = |p: f64| latency.and_then(|l| l.percentile(p)).map(|ns| ns as f64 / 1e3);
        rows.push(ServiceVersus {
            op,
            capture_requests: us.len() as u64,
            capture_mean_us: us.iter().sum::<f64>() / us.len() as f64,
            capture_p50_us: percentile(&us, 50.0),
            capture_p99_us: percentile(&us, 99.0),
            replay_ios: replay.ios,
            replay_mean_us: latency.map(|l| l.mean_ns / 1e3),
            replay_p50_us: at(50.0),
            replay_p99_us: at(99.0),
        });
    }
    rows
}
