//! `iolab fleet cache` in the cache chart: beside the fleet's merged curve, each host's own
//! curve (its own exact histograms, its working sets in its own region) with each of its tiers
//! marked at its capacity, and the fleet's sentences in the caption.

use crate::charts::named;
use crate::plot::{number, Chart, Line, Rule};
use crate::Subject;
use iolab_analysis::cache_fleet::FleetCacheSummary;

const MIB: f64 = 1024.0 * 1024.0;

/// A fleet cache run's report, `None` for any other.
fn fleet_of(subject: &Subject<'_>) -> Option<FleetCacheSummary> {
    let report = subject.run.report.as_ref()?;
    let summary = report.get("summary").unwrap_or(report);
    summary.get("fleet")?;
    serde_json::from_value::<FleetCacheSummary>(summary.clone()).ok()
}

/// Adds each host's curve and tiers of a fleet cache run to `chart` (latencies divided by
/// `scale`), and the fleet's sentences to `caption`.
pub(crate) fn host_curves(subject: &Subject<'_>, chart: &mut Chart, caption: &mut String, scale: f64) {
    let Some(fleet) = fleet_of(subject) else { return };
    for (index, host) in fleet.fleet.hosts.iter().enumerate() {
        let color = subject.color(index + 1);
        let points: Vec<(f64, f64)> = host
            .summary
            .points
            .iter()
            .map(|p| (p.working_set_bytes as f64 / MIB, p.level_ns() / scale))
            .collect();
        if points.is_empty() {
            continue;
        }
        chart.lines.push(Line {
            name: named(subject, &format!("host {}", host.host)),
            color,
            dashed: true,
            markers: true,
            points,
        });
        for (tier, found) in host.summary.found.tiers.iter().enumerate() {
            let size = found.size_bytes as f64 / MIB;
            chart.rules.push(Rule {
                x: size,
                label: format!("{} tier {}: {} MiB", host.host, tier + 1, number(size)),
                color,
            });
        }
    }
    caption.push_str(" Fleet: each host's own curve is dashed (its working sets in its own region); the solid line merges every host's reads at each working set, summed over the hosts.");
    for sentence in &fleet.fleet.sentences {
        caption.push_str(&format!(" {sentence}."));
    }
}
