//! What a point measured, as the report groups it: its block size and mix ("4KiB random read"),
//! or for a job of several concurrent groups (an I/O blender) each group's, joined with " + ".
//! Charts draw one panel per workload, so a 1 MiB curve never shares an axis with a 4 KiB one,
//! and the summary compares runs only where they ran the same workload.

use iolab_store::Point;
use serde_json::Value;

/// The workload of `point`.
pub(crate) fn of(point: &Point) -> String {
    let groups = groups(point);
    if groups.len() < 2 {
        return point.summary.access.clone();
    }
    let mut accesses: Vec<&str> = Vec::new();
    for group in &groups {
        if !accesses.contains(&group.access.as_str()) {
            accesses.push(&group.access);
        }
    }
    accesses.join(" + ")
}

/// "blocks touched 12.3% (sampled)": the share of the point's blocks its I/Os touched, all
/// groups together; `None` for results from before it was measured, and for imports.
pub(crate) fn blocks_touched(point: &Point) -> Option<String> {
    let groups = point.result.get("groups").and_then(Value::as_array)?;
    let (mut blocks, mut touched, mut sampled) = (0.0, 0.0, false);
    for coverage in groups.iter().filter_map(|g| g.get("blocks")) {
        let count = coverage.get("blocks").and_then(Value::as_f64)?;
        blocks += count;
        touched += count * coverage.get("touched_pct").and_then(Value::as_f64)? / 100.0;
        sampled |= coverage.get("sampled").and_then(Value::as_bool).unwrap_or(false);
    }
    (blocks > 0.0).then(|| {
        format!("blocks touched {:.1}%{}", touched / blocks * 100.0, if sampled { " (sampled)" } else { "" })
    })
}

/// What the point's writes held and what a sample of them measured ("data: random, 50%
/// compressible; ... compression 1.98:1"), one line per writing group, and what `--verify`
/// found ("verify: 2,048 blocks checked, 3 bad: 1 lost write, ..."); empty for results from
/// before these were measured, and for imports.
pub(crate) fn data_and_verify(point: &Point) -> Vec<String> {
    let groups = point.result.get("groups").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let data = groups
        .iter()
        .filter_map(|g| g.get("data"))
        .filter_map(|d| serde_json::from_value::<iolab_stats::data::DataReport>(d.clone()).ok())
        .map(|d| d.line());
    let verify = point
        .result
        .get("verify")
        .and_then(|v| serde_json::from_value::<iolab_stats::verify::VerifySummary>(v.clone()).ok())
        .map(|v| verify_line(&v));
    data.chain(verify).collect()
}

fn verify_line(summary: &iolab_stats::verify::VerifySummary) -> String {
    let kinds: Vec<String> = iolab_stats::verify::DataErrorKind::ALL
        .iter()
        .map(|&kind| (kind, summary.bad.get(kind)))
        .filter(|&(_, n)| n > 0)
        .map(|(kind, n)| format!("{n} {}", kind.name()))
        .collect();
    let bad = if kinds.is_empty() { "none bad".to_string() } else { format!("BAD: {}", kinds.join(", ")) };
    format!(
        "verify: {} blocks checked, {bad}; {} never written, {} skipped while a write was in flight",
        iolab_stats::format::thousands(summary.blocks_checked as f64),
        iolab_stats::format::thousands(summary.never_written as f64),
        iolab_stats::format::thousands(summary.skipped_in_flight as f64)
    )
}

/// A group of a job as its stored result gives it: what it ran and its own latency.
pub(crate) struct Group<'a> {
    pub name: String,
    pub access: String,
    pub total: &'a Value,
}

/// The groups of a job that ran several at once (none for a one-group job or an import).
pub(crate) fn groups(point: &Point) -> Vec<Group<'_>> {
    let Some(groups) = point.result.get("groups").and_then(Value::as_array) else { return Vec::new() };
    groups
        .iter()
        .map(|g| Group {
            name: g.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
            access: g.get("access").and_then(Value::as_str).unwrap_or_default().to_string(),
            total: &g["total"],
        })
        .collect()
}

/// `items` grouped by their workload, each group in the order its first item came.
pub(crate) fn grouped<T>(items: impl IntoIterator<Item = (String, T)>) -> Vec<(String, Vec<T>)> {
    let mut out: Vec<(String, Vec<T>)> = Vec::new();
    for (workload, item) in items {
        match out.iter_mut().find(|(w, _)| *w == workload) {
            Some((_, list)) => list.push(item),
            None => out.push((workload, vec![item])),
        }
    }
    out
}
