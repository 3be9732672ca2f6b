//! `iolab compare A B [C...]`: stored runs side by side, each against the first (the baseline),
//! with relative differences and, where points were repeated, whether a difference is larger
//! than the run-to-run noise.
//!
//! A side is a label and the stored points it stands for (a whole run, or one point of it).
//! Points of one side that share a name are repeats of one measurement (`--repeat N` stores N
//! points of the same name): they are summarised together and their spread is the noise.
//!
//! Sides are matched against the baseline one at a time: by point name when they share any
//! (sweeps of one shape: "qd1", "qd2", ...), else directly when each has one point, else by
//! position. What matches nothing is listed, never dropped.
//!
//! Percentiles are never averaged across repeats: a repeated point's percentiles are read from
//! the merge of its repeats' histograms (the percentile of all their I/Os); the per-repeat
//! percentiles serve only to measure the noise. Points without histograms (fio's normal JSON)
//! show the median of their repeats' percentiles, and say so.

use std::fmt::Write;

use iolab_stats::format::{latency, thousands};
use iolab_stats::OpStats;
use iolab_store::Point;
use serde::Serialize;

/// Name and version of the JSON schema of a comparison.
pub const COMPARE_SCHEMA: &str = "iolab.compare/1";

/// What `noise` means, as the JSON carries it (the doc of [`noise_verdict`] says why).
pub const NOISE_RULE: &str = "noise is the spread of a point's repeats, (max - min) / mean; a difference is \
     beyond noise when the ranges of the two sides' repeats do not overlap and the difference is larger \
     than the larger side's spread";

/// Said once when no point of any side was repeated.
pub const SINGLE_RUNS_NOTE: &str =
    "single runs: noise unknown, differences under ~5% may be noise; use --repeat 3 to measure it";

/// One side of a comparison, as the CLI resolved it from the store.
#[derive(Debug, Clone)]
pub struct CompareInput {
    /// How the user named it: "#12", "#12:qd32".
    pub label: String,
    pub points: Vec<Point>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub schema: &'static str,
    pub noise_rule: &'static str,
    /// The sides in the order given; the first is the baseline.
    pub sides: Vec<Side>,
    /// One per baseline point matched on at least one other side.
    pub rows: Vec<Row>,
    pub unmatched: Vec<Unmatched>,
    pub notes: Vec<String>,
    /// One per side after the baseline.
    pub summaries: Vec<SideSummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub label: String,
    /// Stored points, repeats counted one by one.
    pub stored_points: usize,
    /// Distinct points (repeats counted once).
    pub points: usize,
    /// The fewest and most repeats of any of its points.
    pub repeats: (usize, usize),
    /// Distinct values over its points, in order of appearance.
    pub sources: Vec<String>,
    pub engines: Vec<String>,
    pub accesses: Vec<String>,
    pub qds: Vec<u32>,
    pub workers: Vec<u32>,
    pub targets: Vec<String>,
    /// How its points were matched to the baseline's; `None` for the baseline.
    pub matched_by: Option<MatchedBy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// Same point names (sweeps of one shape).
    Name,
    /// The n-th point with the n-th point.
    Position,
    /// One point each.
    Single,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The baseline point's name.
    pub name: String,
    /// One per side; `None` where that side has no matching point.
    pub members: Vec<Option<Member>>,
    pub metrics: Vec<MetricRow>,
    /// "not the same workload for #13: qd 32 vs 16".
    pub warnings: Vec<String>,
}

/// One side's point in a row: all its repeats.
#[derive(Debug, Clone, Serialize)]
pub struct Member {
    pub name: String,
    /// The stored points' `seq`, one per repeat.
    pub seqs: Vec<u32>,
    pub engine: String,
    pub access: String,
    pub qd: u32,
    pub workers: u32,
    pub targets: Vec<String>,
    pub percentiles_from: PercentileSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PercentileSource {
    /// One measurement: its own percentiles.
    Single,
    /// The merge of every repeat's histogram: the percentile of all their I/Os.
    MergedHistograms,
    /// No histograms to merge: the median of the repeats' percentiles.
    MedianOfRepeats,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Iops,
    MbS,
    MeanNs,
    P50Ns,
    P99Ns,
    #[serde(rename = "p99_9_ns")]
    P999Ns,
    #[serde(rename = "p99_99_ns")]
    P9999Ns,
    CpuUsPerIo,
}

impl Metric {
    pub const ALL: [Metric; 8] = [
        Metric::Iops,
        Metric::MbS,
        Metric::MeanNs,
        Metric::P50Ns,
        Metric::P99Ns,
        Metric::P999Ns,
        Metric::P9999Ns,
        Metric::CpuUsPerIo,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Metric::Iops => "IOPS",
            Metric::MbS => "MB/s",
            Metric::MeanNs => "mean",
            Metric::P50Ns => "p50",
            Metric::P99Ns => "p99",
            Metric::P999Ns => "p99.9",
            Metric::P9999Ns => "p99.99",
            Metric::CpuUsPerIo => "CPU/I/O",
        }
    }

    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Iops | Metric::MbS)
    }

    fn percentile(self) -> Option<f64> {
        match self {
            Metric::P50Ns => Some(50.0),
            Metric::P99Ns => Some(99.0),
            Metric::P999Ns => Some(99.9),
            Metric::P9999Ns => Some(99.99),
            _ => None,
        }
    }

    fn format(self, value: f64) -> String {
        match self {
            Metric::Iops => thousands(value),
            Metric::MbS => format!("{value:.1}"),
            Metric::CpuUsPerIo => format!("{value:.2}us"),
            _ => latency(value),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricRow {
    pub metric: Metric,
    pub higher_is_better: bool,
    /// One per side; `None` where the side has no point here or did not measure the metric.
    pub values: Vec<Option<Measure>>,
    /// One per side, against the baseline; `None` for the baseline and where either is missing.
    pub vs_baseline: Vec<Option<Difference>>,
}

/// A metric of one side's point: the value shown, and the values of each repeat.
#[derive(Debug, Clone, Serialize)]
pub struct Measure {
    pub value: f64,
    /// Each repeat's own value (zero-I/O repeats have no latency and are left out).
    pub repeats: Vec<f64>,
    /// (max - min) / mean of `repeats` in percent; `None` with fewer than 2 repeats.
    pub spread_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    /// (side - baseline) / baseline x 100.
    pub pct: f64,
    pub outcome: Outcome,
    pub noise: Noise,
    /// The larger side's spread, against which the difference was judged.
    pub noise_pct: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Better,
    Worse,
    /// Under 0.05% either way: the same, to the precision shown.
    Equal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Noise {
    /// Neither side was repeated.
    Unknown,
    Within,
    Beyond,
}

#[derive(Debug, Clone, Serialize)]
pub struct Unmatched {
    /// The side holding the point, or missing it.
    pub side: String,
    pub point: String,
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SideSummary {
    pub side: String,
    pub baseline: String,
    pub metrics: Vec<SummaryMetric>,
    /// "#13 vs #12: IOPS +12.0% better (beyond noise), ..."
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SummaryMetric {
    pub metric: Metric,
    /// The difference, or over several points the geometric mean of the ratios, in percent.
    pub change_pct: Option<f64>,
    /// Points compared.
    pub points: usize,
    pub beyond_noise: usize,
    pub within_noise: usize,
}

/// The metrics the closing line of each side names.
const SUMMARY_METRICS: [Metric; 4] = [Metric::Iops, Metric::MeanNs, Metric::P99Ns, Metric::CpuUsPerIo];

/// A side's points grouped by name: each group is one measured point and its repeats.
struct Group<'a> {
    name: &'a str,
    points: Vec<&'a Point>,
}

fn groups(points: &[Point]) -> Vec<Group<'_>> {
    let mut groups: Vec<Group> = Vec::new();
    for point in points {
        match groups.iter_mut().find(|g| g.name == point.name) {
            Some(group) => group.points.push(point),
            None => groups.push(Group { name: &point.name, points: vec![point] }),
        }
    }
    groups
}

/// For each baseline group, the index of the matching group of `other`.
fn match_groups(base: &[Group], other: &[Group]) -> (MatchedBy, Vec<Option<usize>>) {
    if base.iter().any(|b| other.iter().any(|o| o.name == b.name)) {
        (MatchedBy::Name, base.iter().map(|b| other.iter().position(|o| o.name == b.name)).collect())
    } else if base.len() == 1 && other.len() == 1 {
        (MatchedBy::Single, vec![Some(0)])
    } else {
        (MatchedBy::Position, (0..base.len()).map(|i| (i < other.len()).then_some(i)).collect())
    }
}

pub fn compare(runs: &[CompareInput]) -> Comparison {
    let grouped: Vec<Vec<Group>> = runs.iter().map(|r| groups(&r.points)).collect();
    let mut sides: Vec<Side> = runs.iter().zip(&grouped).map(|(r, g)| side(r, g)).collect();
    let mut notes = Vec::new();
    let mut unmatched = Vec::new();
    let Some((base, others)) = grouped.split_first() else {
        return Comparison {
            schema: COMPARE_SCHEMA,
            noise_rule: NOISE_RULE,
            sides,
            rows: Vec::new(),
            unmatched,
            notes: vec!["nothing to compare: no sides given".into()],
            summaries: Vec::new(),
        };
    };
    if others.is_empty() {
        notes.push("nothing to compare: one side only".into());
    }
    // matches[k][i]: side k+1's group for baseline group i.
    let mut matches = Vec::new();
    for (k, other) in others.iter().enumerate() {
        let (by, matched) = match_groups(base, other);
        sides[k + 1].matched_by = Some(by);
        for (j, group) in other.iter().enumerate() {
            if !matched.contains(&Some(j)) {
                unmatched.push(Unmatched {
                    side: runs[k + 1].label.clone(),
                    point: group.name.to_string(),
                    why: format!("no point of {} matches it", runs[0].label),
                });
            }
        }
        matches.push(matched);
    }
    let mut rows = Vec::new();
    for (i, group) in base.iter().enumerate() {
        let found: Vec<Option<&Group>> = std::iter::once(Some(group))
            .chain(matches.iter().zip(others).map(|(m, other)| m[i].map(|j| &other[j])))
            .collect();
        for k in (1..found.len()).filter(|&k| found[k].is_none()) {
            unmatched.push(Unmatched {
                side: runs[k].label.clone(),
                point: group.name.to_string(),
                why: format!("{} has no point matching {}'s {}", runs[k].label, runs[0].label, group.name),
            });
        }
        if found.iter().skip(1).any(Option::is_some) {
            rows.push(row(runs, &found, &mut notes));
        }
    }
    let repeated = grouped.iter().flatten().any(|g| g.points.len() > 1);
    if !repeated && !rows.is_empty() {
        notes.push(SINGLE_RUNS_NOTE.into());
    }
    let summaries = (1..runs.len()).map(|k| summary(runs, &rows, k)).collect();
    Comparison { schema: COMPARE_SCHEMA, noise_rule: NOISE_RULE, sides, rows, unmatched, notes, summaries }
}

fn distinct<T: PartialEq>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for value in values {
        if !out.contains(&value) {
            out.push(value);
        }
    }
    out
}

fn side(input: &CompareInput, groups: &[Group]) -> Side {
    let points = &input.points;
    let repeats = groups.iter().map(|g| g.points.len());
    Side {
        label: input.label.clone(),
        stored_points: points.len(),
        points: groups.len(),
        repeats: (repeats.clone().min().unwrap_or(0), repeats.max().unwrap_or(0)),
        sources: distinct(points.iter().map(|p| p.source.clone())),
        engines: distinct(points.iter().map(|p| p.summary.engine.clone())),
        accesses: distinct(points.iter().map(|p| p.summary.access.clone())),
        qds: distinct(points.iter().map(|p| p.summary.qd)),
        workers: distinct(points.iter().map(|p| p.summary.workers)),
        targets: distinct(points.iter().flat_map(|p| p.summary.targets.iter().cloned())),
        matched_by: None,
    }
}

/// Each side's members and every metric of one matched point.
fn row(runs: &[CompareInput], found: &[Option<&Group>], notes: &mut Vec<String>) -> Row {
    let mut members = Vec::new();
    let mut measures: Vec<Vec<Option<Measure>>> = Vec::new();
    for (input, group) in runs.iter().zip(found) {
        match group {
            Some(group) => {
                let (member, values) = measure(&input.label, group, notes);
                members.push(Some(member));
                measures.push(values);
            }
            None => {
                members.push(None);
                measures.push(vec![None; Metric::ALL.len()]);
            }
        }
    }
    let metrics = Metric::ALL
        .iter()
        .enumerate()
        .map(|(m, &metric)| {
            let values: Vec<Option<Measure>> = measures.iter().map(|v| v[m].clone()).collect();
            let vs_baseline = values
                .iter()
                .enumerate()
                .map(|(k, value)| match (k, &values[0], value) {
                    (1.., Some(base), Some(value)) => difference(metric, base, value),
                    _ => None,
                })
                .collect();
            MetricRow { metric, higher_is_better: metric.higher_is_better(), values, vs_baseline }
        })
        .collect();
    let name = found[0].map_or_else(String::new, |g| g.name.to_string());
    Row { name, warnings: workload_warnings(runs, &members), members, metrics }
}

/// "not the same workload for #13: qd 32 vs 16": matched points that ran something else.
fn workload_warnings(runs: &[CompareInput], members: &[Option<Member>]) -> Vec<String> {
    let Some(Some(base)) = members.first() else { return Vec::new() };
    let mut warnings = Vec::new();
    for (input, member) in runs.iter().zip(members).skip(1) {
        let Some(member) = member else { continue };
        let mut differences = Vec::new();
        if member.access != base.access {
            differences.push(format!("access '{}' vs '{}'", base.access, member.access));
        }
        if member.qd != base.qd {
            differences.push(format!("qd {} vs {}", base.qd, member.qd));
        }
        if member.workers != base.workers {
            differences.push(format!("workers {} vs {}", base.workers, member.workers));
        }
        if !differences.is_empty() {
            warnings.push(format!("not the same workload for {}: {}", input.label, differences.join(", ")));
        }
    }
    warnings
}

/// A group's figures, one `Option<Measure>` per metric of `Metric::ALL`.
///
/// Rates are the mean of the repeats; the mean latency and CPU per I/O are weighted by I/Os
/// (what one measurement of all the repeats' I/Os would give); percentiles come from the merged
/// histograms, or are the median of the repeats when a point has none.
fn measure(label: &str, group: &Group, notes: &mut Vec<String>) -> (Member, Vec<Option<Measure>>) {
    let points = &group.points;
    let first = &points[0].summary;
    let merged = if points.len() > 1 { merged_histograms(label, group, notes) } else { None };
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
        targets: first.targets.clone(),
        percentiles_from,
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
                Metric::MeanNs | Metric::CpuUsPerIo => weighted_mean(&per_repeat),
                _ => match (&merged, metric.percentile()) {
                    (Some(all), Some(p)) if all.ios() > 0 => Some(all.percentile_ns(p) as f64),
                    _ => median(&repeats),
                },
            }?;
            Some(Measure { value, spread_pct: spread_pct(&repeats), repeats })
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

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn weighted_mean(values: &[(f64, u64)]) -> Option<f64> {
    let weight: u64 = values.iter().map(|&(_, w)| w).sum();
    (weight > 0).then(|| values.iter().map(|&(v, w)| v * w as f64).sum::<f64>() / weight as f64)
}

fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
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

fn difference(metric: Metric, base: &Measure, side: &Measure) -> Option<Difference> {
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
/// larger side's spread, (max - min) / mean. Otherwise it is **within noise**; with no repeats
/// on either side the noise is unknown.
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
        (a, b) => a.unwrap_or(0.0).max(b.unwrap_or(0.0)),
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
fn summary(runs: &[CompareInput], rows: &[Row], k: usize) -> SideSummary {
    let (side, baseline) = (runs[k].label.clone(), runs[0].label.clone());
    let metrics: Vec<SummaryMetric> = SUMMARY_METRICS
        .iter()
        .map(|&metric| {
            let differences: Vec<&Difference> = rows
                .iter()
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
            SummaryMetric {
                metric,
                change_pct,
                points: differences.len(),
                beyond_noise: count(Noise::Beyond),
                within_noise: count(Noise::Within),
            }
        })
        .collect();
    let words: Vec<String> = metrics.iter().map(summary_words).collect();
    let text = format!("{side} vs {baseline}: {}", words.join(", "));
    SideSummary { side, baseline, metrics, text }
}

/// "IOPS +12.0% better (beyond noise)", "p99 -3.0% better over 8 points (beyond noise at 6 of 8)".
fn summary_words(s: &SummaryMetric) -> String {
    let Some(pct) = s.change_pct else { return format!("{} not compared", s.metric.label()) };
    let outcome = if pct.abs() < 0.05 {
        "equal"
    } else if (pct > 0.0) == s.metric.higher_is_better() {
        "better"
    } else {
        "worse"
    };
    let over = if s.points > 1 { format!(" over {} points", s.points) } else { String::new() };
    let judged = s.beyond_noise + s.within_noise;
    let noise = match (judged, s.points) {
        (0, _) => String::new(),
        (_, 1) if s.beyond_noise == 1 => " (beyond noise)".into(),
        (_, 1) => " (within noise)".into(),
        _ => format!(" (beyond noise at {} of {judged})", s.beyond_noise),
    };
    format!("{} {pct:+.1}% {outcome}{over}{noise}", s.metric.label())
}

pub fn compare_json(comparison: &Comparison) -> String {
    let mut text = serde_json::to_string_pretty(comparison)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    text.push('\n');
    text
}

pub fn compare_text(c: &Comparison) -> String {
    let mut out = String::new();
    let baseline = c.sides.first().map_or("", |s| s.label.as_str());
    let _ = writeln!(out, "comparison of {} sides, each against {baseline}", c.sides.len());
    let width = c.sides.iter().map(|s| s.label.len()).max().unwrap_or(0);
    for side in &c.sides {
        let _ = writeln!(out, "  {:<width$}  {}", side.label, side_words(side));
    }
    out.push_str("  higher is better for IOPS and MB/s, lower for latencies and CPU per I/O\n");
    if c.rows
        .iter()
        .flat_map(|r| &r.metrics)
        .flat_map(|m| &m.vs_baseline)
        .flatten()
        .any(|d| d.noise_pct.is_some())
    {
        out.push_str(
            "  noise: the spread (max - min) / mean of a point's repeats; a difference is beyond noise when\n  \
             the two sides' repeats do not overlap and it is larger than the larger spread\n",
        );
    }
    for row in &c.rows {
        row_text(&mut out, c, row);
    }
    if !c.unmatched.is_empty() {
        out.push_str("\nunmatched:\n");
        for u in &c.unmatched {
            let _ = writeln!(out, "  {} {}: {}", u.side, u.point, u.why);
        }
    }
    if !c.notes.is_empty() {
        out.push('\n');
        for note in &c.notes {
            let _ = writeln!(out, "note: {note}");
        }
    }
    if !c.summaries.is_empty() {
        out.push('\n');
        for summary in &c.summaries {
            let _ = writeln!(out, "{}", summary.text);
        }
    }
    crate::shown(out)
}

/// "iolab, uring, randread 4KiB, QD 1-8 x 1 worker, /tmp/f; 8 points x 3 repeats".
fn side_words(side: &Side) -> String {
    if side.stored_points == 0 {
        return "no points".into();
    }
    let join = |values: &[String]| values.join(" / ");
    let span = |values: &[u32]| match (values.iter().min(), values.iter().max()) {
        (Some(lo), Some(hi)) if lo != hi => format!("{lo}-{hi}"),
        (Some(lo), _) => lo.to_string(),
        _ => "?".into(),
    };
    let points = match side.repeats {
        (1, 1) => format!("{} point{}", side.points, if side.points == 1 { "" } else { "s" }),
        (lo, hi) if lo == hi => {
            format!("{} point{} x {lo} repeats", side.points, if side.points == 1 { "" } else { "s" })
        }
        (lo, hi) => format!("{} points, {lo} to {hi} repeats", side.points),
    };
    let by = match side.matched_by {
        Some(MatchedBy::Name) => "; matched by point name",
        Some(MatchedBy::Position) => "; matched by position",
        Some(MatchedBy::Single) | None => "",
    };
    format!(
        "{}, {}, {}, QD {} x {} worker(s), {}; {points}{by}",
        join(&side.sources),
        join(&side.engines),
        join(&side.accesses),
        span(&side.qds),
        span(&side.workers),
        side.targets.join(" + "),
    )
}

fn row_text(out: &mut String, c: &Comparison, row: &Row) {
    let members: Vec<String> = c
        .sides
        .iter()
        .zip(&row.members)
        .map(|(side, member)| match member {
            None => format!("{}: none", side.label),
            Some(m) => {
                let name = if m.name == row.name { String::new() } else { format!(" '{}'", m.name) };
                let repeats = match m.seqs.len() {
                    1 => "1 run".to_string(),
                    n => format!("{n} repeats"),
                };
                format!("{}{name}: {}, QD {} x {}, {repeats}", side.label, m.engine, m.qd, m.workers)
            }
        })
        .collect();
    let _ = writeln!(out, "\npoint {} ({})", row.name, members.join("; "));
    let mut header = vec!["".to_string()];
    for (k, side) in c.sides.iter().enumerate() {
        header.push(side.label.clone());
        if k > 0 {
            header.push(format!("vs {}", c.sides[0].label));
        }
    }
    let mut lines = vec![header];
    for m in &row.metrics {
        let mut line = vec![m.metric.label().to_string()];
        for (k, value) in m.values.iter().enumerate() {
            line.push(value.as_ref().map_or_else(|| "-".into(), |v| m.metric.format(v.value)));
            if k > 0 {
                line.push(m.vs_baseline[k].as_ref().map_or_else(|| "-".into(), difference_words));
            }
        }
        lines.push(line);
    }
    let columns = lines[0].len();
    let widths: Vec<usize> =
        (0..columns).map(|i| lines.iter().map(|l| l[i].chars().count()).max().unwrap_or(0)).collect();
    for line in &lines {
        let mut text = String::from(" ");
        for (i, cell) in line.iter().enumerate() {
            let w = widths[i];
            // Names left, figures right, differences left (their words vary in length).
            let diff_column = i > 1 && (i - 2) % 2 == 1;
            if i == 0 || diff_column {
                let _ = write!(text, " {cell:<w$} ");
            } else {
                let _ = write!(text, " {cell:>w$} ");
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    }
    let merged_median =
        row.members.iter().flatten().any(|m| m.percentiles_from == PercentileSource::MedianOfRepeats);
    if merged_median {
        let who: Vec<&str> = c
            .sides
            .iter()
            .zip(&row.members)
            .filter(|(_, m)| {
                m.as_ref().is_some_and(|m| m.percentiles_from == PercentileSource::MedianOfRepeats)
            })
            .map(|(s, _)| s.label.as_str())
            .collect();
        let _ = writeln!(
            out,
            "  percentiles of {} are the median of the repeats (no histograms to merge), not of all their I/Os",
            who.join(", ")
        );
    }
    for warning in &row.warnings {
        let _ = writeln!(out, "  warning: {warning}");
    }
}

/// "+12.3% better (beyond noise 2.1%)".
fn difference_words(d: &Difference) -> String {
    let outcome = match d.outcome {
        Outcome::Better => "better",
        Outcome::Worse => "worse",
        Outcome::Equal => "equal",
    };
    let noise = match (d.noise, d.noise_pct) {
        (Noise::Unknown, _) => String::new(),
        (Noise::Beyond, Some(n)) => format!(" (beyond noise {n:.1}%)"),
        (Noise::Within, Some(n)) => format!(" (within noise {n:.1}%)"),
        (Noise::Beyond, None) => " (beyond noise)".into(),
        (Noise::Within, None) => " (within noise)".into(),
    };
    format!("{:+.1}% {outcome}{noise}", d.pct)
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
