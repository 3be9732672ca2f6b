//! A trace is the requests a block device was given, in the order and at the times it was
//! given them: where each came from (a capture of the kernel's block tracing, blktrace's own
//! output, a fio iolog), what each was (operation, offset, length, flags, the task that issued
//! it) and, when the source says, how long the device took to complete it.
//!
//! Everything that reads a trace produces this model, and everything that uses one (`trace
//! show`, `trace job`, `replay`) takes it, so a capture, a blktrace file and an iolog are the
//! same thing to the rest of iolab.

pub mod blktrace;
pub mod capture;
pub mod events;
pub mod fidelity;
pub mod file_format;
pub mod import;
pub mod iolog;
pub mod replay_plan;
pub mod ring_buffer;
pub mod shape;
pub mod synthesis;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What a request asked of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceOp {
    Read,
    Write,
    Discard,
    /// A cache flush with no data (fio's sync and datasync).
    Flush,
}

impl TraceOp {
    pub fn name(self) -> &'static str {
        match self {
            TraceOp::Read => "read",
            TraceOp::Write => "write",
            TraceOp::Discard => "discard",
            TraceOp::Flush => "flush",
        }
    }

    /// Whether the request moves data (a read or a write): what a replay reissues as I/O.
    pub fn moves_data(self) -> bool {
        matches!(self, TraceOp::Read | TraceOp::Write)
    }
}

/// Request flags, as the kernel's block tracing names them.
pub mod flags {
    pub const SYNC: u8 = 1;
    pub const FUA: u8 = 2;
    pub const META: u8 = 4;
    /// A write that asked for a cache flush before it.
    pub const PREFLUSH: u8 = 8;
    pub const ALL: u8 = SYNC | FUA | META | PREFLUSH;

    /// The flags' names, e.g. "sync,fua"; "" for none.
    pub fn names(flags: u8) -> String {
        [(SYNC, "sync"), (FUA, "fua"), (META, "meta"), (PREFLUSH, "preflush")]
            .iter()
            .filter(|(bit, _)| flags & bit != 0)
            .map(|(_, name)| *name)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// One request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// When it was issued, in nanoseconds from the trace's start.
    pub at_ns: u64,
    pub op: TraceOp,
    /// `flags::*`.
    pub flags: u8,
    /// In bytes.
    pub offset: u64,
    pub len: u32,
    /// The task that issued it, where the source says (0: unknown).
    pub pid: u32,
    /// Which of the trace's streams (devices or files) it went to.
    pub stream: u16,
    /// From issue to completion on the traced device, where the source says.
    pub service_ns: Option<u64>,
}

impl Request {
    pub fn end(&self) -> u64 {
        self.offset + u64::from(self.len)
    }
}

/// Where a trace came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceSource {
    /// `iolab capture`.
    Capture,
    /// blktrace's binary output.
    Blktrace,
    FioIologV2,
    FioIologV3,
}

impl TraceSource {
    pub fn describe(self) -> &'static str {
        match self {
            TraceSource::Capture => "iolab capture",
            TraceSource::Blktrace => "blktrace",
            TraceSource::FioIologV2 => "fio iolog v2",
            TraceSource::FioIologV3 => "fio iolog v3",
        }
    }
}

/// What a capture cost and whether it saw everything.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaptureCost {
    /// iolab's own CPU time reading the trace, per captured request.
    pub cpu_ns_per_request: f64,
    /// Events the kernel dropped because its buffers were full (0: none lost).
    pub dropped_events: u64,
    /// Requests the device's own counters (/sys/block/DEV/stat) say completed in the window,
    /// beside the ones the capture holds.
    pub device_completed: Option<u64>,
    pub captured_completed: u64,
}

/// The facts of a trace besides its requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceHeader {
    pub source: TraceSource,
    /// The streams requests went to: a device's name or a file's path, in `Request::stream`
    /// order.
    pub streams: Vec<String>,
    /// The traced device's size in bytes, where known.
    pub device_bytes: Option<u64>,
    /// Whether the requests carry their times (a fio iolog v2 without `wait` lines does not:
    /// it replays as fast as the queue allows).
    pub timed: bool,
    /// From the trace's start to its end, in nanoseconds.
    pub duration_ns: u64,
    /// Task names by pid, where the source says.
    pub processes: BTreeMap<u32, String>,
    /// When the capture began ("2026-11-29 20:00:00 UTC"), for a capture.
    pub captured_at: Option<String>,
    pub capture_cost: Option<CaptureCost>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub header: TraceHeader,
    /// In issue order.
    pub requests: Vec<Request>,
}
