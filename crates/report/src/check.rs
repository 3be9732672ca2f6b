//! What `iolab check` found (`iolab_analysis::check`), as text for the terminal, markdown for a
//! CI job's summary page, JUnit XML for any CI's test view, and JSON.

use std::fmt::Write;

pub use iolab_analysis::check::*;
use iolab_analysis::compare::Metric;

use crate::compare::shown;
use iolab_stats::format::markup as xml;

pub fn check_json(check: &Check) -> String {
    let mut text = serde_json::to_string_pretty(check)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    text.push('\n');
    text
}

/// "IOPS 5%, MB/s 5%, p99 10%, p99.9 5%".
fn limits(check: &Check) -> String {
    let limits: Vec<String> = check
        .rules
        .max_regression_pct
        .iter()
        .map(|(metric, pct)| format!("{} {pct}%", metric.label()))
        .collect();
    limits.join(", ")
}

fn value(metric: Metric, value: Option<f64>) -> String {
    value.map_or_else(|| "-".into(), |v| shown(metric, v))
}

fn status_word(status: Status) -> &'static str {
    match status {
        Status::Held => "ok",
        Status::Regression => "REGRESSION",
        Status::Improvement => "improved",
        Status::Shown => "shown",
        Status::NotMeasured => "not measured",
    }
}

pub fn check_text(check: &Check) -> String {
    let mut out = format!(
        "check: {} against baseline {}; a figure regresses when it is worse past its limit ({}) and by more than twice the run-to-run noise\n",
        check.candidate,
        check.baseline,
        limits(check)
    );
    let mut point: Option<&str> = None;
    let width = 12;
    for f in &check.findings {
        if point != Some(f.point.as_str()) {
            point = Some(&f.point);
            let _ = writeln!(out, "\npoint {}", f.point);
            let _ =
                writeln!(out, "  {:<8}{:>width$}{:>width$}  difference", "figure", "baseline", "this run");
        }
        let _ = writeln!(
            out,
            "  {:<8}{:>width$}{:>width$}  {}  [{}]",
            f.metric.label(),
            value(f.metric, f.baseline),
            value(f.metric, f.candidate),
            f.why,
            status_word(f.status)
        );
    }
    if !check.not_comparable.is_empty() {
        out.push_str("\nnot comparable:\n");
        for why in &check.not_comparable {
            let _ = writeln!(out, "  {why}");
        }
    }
    if !check.notes.is_empty() {
        out.push('\n');
        for note in &check.notes {
            let _ = writeln!(out, "note: {note}");
        }
    }
    let _ = writeln!(out, "\n{}", check.summary);
    crate::shown(out)
}

/// For a CI job's summary page (GitHub's `$GITHUB_STEP_SUMMARY`, GitLab's, a PR comment).
pub fn check_markdown(check: &Check) -> String {
    let title = match check.verdict {
        Verdict::Pass => "pass",
        Verdict::Regression => "REGRESSION",
        Verdict::NotComparable => "not comparable",
    };
    let mut out = format!(
        "## iolab check: {title}\n\n{} against baseline {}. A figure regresses when it is worse past its limit ({}) and by more than twice the run-to-run noise (the spread of its repeats), their ranges apart.\n\n",
        cell(&check.candidate),
        cell(&check.baseline),
        limits(check)
    );
    if !check.findings.is_empty() {
        out.push_str("| point | figure | baseline | this run | difference | |\n|---|---|--:|--:|---|---|\n");
        for f in &check.findings {
            let mark = match f.status {
                Status::Regression => "❌ regression",
                Status::Improvement => "✅ improved",
                Status::Held => "✅",
                Status::Shown => "ℹ️ shown",
                Status::NotMeasured => "➖ not measured",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {mark} |",
                cell(&f.point),
                f.metric.label(),
                value(f.metric, f.baseline),
                value(f.metric, f.candidate),
                cell(&f.why)
            );
        }
        out.push('\n');
    }
    for (heading, lines) in [("Not comparable", &check.not_comparable), ("Notes", &check.notes)] {
        if !lines.is_empty() {
            let _ = writeln!(out, "**{heading}**\n");
            for line in lines {
                let _ = writeln!(out, "- {}", cell(line));
            }
            out.push('\n');
        }
    }
    let _ = writeln!(out, "**{}**", cell(&check.summary));
    out
}

/// Text in a markdown table cell: its pipes escaped, on one line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// JUnit XML: a test case per point and figure (a regression is a failure, a figure one side did
/// not measure is skipped), and one that fails with an error when the runs are not comparable.
pub fn check_junit(check: &Check) -> String {
    let failures = check.findings.iter().filter(|f| f.status == Status::Regression).count();
    let skipped = check.findings.iter().filter(|f| f.status == Status::NotMeasured).count();
    let errors = usize::from(!check.not_comparable.is_empty());
    let tests = check.findings.len() + 1;
    let suite = format!("iolab check: {} against {}", check.candidate, check.baseline);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"iolab check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">",
        xml(&suite)
    );
    let _ = write!(out, "    <testcase classname=\"iolab.check\" name=\"comparable\"");
    if check.not_comparable.is_empty() {
        out.push_str("/>\n");
    } else {
        let _ = writeln!(
            out,
            ">\n      <error type=\"not_comparable\" message=\"{}\">{}</error>\n    </testcase>",
            xml(&check.summary),
            xml(&check.not_comparable.join("\n"))
        );
    }
    for f in &check.findings {
        let _ = write!(
            out,
            "    <testcase classname=\"iolab.check.{}\" name=\"{}\"",
            xml(&f.point),
            xml(f.metric.label())
        );
        let figures = format!(
            "baseline {}, this run {}: {}",
            value(f.metric, f.baseline),
            value(f.metric, f.candidate),
            f.why
        );
        match f.status {
            Status::Regression => {
                let _ = writeln!(
                    out,
                    ">\n      <failure type=\"regression\" message=\"{}\">{}</failure>\n    </testcase>",
                    xml(&f.why),
                    xml(&figures)
                );
            }
            Status::NotMeasured => {
                let _ = writeln!(out, ">\n      <skipped message=\"{}\"/>\n    </testcase>", xml(&f.why));
            }
            Status::Held | Status::Improvement | Status::Shown => {
                let _ = writeln!(out, ">\n      <system-out>{}</system-out>\n    </testcase>", xml(&figures));
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
