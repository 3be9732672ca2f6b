//! Charts against load: IOPS and latency against outstanding I/Os (sweeps), latency against
//! IOPS (sweeps and ramps), and CPU per I/O against IOPS. Load charts are drawn one panel per
//! workload (block size and mix): a 1 MiB curve beside a 4 KiB one would lie flat along zero.

use iolab_analysis::ramp::{RampCurve, RampRow, RampSummary};
use iolab_analysis::sweep::{CurveSummary, SweepRow, SweepSummary};
use iolab_spec::sweep::LoadAxis;

use crate::charts::{curve_color, latency_unit, named, Figure};
use crate::plot::{Axis, Chart, Line, Mark};
use crate::studies::Study;
use crate::workload;
use crate::{HtmlError, Subject};

/// Each sweep curve with its rows (in load order), its colour and its legend name.
struct CurveView<'a> {
    name: String,
    color: plotters::style::RGBColor,
    rows: Vec<&'a SweepRow>,
    spot: Option<(&'a SweepRow, String)>,
    /// Its rows' workload: the panel it is drawn in.
    workload: String,
}

fn curves<'a>(subjects: &'a [Subject<'a>]) -> Vec<CurveView<'a>> {
    let mut views = Vec::new();
    for subject in subjects {
        let mut index = 0;
        for sweep in subject.study.sweeps() {
            if sweep.load_axis == LoadAxis::None {
                index += sweep.curves.len();
                continue;
            }
            for curve in &sweep.curves {
                views.push(view(subject, index, sweep, curve));
                index += 1;
            }
        }
    }
    views.retain(|v| !v.rows.is_empty());
    views
}

fn view<'a>(
    subject: &'a Subject<'a>,
    index: usize,
    sweep: &'a SweepSummary,
    curve: &'a CurveSummary,
) -> CurveView<'a> {
    let mut rows: Vec<&SweepRow> = curve.rows.iter().filter_map(|&i| sweep.rows.get(i)).collect();
    rows.sort_by_key(|r| outstanding(r));
    let spot = curve.sweet_spot.as_ref().and_then(|spot| {
        let row = sweep.rows.get(spot.row)?;
        let word = if spot.knee_found { "sweet spot" } else { "best (no knee)" };
        Some((row, format!("{} {word}: {}", subject.tag(), row.name)))
    });
    let workload = rows.first().map(|r| r.access.clone()).unwrap_or_default();
    CurveView { name: named(subject, &curve.name), color: curve_color(subject, index), rows, spot, workload }
}

/// The curves of each workload, one panel each.
fn panels<'a>(subjects: &'a [Subject<'a>]) -> Vec<(String, Vec<CurveView<'a>>)> {
    workload::grouped(curves(subjects).into_iter().map(|v| (v.workload.clone(), v)))
}

/// An IOPS axis: linear from 0, or log where the panel's IOPS span more than 20x.
fn iops_axis(label: &str, values: impl IntoIterator<Item = f64>) -> Axis {
    Axis::auto(label, values, 20.0)
}

/// Mean (solid) and p99 (dashed) latency of every curve against `x_of` each row, the sweet
/// spot ringed on the mean.
fn mean_and_p99(title: &str, x: Axis, views: &[CurveView<'_>], x_of: impl Fn(&SweepRow) -> f64) -> Chart {
    let largest = views.iter().flat_map(|v| &v.rows).map(|r| p99_ns(r).max(r.mean_ns)).fold(0.0, f64::max);
    let (scale, unit) = latency_unit(largest);
    let all_latencies =
        views.iter().flat_map(|v| &v.rows).flat_map(|r| [r.mean_ns / scale, p99_ns(r) / scale]);
    let y = Axis::auto(format!("latency ({unit})"), all_latencies, 20.0);
    let mut chart = Chart::new(title, x, y);
    for v in views {
        for (what, dashed, of) in [("mean", false, mean_ns as fn(&SweepRow) -> f64), ("p99", true, p99_ns)] {
            chart.lines.push(Line {
                name: format!("{} · {what}", v.name),
                color: v.color,
                dashed,
                markers: true,
                points: v.rows.iter().map(|r| (x_of(r), of(r) / scale)).collect(),
            });
        }
        if let Some((row, label)) = &v.spot {
            chart.marks.push(Mark {
                at: (x_of(row), row.mean_ns / scale),
                label: label.clone(),
                color: v.color,
            });
        }
    }
    chart
}

fn mean_ns(row: &SweepRow) -> f64 {
    row.mean_ns
}

fn p99_ns(row: &SweepRow) -> f64 {
    row.p99_ns as f64
}

fn outstanding(row: &SweepRow) -> u32 {
    if row.outstanding > 0 {
        row.outstanding
    } else {
        row.qd.max(1) * row.workers.max(1)
    }
}

/// IOPS, then latency (mean and p99), against outstanding I/Os: one line per sweep curve, one
/// pair of panels per workload.
pub(crate) fn load_curves(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let mut figures = Vec::new();
    for (workload, views) in panels(subjects) {
        let loads = views.iter().flat_map(|v| v.rows.iter().map(|r| f64::from(outstanding(r))));
        let x = Axis { binary: true, ..Axis::auto("outstanding I/Os (QD × workers)", loads, 7.0) };
        let y = iops_axis("IOPS (I/Os per second)", views.iter().flat_map(|v| v.rows.iter().map(|r| r.iops)));
        let mut iops = Chart::new("IOPS against outstanding I/Os", x.clone(), y);
        for v in &views {
            let points = v.rows.iter().map(|r| (f64::from(outstanding(r)), r.iops)).collect();
            iops.lines.push(Line {
                name: v.name.clone(),
                color: v.color,
                dashed: false,
                markers: true,
                points,
            });
            if let Some((row, label)) = &v.spot {
                iops.marks.push(Mark {
                    at: (f64::from(outstanding(row)), row.iops),
                    label: label.clone(),
                    color: v.color,
                });
            }
            iops.marks.extend(v.rows.iter().filter(|r| r.disturbed).map(|r| Mark {
                at: (f64::from(outstanding(r)), r.iops),
                label: "disturbed".into(),
                color: v.color,
            }));
        }
        let latency = mean_and_p99("Latency (mean and p99) against outstanding I/Os", x, &views, |r| {
            f64::from(outstanding(r))
        });
        figures.push(Figure::panel("qd-iops", iops, &workload, "Each sweep curve's IOPS at each load; the ringed point is its sweet spot: the most IOPS before latency grows faster than IOPS. A point marked disturbed was shared with another load or a stolen CPU in every attempt, and is no candidate for the sweet spot.")?);
        figures.push(Figure::panel("qd-latency", latency, &workload, "Solid: mean latency; dashed: p99, of the same points. The ringed point is the sweet spot (on the mean).")?);
    }
    Ok(figures)
}

/// Latency against IOPS for every sweep curve: how much latency each extra I/O per second costs.
pub(crate) fn latency_vs_iops(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let mut figures = Vec::new();
    for (workload, views) in panels(subjects) {
        let x = iops_axis("IOPS (I/Os per second)", views.iter().flat_map(|v| v.rows.iter().map(|r| r.iops)));
        let chart = mean_and_p99("Latency against IOPS", x, &views, |r| r.iops);
        figures.push(Figure::panel(
            "latency-iops",
            chart,
            &workload,
            "Each point is one load of a sweep, from light (left) to heavy; where a curve turns upward, extra load buys latency, not IOPS.",
        )?);
    }
    Ok(figures)
}

/// A ramp's open-loop levels: response time (from each I/O's scheduled time) against achieved IOPS.
pub(crate) fn ramp(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let ramps: Vec<(&Subject<'_>, &RampSummary)> = subjects
        .iter()
        .filter_map(|s| match &s.study {
            Study::Ramp(r) if !r.rows.is_empty() => Some((s, r)),
            _ => None,
        })
        .collect();
    if ramps.is_empty() {
        return Ok(Vec::new());
    }
    let largest = ramps.iter().flat_map(|(_, r)| &r.rows).map(response_p99_ns).fold(0.0, f64::max);
    let (scale, unit) = latency_unit(largest);
    let values = ramps
        .iter()
        .flat_map(|(_, r)| &r.rows)
        .flat_map(|r| [response_p99_ns(r) / scale, r.response_mean_ns / scale, service_p99_ns(r) / scale]);
    let y = Axis::auto(format!("latency ({unit})"), values, 20.0);
    let mut chart = Chart::new(
        "Ramp: response latency against achieved IOPS",
        Axis::linear("achieved IOPS (I/Os per second)"),
        y,
    );
    let mut caption = String::from(
        "Open-loop levels as shares of the closed-loop maximum. Response time counts from each I/O's scheduled time (a late start counts); service time from its submission.",
    );
    for (subject, summary) in &ramps {
        // A ramp over lists has a curve per combination, each its own shade.
        let curves: Vec<(usize, &str, Vec<&RampRow>)> = if summary.curves.len() > 1 {
            let rows = |c: &RampCurve| c.rows.iter().filter_map(|&i| summary.rows.get(i)).collect();
            summary.curves.iter().enumerate().map(|(i, c)| (i, c.name.as_str(), rows(c))).collect()
        } else {
            vec![(0, "", summary.rows.iter().collect())]
        };
        for (index, name, rows) in &curves {
            ramp_curve(&mut chart, subject, summary, (*index, name, rows), (scale, unit));
        }
        caption.push_str(&format!(
            " {}: closed-loop maximum {} IOPS.",
            subject.name,
            crate::plot::number(summary.max_iops)
        ));
    }
    Ok(vec![Figure::new("ramp", &chart, caption)?])
}

/// One curve of a ramp: response and service latency against achieved IOPS, its limits marked.
fn ramp_curve(
    chart: &mut Chart,
    subject: &Subject<'_>,
    summary: &RampSummary,
    (index, name, rows): (usize, &str, &[&RampRow]),
    (scale, unit): (f64, &str),
) {
    let color = subject.color(index);
    let named = |subject: &Subject<'_>, what: &str| {
        if name.is_empty() {
            named(subject, what)
        } else {
            named(subject, &format!("{name} {what}"))
        }
    };
    let series = |f: &dyn Fn(&RampRow) -> f64| rows.iter().map(|r| (r.achieved_iops, f(r) / scale)).collect();
    chart.lines.push(Line {
        name: named(subject, "response p99"),
        color,
        dashed: false,
        markers: true,
        points: series(&response_p99_ns),
    });
    chart.lines.push(Line {
        name: named(subject, "response mean"),
        color,
        dashed: true,
        markers: true,
        points: series(&|r| r.response_mean_ns),
    });
    let lighter = plotters::style::RGBColor(color.0 / 2 + 100, color.1 / 2 + 100, color.2 / 2 + 100);
    chart.lines.push(Line {
        name: named(subject, "service p99"),
        color: lighter,
        dashed: true,
        markers: false,
        points: series(&service_p99_ns),
    });
    for row in rows.iter().filter(|r| r.crossed.is_some() || !r.sustained || r.disturbed) {
        let why = row.crossed.clone().unwrap_or_else(|| {
            if row.disturbed {
                "disturbed".into()
            } else {
                "not sustained".into()
            }
        });
        chart.marks.push(Mark {
            at: (row.achieved_iops, response_p99_ns(row) / scale),
            label: format!("{}%: {why}", row.level_pct),
            color,
        });
    }
    // The limit is the run's: drawn once, across every curve.
    if let Some(limit) = summary.limits.latency.as_ref().filter(|_| index == 0) {
        let what = limit.percentile.map_or("mean".to_string(), |p| format!("p{p}"));
        let top = summary.rows.iter().map(|r| r.achieved_iops).fold(0.0, f64::max);
        let limit_ns = limit.limit.0 as f64;
        chart.lines.push(Line {
            name: named(subject, &format!("limit {what} = {} {unit}", crate::plot::number(limit_ns / scale))),
            color: plotters::style::RGBColor(90, 90, 90),
            dashed: true,
            markers: false,
            points: vec![(0.0, limit_ns / scale), (top, limit_ns / scale)],
        });
    }
}

fn response_p99_ns(row: &RampRow) -> f64 {
    row.response_p99_ns as f64
}

fn service_p99_ns(row: &RampRow) -> f64 {
    row.service_p99_ns as f64
}

/// Process CPU per I/O against IOPS, wherever it was measured (not in a fio import), one panel
/// per workload, on log scales where the values span decades.
pub(crate) fn cpu_per_io(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let mut lines: Vec<(String, Line)> = Vec::new();
    for v in curves(subjects) {
        let points: Vec<(f64, f64)> = v.rows.iter().map(|r| (r.iops, r.cpu_us_per_io)).collect();
        lines.push((v.workload, Line { name: v.name, color: v.color, dashed: false, markers: true, points }));
    }
    for subject in subjects.iter().filter(|s| s.study.sweeps().iter().all(|w| w.load_axis == LoadAxis::None))
    {
        let measured = subject.run.points.iter().filter(|p| p.summary.total.iops > 0.0);
        let points = measured
            .filter_map(|p| Some((workload::of(p), (p.summary.total.iops, p.summary.cpu_us_per_io?))));
        for (workload, points) in workload::grouped(points) {
            // Points of one run that are not a load curve are not joined: a line would claim an order.
            let mut line = Line {
                name: subject.name.clone(),
                color: subject.color(0),
                dashed: false,
                markers: true,
                points: Vec::new(),
            };
            for point in points {
                line.points.extend([point, (f64::NAN, f64::NAN)]);
            }
            lines.push((workload, line));
        }
    }
    lines.retain(|(_, l)| l.points.iter().any(|p| p.0.is_finite() && p.1 > 0.0));
    let mut figures = Vec::new();
    for (workload, lines) in workload::grouped(lines) {
        let all = || lines.iter().flat_map(|l| &l.points);
        let x = iops_axis("IOPS (I/Os per second)", all().map(|p| p.0));
        let y = Axis::auto("CPU per I/O (µs of iolab's CPU)", all().map(|p| p.1), 20.0);
        let mut chart = Chart::new("CPU per I/O against IOPS", x, y);
        chart.lines = lines;
        figures.push(Figure::panel(
            "cpu-per-io",
            chart,
            &workload,
            "Microseconds of iolab's process CPU (user + system, every thread) per completed I/O. Sweep curves are joined in load order; other runs' points stand alone.",
        )?);
    }
    Ok(figures)
}
