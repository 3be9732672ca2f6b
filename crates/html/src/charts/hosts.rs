//! The charts of a fleet point's Hosts panel: each host's IOPS over time, and each host's IOPS
//! side by side as bars, so a slow or failed host stands out from the rest. Hosts are numbered
//! as in the panel's table and keep one colour in both charts.

use crate::charts::{latency_unit, Figure};
use crate::fleet::Fleet;
use crate::plot::{self, Axis, Band, Chart, Line};
use crate::HtmlError;

/// Both charts of `fleet`, those with something to draw.
pub(crate) fn figures(fleet: &Fleet) -> Result<Vec<Figure>, HtmlError> {
    let mut figures = vec![over_time(fleet)?, bars(fleet)?];
    figures.retain(|f| !f.empty);
    Ok(figures)
}

fn over_time(fleet: &Fleet) -> Result<Figure, HtmlError> {
    let mut chart = Chart::new(
        "IOPS per interval, each host",
        Axis::linear("time since the measurement started (s)"),
        Axis::linear("IOPS (I/Os per second)"),
    );
    for (index, host) in fleet.hosts.iter().enumerate() {
        let mut name = host.label(index);
        if host.failed() {
            name.push_str(" (failed; its live figures)");
        }
        let points = host.series.iter().map(|s| (s.t_s + s.duration_s / 2.0, s.iops)).collect();
        chart.lines.push(Line {
            name,
            color: plot::color(index),
            dashed: host.failed(),
            markers: true,
            points,
        });
    }
    Figure::new(
        "hosts-iops",
        &chart,
        "Each host's own IOPS per interval, drawn at the interval's middle, on its own clock from its window's start (the hosts started the start offset of the table apart). A failed host's line (dashed) is what its live stream delivered before it failed; it is not part of the merged result.",
    )
}

fn bars(fleet: &Fleet) -> Result<Figure, HtmlError> {
    let mut x = Axis::linear("host (numbered as in the table)");
    x.from_zero = false;
    x.whole = true;
    let mut chart = Chart::new("IOPS of each host", x, Axis::linear("IOPS (I/Os per second)"));
    let largest_p99 =
        fleet.hosts.iter().filter_map(|h| h.total.latency.as_ref()?.at(99.0)).fold(0.0, f64::max);
    let (scale, unit) = latency_unit(largest_p99);
    for (index, host) in fleet.hosts.iter().enumerate() {
        let at = (index + 1) as f64;
        let p99 = host.total.latency.as_ref().and_then(|l| l.at(99.0));
        let mut name = format!("{}: {} IOPS", host.label(index), plot::number(host.total.iops));
        match p99 {
            Some(ns) => name.push_str(&format!(", p99 {} {unit}", plot::number(ns / scale))),
            None if host.failed() => name.push_str(" (failed; from its live figures)"),
            None => {}
        }
        chart.bands.push(Band {
            name,
            x: (at - 0.35, at + 0.35),
            y: Some((0.0, host.total.iops)),
            color: plot::color(index),
            opacity: if host.failed() { 0.3 } else { 0.85 },
        });
    }
    Figure::new(
        "hosts-bars",
        &chart,
        "Each host's IOPS over its own measured window (the merged result's IOPS is their sum), with its p99 in the legend. A pale bar is a failed host's rate while its live stream lasted.",
    )
}
