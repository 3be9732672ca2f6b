//! The report of `iolab precondition`: the run of sequential writes, then whether every pass
//! was written, how fast, and whether the region was discarded first.

use std::fmt::Write;

use iolab_analysis::suite::Preconditioning;
use iolab_spec::Bytes;
use iolab_stats::result::{RunReport, StopReason};
use serde::Serialize;

use crate::studies::to_json;
use crate::text::render_text;

/// Name and version of the JSON schema of a preconditioning report.
pub const PRECONDITION_SCHEMA: &str = "iolab.precondition/1";

#[derive(Serialize)]
struct Summary<'a> {
    #[serde(flatten)]
    asked: &'a Preconditioning,
    written_bytes: u64,
    complete: bool,
    seconds: f64,
    mb_s: f64,
}

fn summary<'a>(asked: &'a Preconditioning, run: &RunReport) -> Summary<'a> {
    let job = run.jobs.first();
    let written_bytes = job.map_or(0, |j| j.write.bytes);
    let needed = asked.region_bytes * u64::from(asked.passes);
    Summary {
        asked,
        written_bytes,
        complete: job.is_some_and(|j| j.stop_reason == StopReason::IoLimit) && written_bytes >= needed,
        seconds: job.map_or(0.0, |j| j.measured_s),
        mb_s: job.map_or(0.0, |j| j.write.mb_s),
    }
}

pub fn precondition_json(asked: &Preconditioning, run: &RunReport) -> String {
    to_json(PRECONDITION_SCHEMA, &summary(asked, run), run)
}

pub fn precondition_text(asked: &Preconditioning, run: &RunReport) -> String {
    let mut out = render_text(run);
    let done = summary(asked, run);
    let needed = asked.region_bytes * u64::from(asked.passes);
    let _ = write!(
        out,
        "\npreconditioning: {} pass(es) over {} ({} written) in {:.1} s, {:.0} MB/s on average",
        asked.passes,
        Bytes(asked.region_bytes),
        Bytes(done.written_bytes),
        done.seconds,
        done.mb_s
    );
    let _ = writeln!(out, "{}", if asked.trimmed { "; discarded first" } else { "" });
    for note in &asked.notes {
        let _ = writeln!(out, "  discard: {note}");
    }
    if !done.complete {
        let _ = writeln!(
            out,
            "NOT COMPLETE: {} of the {} needed were written; the device is not in a known state",
            Bytes(done.written_bytes),
            Bytes(needed)
        );
    }
    crate::shown(out)
}
