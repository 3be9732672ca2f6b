//! The report of a steady-state test: each round's tracked value, the measurement window
//! marked, and the judgement with both SNIA criteria.

use std::fmt::Write;

use iolab_analysis::rounds::SteadyRounds;
use iolab_stats::result::{JobResult, RunReport};

use crate::studies::{to_json, verdict, workload};
use iolab_stats::format::{latency, thousands};

/// Name and version of the JSON schema of a steady-state report.
pub const STEADY_SCHEMA: &str = "iolab.steady/1";

pub fn steady_json(rounds: &SteadyRounds, run: &RunReport) -> String {
    to_json(STEADY_SCHEMA, rounds, run)
}

pub fn steady_text(rounds: &SteadyRounds, run: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "steady-state rounds: {}\n", workload(run).replace("per step", "per round"));
    rounds_table(&mut out, rounds, &run.jobs);
    verdict(&mut out, &[rounds.sentence()]);
    if run.interrupted {
        out.push_str("INTERRUPTED: the rounds above are those that ran.\n");
    }
    crate::shown(out)
}

/// The rounds with their tracked value; `>` marks the window that was judged.
pub(crate) fn rounds_table(out: &mut String, rounds: &SteadyRounds, jobs: &[JobResult]) {
    let window = rounds.state.window();
    let _ = writeln!(
        out,
        "  {:>7}{:>14}{:>12}{:>10}{:>10}{:>10}   {}",
        "round",
        "IOPS",
        "MB/s",
        "mean",
        "p99",
        "CPU/I/O",
        rounds.tracked.unit()
    );
    for (index, job) in jobs.iter().enumerate().take(rounds.values.len()) {
        let round = index + 1;
        let mark =
            if window.is_some_and(|w| (w.first_round..=w.last_round).contains(&round)) { ">" } else { " " };
        let p99 = job.total.percentile(99.0).unwrap_or(0);
        let _ = writeln!(
            out,
            "{mark} {:>7}{:>14}{:>12.1}{:>10}{:>10}{:>8.2}us   {:.1}",
            round,
            thousands(job.total.iops),
            job.total.mb_s,
            latency(job.total.latency.as_ref().map_or(0.0, |l| l.mean_ns)),
            latency(p99 as f64),
            job.cpu.us_per_io,
            rounds.values[index]
        );
    }
    if let Some(w) = window {
        let _ = writeln!(
            out,
            "  (> the window: average {:.1}, range {:.1}% of it, least-squares line {:+.2}/round, slope excursion {:.1}%)",
            w.average, w.range_pct, w.slope_per_round, w.slope_excursion_pct
        );
    }
}
