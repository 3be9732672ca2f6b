//! Latency distributions: percentiles out to 99.9999 on a "nines" axis, and the histogram the
//! store keeps (decoded from its HdrHistogram encoding) as a density over log-spaced buckets.

use iolab_stats::OpStats;

use crate::charts::{chosen_points, latency_unit, named, Chosen, Figure};
use crate::plot::{Axis, Chart, Line, Scale};
use crate::{HtmlError, Subject};

/// Bucket width of the histogram chart: each bucket is this factor wider than the last
/// (2^(1/4): four buckets per doubling, smooth without hiding modes).
const BUCKET_FACTOR: f64 = 1.189_207_115;

/// Histograms overlaid at most: past this the lines are a tangle; the rest are named in the caption.
const MAX_HISTOGRAMS: usize = 6;

/// Latency at each percentile of the chosen points of every run.
pub(crate) fn percentiles(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    // Lines in ns first: the unit depends on the largest latency of them all.
    let mut wanted: Vec<Line> = Vec::new();
    for subject in subjects {
        for Chosen { point, what, color } in chosen_points(subject) {
            let Some(latency) = &point.summary.total.latency else { continue };
            let points: Vec<(f64, f64)> =
                latency.percentiles.iter().filter(|p| p.p < 100.0).map(|p| (p.p, p.ns as f64)).collect();
            if points.is_empty() {
                continue;
            }
            wanted.push(Line { name: named(subject, &what), color, dashed: false, markers: true, points });
        }
    }
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let largest = wanted.iter().flat_map(|w| &w.points).map(|p| p.1).fold(0.0, f64::max);
    let (scale, unit) = latency_unit(largest);
    let x = Axis {
        label: "percentile (%), spaced by nines".into(),
        scale: Scale::Nines,
        from_zero: false,
        binary: false,
        whole: false,
    };
    let mut chart = Chart::new("Latency percentiles", x, Axis::log(format!("latency ({unit}), log scale")));
    for mut line in wanted {
        line.points.iter_mut().for_each(|p| p.1 /= scale);
        chart.lines.push(line);
    }
    Ok(vec![Figure::new(
        "percentiles",
        &chart,
        "Reads and writes together. For a sweep: its sweet spot; for a steady-state test: its last round; otherwise each point. A percentile beyond the I/Os measured (99.9999 needs a million) is the maximum.",
    )?])
}

/// The latency histogram of the chosen points that kept one.
pub(crate) fn histogram(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let mut notes = Vec::new();
    let mut left_out = Vec::new();
    let mut wanted: Vec<(String, plotters::style::RGBColor, OpStats)> = Vec::new();
    for subject in subjects {
        for Chosen { point, what, color } in chosen_points(subject) {
            let Some(encoded) = &point.histograms else { continue };
            match encoded.decode() {
                Ok(stats) if stats.ios() > 0 && wanted.len() == MAX_HISTOGRAMS => {
                    left_out.push(named(subject, &what))
                }
                Ok(stats) if stats.ios() > 0 => wanted.push((named(subject, &what), color, stats.combined())),
                Ok(_) => {}
                Err(e) => notes.push(format!("{}: {e}.", named(subject, &what))),
            }
        }
    }
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let largest = wanted.iter().map(|w| w.2.moments().max_ns as f64).fold(0.0, f64::max);
    let (scale, unit) = latency_unit(largest);
    let x = Axis::log(format!("latency ({unit}), log scale"));
    let y = Axis::log("share of I/Os per bucket (%), log scale");
    let mut chart = Chart::new("Latency histogram", x, y);
    for (name, color, stats) in wanted {
        chart.lines.push(Line { name, color, dashed: false, markers: false, points: density(&stats, scale) });
    }
    let mut caption = format!(
        "Reads and writes together, from the exact histogram the store keeps. Each bucket is {:.0}% wider than the one before; the height is its share of all I/Os, so the tail shows down to single I/Os. Gaps are buckets with none.",
        (BUCKET_FACTOR - 1.0) * 100.0
    );
    for note in notes {
        caption.push_str(&format!(" Not drawn: {note}"));
    }
    if !left_out.is_empty() {
        caption.push_str(&format!(
            " Left out to keep the lines apart (report fewer runs to see them): {}.",
            left_out.join(", ")
        ));
    }
    Ok(vec![Figure::new("histogram", &chart, caption)?])
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
