//! fio's iologs, versions 2 and 3 (fio's HOWTO, "Trace file format"), as `write_iolog` writes
//! them and `read_iolog` reads them.
//!
//! Version 2 lines are `filename action` (add, open, close) or `filename action offset
//! length` (read, write, sync, datasync, trim, and wait, whose offset is microseconds to wait
//! after the previous wait); a v2 log without waits has no times and replays as fast as the
//! queue allows. Version 3 puts a timestamp first, in microseconds from the start (what fio
//! 3.31 and later write), and has no wait. Every bad line is refused with its number and why.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::{Request, Trace, TraceHeader, TraceOp, TraceSource};

pub const V2_HEADER: &str = "fio version 2 iolog";
pub const V3_HEADER: &str = "fio version 3 iolog";

#[derive(Debug, Error, PartialEq)]
pub enum IologError {
    #[error("line 1 is '{0}': a fio iolog begins 'fio version 2 iolog' or 'fio version 3 iolog' (version 1 logs are no longer read, by fio either)")]
    Header(String),
    #[error("line {line}: {reason}: '{text}'")]
    Line { line: usize, text: String, reason: String },
    #[error("the iolog holds no I/O")]
    Empty,
}

/// Whether `text` begins as a fio iolog.
pub fn looks_like_iolog(text: &[u8]) -> bool {
    text.starts_with(b"fio version ")
}

pub fn read(text: &str) -> Result<Trace, IologError> {
    let mut lines = text.lines().enumerate();
    let first = lines.next().map(|(_, l)| l.trim_end()).unwrap_or("");
    let version = match first {
        V2_HEADER => 2,
        V3_HEADER => 3,
        other => return Err(IologError::Header(other.chars().take(80).collect())),
    };
    let mut streams: Vec<String> = Vec::new();
    let mut requests = Vec::new();
    let (mut clock_us, mut timed) = (0u64, version == 3);
    for (index, raw) in lines {
        let text = raw.trim();
        if text.is_empty() {
            continue;
        }
        let bad = |reason: &str| IologError::Line {
            line: index + 1,
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let mut fields: Vec<&str> = text.split_whitespace().collect();
        if version == 3 {
            let stamp = fields.remove(0);
            let us: u64 =
                stamp.parse().map_err(|_| bad("the timestamp is not a whole number of microseconds"))?;
            // fio issues an I/O stamped before the one ahead of it with no delay.
            clock_us = clock_us.max(us);
        }
        let (file, action) = match fields.as_slice() {
            [file, action] | [file, action, _, _] => (*file, *action),
            _ => {
                let want = if version == 3 {
                    "timestamp filename action [offset length]"
                } else {
                    "filename action [offset length]"
                };
                return Err(bad(&format!("expected '{want}'")));
            }
        };
        if fields.len() == 2 {
            match action {
                "add" => {
                    if !streams.iter().any(|s| s == file) {
                        streams.push(file.to_string());
                    }
                }
                "open" | "close" => {
                    if !streams.iter().any(|s| s == file) {
                        return Err(bad("the file was not added before"));
                    }
                }
                _ => return Err(bad("a file action is add, open or close")),
            }
            continue;
        }
        let number = |field: &str, what: &str| {
            field.parse::<u64>().map_err(|_| bad(&format!("the {what} is not a whole number")))
        };
        let offset = number(fields[2], "offset")?;
        let length = number(fields[3], "length")?;
        let op = match action {
            "read" => TraceOp::Read,
            "write" => TraceOp::Write,
            "trim" => TraceOp::Discard,
            "sync" | "datasync" => TraceOp::Flush,
            "wait" if version == 2 => {
                clock_us = clock_us
                    .checked_add(offset)
                    .ok_or_else(|| bad("the waits add up past 2^64 microseconds"))?;
                timed = true;
                continue;
            }
            "wait" => return Err(bad("version 3 has no wait: its timestamps say when")),
            _ => return Err(bad("the action is not read, write, trim, sync, datasync or wait")),
        };
        let Some(stream) = streams.iter().position(|s| s == file) else {
            return Err(bad("the file was not added before"));
        };
        let len = if op == TraceOp::Flush {
            0
        } else {
            u32::try_from(length).map_err(|_| bad("the length is over 4 GiB"))?
        };
        if op.moves_data() && len == 0 {
            return Err(bad("a read or write of 0 bytes"));
        }
        offset.checked_add(u64::from(len)).ok_or_else(|| bad("it ends past 2^64 bytes"))?;
        let at_ns = clock_us.checked_mul(1000).ok_or_else(|| bad("the time is past 2^64 nanoseconds"))?;
        requests.push(Request {
            at_ns,
            op,
            flags: 0,
            offset,
            len,
            pid: 0,
            stream: stream as u16,
            service_ns: None,
        });
    }
    if requests.is_empty() {
        return Err(IologError::Empty);
    }
    let duration_ns = requests.last().map_or(0, |r| r.at_ns);
    Ok(Trace {
        header: TraceHeader {
            source: if version == 2 { TraceSource::FioIologV2 } else { TraceSource::FioIologV3 },
            streams,
            device_bytes: None,
            timed,
            duration_ns,
            processes: BTreeMap::new(),
            captured_at: None,
            capture_cost: None,
        },
        requests,
    })
}

#[cfg(test)]
#[path = "iolog_tests.rs"]
mod tests;
