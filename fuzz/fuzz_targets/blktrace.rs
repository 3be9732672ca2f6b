//! blktrace's binary records as `trace show NAME` reads them: the bytes split into up to four
//! per-CPU files (the first byte says where), to `iolab_trace::blktrace::read`; an accepted
//! trace is described (`shape`) and written as an iolab trace that must read back the same.
//!
//! Found: a panic (a record's payload length, an event without its issue, a time before the
//! first issue); a trace that does not survive the iolab format.

#![no_main]

use libfuzzer_sys::fuzz_target;

use iolab_trace::{blktrace, file_format, shape};

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else { return };
    let parts = usize::from(split % 4) + 1;
    let chunk = rest.len().div_ceil(parts).max(1);
    let files: Vec<(String, Vec<u8>)> =
        rest.chunks(chunk).enumerate().map(|(i, c)| (format!("f.blktrace.{i}"), c.to_vec())).collect();
    let Ok(trace) = blktrace::read(&files) else { return };
    let _ = shape::shape(&trace);
    let mut written = Vec::new();
    file_format::write(&trace, &mut written).expect("a trace writes to memory");
    assert_eq!(file_format::read(&written).ok().as_ref(), Some(&trace), "a blktrace does not survive the iolab format");
});
