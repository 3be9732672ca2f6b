//! The block layer's events, whichever interface reported them (blktrace's records, the block
//! tracepoints' ring buffer), and how they become requests.
//!
//! A request is what the block layer issued to the driver (an issue event), or, on a
//! bio-based device that has no requests (zram, md, dm), what was queued to it. Its completion
//! at the same device and sector gives its service time; a requeue takes back the issue it
//! follows, so a request the driver sent back is counted once, when it is issued again.

use std::collections::{HashMap, VecDeque};

use crate::{Request, TraceOp};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Queue,
    Issue,
    Requeue,
    Complete,
}

/// One event, in nanoseconds on the source's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockEvent {
    pub time: u64,
    pub kind: EventKind,
    /// The kernel's dev_t: major << 20 | minor.
    pub device: u32,
    pub sector: u64,
    pub bytes: u32,
    pub op: TraceOp,
    pub flags: u8,
    pub pid: u32,
}

/// Requests made from events.
pub struct Paired {
    /// From the first request's issue.
    pub requests: Vec<Request>,
    /// The devices, in `Request::stream` order.
    pub devices: Vec<u32>,
    /// Every completion seen, those of requests issued before the first included: what the
    /// device's own counters count over the same time.
    pub completions: u64,
    /// From the first request's issue to the last event paired.
    pub duration_ns: u64,
}

/// Sorts events by time, a completion after an issue or queue of the same instant (per-CPU
/// sources merged: a completion on one CPU may carry its issue's very time on another).
pub fn sort(events: &mut [BlockEvent]) {
    events.sort_by_key(|e| (e.time, e.kind == EventKind::Complete));
}

/// Pairs `events` (sorted by `sort`) into requests: issues when there are any, else queues.
/// `None` when there is no request at all.
pub fn pair(events: &[BlockEvent]) -> Option<Paired> {
    let has_issue = events.iter().any(|e| e.kind == EventKind::Issue);
    let first = if has_issue { EventKind::Issue } else { EventKind::Queue };
    let start = events.iter().find(|e| e.kind == first)?.time;
    let mut devices: Vec<u32> = Vec::new();
    let mut requests: Vec<Option<Request>> = Vec::new();
    let mut pending: HashMap<(u32, u64), VecDeque<usize>> = HashMap::new();
    let (mut end, mut completions) = (start, 0);
    for e in events {
        let key = (e.device, e.sector);
        match e.kind {
            kind if kind == first && e.time >= start => {
                let stream = match devices.iter().position(|&d| d == e.device) {
                    Some(i) => i,
                    None => {
                        devices.push(e.device);
                        devices.len() - 1
                    }
                } as u16;
                pending.entry(key).or_default().push_back(requests.len());
                requests.push(Some(Request {
                    at_ns: e.time - start,
                    op: e.op,
                    flags: e.flags,
                    offset: e.sector * 512,
                    len: e.bytes,
                    pid: e.pid,
                    stream,
                    service_ns: None,
                }));
                end = end.max(e.time);
            }
            EventKind::Complete => {
                completions += 1;
                let Some(index) = pending.get_mut(&key).and_then(|q| q.pop_front()) else { continue };
                if let Some(r) = requests[index].as_mut() {
                    r.service_ns = Some(e.time.saturating_sub(start + r.at_ns));
                }
                end = end.max(e.time);
            }
            EventKind::Requeue if has_issue => {
                if let Some(index) = pending.get_mut(&key).and_then(|q| q.pop_back()) {
                    requests[index] = None;
                }
            }
            _ => {}
        }
    }
    Some(Paired {
        requests: requests.into_iter().flatten().collect(),
        devices,
        completions,
        duration_ns: end - start,
    })
}

/// "7:3" for a dev_t.
pub fn device_name(device: u32) -> String {
    format!("{}:{}", device >> 20, device & 0xf_ffff)
}
