//! iolab's trace file (docs/trace-format.md): a magic, a version, a JSON header, then one
//! compact record per request. Times are stored as the gap from the request before, and every
//! integer as an unsigned LEB128 varint, so a 4 KiB random request takes 12-16 bytes.
//!
//! The header says how many requests follow: a file that ends early, or goes on after the
//! last, is refused with the byte where it went wrong, never read in part.

use std::io::{self, Write};

use thiserror::Error;

use crate::{flags, Request, Trace, TraceHeader, TraceOp};

pub const MAGIC: &[u8; 8] = b"IOLABTRC";
pub const VERSION: u32 = 1;

/// Bit 7 of a record's op byte: a service time follows.
const HAS_SERVICE: u8 = 0x80;
/// Bit 6 of a record's op byte, unused in version 1.
const UNUSED: u8 = 0x40;
/// A request's stream is a u16.
const MAX_STREAMS: usize = 1 << 16;

#[derive(Debug, Error)]
pub enum FormatError {
    #[error("not an iolab trace (it does not begin with IOLABTRC)")]
    NotATrace,
    #[error("iolab trace version {0} is newer than this iolab reads (1); use a newer iolab")]
    Version(u32),
    #[error("the trace's header is not valid: {0}")]
    Header(String),
    #[error("request {index} at byte {at}: {reason}")]
    Record { index: u64, at: usize, reason: String },
    #[error(
        "the trace ends after {read} of the {expected} requests its header counts: the file is truncated"
    )]
    Truncated { read: u64, expected: u64 },
    #[error("{0} bytes follow the last request the header counts: the file is damaged")]
    Trailing(usize),
}

#[derive(serde::Serialize, serde::Deserialize)]
struct StoredHeader {
    /// Not flattened: serde's flatten cannot read back a map keyed by numbers (`processes`).
    header: TraceHeader,
    requests: u64,
}

/// Writes `trace` to `out`.
pub fn write(trace: &Trace, out: &mut impl Write) -> io::Result<()> {
    let stored = StoredHeader { header: trace.header.clone(), requests: trace.requests.len() as u64 };
    let header = serde_json::to_vec(&stored).map_err(io::Error::other)?;
    out.write_all(MAGIC)?;
    out.write_all(&VERSION.to_le_bytes())?;
    out.write_all(&(header.len() as u32).to_le_bytes())?;
    out.write_all(&header)?;
    let mut buf = Vec::with_capacity(1 << 16);
    let mut previous_ns = 0;
    for r in &trace.requests {
        let op = match r.op {
            TraceOp::Read => 0,
            TraceOp::Write => 1,
            TraceOp::Discard => 2,
            TraceOp::Flush => 3,
        };
        let service = if r.service_ns.is_some() { HAS_SERVICE } else { 0 };
        put(&mut buf, r.at_ns - previous_ns);
        previous_ns = r.at_ns;
        buf.push(op | (r.flags & flags::ALL) << 2 | service);
        put(&mut buf, r.offset);
        put(&mut buf, u64::from(r.len));
        put(&mut buf, u64::from(r.pid));
        put(&mut buf, u64::from(r.stream));
        if let Some(ns) = r.service_ns {
            put(&mut buf, ns);
        }
        if buf.len() >= 1 << 16 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

/// Reads a trace written by `write`.
pub fn read(bytes: &[u8]) -> Result<Trace, FormatError> {
    if bytes.len() < 16 || &bytes[..8] != MAGIC {
        return Err(FormatError::NotATrace);
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != VERSION {
        return Err(FormatError::Version(version));
    }
    let header_len = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
    let header_end = 16usize.checked_add(header_len).filter(|&end| end <= bytes.len());
    let Some(header_end) = header_end else {
        return Err(FormatError::Header(format!("it claims {header_len} bytes, more than the file holds")));
    };
    let stored: StoredHeader =
        serde_json::from_slice(&bytes[16..header_end]).map_err(|e| FormatError::Header(e.to_string()))?;
    let streams = stored.header.streams.len();
    if streams > MAX_STREAMS {
        return Err(FormatError::Header(format!(
            "it names {streams} streams; a trace has at most {MAX_STREAMS}"
        )));
    }
    let mut cursor = Cursor { bytes, at: header_end };
    // A header cannot make us reserve more than the file could hold (4 bytes per request at least).
    let mut requests = Vec::with_capacity((stored.requests as usize).min(bytes.len() / 4));
    let mut at_ns: u64 = 0;
    for index in 0..stored.requests {
        if cursor.at == bytes.len() {
            return Err(FormatError::Truncated { read: index, expected: stored.requests });
        }
        let start = cursor.at;
        let record = |reason: &str| FormatError::Record { index, at: start, reason: reason.to_string() };
        let gap = cursor.varint().ok_or_else(|| record("its time ends mid-number"))?;
        at_ns = at_ns.checked_add(gap).ok_or_else(|| record("its time overflows"))?;
        let code = cursor.byte().ok_or_else(|| record("it ends before its operation"))?;
        if code & UNUSED != 0 {
            return Err(record("its operation byte sets bit 6, which no version-1 trace uses"));
        }
        let op = [TraceOp::Read, TraceOp::Write, TraceOp::Discard, TraceOp::Flush][usize::from(code & 3)];
        let offset = cursor.varint().ok_or_else(|| record("its offset ends mid-number"))?;
        let len = cursor.varint().ok_or_else(|| record("its length ends mid-number"))?;
        let len = u32::try_from(len).map_err(|_| record("its length is over 4 GiB"))?;
        offset.checked_add(u64::from(len)).ok_or_else(|| record("it ends past 2^64 bytes"))?;
        let pid = cursor.varint().ok_or_else(|| record("its pid ends mid-number"))?;
        let stream = cursor.varint().ok_or_else(|| record("its stream ends mid-number"))?;
        if stream as usize >= streams {
            return Err(record(&format!("its stream {stream} is not among the header's {streams}")));
        }
        let service_ns = if code & HAS_SERVICE != 0 {
            Some(cursor.varint().ok_or_else(|| record("its service time ends mid-number"))?)
        } else {
            None
        };
        requests.push(Request {
            at_ns,
            op,
            flags: (code >> 2) & flags::ALL,
            offset,
            len,
            pid: u32::try_from(pid).map_err(|_| record("its pid is over 2^32"))?,
            stream: stream as u16,
            service_ns,
        });
    }
    if cursor.at != bytes.len() {
        return Err(FormatError::Trailing(bytes.len() - cursor.at));
    }
    Ok(Trace { header: stored.header, requests })
}

fn put(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push(value as u8 | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            // The tenth byte holds bit 63 alone: more would be lost, and read as another number.
            if shift == 63 && b > 1 {
                return None;
            }
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
}

#[cfg(test)]
#[path = "file_format_tests.rs"]
mod tests;
