//! The burn-in panel: IOPS and p99 of each segment against the hours since the burn-in began
//! (the trend: did the drive sag as it filled and aged?), and the drive's temperature from the
//! health samples, with what else the samples say (new media errors, endurance used, data
//! written) in the caption. Drawn from the burn-in's stored report, or, for a burn-in killed
//! before it wrote one, from its segments' points alone.

use iolab_analysis::burnin::{BurninSummary, Segment};
use iolab_store::{PointFigures, StoredRun};
use serde_json::Value;

use crate::charts::Figure;
use crate::plot::{number, Axis, Chart, Line};
use crate::{HtmlError, Subject};

/// The burn-in's report, if the run is one and has it.
fn summary(run: &StoredRun) -> Option<BurninSummary> {
    let report = run.report.as_ref()?;
    let schema = report.get("schema").and_then(Value::as_str)?;
    if schema.split('/').next() != Some("iolab.burnin") {
        return None;
    }
    serde_json::from_value(report.get("summary")?.clone()).ok()
}

/// The segments of a burn-in without a report: its points, in order.
fn segments_of_points(run: &StoredRun) -> Vec<Segment> {
    run.points
        .iter()
        .filter(|p| p.name.contains(" segment ") && p.summary.stop_reason != "interrupted")
        .enumerate()
        .map(|(i, p)| Segment::of_point(i as u32 + 1, &PointFigures::of(p)))
        .collect()
}

/// The burn-in panels of every burn-in run: performance per segment, and the temperature.
pub(crate) fn burnin(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let mut figures = Vec::new();
    for subject in subjects.iter().filter(|s| s.run.info.kind == "burnin") {
        let summary = summary(subject.run);
        let segments =
            summary.as_ref().map_or_else(|| segments_of_points(subject.run), |s| s.segments.clone());
        let Some(start) = segments.first().map(|s| s.completed_at_unix_s - s.measured_s.round() as i64)
        else {
            continue;
        };
        let hours = |at: i64| (at - start) as f64 / 3600.0;
        let x = || Axis::linear("hours since the burn-in began");

        let mut iops =
            Chart::new(format!("Burn-in IOPS per segment: {}", subject.name), x(), Axis::linear("IOPS"));
        iops.lines.push(Line {
            name: format!("{} · IOPS of each segment", subject.tag()),
            color: subject.color(0),
            dashed: false,
            markers: segments.len() <= 200,
            points: segments.iter().map(|s| (hours(s.completed_at_unix_s), s.iops)).collect(),
        });
        let trend = summary.as_ref().and_then(|s| s.perf.as_ref());
        let slope = trend
            .and_then(|t| t.slope_pct_per_day)
            .map_or_else(String::new, |s| format!(" The least-squares trend is {}% per day.", number(s)));
        let change = trend.map_or_else(String::new, |t| {
            format!(" The last segment did {}% against the first.", number(t.change_pct))
        });
        figures.push(Figure::new(
            "burnin-iops",
            &iops,
            format!(
                "Each point is one segment of the burn-in, placed where it ended.{change}{slope} A sag that \
                 grows with the hours is the drive aging or filling; a step is a cache or a background task."
            ),
        )?);

        let mut p99 = Chart::new(
            format!("Burn-in p99 latency per segment: {}", subject.name),
            x(),
            Axis::linear("p99 latency (µs)"),
        );
        p99.lines.push(Line {
            name: format!("{} · p99 of each segment", subject.tag()),
            color: subject.color(1),
            dashed: false,
            markers: segments.len() <= 200,
            points: segments
                .iter()
                .filter_map(|s| Some((hours(s.completed_at_unix_s), s.p99_ns? as f64 / 1e3)))
                .collect(),
        });
        figures.push(Figure::new(
            "burnin-p99",
            &p99,
            "The 99th percentile of each segment's I/Os; the whole burn-in's percentiles, merged from every \
             segment's histogram, are in its text and JSON report.",
        )?);

        if let Some(summary) = &summary {
            figures.extend(health(subject, summary, start)?);
        }
    }
    Ok(figures)
}

/// The temperature over the burn-in, with the rest of the health trend in the caption.
fn health(subject: &Subject<'_>, summary: &BurninSummary, start: i64) -> Result<Option<Figure>, HtmlError> {
    let Some(trend) = &summary.health else { return Ok(None) };
    let hours = |at: i64| (at - start) as f64 / 3600.0;
    let mut chart = Chart::new(
        format!("Drive temperature during the burn-in: {}", subject.name),
        Axis::linear("hours since the burn-in began"),
        Axis::linear("temperature (°C)"),
    );
    chart.lines.push(Line {
        name: format!("{} · {} ({})", subject.tag(), trend.device, trend.source),
        color: subject.color(0),
        dashed: false,
        markers: summary.health_samples.len() <= 200,
        points: summary
            .health_samples
            .iter()
            .filter_map(|s| Some((hours(s.taken_at_unix_s), f64::from(s.temperature_celsius?))))
            .collect(),
    });
    let mut said = vec![format!("{} samples, one every {} s", trend.samples, number(summary.health_every_s))];
    if let Some(n) = trend.new_media_errors {
        said.push(format!("{n} new media errors"));
    }
    if let (Some(first), Some(last)) = (trend.percentage_used_first, trend.percentage_used_last) {
        said.push(format!("endurance used {first}% to {last}%"));
    }
    if let Some(bytes) = trend.data_written_bytes {
        said.push(format!("{} GB written as the drive counts", number(bytes as f64 / 1e9)));
    }
    let mut caption = format!("{}.", said.join(", "));
    for warning in &trend.warnings {
        caption.push_str(&format!(" WARNING: {warning}."));
    }
    Ok(Some(Figure::new("burnin-health", &chart, caption)?))
}

#[cfg(test)]
#[path = "burnin_tests.rs"]
mod tests;
