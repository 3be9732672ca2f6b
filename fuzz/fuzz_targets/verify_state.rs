//! The verify state file as `iolab verify` and a `--verify` job read it: any bytes to
//! `iolab_runner::verify::parse_state`, what `read_state` does with a file's contents.
//!
//! Found: a panic; memory sized from the header's block count before the length is checked
//! (run with `-rss_limit_mb`, and `-malloc_limit_mb` defaults to it); a state accepted that
//! does not write back as itself. A format-3 state writes back byte for byte; a format-2 one
//! is written as format 3 and must read back as the same records.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

use iolab_runner::verify::{parse_state, state_bytes};

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.state");
    let Ok(records) = parse_state(path, data) else { return };
    let written = state_bytes(&records);
    if data.starts_with(b"iolabvs3") {
        assert_eq!(written, data, "a format-3 state accepted does not write back as itself");
    } else {
        assert!(data.starts_with(b"iolabvs2"), "a state accepted without a known magic");
    }
    match parse_state(path, &written) {
        Ok(again) => assert_eq!(again, records, "records change on the way through a write"),
        Err(e) => panic!("the state written for accepted records is refused: {e}"),
    }
});
