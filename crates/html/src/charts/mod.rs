//! Every chart of the report, each drawn only where some run has its data: load curves
//! (sweeps, ramps, CPU), latency distributions (percentiles, histogram), and time (per-second
//! series, the cliff log, steady-state rounds).

mod distribution;
mod load;
mod time;

use iolab_store::Point;

use crate::plot::Chart;
use crate::{HtmlError, Subject};

/// One drawn chart, as the page places it.
pub(crate) struct Figure {
    /// Which chart it is ("qd-iops", "steady"): the `data-chart` of its `<figure>`.
    pub kind: &'static str,
    pub svg: String,
    /// How to read it, and what was left out; plain text.
    pub caption: String,
    /// Nothing in it could be drawn (every value 0 on a log axis, say): left off the page.
    empty: bool,
}

impl Figure {
    fn new(kind: &'static str, chart: &Chart, caption: impl Into<String>) -> Result<Figure, HtmlError> {
        Ok(Figure { kind, svg: chart.svg()?, caption: caption.into(), empty: chart.is_empty() })
    }
}

/// The comparison charts first (every run overlaid), then each steady-state series.
pub(crate) fn all(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let mut figures = Vec::new();
    figures.extend(load::load_curves(subjects)?);
    figures.extend(load::latency_vs_iops(subjects)?);
    figures.extend(load::ramp(subjects)?);
    figures.extend(distribution::percentiles(subjects)?);
    figures.extend(distribution::histogram(subjects)?);
    figures.extend(time::series(subjects)?);
    figures.extend(load::cpu_per_io(subjects)?);
    figures.extend(time::cliff(subjects)?);
    figures.extend(time::steady(subjects)?);
    figures.retain(|f| !f.empty);
    Ok(figures)
}

/// The unit latencies are drawn in, from the largest one shown: µs up to 2 ms, then ms.
pub(crate) fn latency_unit(largest_ns: f64) -> (f64, &'static str) {
    if largest_ns > 2e6 {
        (1e6, "ms")
    } else {
        (1e3, "µs")
    }
}

/// The points whose latency distribution a run shows: each sweep curve's sweet spot, a
/// steady test's last round, a ramp's closed-loop maximum, else every point (up to 6).
pub(crate) fn chosen_points<'a>(subject: &'a Subject<'_>) -> Vec<(&'a Point, String)> {
    let points = &subject.run.points;
    let kind = subject.run.info.kind.as_str();
    let sweeps = subject.study.sweeps();
    let spots: Vec<(&Point, String)> = sweeps
        .iter()
        .flat_map(|s| {
            s.curves.iter().filter_map(|c| c.sweet_spot.as_ref().and_then(|spot| s.rows.get(spot.row)))
        })
        .filter_map(|row| subject.point_named(&row.name).map(|p| (p, format!("{} (sweet spot)", row.name))))
        .collect();
    if !spots.is_empty() {
        return spots;
    }
    let pick = match kind {
        "steady" | "precondition" => points.last().into_iter().collect::<Vec<_>>(),
        "ramp" => points.first().into_iter().collect(),
        _ => points.iter().take(6).collect(),
    };
    pick.into_iter().map(|p| (p, p.name.clone())).collect()
}

/// "#12 sweep /dev/nvme0n1 · qd 8": a run's name with what of it a line shows.
pub(crate) fn named(subject: &Subject<'_>, what: &str) -> String {
    if what.is_empty() {
        subject.name.clone()
    } else {
        format!("{} · {what}", subject.name)
    }
}
