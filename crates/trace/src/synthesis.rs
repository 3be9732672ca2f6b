//! `iolab trace job`: an iolab job file that reproduces a trace as a workload, and how close a
//! run of it came to the trace, figure by figure.
//!
//! The job keeps what a job file can say: the read share, the size mix, the random share, the
//! placement (the zoned fit when it has zones and misplaces under 10% of the requests, else the
//! zipf fit when its error is under 5 points, else uniform), the rate (open loop at the
//! trace's requests per second, Poisson arrivals when the gaps vary as much as independent
//! arrivals or more) and room for the trace's concurrency (twice the most it had outstanding).
//! What it cannot say (bursts beyond Poisson, the exact sequence, per-size placement) is
//! written in its header, with the fits' errors.

use std::fmt::Write;

use serde::Serialize;

use crate::shape::Shape;
use crate::TraceHeader;

/// A zoned fit is used when it misplaces less than this share of the requests, in percent.
const ZONED_MAX_ERROR_PCT: f64 = 10.0;
/// A zipf fit is used when its shares are off by less than this, in points.
const ZIPF_MAX_ERROR: f64 = 5.0;
/// Gaps varying this much (coefficient of variation) or more arrive as Poisson.
const POISSON_CV: f64 = 0.5;
const MOST_QD: u32 = 1024;

/// The job, as TOML text, and what it asks.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthesized {
    pub text: String,
    pub distribution: String,
    /// `None` for a trace without times: the job runs closed loop.
    pub rate_iops: Option<u64>,
    pub qd: u32,
}

/// The job, or why there is none: a trace without reads or writes has nothing a job can do.
pub fn synthesize(header: &TraceHeader, shape: &Shape, trace_name: &str) -> Result<Synthesized, String> {
    let data_requests: u64 = shape.ops.iter().filter(|o| o.op.moves_data()).map(|o| o.requests).sum();
    if data_requests == 0 {
        return Err(format!("{trace_name} has no reads or writes: a job has nothing to reproduce"));
    }
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# iolab job synthesized from {trace_name} ({}, {} requests over {:.3} s)",
        header.source.describe(),
        shape.requests,
        shape.duration_s
    );
    let listed: Vec<_> = shape.sizes.iter().filter(|s| s.bytes > 0).collect();
    let listed_pct: f64 = listed.iter().map(|s| s.pct).sum();
    let split: Vec<String> = listed
        .iter()
        .map(|s| format!("{}/{}", s.bytes, ((s.pct * 1000.0 / listed_pct.max(1e-9)).round() as u32).max(1)))
        .collect();
    if listed_pct < 99.95 {
        let _ = writeln!(
            text,
            "# sizes beyond the eight commonest ({:.1}% of the requests) are left out of bs_split",
            100.0 - listed_pct
        );
    }
    let p = &shape.placement;
    let zoned = p.zoned_fit.len() > 1 && p.zoned_error_pct < ZONED_MAX_ERROR_PCT;
    let zipf = p.zipf_fit.filter(|&(theta, error)| error < ZIPF_MAX_ERROR && theta > 0.0);
    let distribution = if zoned {
        let zones: Vec<String> = p.zoned_fit.iter().map(|(io, size)| format!("{io}/{size}")).collect();
        let _ = writeln!(
            text,
            "# placement: the zoned fit, which misplaces {:.1}% of the requests",
            p.zoned_error_pct
        );
        format!("zoned:{}", zones.join(","))
    } else if let Some((theta, error)) = zipf {
        let _ = writeln!(
            text,
            "# placement: the zipf fit, its hottest blocks' shares off by up to {error:.1} points"
        );
        format!("zipf:{theta:.2}")
    } else {
        let _ = writeln!(
            text,
            "# placement: uniform (the zoned fit misplaces {:.1}% of the requests; the zipf fit {})",
            p.zoned_error_pct,
            p.zipf_fit.map_or_else(
                || "found no repeated block".to_string(),
                |(_, e)| format!("is off by up to {e:.1} points")
            )
        );
        "uniform".to_string()
    };
    let most = shape.outstanding.as_ref().map(|o| o.max.max(1));
    let qd = most.map_or(32, |m| (2 * m).min(MOST_QD));
    // The job issues the reads and writes alone: the trace's discards and flushes are no part of its rate.
    let data_iops = shape.iops * data_requests as f64 / shape.requests.max(1) as f64;
    let rate_iops = (data_iops >= 1.0).then(|| data_iops.round() as u64);
    let arrival = shape.arrivals.as_ref().map(|a| if a.gap_cv >= POISSON_CV { "poisson" } else { "uniform" });
    if let Some(a) = &shape.arrivals {
        if a.gap_cv > 1.5 {
            let _ = writeln!(text, "# the trace arrives in bursts (gap variation {:.2}): a job's arrivals are at most Poisson (1.0)", a.gap_cv);
        }
    }
    match most {
        Some(m) => {
            let _ = writeln!(text, "# qd: room for twice the most the trace had outstanding ({m})");
        }
        None => {
            let _ = writeln!(text, "# qd: the trace does not say how many it had outstanding; 32");
        }
    }
    let _ = writeln!(text, "# the exact sequence of requests is not kept: `iolab replay` reissues it");
    if let Some(bytes) = header.device_bytes {
        let _ = writeln!(text, "size = \"{bytes}\"");
    } else {
        let _ = writeln!(text, "size = \"{}\"", p.end.div_ceil(1 << 20) << 20);
    }
    let _ = writeln!(text, "runtime = \"{}ms\"", ((shape.duration_s * 1000.0).round() as u64).max(1000));
    let _ = writeln!(text, "ramp = \"0s\"");
    let _ = writeln!(text, "bs_split = \"{}\"", split.join(","));
    let _ = writeln!(text, "read_pct = {}", shape.read_pct.round() as u32);
    let _ =
        writeln!(text, "random_pct = {}", (100.0 - shape.sequential_pct).round().clamp(0.0, 100.0) as u32);
    let _ = writeln!(text, "distribution = \"{distribution}\"");
    let _ = writeln!(text, "qd = {qd}");
    if let Some(iops) = rate_iops {
        let _ = writeln!(text, "rate_iops = {iops}");
        if let Some(arrival) = arrival {
            let _ = writeln!(text, "arrival = \"{arrival}\"");
        }
    }
    Ok(Synthesized { text, distribution, rate_iops, qd })
}

/// One figure of the trace beside the same figure of a run of its job.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Figure {
    pub name: String,
    pub trace: f64,
    pub run: f64,
    /// Relative difference in percent for rates; points for shares.
    pub difference: f64,
    pub unit: &'static str,
}

/// What a run of the job showed: its own trace's shape when it was captured, or the run's
/// figures alone.
pub struct RunFigures {
    pub iops: f64,
    pub read_pct: f64,
    pub mean_size: f64,
    pub captured: Option<Shape>,
}

pub fn compare(trace: &Shape, run: &RunFigures) -> Vec<Figure> {
    let rate = |name: &str, t: f64, r: f64, unit| Figure {
        name: name.into(),
        trace: t,
        run: r,
        difference: if t > 0.0 { 100.0 * (r - t) / t } else { 0.0 },
        unit,
    };
    let share =
        |name: String, t: f64, r: f64| Figure { name, trace: t, run: r, difference: r - t, unit: "%" };
    let mut figures = Vec::new();
    if trace.iops > 0.0 {
        figures.push(rate("requests/s", trace.iops, run.iops, ""));
    }
    figures.push(share("read share".into(), trace.read_pct, run.read_pct));
    let moved: Vec<_> = trace.sizes.iter().filter(|s| s.bytes > 0).collect();
    let total: f64 = moved.iter().map(|s| s.pct).sum::<f64>().max(1e-9);
    let mean_size = moved.iter().map(|s| f64::from(s.bytes) * s.pct).sum::<f64>() / total;
    figures.push(rate("mean request size", mean_size, run.mean_size, " B"));
    let Some(captured) = &run.captured else { return figures };
    for size in &moved {
        let got = captured.sizes.iter().find(|s| s.bytes == size.bytes).map_or(0.0, |s| s.pct);
        figures.push(share(format!("{} B share", size.bytes), size.pct, got));
    }
    figures.push(share("sequential share".into(), trace.sequential_pct, captured.sequential_pct));
    let mut from = 0;
    for &(_, size) in &trace.placement.zoned_fit {
        let to = (from + size as usize).min(trace.placement.zone_pct.len());
        let of = |zones: &[f64]| zones.get(from..to).map_or(0.0, |z| z.iter().sum());
        let name = format!("requests in {}%..{}% of the region", from, to);
        figures.push(share(name, of(&trace.placement.zone_pct), of(&captured.placement.zone_pct)));
        from = to;
    }
    if let (Some(t), Some(r)) = (&trace.arrivals, &captured.arrivals) {
        figures.push(rate("gap variation", t.gap_cv, r.gap_cv, ""));
    }
    if let (Some(t), Some(r)) = (&trace.outstanding, &captured.outstanding) {
        figures.push(rate("mean outstanding", t.mean, r.mean, ""));
    }
    figures
}

#[cfg(test)]
#[path = "synthesis_tests.rs"]
mod tests;
