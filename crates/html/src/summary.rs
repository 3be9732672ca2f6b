//! The summary the page opens with, the part a manager reads: for each workload (block size
//! and mix) the runs measured, which is fastest and by how much, and whether that is beyond the
//! run-to-run noise, in plain words; then a table of each run's sweet spot (or best point) and
//! what limited it.
//!
//! The comparison is `iolab compare`'s own (`iolab_analysis::compare`): the same figures, the
//! same noise rule; this file only picks which points stand for each run and words the result.

use std::fmt::Write;

use iolab_analysis::compare::{
    compare, CompareInput, Difference, Metric, Noise, NOISE_RULE, SINGLE_RUNS_NOTE,
};
use iolab_store::Point;

use crate::charts::{chosen_points, latency_unit, Chosen};
use crate::escape::esc;
use crate::page::swatch;
use crate::plot::sig3;
use crate::{workload, Subject};

/// The point a run stands for in one workload.
struct Entry<'a> {
    subject: &'a Subject<'a>,
    point: &'a Point,
    /// "sweet spot at qd 8", "RND4K Q1T1 read".
    what: String,
}

/// Each workload with the point each run stands for in it: the sweet spot of its curve, or the
/// point with the most IOPS among those the charts show for the run.
fn entries<'a>(subjects: &'a [Subject<'a>]) -> Vec<(String, Vec<Entry<'a>>)> {
    let mut all = Vec::new();
    for subject in subjects {
        for (workload, chosen) in
            workload::grouped(chosen_points(subject).into_iter().map(|c| (workload::of(c.point), c)))
        {
            let best = chosen.into_iter().max_by(|a, b| iops(a.point).total_cmp(&iops(b.point)));
            if let Some(Chosen { point, what, .. }) = best {
                let what = match (what.strip_suffix(" (sweet spot)"), what.strip_suffix(" (best, no knee)")) {
                    (Some(name), _) => format!("sweet spot at {name}"),
                    (_, Some(name)) => format!("best at {name}, no knee"),
                    _ => what,
                };
                all.push((workload, Entry { subject, point, what }));
            }
        }
    }
    workload::grouped(all)
}

fn iops(point: &Point) -> f64 {
    point.summary.total.iops
}

fn p99_ns(point: &Point) -> Option<f64> {
    let latency = point.summary.total.latency.as_ref()?;
    latency.percentiles.iter().find(|p| (p.p - 99.0).abs() < 1e-9).map(|p| p.ns as f64)
}

/// The summary section, or "" for a page with no point to summarise.
pub(crate) fn html(subjects: &[Subject<'_>]) -> String {
    let workloads = entries(subjects);
    if workloads.is_empty() {
        return String::new();
    }
    let largest = workloads.iter().flat_map(|(_, e)| e).filter_map(|e| p99_ns(e.point)).fold(0.0, f64::max);
    let (scale, unit) = latency_unit(largest);
    let mut words = Vec::new();
    let mut rows = String::new();
    let mut single = false;
    for (workload, mut entries) in workloads {
        // The fastest first: compare's baseline, so every difference reads against it.
        entries.sort_by(|a, b| iops(b.point).total_cmp(&iops(a.point)));
        let differences = differences(&entries);
        single |= differences.iter().flatten().flatten().flatten().any(|d| d.noise == Noise::Unknown);
        if entries.len() > 1 {
            words.push(sentence(&workload, &entries, &differences));
        }
        let _ = writeln!(rows, "<tr class=\"workload\"><th colspan=\"7\">{}</th></tr>", esc(&workload));
        for (index, (entry, difference)) in entries.iter().zip(&differences).enumerate() {
            row(&mut rows, entry, index == 0 && entries.len() > 1, difference.as_ref(), scale);
        }
    }
    let mut out = String::from("<section class=\"summary\">\n<h2 id=\"summary\">Summary</h2>\n");
    if subjects.len() > 1 {
        if words.is_empty() {
            out.push_str("<p>No two of these runs measured the same workload (block size and mix), so none is compared with another; each run's best point is below.</p>\n");
        } else {
            out.push_str("<ul class=\"comparison\">\n");
            for line in &words {
                let _ = writeln!(out, "<li>{line}</li>");
            }
            out.push_str("</ul>\n");
        }
    }
    let _ = writeln!(
        out,
        "<table class=\"summary\">\n<tr><th>run</th><th>point shown</th><th class=\"num\">IOPS</th><th class=\"num\">MB/s</th><th class=\"num\">p99 ({unit})</th><th class=\"num\">IOPS vs fastest</th><th>what limited it</th></tr>\n{rows}</table>"
    );
    let mut note = format!(
        "Each run is shown by its sweet spot (the most IOPS before latency grows faster than IOPS) or, without a load curve, by its point with the most IOPS. Differences are judged by iolab compare's rule: {NOISE_RULE}."
    );
    if single {
        let _ = write!(note, " Here: {SINGLE_RUNS_NOTE}.");
    }
    let _ = writeln!(out, "<p class=\"note\">{}</p>\n</section>", esc(&note));
    out
}

/// Each entry's IOPS and p99 against the first's, by `iolab compare` (None for the first).
fn differences(entries: &[Entry<'_>]) -> Vec<Option<[Option<Difference>; 2]>> {
    let inputs: Vec<CompareInput> = entries
        .iter()
        .map(|e| CompareInput {
            label: e.subject.tag(),
            // Repeats of the point (`--repeat`) share its name: they measure the noise.
            points: e.subject.run.points.iter().filter(|p| p.name == e.point.name).cloned().collect(),
        })
        .collect();
    let comparison = compare(&inputs);
    let metric = |m: Metric, k: usize| {
        let row = comparison.rows.first()?;
        row.metrics.iter().find(|r| r.metric == m)?.vs_baseline.get(k)?.clone()
    };
    (0..entries.len()).map(|k| (k > 0).then(|| [metric(Metric::Iops, k), metric(Metric::P99Ns, k)])).collect()
}

/// "4KiB random read: #3 is fastest, 212k IOPS (sweet spot at qd 16); #1 gives 26% fewer IOPS
/// (sweet spot at qd 4) with a 40% higher p99 (each measured once: noise unknown)"; past twice,
/// a ratio: "4.2x fewer IOPS ... with a 720x higher p99".
fn sentence(
    workload: &str,
    entries: &[Entry<'_>],
    differences: &[Option<[Option<Difference>; 2]>],
) -> String {
    let first = &entries[0];
    let mut text = format!(
        "<strong>{}</strong>: {} is fastest, {} IOPS ({})",
        esc(workload),
        tagged(first.subject),
        sig3(iops(first.point)),
        esc(&first.what)
    );
    for (entry, difference) in entries.iter().zip(differences).skip(1) {
        let Some([iops, p99]) = difference else { continue };
        let Some(iops) = iops else {
            let _ = write!(text, "; {} has no IOPS to compare", tagged(entry.subject));
            continue;
        };
        let _ = write!(
            text,
            "; {} gives {} fewer IOPS ({}){}{}",
            tagged(entry.subject),
            apart(iops.pct),
            esc(&entry.what),
            p99.as_ref().map_or_else(String::new, |d| format!(
                " with a {} {} p99",
                apart(d.pct),
                if d.pct >= 0.0 { "higher" } else { "lower" }
            )),
            if iops.noise == Noise::Unknown { String::new() } else { format!(", {}", noise(iops)) }
        );
    }
    let unknown =
        differences.iter().flatten().any(|d| d[0].as_ref().is_some_and(|d| d.noise == Noise::Unknown));
    text.push_str(if unknown { " (each measured once: noise unknown)." } else { "." });
    text
}

/// How far apart two figures are, for a sentence that says which way: "26%" below twice, a
/// ratio from there ("720x" where the percentage would read "71878%", "4.2x" fewer).
fn apart(pct: f64) -> String {
    let ratio = if pct >= 0.0 { 1.0 + pct / 100.0 } else { 1.0 / (1.0 + pct / 100.0).max(f64::MIN_POSITIVE) };
    match ratio {
        r if r < 2.0 => format!("{:.0}%", pct.abs()),
        r if r < 10.0 => format!("{r:.1}x"),
        r => format!("{r:.0}x"),
    }
}

/// A verdict's first sentence: the table says what limited a point; the run's section, why.
fn first_sentence(text: &str) -> &str {
    text.find(". ").map_or(text, |end| &text[..=end])
}

fn noise(difference: &Difference) -> &'static str {
    match difference.noise {
        Noise::Beyond => "beyond noise",
        Noise::Within => "within noise",
        Noise::Unknown => "noise unknown (measured once)",
    }
}

/// The run's id in its colour, named in full on hover.
fn tagged(subject: &Subject<'_>) -> String {
    format!(
        "{}<strong title=\"{}\">{}</strong>",
        swatch(subject.base),
        esc(&subject.name),
        esc(&subject.tag())
    )
}

fn row(
    out: &mut String,
    entry: &Entry<'_>,
    fastest: bool,
    difference: Option<&[Option<Difference>; 2]>,
    scale: f64,
) {
    let versus = match difference.and_then(|d| d[0].as_ref()) {
        Some(d) => format!(
            "{}{}",
            if d.pct <= -50.0 { format!("{} fewer", apart(d.pct)) } else { format!("{:+.0}%", d.pct) },
            if d.noise == Noise::Unknown { String::new() } else { format!(" ({})", noise(d)) }
        ),
        None if fastest => "fastest".to_string(),
        None => "—".to_string(),
    };
    let limited = match &entry.point.verdict {
        Some(v) => format!("<strong>{}</strong>: {}", esc(v.cause.name()), esc(first_sentence(&v.summary))),
        None if entry.point.source == "fio" => "not judged: imported from fio".to_string(),
        None => "not judged".to_string(),
    };
    let _ = writeln!(
        out,
        "<tr><td class=\"run\">{}<a href=\"#run-{}\">{}</a></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{limited}</td></tr>",
        swatch(entry.subject.base),
        entry.subject.run.info.id,
        esc(&entry.subject.name),
        esc(&entry.what),
        sig3(iops(entry.point)),
        sig3(entry.point.summary.total.mb_s),
        p99_ns(entry.point).map_or_else(|| "—".to_string(), |ns| sig3(ns / scale)),
        versus
    );
}

#[cfg(test)]
mod tests {
    use super::apart;

    /// Issue 36: the report said "71878% higher p99", which reads as nothing; it is 720x.
    #[test]
    fn differences_past_twice_read_as_ratios() {
        assert_eq!(apart(71_878.0), "720x");
        assert_eq!(apart(40.0), "40%");
        assert_eq!(apart(-26.0), "26%");
        assert_eq!(apart(-76.0), "4.2x");
        assert_eq!(apart(-50.0), "2.0x");
        assert_eq!(apart(99.0), "99%");
    }
}
