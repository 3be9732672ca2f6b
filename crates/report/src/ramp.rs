//! The report of `iolab ramp`: the latency-vs-IOPS curve, with CPU against IOPS, and where it
//! stopped.

use std::fmt::Write;

use iolab_analysis::ramp::{RampRow, RampSummary};
use iolab_stats::result::RunReport;

use crate::studies::{to_json, verdict, workload};
use iolab_stats::format::{latency, thousands};

/// Name and version of the JSON schema of a ramp report.
pub const RAMP_SCHEMA: &str = "iolab.ramp/1";

pub fn ramp_json(summary: &RampSummary, run: &RunReport) -> String {
    to_json(RAMP_SCHEMA, summary, run)
}

pub fn ramp_text(summary: &RampSummary, run: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "ramp: {}", workload(run).replace("per step", "per level"));
    if summary.curves.len() > 1 {
        // A ramp over lists: each curve's maximum and table.
        for curve in &summary.curves {
            let _ = writeln!(out, "\n{}", curve.name);
            let _ = writeln!(out, "maximum (closed loop): {} IOPS\n", thousands(curve.max_iops));
            table(&mut out, curve.rows.iter().filter_map(|&i| summary.rows.get(i)));
        }
    } else {
        let _ = writeln!(out, "maximum (closed loop): {} IOPS\n", thousands(summary.max_iops));
        table(&mut out, summary.rows.iter());
    }
    let _ = writeln!(
        out,
        "  (resp: from each I/O's scheduled time; serv: from its submission; machine: all cores' busy share; iolab: its CPU in % of one core)"
    );
    out.push_str(&crate::groups::groups_text(run));
    verdict(&mut out, &summary.verdict);
    if run.interrupted {
        out.push_str("INTERRUPTED: the levels above are those that finished.\n");
    }
    crate::shown(out)
}

/// The levels' table: what was asked, what was achieved, latency and CPU.
fn table<'a>(out: &mut String, rows: impl Iterator<Item = &'a RampRow>) {
    let _ = writeln!(
        out,
        "  {:>6}{:>12}{:>12}{:>10}{:>11}{:>11}{:>11}{:>9}{:>9}{:>10}",
        "level",
        "asked",
        "achieved",
        "kept up",
        "resp mean",
        "resp p99",
        "serv p99",
        "machine",
        "iolab",
        "CPU/I/O"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "  {:>5}%{:>12}{:>12}{:>10}{:>11}{:>11}{:>11}{:>8.0}%{:>8.0}%{:>8.2}us{}",
            r.level_pct,
            thousands(r.target_iops),
            thousands(r.achieved_iops),
            if r.kept_up {
                "yes"
            } else if r.sustained {
                "NO: late"
            } else {
                "NO"
            },
            latency(r.response_mean_ns),
            latency(r.response_p99_ns as f64),
            latency(r.service_p99_ns as f64),
            r.machine_cpu_pct,
            r.process_cpu_pct,
            r.cpu_us_per_io,
            match (&r.crossed, r.disturbed) {
                (Some(c), false) => format!("  <- {c}"),
                (Some(c), true) => format!("  <- {c} (disturbed)"),
                (None, true) if r.retried == 0 => "  <- disturbed".into(),
                (None, true) => format!("  <- disturbed in all {} attempts", r.retried + 1),
                (None, false) => String::new(),
            }
        );
    }
}
