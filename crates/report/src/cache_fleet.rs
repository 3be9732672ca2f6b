//! The report of `iolab fleet cache`: the fleet in a sentence per tier, then each host's own
//! curve, tiers, promotion and pollution (as `iolab cache` reports one host), then the fleet's
//! merged curve (each working set's histograms merged exactly, IOPS summed).

use std::fmt::Write;

use iolab_analysis::cache_fleet::FleetCacheSummary;
use iolab_spec::Bytes;
use iolab_stats::format::latency;
use iolab_stats::result::RunReport;

use crate::cache::{cache_body, first_measured, points_table, CACHE_SCHEMA};
use crate::studies::{to_json, workload};

pub fn fleet_cache_json(summary: &FleetCacheSummary, run: &RunReport) -> String {
    to_json(CACHE_SCHEMA, summary, run)
}

pub fn fleet_cache_text(summary: &FleetCacheSummary, run: &RunReport) -> String {
    let mut out = String::new();
    let described = first_measured(run);
    let hosts: Vec<&str> = summary.fleet.hosts.iter().map(|h| h.host.as_str()).collect();
    let _ = writeln!(
        out,
        "read cache and tiers on a fleet of {} host(s) ({}): {}",
        hosts.len(),
        hosts.join(", "),
        workload(&described).replace("per step", "per working set")
    );
    let _ = writeln!(
        out,
        "each working set a share of each host's own region, read once sequentially and then at random on every host at once; refined on the {} of the hosts' refinement points\n",
        summary.fleet.refinement
    );
    for sentence in &summary.fleet.sentences {
        let _ = writeln!(out, "fleet: {sentence}");
    }
    host_table(&mut out, summary);
    for host in &summary.fleet.hosts {
        let _ = writeln!(out, "\nhost {} (region {}):", host.host, Bytes(host.summary.region_bytes));
        if let Some(failure) = &host.failure {
            let _ = writeln!(out, "FAILED: {failure}");
        }
        cache_body(&mut out, &host.summary);
    }
    let merged = &summary.merged;
    let _ = writeln!(
        out,
        "\nfleet, merged (every host's reads at each working set: histograms merged, IOPS summed; working set and region summed over the hosts, {} in all):",
        Bytes(merged.region_bytes)
    );
    points_table(&mut out, &merged.points, merged.region_bytes, |_| String::new());
    for note in &merged.notes {
        let _ = writeln!(out, "note: {note}");
    }
    if run.interrupted {
        out.push_str("INTERRUPTED: the working sets above are those that finished.\n");
    }
    crate::shown(out)
}

/// One line per host: its region and each of its tiers (capacity, hits, misses), promotion and
/// pollution, so a fleet of many hosts reads at a glance before each host's own report.
fn host_table(out: &mut String, summary: &FleetCacheSummary) {
    let width = summary.fleet.hosts.iter().map(|h| h.host.len()).max().unwrap_or(4).max(4);
    let _ = writeln!(out, "\n  {:<width$}{:>12}  tiers (capacity: hit / miss)", "host", "region");
    for host in &summary.fleet.hosts {
        let own = &host.summary;
        let tiers: Vec<String> = own
            .found
            .tiers
            .iter()
            .map(|t| format!("{}: {} / {}", Bytes(t.size_bytes), latency(t.hit_ns), latency(t.miss_ns)))
            .collect();
        let mut line = if tiers.is_empty() { "none".to_string() } else { tiers.join(", ") };
        if let Some(p) = &own.promotion {
            line.push_str(&match (p.fast_after_s, p.fast_from_start) {
                (_, true) => "; promotion: cached already".to_string(),
                (Some(s), false) => format!("; promoted after {s:.2} s"),
                (None, false) => "; NOT promoted".to_string(),
            });
        }
        if let Some(p) = &own.pollution {
            line.push_str(if p.polluted {
                "; POLLUTED by a scan"
            } else {
                "; kept its hot set through a scan"
            });
        }
        if host.failure.is_some() {
            line.push_str("; FAILED");
        }
        let _ = writeln!(out, "  {:<width$}{:>12}  {line}", host.host, Bytes(own.region_bytes).to_string());
    }
}
