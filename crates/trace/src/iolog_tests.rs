use super::*;

#[test]
fn a_v3_log_keeps_its_times_files_and_operations() {
    let log = "fio version 3 iolog\n\
               0 /dev/loop3 add\n\
               5 /dev/loop3 open\n\
               120 /dev/loop3 read 4096 4096\n\
               130 /dev/loop3 write 8192 65536\n\
               131 /dev/loop3 trim 0 1048576\n\
               140 /dev/loop3 sync 0 0\n\
               150 /dev/loop3 close\n";
    let trace = read(log).expect("read");
    assert_eq!(trace.header.source, TraceSource::FioIologV3);
    assert!(trace.header.timed);
    assert_eq!(trace.header.streams, vec!["/dev/loop3".to_string()]);
    let got: Vec<_> = trace.requests.iter().map(|r| (r.at_ns, r.op, r.offset, r.len)).collect();
    assert_eq!(
        got,
        vec![
            (120_000, TraceOp::Read, 4096, 4096),
            (130_000, TraceOp::Write, 8192, 65536),
            (131_000, TraceOp::Discard, 0, 1 << 20),
            (140_000, TraceOp::Flush, 0, 0),
        ]
    );
    assert_eq!(trace.header.duration_ns, 140_000);
}

#[test]
fn a_v2_log_is_untimed_unless_it_waits() {
    let untimed = "fio version 2 iolog\n/f add\n/f open\n/f read 0 4096\n/f read 4096 4096\n";
    let trace = read(untimed).expect("read");
    assert!(!trace.header.timed);
    assert!(trace.requests.iter().all(|r| r.at_ns == 0));
    let waits = "fio version 2 iolog\n/f add\n/f read 0 4096\n/f wait 500 0\n/f read 4096 4096\n/f wait 250 0\n/f write 0 512\n";
    let trace = read(waits).expect("read");
    assert!(trace.header.timed);
    let times: Vec<_> = trace.requests.iter().map(|r| r.at_ns).collect();
    assert_eq!(times, vec![0, 500_000, 750_000]);
}

#[test]
fn two_files_are_two_streams() {
    let log = "fio version 2 iolog\n/a add\n/b add\n/a read 0 4096\n/b write 0 4096\n";
    let trace = read(log).expect("read");
    assert_eq!(trace.header.streams.len(), 2);
    assert_eq!(trace.requests[1].stream, 1);
}

#[test]
fn bad_lines_are_refused_with_their_number_and_reason() {
    let cases = [
        ("fio version 1 iolog\n", "line 1 is 'fio version 1 iolog'"),
        ("fio version 3 iolog\n0 /f add\nx /f read 0 4096\n", "line 3: the timestamp is not a whole number"),
        (
            "fio version 3 iolog\n0 /f add\n1 /f read 0\n",
            "line 3: expected 'timestamp filename action [offset length]'",
        ),
        ("fio version 2 iolog\n/f add\n/f read -1 4096\n", "line 3: the offset is not a whole number"),
        ("fio version 2 iolog\n/f add\n/f erase 0 4096\n", "line 3: the action is not read"),
        ("fio version 2 iolog\n/f read 0 4096\n", "line 2: the file was not added before"),
        ("fio version 2 iolog\n/f add\n/f read 0 0\n", "line 3: a read or write of 0 bytes"),
        ("fio version 2 iolog\n/f add\n/f read 0 5000000000\n", "line 3: the length is over 4 GiB"),
        ("fio version 3 iolog\n0 /f add\n1 /f wait 10 0\n", "line 3: version 3 has no wait"),
        ("fio version 2 iolog\n/f add\n/f remove\n", "line 3: a file action is add, open or close"),
        ("fio version 2 iolog\n/f add\n", "the iolog holds no I/O"),
    ];
    for (log, want) in cases {
        let error = read(log).expect_err(log).to_string();
        assert!(error.starts_with(want), "{log:?}: {error}");
    }
}

#[test]
fn an_earlier_timestamp_is_issued_without_delay_as_fio_does() {
    let log = "fio version 3 iolog\n0 /f add\n100 /f read 0 4096\n90 /f read 4096 4096\n";
    let times: Vec<_> = read(log).expect("read").requests.iter().map(|r| r.at_ns).collect();
    assert_eq!(times, vec![100_000, 100_000]);
}
