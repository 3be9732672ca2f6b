//! The request bodies an agent reads from the network: each JSON body type of
//! `iolab_fleet::protocol`, and the job-file text inside `Prepare`, which the agent parses and
//! resolves as it would a user's job file (`iolab_spec::wire::job_from_text`), and a replay's
//! requests (`iolab_fleet::replay_wire`, bytes), which must encode back to what was read. The
//! first byte picks the route, the rest is the body. Nothing may panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

use iolab_fleet::protocol::{HelloRequest, NetSend, OpenSession, Prepare, Start};
use iolab_fleet::replay_wire;

fuzz_target!(|data: &[u8]| {
    let Some((&route, body)) = data.split_first() else { return };
    match route % 7 {
        0 => drop(serde_json::from_slice::<HelloRequest>(body)),
        1 => drop(serde_json::from_slice::<OpenSession>(body)),
        2 => {
            if let Ok(prepare) = serde_json::from_slice::<Prepare>(body) {
                let _ = iolab_spec::wire::job_from_text(&prepare.job);
            }
        }
        3 => drop(serde_json::from_slice::<Start>(body)),
        4 => drop(serde_json::from_slice::<NetSend>(body)),
        5 => {
            if let Ok(ios) = replay_wire::decode(body) {
                assert_eq!(replay_wire::encode(&ios), body, "a replay's requests read back as sent");
            }
        }
        // The job text as the agent sees it once the JSON is unwrapped.
        _ => {
            if let Ok(text) = std::str::from_utf8(body) {
                let _ = iolab_spec::wire::job_from_text(text);
            }
        }
    }
});
