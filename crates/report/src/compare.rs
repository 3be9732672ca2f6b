//! The text and JSON of `iolab compare`: what `iolab_analysis::compare` found, rendered.

use std::fmt::Write;

pub use iolab_analysis::compare::*;
use iolab_stats::format::{latency, thousands};

/// A metric's value as the table shows it.
pub(crate) fn shown(metric: Metric, value: f64) -> String {
    match metric {
        Metric::Iops => thousands(value),
        Metric::MbS => format!("{value:.1}"),
        Metric::CpuUsPerIo => latency(value * 1e3),
        _ => latency(value),
    }
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
    out.push_str("  a point is compared only with one of the same workload at the same load\n");
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
    if !c.conclusions.is_empty() {
        out.push_str("\nconclusion:\n");
        for paragraph in &c.conclusions {
            let _ = writeln!(out, "  {paragraph}");
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
        Some(MatchedBy::Single) => "; one point each, at different loads",
        Some(MatchedBy::Workload) | None => "",
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
    // `mean lat` needs the slot split or fio's own lat: results kept without them have no row.
    for m in row.metrics.iter().filter(|m| m.metric != Metric::LatNs || m.values.iter().any(Option::is_some))
    {
        let mut line = vec![m.metric.label().to_string()];
        for (k, value) in m.values.iter().enumerate() {
            line.push(value.as_ref().map_or_else(|| "-".into(), |v| shown(m.metric, v.value)));
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
