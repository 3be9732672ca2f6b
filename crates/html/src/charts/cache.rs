//! The read-cache chart of `iolab cache`: mean read latency against the working-set size, both
//! on log scales, every cache run overlaid, each tier found marked at its capacity, with the band
//! where its misses begin.

use iolab_analysis::cache::CacheSummary;

use crate::charts::{latency_unit, named, Figure};
use crate::plot::{number, Axis, Band, Chart, Line, Rule};
use crate::studies::Study;
use crate::{HtmlError, Subject};

const MIB: f64 = 1024.0 * 1024.0;

/// Latency against working set, one line per cache run, with its tiers.
pub(crate) fn cache(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let runs: Vec<_> = subjects
        .iter()
        .filter_map(|s| match &s.study {
            Study::Cache(c) if !c.points.is_empty() => Some((s, c)),
            _ => None,
        })
        .collect();
    if runs.is_empty() {
        return Ok(Vec::new());
    }
    let slowest = runs.iter().flat_map(|(_, c)| &c.points).map(|p| p.level_ns()).fold(0.0, f64::max);
    let (scale, unit) = latency_unit(slowest);
    let mut chart = Chart::new(
        "Read latency against working set (cache)",
        Axis::log("working set (MiB), log scale"),
        Axis::log(format!("read latency, mean of the fastest 99% ({unit}), log scale")),
    );
    let mut caption = String::from("Each point is one working set at the start of the region, read once sequentially and then measured at random; the sizes between the asked ones were measured to refine a tier. A tier (dashed line) is drawn at its capacity: the median of hit share x working set over the working sets beyond it; its misses begin in the band, from the largest working set all hits to the smallest that was not.");
    for (subject, summary) in &runs {
        let color = subject.color(0);
        let points =
            summary.points.iter().map(|p| (p.working_set_bytes as f64 / MIB, p.level_ns() / scale)).collect();
        chart.lines.push(Line { name: subject.name.clone(), color, dashed: false, markers: true, points });
        for (index, tier) in summary.found.tiers.iter().enumerate() {
            let size = tier.size_bytes as f64 / MIB;
            let (fits, upper) = (tier.fits_bytes as f64 / MIB, tier.upper_bytes as f64 / MIB);
            chart.rules.push(Rule {
                x: size,
                label: format!("tier {}: {} MiB", index + 1, number(size)),
                color,
            });
            chart.bands.push(Band {
                name: named(subject, &format!("tier {}: misses begin here", index + 1)),
                x: (fits, upper),
                y: None,
                color,
                opacity: 0.15,
            });
        }
        let outcome = if summary.found.tiers.is_empty() {
            format!("no tier: {}", summary.found.note.as_deref().unwrap_or("nothing judged"))
        } else {
            let each: Vec<String> = summary
                .found
                .tiers
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    format!(
                        "tier {} of {} MiB (misses begin above {} MiB), hits {:.1} µs, misses {:.1} µs",
                        i + 1,
                        number(t.size_bytes as f64 / MIB),
                        number(t.fits_bytes as f64 / MIB),
                        t.hit_ns / 1e3,
                        t.miss_ns / 1e3
                    )
                })
                .collect();
            each.join("; ")
        };
        caption.push_str(&format!(" {}: {outcome}.", subject.name));
        crate::charts::cache_fleet::host_curves(subject, &mut chart, &mut caption, scale);
    }
    Ok(vec![Figure::new("cache", &chart, caption)?])
}

/// The study's conclusions in words: each tier, promotion and pollution.
pub(crate) fn verdict(summary: &CacheSummary) -> Vec<String> {
    let mut lines: Vec<String> = summary.found.note.iter().cloned().collect();
    for (index, tier) in summary.found.tiers.iter().enumerate() {
        lines.push(format!(
            "tier {}: {} MiB of capacity (misses begin between {} and {} MiB); a hit costs {:.1} µs, a miss {:.1} µs; {:.0} IOPS inside, {:.0} beyond",
            index + 1,
            number(tier.size_bytes as f64 / MIB),
            number(tier.fits_bytes as f64 / MIB),
            number(tier.upper_bytes as f64 / MIB),
            tier.hit_ns / 1e3,
            tier.miss_ns / 1e3,
            tier.inside.iops,
            tier.beyond.iops
        ));
    }
    if let Some(p) = &summary.promotion {
        lines.push(match (p.fast_after_s, p.fast_from_start) {
            (_, true) => "promotion: the cold set was fast from the start (cached already)".to_string(),
            (Some(s), false) => format!(
                "promotion: a cold set of {} MiB became fast after {s:.2} s",
                number(p.hot_set_bytes as f64 / MIB)
            ),
            (None, false) => format!(
                "promotion: a cold set of {} MiB did NOT become fast in the time given",
                number(p.hot_set_bytes as f64 / MIB)
            ),
        });
    }
    if let Some(p) = &summary.pollution {
        lines.push(format!(
            "pollution: a hot set of {} MiB {} after a scan ({:.1} µs before, {:.1} µs after)",
            number(p.hot_set_bytes as f64 / MIB),
            if p.polluted { "was evicted" } else { "stayed fast" },
            p.before.mean_ns / 1e3,
            p.after.mean_ns / 1e3
        ));
    }
    lines
}
