//! The report of a suite: one section per step (a table of jobs, a load curve with its sweet
//! spot, preconditioning, steady-state rounds, a matrix of IOPS), in the order they ran.

use std::fmt::Write;

use iolab_analysis::suite::SuiteSection;
use iolab_spec::Bytes;
use iolab_stats::result::{JobResult, RunReport};
use serde::Serialize;

use crate::steady::rounds_table;
use crate::studies::{target_names, to_json};
use iolab_stats::format::{latency, thousands};

/// Name and version of the JSON schema of a suite report.
pub const SUITE_SCHEMA: &str = "iolab.suite/1";

#[derive(Serialize)]
struct Suite<'a> {
    suite: &'a str,
    sections: &'a [SuiteSection],
}

pub fn suite_json(suite: &str, sections: &[SuiteSection], run: &RunReport) -> String {
    to_json(SUITE_SCHEMA, &Suite { suite, sections }, run)
}

pub fn suite_text(suite: &str, sections: &[SuiteSection], run: &RunReport) -> String {
    let mut out = String::new();
    let target = target_names(run);
    let _ = writeln!(out, "suite {suite} on {target}");
    let job = |index: &usize| run.jobs.get(*index);
    for section in sections {
        match section {
            SuiteSection::Table { title, jobs } => {
                let _ = writeln!(out, "\n{title}");
                job_table(&mut out, jobs.iter().filter_map(job));
            }
            SuiteSection::Curve { title, jobs, summary } => {
                let _ = writeln!(out, "\n{title}");
                job_table(&mut out, jobs.iter().filter_map(job));
                for line in &summary.verdict {
                    let _ = writeln!(out, "  - {line}");
                }
            }
            SuiteSection::Precondition { job: ran, done } => {
                let written = ran.as_ref().and_then(job).map_or(0, |j| j.write.bytes);
                let seconds = ran.as_ref().and_then(job).map_or(0.0, |j| j.measured_s);
                let _ = writeln!(
                    out,
                    "\npreconditioning: {} pass(es) over {}, {} written in {:.1} s{}",
                    done.passes,
                    Bytes(done.region_bytes),
                    Bytes(written),
                    seconds,
                    if done.trimmed { ", discarded first" } else { "" }
                );
            }
            SuiteSection::Steady { title, jobs, rounds } => {
                let _ = writeln!(out, "\n{title}");
                let ran: Vec<JobResult> = jobs.iter().filter_map(job).cloned().collect();
                rounds_table(&mut out, rounds, &ran);
                let _ = writeln!(out, "  - {}", rounds.sentence());
            }
            SuiteSection::Matrix { title, rows, columns, jobs, skipped } => {
                let _ = writeln!(out, "\n{title}");
                let _ = write!(out, "  {:>8}", "");
                for column in columns {
                    let _ = write!(out, "{column:>12}");
                }
                out.push('\n');
                for (r, row) in rows.iter().enumerate() {
                    let _ = write!(out, "  {row:>8}");
                    for c in 0..columns.len() {
                        let cell =
                            jobs.get(r * columns.len() + c).copied().flatten().and_then(|i| run.jobs.get(i));
                        let _ =
                            write!(out, "{:>12}", cell.map_or("-".to_string(), |j| thousands(j.total.iops)));
                    }
                    out.push('\n');
                }
                for why in skipped {
                    let _ = writeln!(out, "  - not run: {why}");
                }
            }
        }
    }
    let conclusion = crate::suite_conclusion::conclusion(sections, run);
    if !conclusion.is_empty() {
        let _ = writeln!(out, "\n{}", conclusion.join("\n"));
    }
    if run.interrupted {
        out.push_str("\nINTERRUPTED: the sections above hold the jobs that finished.\n");
    }
    crate::shown(out)
}

/// One row per job: IOPS, MB/s, mean, p99, p99.99 and CPU per I/O, reads and writes together.
fn job_table<'a>(out: &mut String, jobs: impl Iterator<Item = &'a JobResult> + Clone) {
    let _ = writeln!(
        out,
        "  {:<22}{:>12}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}  limited by",
        "test", "IOPS", "MB/s", "mean", "p99", "p99.99", "CPU/I/O"
    );
    for job in jobs.clone() {
        let pct = |p: f64| {
            job.total
                .latency
                .as_ref()
                .and_then(|l| l.percentiles.iter().find(|x| x.p == p))
                .map_or(0, |x| x.ns) as f64
        };
        let _ = writeln!(
            out,
            "  {:<22}{:>12}  {:>10.1}  {:>9}  {:>9}  {:>9}  {:>9}  {}",
            job.name,
            thousands(job.total.iops),
            job.total.mb_s,
            latency(job.total.latency.as_ref().map_or(0.0, |l| l.mean_ns)),
            latency(pct(99.0)),
            latency(pct(99.99)),
            latency(job.cpu.us_per_io * 1e3),
            job.verdict.cause.name()
        );
    }
    crate::tails::tails_text(
        out,
        jobs.map(|j| crate::tails::MeanAndTail::of(&j.name, j.total.latency.as_ref())),
    );
}
