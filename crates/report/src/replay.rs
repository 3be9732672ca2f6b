//! `iolab replay`'s report: the run as any other, then how faithfully it replayed the trace
//! (requests completed, lag behind the recorded times, the share started late) and its
//! latencies beside the capture's service times.

use std::fmt::Write;

use iolab_stats::format::{latency, thousands};
use iolab_stats::replay::{ReplayReport, LATE_NS};
use iolab_stats::result::RunReport;
use iolab_trace::fidelity::ServiceVersus;
use serde::Serialize;

use crate::render_text;
use crate::studies::to_json;

pub const REPLAY_SCHEMA: &str = "iolab.replay/1";

#[derive(Serialize)]
struct ReplaySummary<'a> {
    versus_capture: &'a [ServiceVersus],
    /// A fleet's replay: each host's own.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    hosts: &'a [HostReplay],
}

/// One host's part of a fleet's replay (`iolab fleet ... replay`): its trace, how faithfully
/// it replayed it, and its latencies beside that trace's service times.
#[derive(Debug, Serialize)]
pub struct HostReplay {
    /// As the user named it: "10.0.0.2:7878".
    pub host: String,
    pub trace: String,
    /// `None` for a host that failed or dropped out.
    pub replay: Option<ReplayReport>,
    pub versus_capture: Vec<ServiceVersus>,
}

/// `versus`: the run's latencies beside the trace's service times (a fleet's beside all its
/// traces'); `hosts`: a fleet's hosts, each with its own (empty here).
pub fn replay_json(versus: &[ServiceVersus], hosts: &[HostReplay], run: &RunReport) -> String {
    to_json(REPLAY_SCHEMA, &ReplaySummary { versus_capture: versus, hosts }, run)
}

pub fn replay_text(versus: &[ServiceVersus], hosts: &[HostReplay], run: &RunReport) -> String {
    let mut out = render_text(run);
    let replays = run.jobs.iter().flat_map(|j| &j.groups).filter_map(|g| g.replay.as_ref());
    for replay in replays {
        out.push_str(&fidelity_text(replay));
    }
    if !versus.is_empty() {
        let _ = writeln!(out, "\nlatency on the target beside the traced device's service time:");
        versus_text(&mut out, versus);
    }
    for host in hosts {
        let _ = writeln!(out, "\n{} replayed {}:", host.host, host.trace);
        match &host.replay {
            Some(replay) => {
                out.push_str(&fidelity_body(replay));
                versus_text(&mut out, &host.versus_capture);
            }
            None => {
                let _ = writeln!(out, "  no result: the host failed (see the fleet's hosts above)");
            }
        }
    }
    out
}

fn versus_text(out: &mut String, versus: &[ServiceVersus]) {
    for v in versus {
        let replay = |us: Option<f64>| us.map_or_else(|| "-".to_string(), |us| latency(us * 1e3));
        let _ = writeln!(
                out,
                "  {:<6} traced {:>9} requests  mean {:>8} p50 {:>8} p99 {:>8}   replayed {:>9}  mean {:>8} p50 {:>8} p99 {:>8}",
                v.op.name(),
                thousands(v.capture_requests as f64),
                latency(v.capture_mean_us * 1e3),
                latency(v.capture_p50_us * 1e3),
                latency(v.capture_p99_us * 1e3),
                thousands(v.replay_ios as f64),
                replay(v.replay_mean_us),
                replay(v.replay_p50_us),
                replay(v.replay_p99_us),
            );
    }
}

fn fidelity_text(replay: &ReplayReport) -> String {
    let mut out = String::new();
    let speed = replay.speed.map_or_else(
        || "as fast as the queue allowed".to_string(),
        |x| format!("at {x}x the recorded times"),
    );
    let fit = replay.fit.as_ref().map_or_else(String::new, |f| format!(", offsets fitted by {f}"));
    let _ = writeln!(out, "\nreplay of {} {speed}{fit}:", replay.source);
    out.push_str(&fidelity_body(replay));
    out
}

/// How many requests completed, and at kept times their lag.
fn fidelity_body(replay: &ReplayReport) -> String {
    let mut out = String::new();
    let skipped = if replay.skipped > 0 {
        format!(" ({} discards and flushes not replayed)", thousands(replay.skipped as f64))
    } else {
        String::new()
    };
    let whole = if replay.completed == replay.requests { "all" } else { "ONLY" };
    let _ = writeln!(
        out,
        "  {whole} {} of its {} reads and writes completed{skipped}",
        thousands(replay.completed as f64),
        thousands(replay.requests as f64)
    );
    if let (Some(lag), Some(late)) = (&replay.lag, replay.late_pct) {
        let p = |q: f64| lag.percentile(q).map_or_else(|| "-".to_string(), |ns| latency(ns as f64));
        let _ = writeln!(
            out,
            "  lag behind the recorded times: p50 {} p99 {} max {}; {late:.2}% started more than {} late",
            p(50.0),
            p(99.0),
            latency(replay.max_lag_ns as f64),
            latency(LATE_NS as f64)
        );
    }
    out
}
