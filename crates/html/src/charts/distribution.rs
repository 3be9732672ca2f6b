//! Latency distributions: percentiles out to 99.9999 on a "nines" axis, and the histogram the
//! store keeps (decoded from its HdrHistogram encoding) as a density over log-spaced buckets.

use iolab_stats::result::{LatencySummary, OpSummary};
use iolab_stats::OpStats;
use plotters::style::RGBColor;

use crate::charts::{chosen_points, latency_unit, named, Chosen, Figure};
use crate::plot::{Axis, Chart, Line, Scale};
use crate::shades::shade;
use crate::{workload, HtmlError, Subject};

/// Bucket width of the histogram chart: each bucket is this factor wider than the last
/// (2^(1/4): four buckets per doubling, smooth without hiding modes).
const BUCKET_FACTOR: f64 = 1.189_207_115;

/// Latency at each percentile of the chosen points of every run, one panel per workload; a job
/// of several concurrent groups (an I/O blender) shows each group's curve (dashed) beside its total.
pub(crate) fn percentiles(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    // Lines in ns first: the unit depends on the largest latency of a panel.
    let mut wanted: Vec<(String, Line)> = Vec::new();
    for subject in subjects {
        for Chosen { point, what, color } in chosen_points(subject) {
            let workload = workload::of(point);
            let Some(latency) = &point.summary.total.latency else { continue };
            let mut add = |name: String, color: RGBColor, dashed: bool, latency: &LatencySummary| {
                let points: Vec<(f64, f64)> =
                    latency.percentiles.iter().filter(|p| p.p < 100.0).map(|p| (p.p, p.ns as f64)).collect();
                if !points.is_empty() {
                    wanted.push((workload.clone(), Line { name, color, dashed, markers: true, points }));
                }
            };
            add(named(subject, &what), color, false, latency);
            let groups = workload::groups(point);
            for (index, group) in groups.iter().enumerate().filter(|_| groups.len() > 1) {
                let Ok(op) = serde_json::from_value::<OpSummary>(group.total.clone()) else { continue };
                if let Some(latency) = &op.latency {
                    // Each group a shade of the run's colour: one run, told apart within it.
                    let name = named(subject, &format!("{what}: group {} ({})", group.name, group.access));
                    add(name, shade(color, index + 1), true, latency);
                }
            }
        }
    }
    let mut figures = Vec::new();
    for (workload, lines) in workload::grouped(wanted) {
        let largest = lines.iter().flat_map(|w| &w.points).map(|p| p.1).fold(0.0, f64::max);
        let (scale, unit) = latency_unit(largest);
        let x = Axis {
            label: "percentile (%), spaced by nines".into(),
            scale: Scale::Nines,
            from_zero: false,
            binary: false,
            whole: false,
        };
        let mut chart =
            Chart::new("Latency percentiles", x, Axis::log(format!("latency ({unit}), log scale")));
        for mut line in lines {
            line.points.iter_mut().for_each(|p| p.1 /= scale);
            chart.lines.push(line);
        }
        figures.push(Figure::panel(
            "percentiles",
            chart,
            &workload,
            "Reads and writes together. For a sweep: its sweet spot; for a steady-state test: its last round; otherwise each point; dashed: each concurrent group of a blender job. A percentile beyond the I/Os measured (99.9999 needs a million) is the maximum.",
        )?);
    }
    Ok(figures)
}

/// The latency histogram of the chosen points that kept one, one panel per workload: every run
/// asked for that has one is drawn.
pub(crate) fn histogram(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let mut wanted: Vec<(String, (String, RGBColor, OpStats))> = Vec::new();
    let mut blenders = Vec::new();
    for subject in subjects {
        for Chosen { point, what, color } in chosen_points(subject) {
            let Some(encoded) = &point.histograms else { continue };
            // One that does not decode is named under the panel, with the error (`left_out`).
            let Ok(stats) = encoded.decode() else { continue };
            if stats.ios() > 0 {
                if workload::groups(point).len() > 1 {
                    blenders.push(named(subject, &what));
                }
                wanted.push((workload::of(point), (named(subject, &what), color, stats.combined())));
            }
        }
    }
    let mut figures = Vec::new();
    for (workload, lines) in workload::grouped(wanted) {
        let largest = lines.iter().map(|w| w.2.moments().max_ns as f64).fold(0.0, f64::max);
        let (scale, unit) = latency_unit(largest);
        let x = Axis::log(format!("latency ({unit}), log scale"));
        let y = Axis::log("share of I/Os per bucket (%), log scale");
        let mut chart = Chart::new("Latency histogram", x, y);
        for (name, color, stats) in lines {
            chart.lines.push(Line {
                name,
                color,
                dashed: false,
                markers: false,
                points: density(&stats, scale),
            });
        }
        let mut caption = format!(
            "Reads and writes together, from the exact histogram the store keeps. Each bucket is {:.0}% wider than the one before; the height is its share of all I/Os, so the tail shows down to single I/Os. Gaps are buckets with none.",
            (BUCKET_FACTOR - 1.0) * 100.0
        );
        if workload.contains(" + ") {
            caption.push_str(&format!(
                " The store keeps one histogram per job, so a blender job ({}) is drawn as its total; each group's own distribution is in the percentile chart.",
                blenders.join(", ")
            ));
        }
        figures.push(Figure::panel("histogram", chart, &workload, caption)?);
    }
    Ok(figures)
}

/// (bucket's upper latency in units of `scale`, its share of the I/Os in %), NaN where empty.
fn density(stats: &OpStats, scale: f64) -> Vec<(f64, f64)> {
    let histogram = stats.histogram();
    let total = histogram.len().max(1) as f64;
    let lowest = histogram.min_nz().max(1) as f64;
    let start = 10f64.powf(lowest.log10().floor()).max(1.0) as u64;
    histogram
        .iter_log(start, BUCKET_FACTOR)
        .map(|step| {
            let count = step.count_since_last_iteration();
            let share = if count == 0 { f64::NAN } else { 100.0 * count as f64 / total };
            (step.value_iterated_to() as f64 / scale, share)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn density_sums_to_all_ios() {
        let mut stats = OpStats::default();
        for i in 0..10_000u64 {
            stats.record(50_000 + (i * 7919) % 200_000, 4096);
        }
        let shares: f64 = density(&stats, 1e3).iter().map(|p| p.1).filter(|s| s.is_finite()).sum();
        assert!((shares - 100.0).abs() < 1e-6, "{shares}");
    }
}
