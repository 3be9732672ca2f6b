//! `iolab compare A B [C...]`: stored runs side by side, each against the first (the baseline),
//! with relative differences and, where points were repeated, whether a difference is larger
//! than the run-to-run noise.
//!
//! A side is a label and the stored points it stands for (a whole run, or one point of it).
//! Points of one side that share a name are repeats of one measurement (`--repeat N` stores N
//! points of the same name): they are summarised together and their spread is the noise.
//!
//! Sides are matched against the baseline one at a time, like with like: a point pairs only with
//! one of the same workload at the same load (`pairing.rs`). What pairs with nothing is listed
//! with the reason, never compared.
//!
//! Percentiles are never averaged across repeats: a repeated point's percentiles are read from
//! the merge of its repeats' histograms (the percentile of all their I/Os); the per-repeat
//! percentiles serve only to measure the noise. Points without histograms (fio's normal JSON)
//! show the median of their repeats' percentiles, and say so.
//!
//! The noise rule and the figures of each side are in `measure.rs`; rendering is the report
//! crate's (`iolab_report::compare_text`).

mod cache;
mod conclusion;
mod measure;
mod pairing;
mod spans;

pub use cache::match_cache_shares;
use measure::{difference, measure, summary};
pub use spans::latency_span;

use iolab_stats::OpStats;
use iolab_store::Point;
use serde::Serialize;

/// Name and version of the JSON schema of a comparison.
pub const COMPARE_SCHEMA: &str = "iolab.compare/2";

/// What `noise` means, as the JSON carries it (the doc of [`noise_verdict`] says why).
pub const NOISE_RULE: &str = "noise is the spread of a point's repeats, (max - min) / mean; a difference is \
     beyond noise when the ranges of the two sides' repeats do not overlap and the difference is larger \
     than the larger side's spread";

/// Below this difference, single runs cannot tell two sides apart (the figure in
/// [`SINGLE_RUNS_NOTE`]).
pub const SINGLE_RUNS_LIMIT_PCT: f64 = 5.0;

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
    /// One paragraph per workload: which side is best at it, by how much, at what load, and
    /// what limited each.
    pub conclusions: Vec<String>,
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
    /// Same workload at the same load (by name where several points share both).
    Workload,
    /// One point each, of the same workload at different loads: the two the user named.
    Single,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The baseline point's name.
    pub name: String,
    /// One per side; `None` where that side has no matching point.
    pub members: Vec<Option<Member>>,
    pub metrics: Vec<MetricRow>,
    /// "not the same load for #13: qd 32 vs 16".
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
    /// The rate asked (`--rate-iops`, fio's `rate_iops`); `None`: a closed loop.
    pub rate_iops: Option<u64>,
    /// What it pairs by: qd, workers per host and the rate asked.
    #[serde(skip)]
    pub(super) load: pairing::Load,
    pub targets: Vec<String>,
    pub percentiles_from: PercentileSource,
    /// A repeat's verdict is another load or a stolen CPU: its figures are not the target's
    /// alone, and the closing line leaves the row out.
    pub disturbed: bool,
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
    /// The mean of an I/O's whole cycle, fio's `lat` (compare::spans).
    LatNs,
    P50Ns,
    P99Ns,
    #[serde(rename = "p99_9_ns")]
    P999Ns,
    #[serde(rename = "p99_99_ns")]
    P9999Ns,
    CpuUsPerIo,
}

impl Metric {
    pub const ALL: [Metric; 9] = [
        Metric::Iops,
        Metric::MbS,
        Metric::MeanNs,
        Metric::LatNs,
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
            Metric::LatNs => "mean lat",
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
    /// A latency percentile's sampling width: its 95% interval over its value, in percent, from
    /// the I/Os it was read from (`measure::sampling_pct`); `None` for other metrics and where no
    /// histogram was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    /// (side - baseline) / baseline x 100.
    pub pct: f64,
    pub outcome: Outcome,
    pub noise: Noise,
    /// The larger side's spread (or a percentile's sampling width, where wider), against which
    /// the difference was judged.
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
    /// The side holding the point.
    pub side: String,
    pub point: String,
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SideSummary {
    pub side: String,
    pub baseline: String,
    pub metrics: Vec<SummaryMetric>,
    /// Rows left out of the closing line: either side's point was disturbed.
    pub left_out: usize,
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
    /// Points where the side did better, worse, or the same as the baseline (to 0.05%), and of
    /// the better and the worse those beyond noise: a mean over points can hide that a side won
    /// most of them.
    pub better: usize,
    pub worse: usize,
    pub equal: usize,
    pub better_beyond_noise: usize,
    pub worse_beyond_noise: usize,
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
            conclusions: Vec::new(),
        };
    };
    if others.is_empty() {
        notes.push("nothing to compare: one side only".into());
    }
    // matches[k][i]: side k+1's group for baseline group i.
    let mut matches = Vec::new();
    let mut base_unpaired = Vec::new();
    for (k, other) in others.iter().enumerate() {
        let pairing = pairing::pair(base, &runs[0].label, other, &runs[k + 1].label);
        sides[k + 1].matched_by = Some(pairing.by);
        for (group, why) in other.iter().zip(pairing.side_unpaired) {
            if let Some(why) = why {
                unmatched.push(Unmatched {
                    side: runs[k + 1].label.clone(),
                    point: group.name.to_string(),
                    why,
                });
            }
        }
        matches.push(pairing.pairs);
        base_unpaired.push(pairing.base_unpaired);
    }
    let mut rows = Vec::new();
    for (i, group) in base.iter().enumerate() {
        let found: Vec<Option<&Group>> = std::iter::once(Some(group))
            .chain(matches.iter().zip(others).map(|(m, other)| m[i].map(|j| &other[j])))
            .collect();
        for why in base_unpaired.iter().filter_map(|side| side[i].as_ref()) {
            unmatched.push(Unmatched {
                side: runs[0].label.clone(),
                point: group.name.to_string(),
                why: why.clone(),
            });
        }
        if found.iter().skip(1).any(Option::is_some) {
            rows.push(row(runs, &found, &mut notes));
        }
    }
    notes.extend(spans::note(runs.iter().map(|r| (r.label.as_str(), r.points.as_slice()))));
    let repeated = grouped.iter().flatten().any(|g| g.points.len() > 1);
    if !repeated && !rows.is_empty() {
        notes.push(SINGLE_RUNS_NOTE.into());
    }
    let summaries = (1..runs.len()).map(|k| summary(runs, &rows, k)).collect();
    let conclusions =
        if others.is_empty() { Vec::new() } else { conclusion::conclusions(runs, &grouped, &rows) };
    Comparison {
        schema: COMPARE_SCHEMA,
        noise_rule: NOISE_RULE,
        sides,
        rows,
        unmatched,
        notes,
        summaries,
        conclusions,
    }
}

pub(crate) fn distinct<T: PartialEq>(values: impl Iterator<Item = T>) -> Vec<T> {
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
    Row { name, warnings: load_warnings(runs, &members), members, metrics }
}

/// "not the same load for #13: QD 32 x 1 vs QD 16 x 4": the two points the user named, one
/// each, of one workload at different loads.
fn load_warnings(runs: &[CompareInput], members: &[Option<Member>]) -> Vec<String> {
    let Some(Some(base)) = members.first() else { return Vec::new() };
    let base_load = base.load;
    runs.iter()
        .zip(members)
        .skip(1)
        .filter_map(|(input, member)| {
            let load = member.as_ref()?.load;
            (load != base_load).then(|| {
                format!("not the same load for {}: {} vs {}", input.label, base_load.words(), load.words())
            })
        })
        .collect()
}
