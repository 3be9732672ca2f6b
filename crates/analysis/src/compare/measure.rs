//! Each side's figures for a matched point (repeats summarised, percentiles from merged
//! histograms), the differences against the baseline, and the noise rule that judges them.

use super::*;
use iolab_stats::central::{mean, median};

/// A group's figures, one `Option<Measure>` per metric of `Metric::ALL`.
///
/// Rates are the mean of the repeats; the mean latency and CPU per I/O are weighted by I/Os
/// (what one measurement of all the repeats' I/Os would give); percentiles come from the merged
/// histograms, or are the median of the repeats when a point has none.
pub(super) fn measure(label: &str, group: &Group, notes: &mut Vec<String>) -> (Member, Vec<Option<Measure>>) {
    let points = &group.points;
    let first = &points[0].summary;
    let merged = if points.len() > 1 { merged_histograms(label, group, notes) } else { None };
    // The I/Os a percentile is read from: the merged repeats', or a single point's own.
    let sampled = if points.len() > 1 {
        merged.clone()
    } else {
        points[0].histograms.as_ref().and_then(|h| h.decode().ok()).map(|d| d.combined())
    };
    let percentiles_from = match (points.len(), &merged) {
        (1, _) => PercentileSource::Single,
        (_, Some(_)) => PercentileSource::MergedHistograms,
        _ => PercentileSource::MedianOfRepeats,
    };
    let member = Member {
        name: group.name.to_string(),
        seqs: points.iter().map(|p| p.seq).collect(),
        engine: first.engine.clone(),
        access: first.access.clone(),
        qd: first.qd,
        workers: first.workers,
        rate_iops: super::pairing::Load::of(points[0]).rate_iops,
        load: super::pairing::Load::of(points[0]),
        targets: first.targets.clone(),
        percentiles_from,
        disturbed: points.iter().any(|p| p.verdict.as_ref().is_some_and(|v| v.cause.disturbs_the_measure())),
    };
    let values = Metric::ALL
        .iter()
        .map(|&metric| {
            let per_repeat: Vec<(f64, u64)> = points
                .iter()
                .filter_map(|p| repeat_value(p, metric).map(|v| (v, p.summary.total.ios)))
                .collect();
            let repeats: Vec<f64> = per_repeat.iter().map(|&(v, _)| v).collect();
            let value = match metric {
                Metric::Iops | Metric::MbS => mean(&repeats),
                Metric::MeanNs | Metric::LatNs | Metric::CpuUsPerIo => weighted_mean(&per_repeat),
                _ => match (&merged, metric.percentile()) {
                    (Some(all), Some(p)) if all.ios() > 0 => Some(all.percentile_ns(p) as f64),
                    _ => median(&repeats),
                },
            }?;
            let sampling_pct =
                metric.percentile().zip(sampled.as_ref()).and_then(|(p, all)| sampling_pct(all, p));
            Some(Measure { value, spread_pct: spread_pct(&repeats), sampling_pct, repeats })
        })
        .collect();
    (member, values)
}

/// One stored point's value of `metric`, where it has one.
fn repeat_value(point: &Point, metric: Metric) -> Option<f64> {
    let total = &point.summary.total;
    let latency = total.latency.as_ref();
    match metric {
        Metric::Iops => Some(total.iops),
        Metric::MbS => Some(total.mb_s),
        Metric::MeanNs => latency.map(|l| l.mean_ns),
        Metric::LatNs => super::spans::lat_mean_ns(point),
        Metric::CpuUsPerIo => point.summary.cpu_us_per_io.filter(|_| total.ios > 0),
        _ => {
            let p = metric.percentile()?;
            let found = latency?.percentiles.iter().find(|q| (q.p - p).abs() < 1e-9)?;
            Some(found.ns as f64)
        }
    }
}

/// Reads and writes of every repeat, merged; `None` when a repeat has no histograms to merge.
fn merged_histograms(label: &str, group: &Group, notes: &mut Vec<String>) -> Option<OpStats> {
    let mut all = OpStats::default();
    for point in &group.points {
        let decoded = match point.histograms.as_ref()?.decode() {
            Ok(decoded) => decoded,
            Err(e) => {
                notes.push(format!(
                    "{label} {} (seq {}): {e}; its percentiles are the median of its repeats",
                    group.name, point.seq
                ));
                return None;
            }
        };
        all.merge(&decoded.combined());
    }
    Some(all)
}

fn weighted_mean(values: &[(f64, u64)]) -> Option<f64> {
    let weight: u64 = values.iter().map(|&(_, w)| w).sum();
    (weight > 0).then(|| values.iter().map(|&(v, w)| v * w as f64).sum::<f64>() / weight as f64)
}

fn range(values: &[f64]) -> Option<(f64, f64)> {
    let min = values.iter().copied().min_by(f64::total_cmp)?;
    let max = values.iter().copied().max_by(f64::total_cmp)?;
    Some((min, max))
}

/// (max - min) / mean in percent: how far repeats of one point stray from each other. The full
/// range rather than a standard deviation, because repeats are few (2 to 5) and the range is
/// what a reader can check by eye in the per-repeat values.
fn spread_pct(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let (min, max) = range(values)?;
    let mean = mean(values)?;
    (mean > 0.0).then(|| (max - min) / mean * 100.0)
}

/// How far the `p`-th percentile of these I/Os could lie from where they put it, by chance of
/// which I/Os were slow: the width of its 95% interval over its value, in percent. Of n I/Os,
/// the one at rank n·p is the percentile; the rank a second sample of the same device would
/// give varies by sqrt(n·p·(1-p)) (binomial), so the interval runs between the latencies at the
/// ranks 1.96 of those either side. A p99 of 960 reads spans the 15th- to the 3rd-slowest; a
/// p99 of a million, ±0.4% of the ranks. `None` without I/Os or at a zero latency.
pub(super) fn sampling_pct(all: &OpStats, p: f64) -> Option<f64> {
    let n = all.ios() as f64;
    if n < 1.0 {
        return None;
    }
    let q = p / 100.0;
    let half = 1.96 * (n * q * (1.0 - q)).sqrt();
    let at = |rank: f64| all.percentile_ns((rank / n * 100.0).clamp(0.0, 100.0)) as f64;
    let value = all.percentile_ns(p) as f64;
    (value > 0.0).then(|| (at(n * q + half) - at(n * q - half)) / value * 100.0)
}

pub(super) fn difference(metric: Metric, base: &Measure, side: &Measure) -> Option<Difference> {
    if base.value <= 0.0 {
        return None;
    }
    let pct = (side.value - base.value) / base.value * 100.0;
    let outcome = if pct.abs() < 0.05 {
        Outcome::Equal
    } else if (pct > 0.0) == metric.higher_is_better() {
        Outcome::Better
    } else {
        Outcome::Worse
    };
    let (noise, noise_pct) = noise_verdict(pct, base, side);
    Some(Difference { pct, outcome, noise, noise_pct })
}

/// Whether a difference of `pct` is larger than the run-to-run noise.
///
/// The rule: it is **beyond noise** when (1) the ranges of the two sides' repeats do not
/// overlap (a side measured once is a range of one value) and (2) `|pct|` is larger than the
/// larger side's spread, (max - min) / mean, or, for a latency percentile, the larger side's
/// sampling width (`sampling_pct`) where that is wider: repeats of a few hundred I/Os each can
/// agree closely on a p99 that the next few hundred would put 15% elsewhere. Otherwise it is
/// **within noise**; with no repeats on either side the noise is unknown.
///
/// Why this rule: it works from 1-vs-N repeats up, where a t-test needs at least two on each
/// side and, with the 2 to 5 repeats a benchmark affords, rests on a normality nobody checked.
/// Each condition alone is too lax: with 3 repeats a side, all six values from one
/// distribution give non-overlapping ranges 1 time in 10 (2 orderings of C(6,3) = 20); and a
/// single run falls outside 3 repeats' range half the time. Requiring as well a difference
/// larger than the whole spread (about 1.7 standard deviations for 3 normal repeats) makes a
/// "beyond noise" from noise alone rare, at the price of calling small true differences
/// "within noise" until more repeats narrow it. That is the error to prefer in a report that
/// people quote.
pub fn noise_verdict(pct: f64, base: &Measure, side: &Measure) -> (Noise, Option<f64>) {
    let noise_pct = match (base.spread_pct, side.spread_pct) {
        (None, None) => {
            let repeated = base.repeats.len() > 1 || side.repeats.len() > 1;
            // Repeats whose mean is 0 (a point that did no I/O) have no relative spread.
            return if repeated { (Noise::Within, None) } else { (Noise::Unknown, None) };
        }
        (a, b) => [a, b, base.sampling_pct, side.sampling_pct].into_iter().flatten().fold(0.0, f64::max),
    };
    let (Some((base_min, base_max)), Some((side_min, side_max))) =
        (range(&base.repeats), range(&side.repeats))
    else {
        return (Noise::Within, Some(noise_pct));
    };
    let overlap = base_min <= side_max && side_min <= base_max;
    let noise = if !overlap && pct.abs() > noise_pct { Noise::Beyond } else { Noise::Within };
    (noise, Some(noise_pct))
}

/// The closing line of side `k` against the baseline, over every row that compares them.
pub(super) fn summary(runs: &[CompareInput], rows: &[Row], k: usize) -> SideSummary {
    let (side, baseline) = (runs[k].label.clone(), runs[0].label.clone());
    // A row where either side was disturbed says nothing about the two targets: it is shown,
    // and left out of the closing line.
    let disturbed = |row: &&Row| {
        [0, k].iter().any(|&i| row.members.get(i).and_then(Option::as_ref).is_some_and(|m| m.disturbed))
    };
    let left_out =
        rows.iter().filter(|r| r.members.get(k).is_some_and(Option::is_some)).filter(disturbed).count();
    let metrics: Vec<SummaryMetric> = SUMMARY_METRICS
        .iter()
        .map(|&metric| {
            let differences: Vec<&Difference> = rows
                .iter()
                .filter(|r| !disturbed(r))
                .filter_map(|r| r.metrics.iter().find(|m| m.metric == metric))
                .filter_map(|m| m.vs_baseline[k].as_ref())
                .collect();
            // Over several points, the geometric mean of the ratios: the mean that treats +100%
            // and -50% as the opposites they are.
            let ratios: Vec<f64> =
                differences.iter().map(|d| 1.0 + d.pct / 100.0).filter(|&r| r > 0.0).collect();
            let change_pct = match differences.as_slice() {
                [] => None,
                [one] => Some(one.pct),
                _ if ratios.is_empty() => Some(-100.0),
                _ => Some(
                    ((ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp() - 1.0) * 100.0,
                ),
            };
            let count = |noise| differences.iter().filter(|d| d.noise == noise).count();
            let outcomes = |outcome| differences.iter().filter(move |d| d.outcome == outcome);
            let beyond = |outcome| outcomes(outcome).filter(|d| d.noise == Noise::Beyond).count();
            SummaryMetric {
                metric,
                change_pct,
                points: differences.len(),
                beyond_noise: count(Noise::Beyond),
                within_noise: count(Noise::Within),
                better: outcomes(Outcome::Better).count(),
                worse: outcomes(Outcome::Worse).count(),
                equal: outcomes(Outcome::Equal).count(),
                better_beyond_noise: beyond(Outcome::Better),
                worse_beyond_noise: beyond(Outcome::Worse),
            }
        })
        .collect();
    let words: Vec<String> = metrics.iter().map(summary_words).collect();
    let compared = rows.iter().any(|r| r.members.get(k).is_some_and(Option::is_some));
    let mut text = if compared {
        format!("{side} vs {baseline}: {}", words.join("; "))
    } else {
        format!("{side} vs {baseline}: nothing compared: no point of the same workload at the same load")
    };
    if left_out > 0 {
        text.push_str(&format!(
            "; {left_out} point{} left out: another load or a stolen CPU disturbed {}",
            if left_out == 1 { "" } else { "s" },
            if left_out == 1 { "it" } else { "them" }
        ));
    }
    SideSummary { side, baseline, metrics, left_out, text }
}

/// "IOPS +12.0% better (beyond noise)"; over several points the count of each way, which a
/// mean can hide: "IOPS -17.1% over 8 points (better at 6, worse at 2; beyond noise: 1 better,
/// 2 worse)".
fn summary_words(s: &SummaryMetric) -> String {
    let Some(pct) = s.change_pct else { return format!("{} not compared", s.metric.label()) };
    let outcome = if pct.abs() < 0.05 {
        "equal"
    } else if (pct > 0.0) == s.metric.higher_is_better() {
        "better"
    } else {
        "worse"
    };
    let label = s.metric.label();
    if s.points == 1 {
        let noise = match (s.beyond_noise, s.within_noise) {
            (1, _) => " (beyond noise)",
            (_, 1) => " (within noise)",
            _ => "",
        };
        return format!("{label} {pct:+.1}% {outcome}{noise}");
    }
    let ways: Vec<String> = [("better", s.better), ("worse", s.worse), ("equal", s.equal)]
        .iter()
        .filter(|&&(_, n)| n > 0)
        .map(|(way, n)| format!("{way} at {n}"))
        .collect();
    let noise = if s.beyond_noise + s.within_noise == 0 {
        String::new()
    } else {
        format!("; beyond noise: {} better, {} worse", s.better_beyond_noise, s.worse_beyond_noise)
    };
    format!("{label} {pct:+.1}% over {} points ({}{noise})", s.points, ways.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(latencies_us: impl IntoIterator<Item = u64>) -> OpStats {
        let mut all = OpStats::default();
        for us in latencies_us {
            all.record(us * 1000, 4096);
        }
        all
    }

    /// Many I/Os pin a percentile down; a few let it move between the bulk and the tail.
    #[test]
    fn a_percentile_is_as_certain_as_the_ios_behind_it() {
        let even = sampling_pct(&stats(1..=100_000), 99.0).expect("a width");
        assert!(even < 0.5, "100,000 evenly spread: {even:.2}%");
        let few = stats(std::iter::repeat_n(100, 990).chain((1..=10).map(|k| k * 1000)));
        let tail = sampling_pct(&few, 99.0).expect("a width");
        assert!(tail > 100.0, "1,000 with a tail of 10 from 1 to 10 ms: {tail:.0}%");
        assert_eq!(sampling_pct(&OpStats::default(), 99.0), None);
    }
}
