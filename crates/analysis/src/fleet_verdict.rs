//! The verdict of a job run across a fleet: what limited the fleet as a whole, from the
//! breakdown of its merged result (`FleetReport`). The rules are tried in a fixed order and the
//! first that holds wins; docs/bottleneck-verdict.md ("Fleet") writes them down.
//!
//! Why this order: hosts that did not run together make every merged figure a blend of
//! different moments, so the coordinator comes first; a network carrying all it can explains a
//! host that looks idle, so the network comes next; only then do the hosts' own verdicts (each
//! judged by `verdict::judge` on its own figures) say what limited the fleet.

use iolab_stats::central::share_pct;
use iolab_stats::fleet::{FleetReport, HostResult, HostStatus};
use iolab_stats::format::{latency, thousands};
use iolab_stats::result::{Bottleneck, Verdict};

/// Hosts whose measured windows opened further apart than this share of the window did not run
/// together: the merged rates sum hosts that were not all running at once.
pub const MAX_SKEW_SHARE: f64 = 0.05;
/// ... or further apart than this, however long the window.
pub const MAX_SKEW_NS: u64 = 1_000_000_000;
/// Live figures arriving this late mean the coordinator fell behind reading them.
pub const MAX_STREAM_LAG_MS: f64 = 2000.0;
/// A host whose storage traffic reached this share of its measured link moved what its link
/// could carry (a link measured by a short netbench is rarely beaten by more than a few %).
pub const LINK_SHARE: f64 = 0.85;
/// The "agents waited" rule: nothing of the host above this share was busy (any thread, any
/// core, any device) ...
pub const IDLE_PCT: f64 = 50.0;
/// ... while its mean latency was at least this many times the median of the other hosts'.
pub const SLOW_LATENCY_FACTOR: f64 = 2.0;

/// What limited the fleet whose merged window lasted `measured_s` (the hosts' mean).
pub fn judge_fleet(report: &FleetReport, measured_s: f64) -> Verdict {
    let ran: Vec<&HostResult> = report.hosts.iter().filter(|h| h.status == HostStatus::Ok).collect();
    let (cause, summary) = decide(report, &ran, measured_s);
    Verdict::of(cause, summary, evidence(report, measured_s))
}

fn decide(report: &FleetReport, ran: &[&HostResult], measured_s: f64) -> (Bottleneck, String) {
    if ran.is_empty() {
        return (Bottleneck::Undetermined, "No host finished the job, so there is nothing to judge.".into());
    }
    if let Some(summary) = coordinator(report, measured_s) {
        return (Bottleneck::Coordinator, summary);
    }
    if let Some(summary) = saturated_link(ran).or_else(|| waiting_agents(ran)) {
        return (Bottleneck::Network, summary);
    }
    hosts_verdict(ran)
}

/// Skew beyond 5% of the window (or 1 s), or live figures more than 2 s late.
fn coordinator(report: &FleetReport, measured_s: f64) -> Option<String> {
    let skew_ns = report.start_skew_ns;
    let window_ns = measured_s.max(0.0) * 1e9;
    if skew_ns > MAX_SKEW_NS || skew_ns as f64 > window_ns * MAX_SKEW_SHARE {
        return Some(format!(
            "Hosts started up to {} apart ({:.0}% of the {measured_s:.1} s window): the coordinator could not start them together, so the merged rates add up hosts that were not all running at once.",
            latency(skew_ns as f64),
            share_pct(skew_ns as f64, window_ns)
        ));
    }
    (report.max_stream_lag_ms > MAX_STREAM_LAG_MS).then(|| {
        format!(
            "The coordinator fell behind reading the hosts' live figures (up to {:.1} s late): its own CPU or network, not the hosts, set the pace of the live view.",
            report.max_stream_lag_ms / 1e3
        )
    })
}

/// A host whose storage throughput reached 85% of its measured link.
fn saturated_link(ran: &[&HostResult]) -> Option<String> {
    let host = ran
        .iter()
        .filter_map(|h| Some((*h, h.link_mb_s.filter(|&link| link > 0.0)?)))
        .filter(|(h, link)| h.total.mb_s >= link * LINK_SHARE)
        .max_by(|a, b| (a.0.total.mb_s / a.1).total_cmp(&(b.0.total.mb_s / b.1)))?;
    let (host, link) = host;
    Some(format!(
        "Host {} moved {} MB/s over a link measured at {} MB/s ({:.0}%): the network, not its storage, was the limit.",
        host.host,
        thousands(host.total.mb_s),
        thousands(link),
        share_pct(host.total.mb_s, link)
    ))
}

/// A host whose own verdict found nothing saturated (concurrency, undetermined), with CPU
/// figures under 50% everywhere, no local device 50% busy, and a mean latency at least twice
/// the median of the other hosts': its I/Os spent their time outside the machine. Needs two
/// finished hosts (a peer to compare with) and CPU figures; anything missing, it does not hold.
fn waiting_agents(ran: &[&HostResult]) -> Option<String> {
    if ran.len() < 2 {
        return None;
    }
    ran.iter().find_map(|host| {
        let cause = host.verdict.as_ref().map_or(Bottleneck::Undetermined, |v| v.cause);
        if !matches!(cause, Bottleneck::Concurrency | Bottleneck::Target | Bottleneck::Undetermined) {
            return None;
        }
        let cpu = &host.cpu;
        if cpu.threads.is_empty() && cpu.machine_busy_pct.is_empty() {
            return None;
        }
        let busiest_thread = cpu.threads.iter().map(|t| t.busiest_thread_pct).fold(0.0, f64::max);
        let busiest_core = cpu.machine_busy_pct.iter().copied().fold(0.0, f64::max);
        let busiest_device = host.devices.iter().map(|d| d.util_pct).fold(0.0, f64::max);
        if busiest_thread >= IDLE_PCT || busiest_core >= IDLE_PCT || busiest_device >= IDLE_PCT {
            return None;
        }
        let own = host.total.latency.as_ref()?.mean_ns;
        let others: Vec<f64> = ran
            .iter()
            .filter(|h| !std::ptr::eq(**h, *host))
            .filter_map(|h| Some(h.total.latency.as_ref()?.mean_ns))
            .collect();
        let median = iolab_stats::central::median(&others)?;
        (median > 0.0 && own >= median * SLOW_LATENCY_FACTOR).then(|| {
            format!(
                "Host {}'s agent waited: mean latency {}, {:.1}x the other hosts' median, with no thread, core or device of it {IDLE_PCT:.0}% busy; its I/O spent that time outside the machine (the network, or storage behind it).",
                host.host,
                latency(own),
                own / median
            )
        })
    })
}

/// The cause most hosts share (ties: the slowest host's), named with the slowest host of it.
fn hosts_verdict(ran: &[&HostResult]) -> (Bottleneck, String) {
    let cause_of = |h: &HostResult| h.verdict.as_ref().map_or(Bottleneck::Undetermined, |v| v.cause);
    let mut by_speed: Vec<&HostResult> = ran.to_vec();
    by_speed.sort_by(|a, b| a.total.iops.total_cmp(&b.total.iops));
    let count = |cause: Bottleneck| ran.iter().filter(|h| cause_of(h) == cause).count();
    let most = ran.iter().map(|h| count(cause_of(h))).max().unwrap_or(0);
    // The slowest host among those whose cause is one of the most common.
    let Some(slowest) = by_speed.iter().find(|h| count(cause_of(h)) == most) else {
        return (Bottleneck::Undetermined, "No host finished the job.".into());
    };
    let cause = cause_of(slowest);
    let mean = ran.iter().map(|h| h.total.iops).sum::<f64>() / ran.len() as f64;
    let own = slowest.verdict.as_ref().map_or("it was not judged", |v| v.summary.as_str());
    let summary = if ran.len() == 1 {
        format!("{} on the one host that finished ({}): {own}", capital(cause.name()), slowest.host)
    } else {
        format!(
            "{} on {most} of {} hosts ({} slowest: {} IOPS vs {} mean). On {}: {own}",
            capital(cause.name()),
            ran.len(),
            slowest.host,
            short(slowest.total.iops),
            short(mean),
            slowest.host
        )
    };
    (cause, summary)
}

/// One line per host, then the skew and the live stream.
fn evidence(report: &FleetReport, measured_s: f64) -> Vec<String> {
    let mut lines: Vec<String> = report.hosts.iter().map(host_line).collect();
    if report.hosts.iter().any(|h| h.status == HostStatus::Ok) {
        lines.push(format!(
            "start skew {} ({:.2}% of the {measured_s:.1} s window)",
            latency(report.start_skew_ns as f64),
            share_pct(report.start_skew_ns as f64, measured_s * 1e9)
        ));
    }
    if report.max_stream_lag_ms > 0.0 {
        lines.push(format!("live figures arrived up to {:.0} ms late", report.max_stream_lag_ms));
    }
    lines
}

/// "h1 (node-a): 58,123 IOPS, 238 MB/s, link 1,180 MB/s, started +0.40ms, device" or
/// "h3 failed: connection refused; not merged".
fn host_line(host: &HostResult) -> String {
    if host.status == HostStatus::Failed {
        return format!(
            "{} failed: {}; not merged",
            host.host,
            host.failure.as_deref().unwrap_or("no reason given")
        );
    }
    let mut line = format!(
        "{} ({}): {} IOPS, {} MB/s",
        host.host,
        host.hostname,
        thousands(host.total.iops),
        thousands(host.total.mb_s)
    );
    if let Some(link) = host.link_mb_s {
        line.push_str(&format!(", link {} MB/s", thousands(link)));
    }
    line.push_str(&format!(", started +{}", latency(host.start_offset_ns as f64)));
    if let Some(verdict) = &host.verdict {
        line.push_str(&format!(", {}", verdict.cause.name()));
    }
    line
}

/// "41k", "1.2M", "950": IOPS in a few characters, for a summary.
fn short(value: f64) -> String {
    if value >= 1e6 {
        format!("{:.1}M", value / 1e6)
    } else if value >= 1e4 {
        format!("{:.0}k", value / 1e3)
    } else if value >= 1e3 {
        format!("{:.1}k", value / 1e3)
    } else {
        format!("{value:.0}")
    }
}

fn capital(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| first.to_uppercase().chain(chars).collect())
}
