//! fio's iologs (v2 and v3) as `trace show FILE` reads them: any text to
//! `iolab_trace::iolog::read`; an accepted trace is described, laid out for a replay onto a
//! 1 MiB target (every fit), and written as an iolab trace that must read back the same.
//!
//! Found: a panic (numbers past their types, waits adding up past 2^64, a stream index past the
//! files); a replay plan with a request outside its target; a trace that does not survive the
//! iolab format.

#![no_main]

use libfuzzer_sys::fuzz_target;

use iolab_trace::replay_plan::{plan, Fit, Speed};
use iolab_trace::{file_format, iolog, shape};

const TARGET: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(trace) = iolog::read(text) else { return };
    let _ = shape::shape(&trace);
    for fit in [None, Some(Fit::Scale), Some(Fit::Wrap)] {
        for speed in [Speed::Times(1.0), Speed::Times(3.5), Speed::Max] {
            let Ok(laid) = plan(&trace, speed, fit, TARGET, 1) else { continue };
            for io in &laid.ios {
                assert!(io.offset + u64::from(io.len) <= TARGET, "{io:?} is past the target's end");
            }
        }
    }
    let mut written = Vec::new();
    file_format::write(&trace, &mut written).expect("a trace writes to memory");
    assert_eq!(file_format::read(&written).ok().as_ref(), Some(&trace), "an iolog does not survive the iolab format");
});
