//! The job-file parser and resolver, as `iolab run FILE` uses them, on any text; and every job
//! that resolves must travel to a fleet agent as job-file text and arrive unchanged.
//!
//! Found: nothing may panic; a job resolved from a job file that cannot be written as one, or
//! that resolves differently on the agent, is a finding too (the coordinator would refuse a
//! job the user's file asked for).

#![no_main]

use libfuzzer_sys::fuzz_target;

use iolab_spec::{jobfile, resolve, wire, Options};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(options) = jobfile::parse(text) else { return };
    // A sweep reads the same options; its expansion must not panic either.
    let _ = iolab_spec::sweep::expand(&options);
    let Ok(plan) = resolve(Some(&options), &Options::default()) else { return };
    for job in &plan.jobs {
        let sent = match wire::job_file_text(job) {
            Ok(sent) => sent,
            Err(e) => {
                panic!("job '{}' resolved from a job file cannot travel: {e}\n--- file:\n{text}", job.name)
            }
        };
        if let Err(e) = wire::job_from_text(&sent) {
            panic!("the agent refuses what was sent: {e}\n--- sent:\n{sent}");
        }
    }
});
