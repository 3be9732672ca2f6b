//! blktrace's binary records (`struct blk_io_trace`, include/uapi/linux/blktrace_api.h), as the
//! kernel writes them to its relay files and `blktrace -o NAME` saves them (one file per CPU,
//! NAME.blktrace.N): read into requests.
//!
//! A request is what the block layer issued to the driver (a `D` event), or, on a bio-based
//! device that has no requests (zram, md, dm), what was queued to it (`Q`). Its completion
//! (`C`) at the same sector gives its service time; a requeue (`R`) takes back the issue it
//! follows, so a request the driver sent back is counted once, when it is issued again.
//! Records of both byte orders are read (blkparse's rule: the magic tells).

use std::collections::{BTreeMap, HashMap, VecDeque};

use thiserror::Error;

use crate::{flags, Request, Trace, TraceHeader, TraceOp, TraceSource};

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
pub const TC_READ: u32 = 1 << 0;
pub const TC_WRITE: u32 = 1 << 1;
pub const TC_FLUSH: u32 = 1 << 2;
pub const TC_SYNC: u32 = 1 << 3;
pub const TC_QUEUE: u32 = 1 << 4;
pub const TC_REQUEUE: u32 = 1 << 5;
pub const TC_ISSUE: u32 = 1 << 6;
pub const TC_COMPLETE: u32 = 1 << 7;
pub const TC_PC: u32 = 1 << 9;
pub const TC_NOTIFY: u32 = 1 << 10;
pub const TC_META: u32 = 1 << 12;
pub const TC_DISCARD: u32 = 1 << 13;
pub const TC_FUA: u32 = 1 << 15;

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
    let mut processes = BTreeMap::new();
    let mut all = Vec::new();
    for (name, bytes) in files {
        all.extend(events(name, bytes, &mut processes)?);
    }
    // Per-CPU files are each in time order; together they are merged by time (stable: ties
    // keep their file order).
    all.sort_by_key(|e| e.time);
    let names = files.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ");
    let is_io = |e: &Event| (e.action >> 16) & TC_PC == 0;
    let has_issue = all.iter().any(|e| is_io(e) && e.action & 0xff == TA_ISSUE);
    let issue_code = if has_issue { TA_ISSUE } else { TA_QUEUE };
    let Some(start) = all.iter().find(|e| is_io(e) && e.action & 0xff == issue_code).map(|e| e.time) else {
        return Err(BlktraceError::Empty(names));
    };
    let mut devices: Vec<u32> = Vec::new();
    let mut requests: Vec<Option<Request>> = Vec::new();
    let mut pending: HashMap<(u32, u64), VecDeque<usize>> = HashMap::new();
    let mut end = start;
    for e in all.iter().filter(|e| is_io(e)) {
        let code = e.action & 0xff;
        let key = (e.device, e.sector);
        if code == issue_code {
            if e.time < start {
                continue;
            }
            let category = e.action >> 16;
            let stream = match devices.iter().position(|&d| d == e.device) {
                Some(i) => i,
                None => {
                    devices.push(e.device);
                    devices.len() - 1
                }
            } as u16;
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
            pending.entry(key).or_default().push_back(requests.len());
            requests.push(Some(Request {
                at_ns: e.time - start,
                op,
                flags: f,
                offset: e.sector * 512,
                len: e.bytes,
                pid: e.pid,
                stream,
                service_ns: None,
            }));
            end = end.max(e.time);
        } else if code == TA_COMPLETE {
            let Some(index) = pending.get_mut(&key).and_then(|q| q.pop_front()) else { continue };
            if let Some(r) = requests[index].as_mut() {
                r.service_ns = Some(e.time.saturating_sub(start + r.at_ns));
            }
            end = end.max(e.time);
        } else if code == TA_REQUEUE && has_issue {
            if let Some(index) = pending.get_mut(&key).and_then(|q| q.pop_back()) {
                requests[index] = None;
            }
        }
    }
    let streams = devices.iter().map(|&d| format!("{}:{}", d >> 20, d & 0xf_ffff)).collect();
    Ok(Trace {
        header: TraceHeader {
            source: TraceSource::Blktrace,
            streams,
            device_bytes: None,
            timed: true,
            duration_ns: end - start,
            processes,
            captured_at: None,
            capture_cost: None,
        },
        requests: requests.into_iter().flatten().collect(),
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
        record(time, sector, 4096, TA_ISSUE, (TC_ISSUE | TC_READ), 1, &[])
    }
}

#[cfg(test)]
#[path = "blktrace_tests.rs"]
mod tests;
