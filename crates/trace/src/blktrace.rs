//! blktrace's binary records (`struct blk_io_trace`, include/uapi/linux/blktrace_api.h), as the
//! kernel writes them to its relay files and `blktrace -o NAME` saves them (one file per CPU,
//! NAME.blktrace.N): read into requests.
//!
//! Each record becomes a `BlockEvent` (`events::pair` makes the requests). Records of both
//! byte orders are read (blkparse's rule: the magic tells).

use std::collections::BTreeMap;

use thiserror::Error;

use crate::events::{self, BlockEvent, EventKind};
use crate::{flags, Trace, TraceHeader, TraceOp, TraceSource};

pub const MAGIC: u32 = 0x6561_7400;
const RECORD_BYTES: usize = 48;

// Action codes (the low 16 bits; the cgroup bit is 1 << 8).
const TA_QUEUE: u32 = 1;
const TA_REQUEUE: u32 = 6;
const TA_ISSUE: u32 = 7;
const TA_COMPLETE: u32 = 8;
const TA_CGROUP: u32 = 1 << 8;
const TN_PROCESS: u32 = 0;

// Categories (the high 16 bits).
#[cfg(test)]
const TC_READ: u32 = 1 << 0;
const TC_WRITE: u32 = 1 << 1;
const TC_FLUSH: u32 = 1 << 2;
const TC_SYNC: u32 = 1 << 3;
#[cfg(test)]
const TC_QUEUE: u32 = 1 << 4;
#[cfg(test)]
const TC_REQUEUE: u32 = 1 << 5;
#[cfg(test)]
const TC_ISSUE: u32 = 1 << 6;
#[cfg(test)]
const TC_COMPLETE: u32 = 1 << 7;
const TC_PC: u32 = 1 << 9;
const TC_NOTIFY: u32 = 1 << 10;
const TC_META: u32 = 1 << 12;
const TC_DISCARD: u32 = 1 << 13;
const TC_FUA: u32 = 1 << 15;

#[derive(Debug, Error, PartialEq)]
pub enum BlktraceError {
    #[error("{file}: byte {at}: {reason}")]
    Record { file: String, at: usize, reason: String },
    #[error("no block I/O events in {0}: a trace of an idle device, or not blktrace's output")]
    Empty(String),
}

/// One event, in native byte order.
#[derive(Debug, Clone, Copy)]
struct Event {
    time: u64,
    sector: u64,
    bytes: u32,
    action: u32,
    pid: u32,
    device: u32,
}

/// Whether `bytes` begin with a blktrace record (either byte order).
pub fn looks_like_blktrace(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && {
        let le = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let be = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        le & 0xffff_ff00 == MAGIC || be & 0xffff_ff00 == MAGIC
    }
}

/// The events of one file (`name` is for errors), with the task names its notes give.
fn events(
    name: &str,
    bytes: &[u8],
    processes: &mut BTreeMap<u32, String>,
) -> Result<Vec<Event>, BlktraceError> {
    let mut out = Vec::with_capacity(bytes.len() / RECORD_BYTES);
    let mut at = 0;
    while at < bytes.len() {
        let error = |reason: String| BlktraceError::Record { file: name.to_string(), at, reason };
        let Some(record) = bytes.get(at..at + RECORD_BYTES) else {
            return Err(error(format!("the file ends {} bytes into a 48-byte record", bytes.len() - at)));
        };
        let le = u32::from_le_bytes([record[0], record[1], record[2], record[3]]);
        let big = le & 0xffff_ff00 != MAGIC;
        let u32_at = |i: usize| {
            let b = [record[i], record[i + 1], record[i + 2], record[i + 3]];
            if big {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&record[i..i + 8]);
            if big {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            }
        };
        let magic = u32_at(0);
        if magic & 0xffff_ff00 != MAGIC {
            return Err(error(format!("0x{magic:08x} is not blktrace's magic (0x65617407)")));
        }
        let version = magic & 0xff;
        if !(6..=7).contains(&version) {
            return Err(error(format!("blktrace record version {version}; iolab reads versions 6 and 7")));
        }
        let pdu_len = usize::from(if big {
            u16::from_be_bytes([record[46], record[47]])
        } else {
            u16::from_le_bytes([record[46], record[47]])
        });
        let Some(pdu) = bytes.get(at + RECORD_BYTES..at + RECORD_BYTES + pdu_len) else {
            return Err(error(format!("its {pdu_len}-byte payload runs past the end of the file")));
        };
        let event = Event {
            time: u64_at(8),
            sector: u64_at(16),
            bytes: u32_at(24),
            action: u32_at(28),
            pid: u32_at(32),
            device: u32_at(36),
        };
        let category = event.action >> 16;
        if category & TC_NOTIFY == 0
            && event.sector.checked_mul(512).and_then(|b| b.checked_add(u64::from(event.bytes))).is_none()
        {
            return Err(error(format!("its sector {} lies past 2^64 bytes", event.sector)));
        }
        if category & TC_NOTIFY != 0 {
            if event.action & 0xff == TN_PROCESS {
                // The payload is the task's name, after a cgroup id when the cgroup bit is set.
                let name = if event.action & TA_CGROUP != 0 { pdu.get(8..).unwrap_or(&[]) } else { pdu };
                let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                processes.insert(event.pid, String::from_utf8_lossy(&name[..end]).into_owned());
            }
        } else {
            out.push(event);
        }
        at += RECORD_BYTES + pdu_len;
    }
    Ok(out)
}

/// Reads the per-CPU files of one blktrace (each `(name, bytes)`) into a trace. Files that hold
/// no issue (`D`) are of a bio-based device: its requests are what was queued to it (`Q`).
pub fn read(files: &[(String, Vec<u8>)]) -> Result<Trace, BlktraceError> {
    read_counting(files).map(|(trace, _)| trace)
}

/// `read`, and how many completions the files hold (those of requests issued before the trace
/// began included): what the device's own counters count over the same time.
pub fn read_counting(files: &[(String, Vec<u8>)]) -> Result<(Trace, u64), BlktraceError> {
    let mut processes = BTreeMap::new();
    let mut all = Vec::new();
    for (name, bytes) in files {
        all.extend(events(name, bytes, &mut processes)?);
    }
    // Per-CPU files are each in time order; together they are merged by time.
    let mut block_events: Vec<BlockEvent> = all.iter().filter_map(block_event).collect();
    events::sort(&mut block_events);
    let Some(paired) = events::pair(&block_events) else {
        let names = files.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ");
        return Err(BlktraceError::Empty(names));
    };
    let trace = Trace {
        header: TraceHeader {
            source: TraceSource::Blktrace,
            streams: paired.devices.iter().map(|&d| events::device_name(d)).collect(),
            device_bytes: None,
            timed: true,
            duration_ns: paired.duration_ns,
            processes,
            captured_at: None,
            capture_cost: None,
        },
        requests: paired.requests,
    };
    Ok((trace, paired.completions))
}

/// The block event a record is, if it is one (passthrough commands are not).
fn block_event(e: &Event) -> Option<BlockEvent> {
    let category = e.action >> 16;
    if category & TC_PC != 0 {
        return None;
    }
    let kind = match e.action & 0xff {
        TA_QUEUE => EventKind::Queue,
        TA_ISSUE => EventKind::Issue,
        TA_REQUEUE => EventKind::Requeue,
        TA_COMPLETE => EventKind::Complete,
        _ => return None,
    };
    let op = if category & TC_DISCARD != 0 {
        TraceOp::Discard
    } else if category & TC_FLUSH != 0 && e.bytes == 0 {
        TraceOp::Flush
    } else if category & TC_WRITE != 0 {
        TraceOp::Write
    } else {
        TraceOp::Read
    };
    let mut f = 0;
    for (bit, flag) in [(TC_SYNC, flags::SYNC), (TC_FUA, flags::FUA), (TC_META, flags::META)] {
        if category & bit != 0 {
            f |= flag;
        }
    }
    if category & TC_FLUSH != 0 && e.bytes > 0 {
        f |= flags::PREFLUSH;
    }
    Some(BlockEvent {
        time: e.time,
        kind,
        device: e.device,
        sector: e.sector,
        bytes: e.bytes,
        op,
        flags: f,
        pid: e.pid,
    })
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// One record as the kernel writes it (little-endian), with `pdu` after it.
    pub fn record(
        time: u64,
        sector: u64,
        bytes: u32,
        code: u32,
        category: u32,
        pid: u32,
        pdu: &[u8],
    ) -> Vec<u8> {
        let mut r = Vec::with_capacity(RECORD_BYTES + pdu.len());
        r.extend((MAGIC | 7).to_le_bytes());
        r.extend(0u32.to_le_bytes());
        r.extend(time.to_le_bytes());
        r.extend(sector.to_le_bytes());
        r.extend(bytes.to_le_bytes());
        r.extend((category << 16 | code).to_le_bytes());
        r.extend(pid.to_le_bytes());
        r.extend((7u32 << 20 | 3).to_le_bytes());
        r.extend(0u32.to_le_bytes());
        r.extend(0u16.to_le_bytes());
        r.extend((pdu.len() as u16).to_le_bytes());
        r.extend(pdu);
        r
    }

    /// A 4 KiB read issued at `time` to `sector`.
    pub fn issue(time: u64, sector: u64) -> Vec<u8> {
        record(time, sector, 4096, TA_ISSUE, TC_ISSUE | TC_READ, 1, &[])
    }
}

#[cfg(test)]
#[path = "blktrace_tests.rs"]
mod tests;
