//! The Hosts panel of a point run across a fleet: one table row per host (its status, start
//! offset, figures, verdict and link) and the per-host charts, so the merged figures above can
//! be traced to the hosts that made them. Host names and failures come from the network: every
//! one is escaped.

use std::fmt::Write;

use iolab_stats::format::latency;

use crate::charts::{hosts, latency_unit};
use crate::escape::esc;
use crate::fleet::{Fleet, Host};
use crate::page::figure_html;
use crate::plot::number;
use crate::{HtmlError, Subject};

/// The panels of every fleet point of `subject`'s run, as HTML ("" when it has none).
pub(crate) fn panels(subject: &Subject<'_>) -> Result<String, HtmlError> {
    let mut out = String::new();
    let points = &subject.run.points;
    for point in points {
        let Some(fleet) = Fleet::of(point) else { continue };
        let title = if points.len() > 1 { format!("Hosts of {}", point.name) } else { "Hosts".to_string() };
        let failed = fleet.hosts.iter().filter(|h| h.failed()).count();
        let _ = writeln!(
            out,
            "<section class=\"hosts\">\n<h3>{}</h3>\n<p class=\"note\">{} host(s){}; their windows opened up to {} apart.</p>",
            esc(&title),
            fleet.hosts.len(),
            if failed > 0 { format!(", {failed} failed (not merged)") } else { String::new() },
            latency(fleet.start_skew_ns as f64)
        );
        table(&mut out, &fleet);
        for figure in hosts::figures(&fleet)? {
            figure_html(&mut out, &figure);
        }
        out.push_str("</section>\n");
    }
    Ok(out)
}

fn table(out: &mut String, fleet: &Fleet) {
    let largest = fleet
        .hosts
        .iter()
        .filter_map(|h| h.total.latency.as_ref())
        .map(|l| l.at(99.0).unwrap_or(l.mean_ns))
        .fold(0.0, f64::max);
    let (scale, unit) = latency_unit(largest);
    let _ = writeln!(
        out,
        "<table class=\"hosts\">\n<tr><th>#</th><th>host</th><th>hostname</th><th>status</th><th class=\"num\">start offset</th><th class=\"num\">IOPS</th><th class=\"num\">MB/s</th><th class=\"num\">mean ({unit})</th><th class=\"num\">p99 ({unit})</th><th class=\"num\">CPU/I/O (µs)</th><th>verdict</th><th class=\"num\">link MB/s</th></tr>"
    );
    for (index, host) in fleet.hosts.iter().enumerate() {
        row(out, index, host, scale);
    }
    out.push_str("</table>\n");
}

fn row(out: &mut String, index: usize, host: &Host, scale: f64) {
    let dash = || "—".to_string();
    let lat = host.total.latency.as_ref();
    let show = |ns: Option<f64>| ns.map_or_else(dash, |v| number(v / scale));
    let (status_class, status) = if host.failed() {
        ("status-failed", format!("failed: {}", host.failure.as_deref().unwrap_or("no reason given")))
    } else {
        ("", host.status.clone())
    };
    let color = crate::plot::color(index);
    let verdict = host.verdict.as_ref().map_or_else(dash, |v| v.cause.replace('_', " "));
    let verdict_title = host.verdict.as_ref().map_or_else(String::new, |v| v.summary.clone());
    let _ = writeln!(
        out,
        "<tr><td><span class=\"swatch\" style=\"background: rgb({},{},{})\"></span>{}</td><td>{}</td><td>{}</td><td class=\"{status_class}\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td title=\"{}\">{}</td><td class=\"num\">{}</td></tr>",
        color.0,
        color.1,
        color.2,
        index + 1,
        esc(&host.host),
        esc(&host.hostname),
        esc(&status),
        if host.failed() { dash() } else { format!("+{}", latency(host.start_offset_ns as f64)) },
        number(host.total.iops),
        host.total.mb_s,
        show(lat.map(|l| l.mean_ns)),
        show(lat.and_then(|l| l.at(99.0))),
        if host.failed() { dash() } else { format!("{:.2}", host.cpu.us_per_io) },
        esc(&verdict_title),
        esc(&verdict),
        host.link_mb_s.map_or_else(dash, |v| format!("{v:.0}"))
    );
}
