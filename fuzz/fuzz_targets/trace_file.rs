//! iolab's trace file as `trace show`, `replay` and `trace job` read it: any bytes to
//! `iolab_trace::file_format::read`.
//!
//! Found: a panic; memory sized from the header's request count before the records are read
//! (run with `-rss_limit_mb`); a trace accepted that does not write back to bytes that read as
//! the same trace.

#![no_main]

use libfuzzer_sys::fuzz_target;

use iolab_trace::file_format::{read, write};

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = read(data) else { return };
    let mut written = Vec::new();
    write(&trace, &mut written).expect("a trace writes to memory");
    match read(&written) {
        Ok(again) => assert_eq!(again, trace, "a trace changes on the way through a write"),
        Err(e) => panic!("the file written for an accepted trace is refused: {e}"),
    }
    let _ = iolab_trace::shape::shape(&trace);
});
