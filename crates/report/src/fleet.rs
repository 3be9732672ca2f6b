//! The per-host part of a fleet job's text report: how closely the hosts started, how soon the
//! merged result followed, and each host's share with its own verdict.

use std::fmt::Write;

use iolab_stats::fleet::{FleetReport, HostStatus};
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::OpSummary;

pub fn fleet_text(out: &mut String, fleet: &FleetReport) {
    let ok = fleet.hosts.iter().filter(|h| h.status == HostStatus::Ok).count();
    let _ = writeln!(
        out,
        "fleet of {} hosts ({ok} merged): windows opened within {} of each other; merged result {:.0} ms after the last closed",
        fleet.hosts.len(),
        latency(fleet.start_skew_ns as f64),
        fleet.merge_latency_ms
    );
    let _ = writeln!(
        out,
        "  {:<22} {:<16} {:>9} {:>11} {:>9} {:>9} {:>9} {:>8} {:>9}  verdict",
        "host", "hostname", "start", "IOPS", "MB/s", "mean", "p99", "CPU/IO", "link MB/s"
    );
    for host in &fleet.hosts {
        if host.status == HostStatus::Failed {
            let kept = host.series.len();
            let _ = writeln!(
                out,
                "  {:<22} {:<16} FAILED: {} ({kept} s of its live figures kept, not merged)",
                host.host,
                host.hostname,
                host.failure.as_deref().unwrap_or("no reason given")
            );
            continue;
        }
        let link = host.link_mb_s.map_or_else(|| "-".to_string(), thousands);
        let verdict = host.verdict.as_ref().map_or("-", |v| v.cause.name());
        let _ = writeln!(
            out,
            "  {:<22} {:<16} {:>9} {:>11} {:>9.1} {:>9} {:>9} {:>7.2}µ {:>9}  {verdict}",
            host.host,
            host.hostname,
            format!("+{}", latency(host.start_offset_ns as f64)),
            thousands(host.total.iops),
            host.total.mb_s,
            mean(&host.total),
            p99(&host.total),
            host.cpu.us_per_io,
            link
        );
    }
}

fn mean(op: &OpSummary) -> String {
    op.latency.as_ref().map_or_else(|| "-".into(), |l| latency(l.mean_ns))
}

fn p99(op: &OpSummary) -> String {
    op.percentile(99.0).map_or_else(|| "-".into(), |ns| latency(ns as f64))
}
