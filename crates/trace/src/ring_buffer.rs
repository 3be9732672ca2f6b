//! The kernel's trace ring buffer as `trace_pipe_raw` hands it out, one page per read, and the
//! block tracepoints in it (block_rq_issue, block_rq_requeue, block_rq_complete,
//! block_bio_queue, block_bio_complete) read into `BlockEvent`s.
//!
//! A page is a header (a u64 timestamp, then the commit: the data's length in the low bits,
//! flags for lost events in bits 30 and 31), then events. Each event starts with a 32-bit word:
//! 5 bits of type and 27 of time since the event before. Types 1-28 are data of 4 x type
//! bytes; 0 is data whose length follows; 29 is padding; 30 extends the time delta; 31 is an
//! absolute time. (The layout is the kernel's events/header_page and header_event; the field
//! offsets of each event are read from its `format` file, never assumed.)

use std::collections::{BTreeMap, HashMap};

use crate::events::{BlockEvent, EventKind};
use crate::{flags, TraceOp};

const PAGE_HEADER: usize = 16;
const COMMIT_LENGTH: u64 = (1 << 30) - 1;
/// Bit 31 of the commit: events were lost before this page.
const MISSED_EVENTS: u64 = 1 << 31;
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TIME_SHIFT: u32 = 27;

/// Where one event's fields are, from its `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub id: u16,
    pub kind: EventKind,
    /// Offsets of dev (u32), sector (u64), nr_sector (u32), rwbs (char[size]).
    pub dev: usize,
    pub sector: usize,
    pub nr_sector: usize,
    pub rwbs: (usize, usize),
    /// block_rq_issue's bytes (u32): a flush request has sectors but moves none.
    pub bytes: Option<usize>,
    /// The issuing task's name (char[16]), where the event has it.
    pub comm: Option<(usize, usize)>,
}

impl EventFormat {
    /// Reads a tracepoint's `format` file text; `None` when a field it needs is missing.
    pub fn parse(text: &str, kind: EventKind) -> Option<EventFormat> {
        let id = text.lines().find_map(|l| l.strip_prefix("ID: "))?.trim().parse().ok()?;
        let mut fields: HashMap<String, (usize, usize)> = HashMap::new();
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("field:") else { continue };
            let parts: Vec<&str> = rest.split(';').map(str::trim).collect();
            let name = parts.first()?.split_whitespace().last()?.split('[').next()?.to_string();
            let number =
                |key: &str| parts.iter().find_map(|p| p.strip_prefix(key)).and_then(|v| v.parse().ok());
            fields.insert(name, (number("offset:")?, number("size:")?));
        }
        let at = |name: &str| fields.get(name).map(|f| f.0);
        Some(EventFormat {
            id,
            kind,
            dev: at("dev")?,
            sector: at("sector")?,
            nr_sector: at("nr_sector")?,
            rwbs: *fields.get("rwbs")?,
            bytes: at("bytes"),
            comm: fields.get("comm").copied(),
        })
    }
}

/// What the pages of one CPU held.
#[derive(Debug, Default)]
pub struct PageEvents {
    pub events: Vec<BlockEvent>,
    /// Pages that say events were lost before them (the buffer was full).
    pub pages_after_loss: u64,
    /// Pages cut short: their events are kept up to the damage.
    pub damaged_pages: u64,
}

/// Reads `pages` (whole pages of `page_size` bytes, as `trace_pipe_raw` returns them) for the
/// events in `formats`; task names go to `processes`.
pub fn read_pages(
    pages: &[u8],
    page_size: usize,
    formats: &[EventFormat],
    processes: &mut BTreeMap<u32, String>,
) -> PageEvents {
    let mut out = PageEvents::default();
    for page in pages.chunks(page_size) {
        if page.len() < PAGE_HEADER {
            out.damaged_pages += 1;
            continue;
        }
        let mut time = u64_at(page, 0);
        let commit = u64_at(page, 8);
        if commit & MISSED_EVENTS != 0 {
            out.pages_after_loss += 1;
        }
        let len = (commit & COMMIT_LENGTH) as usize;
        let Some(data) = page.get(PAGE_HEADER..PAGE_HEADER + len) else {
            out.damaged_pages += 1;
            continue;
        };
        let mut at = 0;
        while at + 4 <= data.len() {
            let word = u32_at(data, at);
            let (kind, delta) = (word & 0x1f, u64::from(word >> 5));
            at += 4;
            let length = match kind {
                TYPE_PADDING => {
                    if delta == 0 || at + 4 > data.len() {
                        break; // the rest of the page is empty
                    }
                    time = time.wrapping_add(delta);
                    match at.checked_add(u32_at(data, at) as usize) {
                        Some(next) => at = next,
                        None => break,
                    }
                    continue;
                }
                TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                    let Some(high) = data.get(at..at + 4).map(|_| u64::from(u32_at(data, at))) else {
                        out.damaged_pages += 1;
                        break;
                    };
                    at += 4;
                    let stamp = high << TIME_SHIFT | delta;
                    if kind == TYPE_TIME_EXTEND {
                        time = time.wrapping_add(stamp);
                    } else {
                        // An absolute time: the low 59 bits of the clock.
                        time = (time & !((1 << 59) - 1)) | stamp;
                    }
                    continue;
                }
                0 => {
                    if at + 4 > data.len() {
                        out.damaged_pages += 1;
                        break;
                    }
                    let length = (u32_at(data, at) as usize).saturating_sub(4).next_multiple_of(4);
                    at += 4;
                    length
                }
                n => n as usize * 4,
            };
            time = time.wrapping_add(delta);
            let Some(record) = at.checked_add(length).and_then(|end| data.get(at..end)) else {
                out.damaged_pages += 1;
                break;
            };
            at += length;
            if let Some(event) = block_event(record, time, formats, processes) {
                out.events.push(event);
            }
        }
    }
    out
}

fn block_event(
    record: &[u8],
    time: u64,
    formats: &[EventFormat],
    processes: &mut BTreeMap<u32, String>,
) -> Option<BlockEvent> {
    let id = u16::from_le_bytes([*record.first()?, *record.get(1)?]);
    let format = formats.iter().find(|f| f.id == id)?;
    let field = |at: usize, size: usize| at.checked_add(size).and_then(|end| record.get(at..end));
    let pid = u32::from_le_bytes(field(4, 4)?.try_into().ok()?);
    let device = u32::from_le_bytes(field(format.dev, 4)?.try_into().ok()?);
    let sector = u64::from_le_bytes(field(format.sector, 8)?.try_into().ok()?);
    let sectors = u32::from_le_bytes(field(format.nr_sector, 4)?.try_into().ok()?);
    // A sector no device has (past 2^64 bytes): not a request iolab can place.
    sector.checked_mul(512)?.checked_add(u64::from(sectors) * 512)?;
    let rwbs = text(field(format.rwbs.0, format.rwbs.1)?);
    let (op, f) = parse_rwbs(&rwbs)?;
    let bytes = match format.bytes {
        Some(at) => u32::from_le_bytes(field(at, 4)?.try_into().ok()?),
        None if op == TraceOp::Flush => 0,
        None => sectors.saturating_mul(512),
    };
    if let Some((at, size)) = format.comm {
        if let Some(name) = field(at, size).map(text).filter(|n| !n.is_empty()) {
            processes.entry(pid).or_insert(name);
        }
    }
    Some(BlockEvent { time, kind: format.kind, device, sector, bytes, op, flags: f, pid })
}

/// The kernel's rwbs string (blk_fill_rwbs): an optional F for a preflush, the operation (W, D,
/// F for a flush, R, N for none), then F for FUA, A for readahead, S for sync, M for meta.
/// `None` for an operation that moves nothing iolab counts (zone commands, N).
pub fn parse_rwbs(rwbs: &str) -> Option<(TraceOp, u8)> {
    let bytes = rwbs.as_bytes();
    let preflush = bytes.len() >= 2 && bytes[0] == b'F' && b"WDFRN".contains(&bytes[1]);
    let rest = if preflush { &bytes[1..] } else { bytes };
    let op = match rest.first()? {
        b'W' => TraceOp::Write,
        b'D' => TraceOp::Discard,
        b'F' => TraceOp::Flush,
        b'R' => TraceOp::Read,
        b'N' if preflush => TraceOp::Flush,
        _ => return None,
    };
    let mut f = if preflush && op != TraceOp::Flush { flags::PREFLUSH } else { 0 };
    for c in &rest[1..] {
        f |= match c {
            b'F' => flags::FUA,
            b'S' => flags::SYNC,
            b'M' => flags::META,
            _ => 0,
        };
    }
    Some((op, f))
}

fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

#[cfg(test)]
#[path = "ring_buffer_tests.rs"]
mod tests;
