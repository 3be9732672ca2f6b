//! `iolab import fio`: fio's JSON output (or anything a user hands it) to iolab's import model.
//! Nothing may panic; an error is the answer to bad input.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = iolab_fio::import(text, "fuzz.json");
});
