use super::*;

/// block_rq_issue's format on Linux 6.x, as events/block/block_rq_issue/format gives it.
const ISSUE_FORMAT: &str = "name: block_rq_issue\nID: 2104\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n\
\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;\n\
\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n\
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\
\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;\n\
\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n\n\
print fmt: \"%d,%d %s\"\n";

const COMPLETE_FORMAT: &str = "name: block_rq_complete\nID: 2107\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n\
\tfield:int error;\toffset:28;\tsize:4;\tsigned:1;\n\
\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n\
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\
\tfield:__data_loc char[] cmd;\toffset:44;\tsize:4;\tsigned:0;\n";

fn formats() -> Vec<EventFormat> {
    vec![
        EventFormat::parse(ISSUE_FORMAT, EventKind::Issue).expect("issue"),
        EventFormat::parse(COMPLETE_FORMAT, EventKind::Complete).expect("complete"),
    ]
}

fn issue_record(sector: u64, bytes: u32, rwbs: &str, comm: &str) -> Vec<u8> {
    let mut r = vec![0u8; 64];
    r[0..2].copy_from_slice(&2104u16.to_le_bytes());
    r[4..8].copy_from_slice(&77u32.to_le_bytes());
    r[8..12].copy_from_slice(&(7u32 << 20).to_le_bytes());
    r[16..24].copy_from_slice(&sector.to_le_bytes());
    r[24..28].copy_from_slice(&(bytes / 512).to_le_bytes());
    r[28..32].copy_from_slice(&bytes.to_le_bytes());
    r[34..34 + rwbs.len()].copy_from_slice(rwbs.as_bytes());
    r[44..44 + comm.len()].copy_from_slice(comm.as_bytes());
    r
}

fn complete_record(sector: u64, sectors: u32) -> Vec<u8> {
    let mut r = vec![0u8; 48];
    r[0..2].copy_from_slice(&2107u16.to_le_bytes());
    r[8..12].copy_from_slice(&(7u32 << 20).to_le_bytes());
    r[16..24].copy_from_slice(&sector.to_le_bytes());
    r[24..28].copy_from_slice(&sectors.to_le_bytes());
    r[34..36].copy_from_slice(b"RS");
    r
}

/// A page holding `events` (each `(delta, header type or None for data, bytes)`).
fn page(start: u64, entries: &[(u32, u32, Vec<u8>)], commit_flags: u64) -> Vec<u8> {
    let mut data = Vec::new();
    for (delta, kind, body) in entries {
        data.extend((delta << 5 | kind).to_le_bytes());
        data.extend(body);
    }
    let mut page = vec![0u8; 4096];
    page[0..8].copy_from_slice(&start.to_le_bytes());
    page[8..16].copy_from_slice(&(data.len() as u64 | commit_flags).to_le_bytes());
    page[16..16 + data.len()].copy_from_slice(&data);
    page
}

#[test]
fn the_format_file_gives_the_offsets() {
    let issue = &formats()[0];
    assert_eq!((issue.id, issue.dev, issue.sector, issue.nr_sector), (2104, 8, 16, 24));
    assert_eq!((issue.rwbs, issue.bytes, issue.comm), ((34, 10), Some(28), Some((44, 16))));
    assert_eq!(formats()[1].bytes, None);
    assert!(EventFormat::parse("ID: 5\n", EventKind::Issue).is_none(), "no fields");
}

#[test]
fn events_in_a_page_carry_their_times_and_fields() {
    let mut big_len = Vec::new();
    let body = complete_record(8, 8);
    big_len.extend((body.len() as u32 + 4).to_le_bytes());
    big_len.extend(&body);
    let entries = vec![
        (100, 16, issue_record(8, 4096, "RS", "fio")),
        // A time extension of 1 << 27 ns, then the completion 5 ns after, stored with its length.
        (0, TYPE_TIME_EXTEND, 1u32.to_le_bytes().to_vec()),
        (5, 0, big_len),
        (3, 16, issue_record(0, 0, "FF", "kworker")),
    ];
    let mut processes = BTreeMap::new();
    let read = read_pages(&page(1_000, &entries, 0), 4096, &formats(), &mut processes);
    assert_eq!(read.damaged_pages, 0);
    let got: Vec<_> = read.events.iter().map(|e| (e.time, e.kind, e.sector, e.bytes, e.op)).collect();
    assert_eq!(
        got,
        vec![
            (1_100, EventKind::Issue, 8, 4096, TraceOp::Read),
            (1_100 + (1 << 27) + 5, EventKind::Complete, 8, 4096, TraceOp::Read),
            (1_100 + (1 << 27) + 8, EventKind::Issue, 0, 0, TraceOp::Flush),
        ]
    );
    assert_eq!(read.events[0].flags, flags::SYNC);
    assert_eq!(processes.get(&77).map(String::as_str), Some("fio"));
}

#[test]
fn a_page_after_lost_events_is_counted_and_a_cut_one_keeps_what_came_before() {
    let entries = vec![(1, 16, issue_record(8, 4096, "W", "fio"))];
    let mut processes = BTreeMap::new();
    let read = read_pages(&page(0, &entries, MISSED_EVENTS), 4096, &formats(), &mut processes);
    assert_eq!((read.pages_after_loss, read.events.len()), (1, 1));
    let mut cut = page(0, &entries, 0);
    // The commit claims more than the event holds: the second event runs off the data.
    cut[8..16].copy_from_slice(&(68u64 + 8).to_le_bytes());
    cut[16 + 68..16 + 72].copy_from_slice(&(16u32).to_le_bytes());
    let read = read_pages(&cut, 4096, &formats(), &mut processes);
    assert_eq!((read.events.len(), read.damaged_pages), (1, 1));
}

#[test]
fn rwbs_names_the_operation_and_its_flags() {
    assert_eq!(parse_rwbs("R"), Some((TraceOp::Read, 0)));
    assert_eq!(parse_rwbs("WS"), Some((TraceOp::Write, flags::SYNC)));
    assert_eq!(parse_rwbs("WFS"), Some((TraceOp::Write, flags::FUA | flags::SYNC)));
    assert_eq!(parse_rwbs("FWS"), Some((TraceOp::Write, flags::PREFLUSH | flags::SYNC)));
    assert_eq!(parse_rwbs("FF"), Some((TraceOp::Flush, 0)));
    assert_eq!(parse_rwbs("FN"), Some((TraceOp::Flush, 0)));
    assert_eq!(parse_rwbs("DS"), Some((TraceOp::Discard, flags::SYNC)));
    assert_eq!(parse_rwbs("RAM"), Some((TraceOp::Read, flags::META)));
    assert_eq!(parse_rwbs("N"), None);
    assert_eq!(parse_rwbs(""), None);
}

/// Pages read from `trace_pipe_raw` of a Linux 6.x instance while `dd` read 300 blocks of
/// 4 KiB from loop0 and wrote 50 of 64 KiB to it (other devices' requests are in them too).
#[test]
fn pages_the_kernel_wrote_hold_every_request_with_its_completion() {
    let mut processes = BTreeMap::new();
    let mut events = Vec::new();
    for pages in [
        &include_bytes!("../fixtures/ring-pages.cpu0")[..],
        &include_bytes!("../fixtures/ring-pages.cpu1")[..],
    ] {
        let read = read_pages(pages, 4096, &formats(), &mut processes);
        assert_eq!((read.damaged_pages, read.pages_after_loss), (0, 0));
        events.extend(read.events);
    }
    events.retain(|e| e.device == 7 << 20);
    crate::events::sort(&mut events);
    let paired = crate::events::pair(&events).expect("requests");
    let of = |op, len| paired.requests.iter().filter(|r| r.op == op && r.len == len).count();
    assert_eq!((of(TraceOp::Read, 4096), of(TraceOp::Write, 65536)), (300, 50));
    assert!(paired.requests.iter().all(|r| r.service_ns.is_some_and(|ns| ns > 0 && ns < 1_000_000_000)));
    assert_eq!(paired.completions, 350);
    assert!(processes.values().any(|name| name == "dd"), "{processes:?}");
}
