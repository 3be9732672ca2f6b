//! Every chart of the report, each drawn only where some run has its data: load curves
//! (sweeps, ramps, CPU), latency distributions (percentiles, histogram), and time (per-second
//! series, the cliff log, steady-state rounds); and the Hosts panel's charts of a fleet point.

mod burnin;
pub(crate) mod cache;
mod cache_fleet;
mod distribution;
pub(crate) mod hosts;
mod left_out;
mod load;
mod time;

use iolab_store::Point;
use plotters::style::RGBColor;

use crate::plot::Chart;
use crate::{HtmlError, Subject};

/// One drawn chart, as the page places it.
pub(crate) struct Figure {
    /// Which chart it is ("qd-iops", "steady"): the `data-chart` of its `<figure>`.
    pub kind: &'static str,
    pub svg: String,
    /// The workload it shows ("4KiB random read"): its `data-workload`; "" for a chart of
    /// one study (a cliff log, steady rounds).
    pub workload: String,
    /// How to read it, and what was left out; plain text.
    pub caption: String,
    /// Nothing in it could be drawn (every value 0 on a log axis, say): left off the page.
    empty: bool,
    /// Its lines' legend names ("#12 sweep ... · qd 8"): which runs it draws.
    drawn: Vec<String>,
}

impl Figure {
    fn new(kind: &'static str, chart: &Chart, caption: impl Into<String>) -> Result<Figure, HtmlError> {
        Ok(Figure {
            kind,
            svg: chart.svg()?,
            workload: String::new(),
            caption: caption.into(),
            empty: chart.is_empty(),
            drawn: chart.lines.iter().map(|l| l.name.clone()).collect(),
        })
    }

    /// Whether some line of it is `subject`'s: named the run, or the run and what of it.
    fn draws(&self, subject: &Subject<'_>) -> bool {
        let part = format!("{} · ", subject.name);
        self.drawn.iter().any(|name| *name == subject.name || name.starts_with(&part))
    }

    /// A panel of one workload: the workload in its title and its `data-workload`.
    fn panel(
        kind: &'static str,
        mut chart: Chart,
        workload: &str,
        caption: impl Into<String>,
    ) -> Result<Figure, HtmlError> {
        if !workload.is_empty() {
            chart.title = format!("{}: {workload}", chart.title);
        }
        let mut figure = Figure::new(kind, &chart, caption)?;
        figure.workload = workload.to_string();
        Ok(figure)
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
    figures.extend(cache::cache(subjects)?);
    figures.extend(time::steady(subjects)?);
    figures.extend(burnin::burnin(subjects)?);
    figures.retain(|f| !f.empty);
    left_out::say(&mut figures, subjects);
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

/// A point whose latency distribution a run shows, with what to call it and its colour.
pub(crate) struct Chosen<'a> {
    pub point: &'a Point,
    pub what: String,
    pub color: RGBColor,
}

/// The points whose latency distribution a run shows: each sweep curve's sweet spot (in the
/// curve's shade, as in the load charts), a steady test's last round, a ramp's closed-loop
/// maximum, else every point (in shades of the run's colour; each lands in its workload's panel).
pub(crate) fn chosen_points<'a>(subject: &'a Subject<'_>) -> Vec<Chosen<'a>> {
    let points = &subject.run.points;
    let mut spots = Vec::new();
    let mut curve_index = 0;
    for sweep in subject.study.sweeps() {
        for curve in &sweep.curves {
            let spot = curve.sweet_spot.as_ref();
            let row = spot.and_then(|spot| sweep.rows.get(spot.row));
            if let Some((row, point)) = row.and_then(|r| Some((r, subject.point_named(&r.name)?))) {
                // Without a knee the best point is no sweet spot, and is not called one.
                let knee = spot.is_some_and(|s| s.knee_found);
                let what = format!("{} ({})", row.name, if knee { "sweet spot" } else { "best, no knee" });
                spots.push(Chosen { point, what, color: curve_color(subject, curve_index) });
            }
            curve_index += 1;
        }
    }
    if !spots.is_empty() {
        return spots;
    }
    let pick: Vec<&Point> = match subject.run.info.kind.as_str() {
        "steady" | "precondition" | "burnin" => points.last().into_iter().collect(),
        "ramp" => points.first().into_iter().collect(),
        _ => points.iter().collect(),
    };
    // Shades count within a workload: the points that share a panel are the ones to tell apart.
    let mut seen: Vec<String> = Vec::new();
    pick.into_iter()
        .map(|point| {
            let workload = crate::workload::of(point);
            let index = seen.iter().filter(|w| **w == workload).count();
            seen.push(workload);
            Chosen { point, what: point.name.clone(), color: subject.color(index) }
        })
        .collect()
}

/// The shade of a run's `curve`-th sweep curve, counted among its curves of the same workload:
/// only curves that share a panel need telling apart, so a lone curve has the run's own colour.
pub(crate) fn curve_color(subject: &Subject<'_>, curve: usize) -> RGBColor {
    let sweeps = subject.study.sweeps();
    let workloads: Vec<&str> = sweeps
        .iter()
        .flat_map(|s| {
            s.curves
                .iter()
                .map(move |c| c.rows.first().and_then(|&r| s.rows.get(r)).map_or("", |r| r.access.as_str()))
        })
        .collect();
    let own = workloads.get(curve).copied().unwrap_or_default();
    subject.color(workloads.iter().take(curve).filter(|w| **w == own).count())
}

/// "#12 sweep /dev/nvme0n1 · qd 8": a run's name with what of it a line shows.
pub(crate) fn named(subject: &Subject<'_>, what: &str) -> String {
    if what.is_empty() {
        subject.name.clone()
    } else {
        format!("{} · {what}", subject.name)
    }
}
