//! The kernel's trace ring buffer pages as `iolab capture` reads them from `trace_pipe_raw`:
//! any bytes as pages of 4096 bytes to `iolab_trace::ring_buffer::read_pages`, with the block
//! tracepoints' formats of Linux 6.x; the events found are paired into requests.
//!
//! Found: a panic (a commit longer than the page, a length word past the data, a time that
//! overflows, a field past a short record).

#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;

use iolab_trace::events::{pair, EventKind};
use iolab_trace::ring_buffer::{read_pages, EventFormat};

const ISSUE: &str = "ID: 2104\n\tfield:int common_pid;\toffset:4;\tsize:4;\n\tfield:dev_t dev;\toffset:8;\tsize:4;\n\tfield:sector_t sector;\toffset:16;\tsize:8;\n\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\n\tfield:unsigned int bytes;\toffset:28;\tsize:4;\n\tfield:char rwbs[10];\toffset:34;\tsize:10;\n\tfield:char comm[16];\toffset:44;\tsize:16;\n";
const COMPLETE: &str = "ID: 2107\n\tfield:dev_t dev;\toffset:8;\tsize:4;\n\tfield:sector_t sector;\toffset:16;\tsize:8;\n\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\n\tfield:char rwbs[10];\toffset:34;\tsize:10;\n";

fuzz_target!(|data: &[u8]| {
    let formats = [
        EventFormat::parse(ISSUE, EventKind::Issue).expect("issue format"),
        EventFormat::parse(COMPLETE, EventKind::Complete).expect("complete format"),
    ];
    let mut processes = BTreeMap::new();
    let mut read = read_pages(data, 4096, &formats, &mut processes);
    read.events.sort_by_key(|e| e.time);
    let _ = pair(&read.events);
});
