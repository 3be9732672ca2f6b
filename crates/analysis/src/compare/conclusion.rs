//! The answer a comparison is asked for, one short paragraph per workload: which side is best at
//! it, by how much beyond noise, at what load, what limited each side there, and how the sides
//! fared load by load. A workload only one side ran is "not compared", with the reason.

use super::measure::{measure, noise_verdict};
use super::pairing::Load;
use super::{distinct, CompareInput, Group, Metric, Noise, Outcome, Row, SINGLE_RUNS_LIMIT_PCT};
use iolab_stats::format::{latency, thousands};

/// A side's best point at one workload: the most IOPS among its undisturbed points.
struct Best<'a> {
    label: &'a str,
    load: Load,
    iops: super::Measure,
    p99_ns: Option<f64>,
    limit: String,
    /// Its points of the workload that another load or a stolen CPU disturbed, left out.
    disturbed: usize,
}

/// One paragraph per workload, in the order the sides ran them (baseline first).
pub(super) fn conclusions(runs: &[CompareInput], grouped: &[Vec<Group>], rows: &[Row]) -> Vec<String> {
    let workloads = distinct(grouped.iter().flatten().map(|g| g.points[0].summary.access.as_str()));
    workloads.into_iter().map(|workload| paragraph(runs, grouped, rows, workload)).collect()
}

fn paragraph(runs: &[CompareInput], grouped: &[Vec<Group>], rows: &[Row], workload: &str) -> String {
    let ran: Vec<usize> = (0..runs.len())
        .filter(|&k| grouped[k].iter().any(|g| g.points[0].summary.access == workload))
        .collect();
    let mut text = format!("'{workload}': ");
    if ran.len() < 2 {
        let others: Vec<&str> =
            (0..runs.len()).filter(|k| !ran.contains(k)).map(|k| runs[k].label.as_str()).collect();
        text += &format!(
            "only {} ran it; not compared ({} ran other workloads).",
            runs[ran[0]].label,
            others.join(", ")
        );
        return text;
    }
    let mut bests: Vec<Best> = Vec::new();
    let mut all_disturbed: Vec<&str> = Vec::new();
    for &k in &ran {
        match best(&runs[k], &grouped[k], workload) {
            Some(best) => bests.push(best),
            None => all_disturbed.push(&runs[k].label),
        }
    }
    bests.sort_by(|a, b| b.iops.value.total_cmp(&a.iops.value));
    match bests.as_slice() {
        [] => text += "every point of every side was disturbed by another load or a stolen CPU; not compared",
        [only] => {
            text += &format!("only {} has undisturbed points: {}", only.label, figures(only));
        }
        [first, second, rest @ ..] => {
            let pct =
                (first.iops.value - second.iops.value) / second.iops.value.max(f64::MIN_POSITIVE) * 100.0;
            let (noise, noise_pct) = noise_verdict(pct, &second.iops, &first.iops);
            let level = match noise {
                Noise::Within => true,
                Noise::Unknown => pct.abs() < SINGLE_RUNS_LIMIT_PCT,
                Noise::Beyond => false,
            };
            let judged = match (noise, noise_pct) {
                (Noise::Beyond, Some(n)) => format!("beyond noise ({n:.1}%)"),
                (Noise::Beyond, None) => "beyond noise".into(),
                (Noise::Within, Some(n)) => format!("within noise ({n:.1}%)"),
                (Noise::Within, None) => "within noise".into(),
                (Noise::Unknown, _) if level => format!(
                    "{pct:.1}% apart, which single runs cannot tell from noise (under {SINGLE_RUNS_LIMIT_PCT:.0}%)"
                ),
                (Noise::Unknown, _) => "from single runs (noise not measured)".into(),
            };
            if level {
                text += &format!(
                    "{} and {} are level at their best: {} {}; {} {}; {judged}",
                    first.label,
                    second.label,
                    first.label,
                    figures(first),
                    second.label,
                    figures(second)
                );
            } else {
                // Past 2x a ratio reads better than a percentage ("3.3x", not "+233%").
                let by = if pct >= 100.0 {
                    format!("{:.1}x the IOPS of", 1.0 + pct / 100.0)
                } else {
                    format!("{pct:.1}% more IOPS than")
                };
                text += &format!(
                    "{} is best, {}; {by} {}'s best, {}; {judged}",
                    first.label,
                    figures(first),
                    second.label,
                    figures(second)
                );
            }
            for other in rest {
                text += &format!("; then {}, {}", other.label, figures(other));
            }
        }
    }
    text.push('.');
    // Load by load, each side against the baseline, where the baseline ran the workload.
    if ran[0] == 0 {
        for &k in &ran[1..] {
            if let Some(words) = per_load(rows, workload, k, &runs[0].label, &runs[k].label) {
                text += &format!(" {words}");
            }
        }
    }
    let disturbed: usize = bests.iter().map(|b| b.disturbed).sum();
    if disturbed > 0 {
        text += &format!(
            " {disturbed} point{} left out: another load or a stolen CPU disturbed {}.",
            if disturbed == 1 { "" } else { "s" },
            if disturbed == 1 { "it" } else { "them" }
        );
    }
    if !all_disturbed.is_empty() {
        text += &format!(" Every point of {} was disturbed: left out.", all_disturbed.join(" and "));
    }
    text
}

/// "172,989 IOPS at QD 32 x 1 (p99 1.21ms, limited by device)".
fn figures(best: &Best) -> String {
    let p99 = best.p99_ns.map_or_else(String::new, |ns| format!("p99 {}, ", latency(ns)));
    format!("{} IOPS at {} ({p99}{})", thousands(best.iops.value), best.load.words(), best.limit)
}

fn best<'a>(input: &'a CompareInput, groups: &[Group], workload: &str) -> Option<Best<'a>> {
    let mut notes = Vec::new();
    let mut disturbed = 0;
    let mut best: Option<Best> = None;
    for group in groups.iter().filter(|g| g.points[0].summary.access == workload) {
        let (member, values) = measure(&input.label, group, &mut notes);
        if member.disturbed {
            disturbed += 1;
            continue;
        }
        let value = |metric: Metric| values[Metric::ALL.iter().position(|&m| m == metric)?].clone();
        let Some(iops) = value(Metric::Iops) else { continue };
        if best.as_ref().is_some_and(|b| b.iops.value >= iops.value) {
            continue;
        }
        let verdict = group.points.iter().rev().find_map(|p| p.verdict.as_ref());
        let limit = verdict
            .map_or_else(|| "limit not judged".to_string(), |v| format!("limited by {}", v.cause.name()));
        best = Some(Best {
            label: &input.label,
            load: member.load,
            p99_ns: value(Metric::P99Ns).map(|m| m.value),
            iops,
            limit,
            disturbed: 0,
        });
    }
    best.map(|b| Best { disturbed, ..b })
}

/// "At the 8 loads both ran, #13 had more IOPS than #12 at 6 and fewer at 2 (beyond noise: 1 and
/// 0)": the rows of `workload` where side `k` stands beside the baseline, undisturbed.
fn per_load(rows: &[Row], workload: &str, k: usize, base: &str, side: &str) -> Option<String> {
    let differences: Vec<&super::Difference> = rows
        .iter()
        .filter(|r| r.members[0].as_ref().is_some_and(|m| m.access == workload))
        .filter(|r| [0, k].iter().all(|&i| r.members[i].as_ref().is_some_and(|m| !m.disturbed)))
        .filter_map(|r| r.metrics.iter().find(|m| m.metric == Metric::Iops)?.vs_baseline[k].as_ref())
        .collect();
    if differences.len() < 2 {
        return None;
    }
    let count = |outcome: Outcome, beyond: bool| {
        differences.iter().filter(|d| d.outcome == outcome && (!beyond || d.noise == Noise::Beyond)).count()
    };
    let judged = differences.iter().any(|d| d.noise != Noise::Unknown);
    let noise = if judged {
        format!(" (beyond noise: {} and {})", count(Outcome::Better, true), count(Outcome::Worse, true))
    } else {
        String::new()
    };
    let same = match count(Outcome::Equal, false) {
        0 => String::new(),
        n => format!(" and the same at {n}"),
    };
    Some(format!(
        "At the {} loads both ran, {side} had more IOPS than {base} at {}, fewer at {}{same}{noise}.",
        differences.len(),
        count(Outcome::Better, false),
        count(Outcome::Worse, false),
    ))
}
