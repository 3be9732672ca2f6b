use std::collections::BTreeMap;

use super::*;
use crate::TraceSource;

pub fn sample() -> Trace {
    let header = TraceHeader {
        source: TraceSource::Capture,
        streams: vec!["loop3".into()],
        device_bytes: Some(1 << 30),
        timed: true,
        duration_ns: 2_000_000,
        processes: BTreeMap::from([(42, "fio".into())]),
        captured_at: Some("2026-11-29T20:00:00Z".into()),
        capture_cost: None,
    };
    let requests = vec![
        Request {
            at_ns: 0,
            op: TraceOp::Read,
            flags: 0,
            offset: 4096,
            len: 4096,
            pid: 42,
            stream: 0,
            service_ns: Some(9_000),
        },
        Request {
            at_ns: 1_000,
            op: TraceOp::Write,
            flags: flags::SYNC | flags::FUA,
            offset: (1 << 40) + 512,
            len: 65536,
            pid: 42,
            stream: 0,
            service_ns: None,
        },
        Request {
            at_ns: 1_000,
            op: TraceOp::Flush,
            flags: 0,
            offset: 0,
            len: 0,
            pid: 0,
            stream: 0,
            service_ns: Some(1),
        },
        Request {
            at_ns: 1_999_999,
            op: TraceOp::Discard,
            flags: 0,
            offset: 1 << 20,
            len: 1 << 20,
            pid: 7,
            stream: 0,
            service_ns: Some(0),
        },
    ];
    Trace { header, requests }
}

fn written(trace: &Trace) -> Vec<u8> {
    let mut bytes = Vec::new();
    write(trace, &mut bytes).expect("write");
    bytes
}

#[test]
fn a_written_trace_reads_back_the_same() {
    let trace = sample();
    assert_eq!(read(&written(&trace)).expect("read"), trace);
}

#[test]
fn a_truncated_trace_is_refused_with_how_much_it_holds() {
    let bytes = written(&sample());
    let error = read(&bytes[..bytes.len() - 3]).expect_err("truncated");
    assert!(matches!(error, FormatError::Record { index: 3, .. }), "{error}");
    let header_only = bytes.len() - 40;
    let error = read(&bytes[..header_only]).expect_err("truncated");
    assert!(error.to_string().contains("truncated") || error.to_string().contains("request"), "{error}");
}

#[test]
fn bytes_after_the_last_request_are_refused() {
    let mut bytes = written(&sample());
    bytes.push(0);
    assert!(matches!(read(&bytes), Err(FormatError::Trailing(1))));
}

#[test]
fn another_file_or_a_newer_version_is_refused() {
    assert!(matches!(read(b"fio version 3 iolog\n"), Err(FormatError::NotATrace)));
    let mut bytes = written(&sample());
    bytes[8] = 2;
    assert!(matches!(read(&bytes), Err(FormatError::Version(2))));
}

#[test]
fn a_stream_the_header_does_not_name_is_refused() {
    let mut trace = sample();
    trace.requests[1].stream = 3;
    let error = read(&written(&trace)).expect_err("stream");
    assert!(error.to_string().contains("stream 3"), "{error}");
}

#[test]
fn a_header_claiming_more_requests_than_the_file_holds_does_not_reserve_them() {
    let mut bytes = written(&sample());
    let at = bytes.windows(12).position(|w| w == b"\"requests\":4").expect("count");
    bytes.splice(at..at + 12, b"\"requests\":9".iter().copied());
    let error = read(&bytes).expect_err("short");
    assert!(matches!(error, FormatError::Truncated { read: 4, expected: 9 }), "{error}");
}

/// Found by fuzzing (trace_file): a trace whose service time ran past 2^64 ns from its issue
/// overflowed `trace show`'s count of outstanding requests.
#[test]
fn a_service_time_past_the_end_of_time_is_shown_without_overflow() {
    let mut trace = sample();
    trace.requests[0].at_ns = 5;
    trace.requests[0].service_ns = Some(u64::MAX);
    let read = read(&written(&trace)).expect("read");
    let out = crate::shape::outstanding(&read).expect("completions");
    assert!(out.max >= 1);
}

#[test]
fn a_record_that_would_not_write_back_as_itself_is_refused() {
    let bytes = written(&sample());
    let first = bytes.len() - written_records(&sample());
    // Bit 6 of the first record's operation byte (after its one-byte gap).
    let mut flagged = bytes.clone();
    flagged[first + 1] |= 0x40;
    assert!(read(&flagged).expect_err("bit 6").to_string().contains("bit 6"));
    // A ten-byte varint whose last byte holds more than bit 63.
    let mut header_and_gap = bytes[..first].to_vec();
    header_and_gap.extend([0xff; 9]);
    header_and_gap.push(0x02);
    assert!(read(&header_and_gap).is_err());
}

/// The bytes the records of `trace` take (its header counts them in one digit, as an empty
/// trace's does).
fn written_records(trace: &Trace) -> usize {
    let mut empty = trace.clone();
    empty.requests.clear();
    written(trace).len() - written(&empty).len()
}
