//! What `iolab replay` issues: a trace's reads and writes laid onto the target (as they are,
//! or fitted onto a smaller target by `--fit`), each due at its recorded time divided by the
//! speed. Every refusal happens here, before a target is opened: a trace that reaches past
//! the target, a request the target's direct I/O cannot take, a trace with nothing to move.

use std::str::FromStr;

use iolab_spec::ReplayIo;
use thiserror::Error;

use crate::{Trace, TraceOp};

/// The slowest and fastest a replay at kept times may go.
pub const MIN_SPEED: f64 = 0.001;
pub const MAX_SPEED: f64 = 1e6;
/// The latest a request may be due, in nanoseconds (about 146 years): past it, times scaled by
/// a slow speed are refused rather than read as "never".
pub const LATEST_DUE_NS: u64 = 1 << 62;

/// How fast a replay goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// Each request at its recorded time divided by this (1 is as recorded, 2 twice as fast).
    Times(f64),
    /// As fast as the queue allows.
    Max,
}

impl FromStr for Speed {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "max" {
            return Ok(Speed::Max);
        }
        let number = text.strip_suffix('x').unwrap_or(text);
        match number.parse::<f64>() {
            Ok(x) if (MIN_SPEED..=MAX_SPEED).contains(&x) => Ok(Speed::Times(x)),
            _ => Err(format!(
                "'{text}' is not a speed; use e.g. 1x (as recorded), 2x, 0.5x (from {MIN_SPEED}x to {MAX_SPEED}x) or max"
            )),
        }
    }
}

/// How offsets past a smaller target's end are laid onto it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Every offset scaled by the target's size over the traced device's, so the trace's
    /// spread over the device is kept (its sequential runs are not).
    Scale,
    /// Offsets taken modulo the target's size, so sequential runs stay sequential.
    Wrap,
}

impl Fit {
    pub fn name(self) -> &'static str {
        match self {
            Fit::Scale => "scale",
            Fit::Wrap => "wrap",
        }
    }
}

impl FromStr for Fit {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "scale" => Ok(Fit::Scale),
            "wrap" => Ok(Fit::Wrap),
            _ => Err(format!("'{text}' is not a fit; use scale or wrap")),
        }
    }
}

#[derive(Debug, Error, PartialEq)]
pub enum PlanError {
    #[error("the trace has no reads or writes to replay ({skipped} discards and flushes only)")]
    NoData { skipped: u64 },
    #[error("the trace reaches {reach} bytes into its device and the target holds {region}; replay it on a target as large, or lay it onto this one with --fit scale (offsets scaled) or --fit wrap (offsets modulo the target)")]
    TooLarge { reach: u64, region: u64 },
    #[error("request {index} ({len} bytes) is larger than the whole target ({region} bytes)")]
    RequestTooLarge { index: usize, len: u32, region: u64 },
    #[error("request {index} ({offset} + {len} bytes) is not aligned to the target's {align}-byte blocks, which direct I/O needs; replay it with --buffered")]
    Unaligned { index: usize, offset: u64, len: u32, align: u32 },
    #[error("request {index} would be due {due_ns} ns after the start: the trace's times at this speed run past {LATEST_DUE_NS} ns; replay it faster")]
    TooLate { index: usize, due_ns: u64 },
}

/// The requests to issue and what was done to lay them out.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayPlan {
    pub ios: Vec<ReplayIo>,
    /// Discards and flushes of the trace, not replayed.
    pub skipped: u64,
    /// `None`: as fast as possible (asked, or the trace has no times).
    pub speed: Option<f64>,
    pub fit: Option<Fit>,
    /// Reads among the requests, in whole percent.
    pub read_pct: u32,
    /// Each size and how many requests have it, largest count first.
    pub sizes: Vec<(u32, u64)>,
    /// The largest power of two (up to 4096) every offset and length is a multiple of.
    pub align: u32,
    /// When the last request is due.
    pub last_due_ns: u64,
}

/// Lays `trace`'s reads and writes onto a target region of `region` bytes whose direct I/O
/// needs `direct_align` (1 for buffered I/O).
pub fn plan(
    trace: &Trace,
    speed: Speed,
    fit: Option<Fit>,
    region: u64,
    direct_align: u32,
) -> Result<ReplayPlan, PlanError> {
    let data: Vec<(usize, &crate::Request)> =
        trace.requests.iter().enumerate().filter(|(_, r)| r.op.moves_data()).collect();
    let skipped = (trace.requests.len() - data.len()) as u64;
    if data.is_empty() {
        return Err(PlanError::NoData { skipped });
    }
    let reach = data.iter().map(|(_, r)| r.end()).max().unwrap_or(0);
    let device = trace.header.device_bytes.unwrap_or(reach).max(reach);
    let fit = if reach <= region { None } else { Some(fit.ok_or(PlanError::TooLarge { reach, region })?) };
    let speed = match speed {
        Speed::Times(x) if trace.header.timed => Some(x),
        _ => None,
    };
    let on = |r: &crate::Request, align: u32| r.offset % u64::from(align) == 0 && r.len % align == 0;
    if let Some(&(index, r)) = data.iter().find(|(_, r)| direct_align > 1 && !on(r, direct_align)) {
        return Err(PlanError::Unaligned { index, offset: r.offset, len: r.len, align: direct_align });
    }
    let mut align = 4096u32;
    for (_, r) in &data {
        while align > 1 && !on(r, align) {
            align /= 2;
        }
    }
    // Fitted offsets stay on the trace's own blocks (a 4 KiB workload stays 4 KiB-aligned on a
    // 512-byte-sector target), and on the target's.
    let grain = u64::from(align.max(direct_align));
    let mut ios = Vec::with_capacity(data.len());
    for &(index, r) in &data {
        if u64::from(r.len) > region {
            return Err(PlanError::RequestTooLarge { index, len: r.len, region });
        }
        let offset = match fit {
            None => r.offset,
            Some(Fit::Scale) => {
                (u128::from(r.offset) * u128::from(region) / u128::from(device)) as u64 / grain * grain
            }
            Some(Fit::Wrap) => r.offset % region / grain * grain,
        };
        // A request laid past the end is moved back to end at the target's end.
        let offset = offset.min((region - u64::from(r.len)) / grain * grain);
        let due_ns = speed.map_or(0, |x| (r.at_ns as f64 / x) as u64);
        if due_ns >= LATEST_DUE_NS {
            return Err(PlanError::TooLate { index, due_ns });
        }
        ios.push(ReplayIo { due_ns, write: r.op == TraceOp::Write, offset, len: r.len });
    }
    let reads = ios.iter().filter(|io| !io.write).count();
    let mut counts: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    ios.iter().for_each(|io| *counts.entry(io.len).or_default() += 1);
    let mut sizes: Vec<(u32, u64)> = counts.into_iter().collect();
    sizes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(ReplayPlan {
        last_due_ns: ios.last().map_or(0, |io| io.due_ns),
        read_pct: ((100 * reads + ios.len() / 2) / ios.len()) as u32,
        ios,
        skipped,
        speed,
        fit,
        sizes,
        align,
    })
}

#[cfg(test)]
#[path = "replay_plan_tests.rs"]
mod tests;
