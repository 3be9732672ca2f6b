//! `iolab trace show` and `iolab capture` in text: what a trace is as a workload, and what a
//! capture cost and whether it saw every request; `trace job --check`: the trace beside a run
//! of its job.

use std::fmt::Write;

use iolab_spec::Bytes;
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::RunReport;
use iolab_trace::shape::Shape;
use iolab_trace::synthesis::Figure;
use iolab_trace::{CaptureCost, TraceHeader};

pub const TRACE_SCHEMA: &str = "iolab.trace/1";

/// The trace's header and its shape, as JSON.
pub fn trace_json(header: &TraceHeader, shape: &Shape) -> String {
    let value = serde_json::json!({ "schema": TRACE_SCHEMA, "trace": header, "shape": shape });
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// The trace's source and header, then its shape.
pub fn trace_text(header: &TraceHeader, shape: &Shape) -> String {
    let mut out = String::new();
    let streams = match header.streams.len() {
        0 => String::new(),
        1 => format!(" of {}", header.streams[0]),
        n => format!(" of {n} streams ({})", header.streams.join(", ")),
    };
    let _ = writeln!(out, "Trace{streams} ({}):", header.source.describe());
    let timing = if header.timed {
        format!("over {:.3} s, {} requests/s", shape.duration_s, thousands(shape.iops))
    } else {
        "without times (replayed as fast as the queue allows)".to_string()
    };
    let _ = writeln!(
        out,
        "  {} requests {timing}; {} moved",
        thousands(shape.requests as f64),
        bytes(shape.bytes)
    );
    let ops: Vec<String> = shape
        .ops
        .iter()
        .map(|o| format!("{} {:.1}% ({})", o.op.name(), o.pct, thousands(o.requests as f64)))
        .collect();
    let _ = writeln!(out, "  operations: {}", ops.join(", "));
    let _ = writeln!(out, "  reads: {:.1}% of the reads and writes", shape.read_pct);
    let sizes: Vec<String> = shape
        .sizes
        .iter()
        .map(|s| {
            if s.bytes == 0 {
                format!("other {:.1}%", s.pct)
            } else {
                format!("{} {:.1}%", Bytes(u64::from(s.bytes)), s.pct)
            }
        })
        .collect();
    let _ = writeln!(out, "  sizes: {}", sizes.join(", "));
    let _ = writeln!(
        out,
        "  sequential: {:.1}% (each starts where one of the last 16 ended)",
        shape.sequential_pct
    );
    let p = &shape.placement;
    let region = if header.device_bytes.is_some() { "the device" } else { "the span the requests touched" };
    let _ = writeln!(
        out,
        "  placement over {region} ({}..{}): the hottest {:.0}% of it takes 80% of the requests",
        bytes(p.start),
        bytes(p.end),
        p.hottest_for_80_pct
    );
    let zones: Vec<String> = p.zoned_fit.iter().map(|(io, size)| format!("{io}/{size}")).collect();
    let _ = writeln!(
        out,
        "    zoned fit: zoned:{} (it misplaces {:.1}% of the requests)",
        zones.join(","),
        p.zoned_error_pct
    );
    match p.zipf_fit {
        Some((theta, error)) => {
            let _ = writeln!(
                out,
                "    zipf fit: zipf:{theta:.2} (the hottest blocks' shares off by up to {error:.1} points)"
            );
        }
        None => {
            let _ = writeln!(out, "    zipf fit: none (no block was requested twice)");
        }
    }
    if let Some(a) = &shape.arrivals {
        let kind = if a.gap_cv < 0.5 {
            "evenly spaced"
        } else if a.gap_cv <= 1.5 {
            "about as independent arrivals (Poisson)"
        } else {
            "in bursts"
        };
        let _ = writeln!(
            out,
            "  arrivals: gaps p50 {} p90 {} p99 {}, mean {}; variation {:.2}: {kind}",
            latency(a.p50_gap_us * 1e3),
            latency(a.p90_gap_us * 1e3),
            latency(a.p99_gap_us * 1e3),
            latency(a.mean_gap_us * 1e3),
            a.gap_cv
        );
        let _ = writeln!(
            out,
            "    requests/s: busiest second {}, quietest {}, busiest 10 ms {}",
            thousands(a.busiest_second_iops),
            thousands(a.quietest_second_iops),
            thousands(a.peak_10ms_iops)
        );
    }
    match &shape.outstanding {
        Some(o) => {
            let _ = writeln!(out, "  outstanding at the device: {:.2} on average, {} at most", o.mean, o.max);
        }
        None => {
            let _ = writeln!(out, "  outstanding at the device: unknown (the trace has no completions)");
        }
    }
    if !shape.service.is_empty() {
        let _ = writeln!(out, "  service time on the traced device (issue to completion):");
        for s in &shape.service {
            let size = match (s.op.moves_data(), s.bytes) {
                (false, _) => String::new(),
                (true, 0) => " other sizes".to_string(),
                (true, b) => format!(" {}", Bytes(u64::from(b))),
            };
            let _ = writeln!(
                out,
                "    {:<18} {:>10} requests  mean {:>8}  p50 {:>8}  p99 {:>8}  max {:>8}",
                format!("{}{size}", s.op.name()),
                thousands(s.requests as f64),
                latency(s.mean_us * 1e3),
                latency(s.p50_us * 1e3),
                latency(s.p99_us * 1e3),
                latency(s.max_us * 1e3)
            );
        }
    }
    if let Some(cost) = &header.capture_cost {
        out.push_str(&capture_text(cost));
    }
    out
}

/// Whether the capture saw everything, and what it cost iolab.
pub fn capture_text(cost: &CaptureCost) -> String {
    let mut out = String::new();
    let seen = match cost.device_completed {
        Some(device) => format!(
            "{} completions traced, {} counted by the device's own stat",
            thousands(cost.captured_completed as f64),
            thousands(device as f64)
        ),
        None => format!("{} completions traced", thousands(cost.captured_completed as f64)),
    };
    let dropped = if cost.dropped_events == 0 {
        "no events dropped".to_string()
    } else {
        format!(
            "{} EVENTS DROPPED (the kernel's buffers filled: the trace is incomplete)",
            thousands(cost.dropped_events as f64)
        )
    };
    let _ = writeln!(
        out,
        "  capture: {seen}; {dropped}; iolab's CPU {} per request",
        latency(cost.cpu_ns_per_request)
    );
    out
}

fn bytes(n: u64) -> String {
    iolab_stats::format::binary_bytes(n)
}

pub const TRACE_JOB_SCHEMA: &str = "iolab.trace-job/1";

#[derive(serde::Serialize)]
struct JobCheck<'a> {
    job: &'a str,
    captured: bool,
    figures: &'a [Figure],
}

/// `trace job --check`: the run, then each figure of the trace beside the run's.
pub fn trace_job_json(job: &str, captured: bool, figures: &[Figure], run: &RunReport) -> String {
    crate::studies::to_json(TRACE_JOB_SCHEMA, &JobCheck { job, captured, figures }, run)
}

pub fn trace_job_text(captured: bool, figures: &[Figure], run: &RunReport) -> String {
    let mut out = crate::render_text(run);
    let how = if captured {
        "the run's own capture"
    } else {
        "the run's figures (no capture: root and a block device give every figure)"
    };
    let _ = writeln!(out, "\nthe trace beside a run of its job ({how}):");
    for f in figures {
        let difference = if f.unit == "%" {
            format!("{:+.1} points", f.difference)
        } else {
            format!("{:+.1}%", f.difference)
        };
        let value = |v: f64| {
            if f.unit == "%" {
                format!("{v:.1}%")
            } else if v >= 100.0 {
                format!("{}{}", thousands(v), f.unit)
            } else {
                format!("{v:.2}{}", f.unit)
            }
        };
        let _ = writeln!(
            out,
            "  {:<36} trace {:>12}  run {:>12}  {difference}",
            f.name,
            value(f.trace),
            value(f.run)
        );
    }
    out
}
