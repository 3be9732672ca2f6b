use super::*;

use super::tests_support::record;

fn one_file(records: &[Vec<u8>]) -> Vec<(String, Vec<u8>)> {
    vec![("t.blktrace.0".into(), records.concat())]
}

#[test]
fn issues_paired_with_completions_become_requests_with_service_times() {
    let file = one_file(&[
        record(0, 0, 0, TN_PROCESS, TC_NOTIFY, 42, b"fio\0"),
        record(1_000, 8, 4096, TA_QUEUE, TC_QUEUE | TC_READ, 42, &[]),
        record(2_000, 8, 4096, TA_ISSUE, TC_ISSUE | TC_READ, 42, &[]),
        record(2_500, 64, 65536, TA_ISSUE, TC_ISSUE | TC_WRITE | TC_SYNC | TC_FUA, 42, &[]),
        record(9_000, 8, 4096, TA_COMPLETE, TC_COMPLETE | TC_READ, 0, &[]),
        record(12_500, 64, 65536, TA_COMPLETE, TC_COMPLETE | TC_WRITE, 0, &[]),
    ]);
    let trace = read(&file).expect("read");
    assert_eq!(trace.requests.len(), 2, "the queue event is not a request on a device with issues");
    let (read_req, write_req) = (trace.requests[0], trace.requests[1]);
    assert_eq!((read_req.at_ns, read_req.op, read_req.offset, read_req.len), (0, TraceOp::Read, 4096, 4096));
    assert_eq!(read_req.service_ns, Some(7_000));
    assert_eq!(
        (write_req.at_ns, write_req.op, write_req.flags),
        (500, TraceOp::Write, flags::SYNC | flags::FUA)
    );
    assert_eq!(write_req.service_ns, Some(10_000));
    assert_eq!(trace.header.processes.get(&42).map(String::as_str), Some("fio"));
    assert_eq!(trace.header.streams, vec!["7:3".to_string()]);
    assert_eq!(trace.header.duration_ns, 10_500);
}

#[test]
fn a_requeued_request_counts_once_when_issued_again() {
    let file = one_file(&[
        record(0, 8, 4096, TA_ISSUE, TC_ISSUE | TC_READ, 1, &[]),
        record(100, 8, 4096, TA_REQUEUE, TC_REQUEUE | TC_READ, 1, &[]),
        record(300, 8, 4096, TA_ISSUE, TC_ISSUE | TC_READ, 1, &[]),
        record(900, 8, 4096, TA_COMPLETE, TC_COMPLETE | TC_READ, 1, &[]),
    ]);
    let trace = read(&file).expect("read");
    assert_eq!(trace.requests.len(), 1);
    assert_eq!((trace.requests[0].at_ns, trace.requests[0].service_ns), (300, Some(600)));
}

#[test]
fn a_bio_based_device_gives_its_queued_ios() {
    let file = one_file(&[
        record(0, 16, 4096, TA_QUEUE, TC_QUEUE | TC_WRITE, 1, &[]),
        record(50, 16, 4096, TA_COMPLETE, TC_COMPLETE | TC_WRITE, 1, &[]),
    ]);
    let trace = read(&file).expect("read");
    assert_eq!(trace.requests.len(), 1);
    assert_eq!((trace.requests[0].op, trace.requests[0].service_ns), (TraceOp::Write, Some(50)));
}

#[test]
fn per_cpu_files_merge_by_time_and_flushes_and_discards_keep_their_kind() {
    let files = vec![
        ("t.blktrace.0".to_string(), record(500, 0, 0, TA_ISSUE, TC_ISSUE | TC_WRITE | TC_FLUSH, 1, &[])),
        (
            "t.blktrace.1".to_string(),
            record(100, 2048, 1 << 20, TA_ISSUE, TC_ISSUE | TC_WRITE | TC_DISCARD, 1, &[]),
        ),
    ];
    let trace = read(&files).expect("read");
    let ops: Vec<_> = trace.requests.iter().map(|r| (r.at_ns, r.op)).collect();
    assert_eq!(ops, vec![(0, TraceOp::Discard), (400, TraceOp::Flush)]);
}

#[test]
fn big_endian_records_read_the_same() {
    let le = record(7, 8, 4096, TA_ISSUE, TC_ISSUE | TC_READ, 5, &[]);
    let mut be = Vec::new();
    for (at, width) in
        [(0, 4), (4, 4), (8, 8), (16, 8), (24, 4), (28, 4), (32, 4), (36, 4), (40, 4), (44, 2), (46, 2)]
    {
        be.extend(le[at..at + width].iter().rev());
    }
    let trace = read(&[("be".to_string(), be)]).expect("read");
    assert_eq!((trace.requests[0].offset, trace.requests[0].len, trace.requests[0].pid), (4096, 4096, 5));
}

#[test]
fn malformed_files_are_refused_with_the_byte_and_the_reason() {
    let good = record(0, 8, 4096, TA_ISSUE, TC_ISSUE | TC_READ, 1, &[]);
    let cut = one_file(&[good.clone(), good[..20].to_vec()]);
    assert_eq!(
        read(&cut).expect_err("cut").to_string(),
        "t.blktrace.0: byte 48: the file ends 20 bytes into a 48-byte record"
    );
    let mut wrong = good.clone();
    wrong[0] = 0x99;
    wrong[3] = 0x11;
    assert!(read(&one_file(&[wrong])).expect_err("magic").to_string().contains("not blktrace's magic"));
    let mut long_pdu = good.clone();
    long_pdu[46] = 200;
    assert!(read(&one_file(&[long_pdu])).expect_err("pdu").to_string().contains("payload runs past"));
    let mut old = good;
    old[0] = 5;
    assert!(read(&one_file(&[old])).expect_err("version").to_string().contains("version 5"));
    assert!(matches!(read(&one_file(&[])), Err(BlktraceError::Empty(_))));
}

/// Found by fuzzing (blktrace): a sector past 2^64 bytes overflowed the request's offset.
#[test]
fn a_sector_past_the_end_of_any_device_is_refused() {
    let file = one_file(&[record(0, u64::MAX / 256, 4096, TA_ISSUE, TC_ISSUE | TC_READ, 1, &[])]);
    let error = read(&file).expect_err("past 2^64 bytes").to_string();
    assert!(error.contains("lies past 2^64 bytes"), "{error}");
}

#[test]
fn a_completion_stamped_with_its_issues_instant_on_another_cpu_still_pairs() {
    let files = vec![
        ("t.blktrace.0".to_string(), record(100, 8, 4096, TA_COMPLETE, TC_COMPLETE | TC_READ, 0, &[])),
        ("t.blktrace.1".to_string(), record(100, 8, 4096, TA_ISSUE, TC_ISSUE | TC_READ, 1, &[])),
    ];
    let trace = read(&files).expect("read");
    assert_eq!(trace.requests[0].service_ns, Some(0));
}
