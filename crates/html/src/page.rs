//! The HTML around the charts: the runs compared, the charts, then each run in full (its
//! header, environment, points and verdicts). Plain HTML and inline CSS; nothing to load.

use iolab_stats::format::utc;
use std::fmt::Write;

use iolab_store::Point;

use crate::charts::{latency_unit, Figure};
use crate::escape::esc;
use crate::plot::sig3;
use crate::studies::Study;
use crate::Subject;
use crate::{environment, workload};

const STYLE: &str = r#"
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; font-size: 15px;
       color: #1d1d1f; background: #fafafa; margin: 0; padding: 24px; line-height: 1.45; }
main { max-width: 1000px; margin: 0 auto; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 21px; margin: 36px 0 12px; border-bottom: 2px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 17px; margin: 22px 0 8px; }
figure { background: #fff; border: 1px solid #ddd; border-radius: 6px; margin: 0 0 22px; padding: 10px; }
figure svg { display: block; width: 100%; height: auto; }
figcaption { font-size: 14px; color: #444; margin: 6px 8px 2px; }
table { border-collapse: collapse; background: #fff; margin: 6px 0 14px; font-size: 14px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th { background: #f0f0f0; }
table.points td:first-child, table.summary td.run { white-space: nowrap; }
table.summary tr.workload th { background: #e8eef6; }
table.points, table.summary { font-size: 13px; }
tr.sweet-spot td { background: #fff6d6; font-weight: bold; }
table.targets td { word-break: break-all; }
.summary ul.comparison { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 10px 10px 10px 30px; }
code { font-size: 13px; word-break: break-all; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.verdict { background: #fff; border-left: 4px solid #888; padding: 6px 12px; margin: 6px 0; }
.verdict .cause { font-weight: bold; }
.verdict ul { margin: 4px 0 2px; padding-left: 20px; font-size: 14px; color: #333; }
.facts { display: flex; flex-wrap: wrap; gap: 0 28px; align-items: flex-start; }
.facts h3 { margin-top: 0; }
details summary { cursor: pointer; color: #555; font-size: 14px; }
.note { color: #555; font-size: 14px; }
.status-failed, .status-interrupted, .status-running { color: #b00020; font-weight: bold; }
"#;

/// The whole document.
/// `hosts[i]` is the Hosts panel (or panels) of `subjects[i]`, already drawn; "" for none.
/// `summary` is the comparison the page opens with (`summary::html`).
pub(crate) fn document(
    subjects: &[Subject<'_>],
    summary: &str,
    figures: &[Figure],
    hosts: &[String],
) -> String {
    let mut out = String::new();
    let title = if subjects.len() == 1 {
        format!("iolab report: {}", subjects[0].name)
    } else {
        format!("iolab report: {} runs", subjects.len())
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    runs_table(&mut out, subjects);
    out.push_str(summary);
    if figures.is_empty() {
        out.push_str("<p class=\"note\">None of these runs has data to chart.</p>\n");
    } else {
        out.push_str("<h2>Charts</h2>\n");
    }
    for figure in figures {
        figure_html(&mut out, figure);
    }
    for (index, subject) in subjects.iter().enumerate() {
        run_section(&mut out, subject, hosts.get(index).map_or("", String::as_str));
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// A chart with its caption.
pub(crate) fn figure_html(out: &mut String, figure: &Figure) {
    let _ = write!(
        out,
        "<figure class=\"chart\" data-chart=\"{}\" data-workload=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
        figure.kind,
        esc(&figure.workload),
        figure.svg.trim(),
        esc(&figure.caption)
    );
}

/// A square of a run's colour, as its lines have in the charts.
pub(crate) fn swatch(color: plotters::style::RGBColor) -> String {
    format!("<span class=\"swatch\" style=\"background: rgb({},{},{})\"></span>", color.0, color.1, color.2)
}

/// One line per run, with the colour it has in the charts.
fn runs_table(out: &mut String, subjects: &[Subject<'_>]) {
    out.push_str("<table class=\"runs\">\n<tr><th>run</th><th>what</th><th>status</th><th>started (UTC)</th><th>host</th><th class=\"num\">points</th></tr>\n");
    for s in subjects {
        let info = &s.run.info;
        let c = s.base;
        let _ = writeln!(
            out,
            "<tr><td>{}<a href=\"#run-{}\">{}</a></td><td>{}</td><td class=\"status-{}\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
            swatch(c),
            info.id,
            esc(&s.name),
            esc(&info.label),
            info.status.name(),
            info.status.name(),
            utc(info.started_at_unix_s),
            esc(info.host_or_unknown()),
            s.run.points.len()
        );
    }
    out.push_str("</table>\n");
}

fn run_section(out: &mut String, subject: &Subject<'_>, hosts: &str) {
    let run = subject.run;
    let info = &run.info;
    let _ = writeln!(out, "<h2 id=\"run-{}\">{}</h2>", info.id, esc(&subject.name));
    out.push_str("<div class=\"facts\">\n<div>\n<h3>Run</h3>\n<table class=\"header\">\n");
    let finished = info.finished_at_unix_s.map_or_else(|| "not finished".to_string(), utc);
    let command = if info.command.is_empty() { "(not recorded)".to_string() } else { info.command.join(" ") };
    for (key, value) in [
        ("run", info.id.to_string()),
        ("kind", info.kind.clone()),
        ("label", info.label.clone()),
        ("status", info.status.name().to_string()),
        ("started (UTC)", utc(info.started_at_unix_s)),
        ("finished (UTC)", finished),
        ("host", info.host_or_unknown().to_string()),
        ("iolab version", info.iolab_version.clone()),
    ] {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(key), esc(&value));
    }
    let _ = writeln!(out, "<tr><th>command</th><td><code>{}</code></td></tr>", esc(&command));
    out.push_str("</table>\n</div>\n");
    environment::facts(out, &run.environment);
    out.push_str("</div>\n");
    environment::targets(out, &run.environment);
    if let Some(after) = &run.environment_after {
        environment::changes(out, &run.environment, after);
    }
    points_table(out, subject);
    out.push_str(hosts);
    study_verdict(out, &subject.study);
    point_verdicts(out, &run.points);
}

/// Each point's figures, as the text report gives them.
fn points_table(out: &mut String, subject: &Subject<'_>) {
    let points = &subject.run.points;
    if points.is_empty() {
        out.push_str("<p class=\"note\">No point of this run was stored.</p>\n");
        return;
    }
    let largest = points
        .iter()
        .filter_map(|p| p.summary.total.latency.as_ref())
        .map(|l| percentile(l, 99.0).unwrap_or(l.mean_ns))
        .fold(0.0, f64::max);
    let (scale, unit) = latency_unit(largest);
    let spots = sweet_spots(subject);
    // One engine is said once, in the run's name; a column only where they differ.
    let engines = points.iter().map(|p| &p.summary.engine).collect::<std::collections::BTreeSet<_>>();
    let engine_column = engines.len() > 1;
    // Likewise the stop reason, said only where some point stopped for another reason than its runtime.
    let stop_column = points.iter().any(|p| p.summary.stop_reason != "runtime");
    let _ = writeln!(
        out,
        "<h3>Points</h3>\n<table class=\"points\">\n<tr><th>point</th><th>workload</th>{}<th class=\"num\">QD × workers</th><th class=\"num\">IOPS</th><th class=\"num\">MB/s</th><th class=\"num\">mean ({unit})</th><th class=\"num\">p99 ({unit})</th><th class=\"num\">p99.99 ({unit})</th><th class=\"num\">CPU/I/O (µs)</th>{}</tr>",
        if engine_column { "<th>engine</th>" } else { "" },
        if stop_column { "<th>stop</th>" } else { "" }
    );
    for point in points {
        let s = &point.summary;
        let latency = s.total.latency.as_ref();
        let show = |ns: Option<f64>| ns.map_or_else(|| "—".to_string(), |v| sig3(v / scale));
        let spot = spots.contains(&point.seq);
        let disturbed = point.verdict.as_ref().is_some_and(|v| v.cause.disturbs_the_measure());
        let _ = writeln!(
            out,
            "<tr{}><td>{}{}{}</td><td>{}</td>{}<td class=\"num\">{} × {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>{}</tr>",
            if spot { " class=\"sweet-spot\"" } else { "" },
            if spot { "<span title=\"sweet spot\">★</span> " } else { "" },
            if disturbed { "<span title=\"disturbed: another load or a stolen CPU\">⚠</span> " } else { "" },
            esc(&point.name),
            esc(&workload::of(point))
                + &workload::blocks_touched(point)
                    .into_iter()
                    .chain(workload::data_and_verify(point))
                    .map(|line| format!("<br><small>{}</small>", esc(&line)))
                    .collect::<String>(),
            if engine_column { format!("<td>{}</td>", esc(&s.engine)) } else { String::new() },
            s.qd,
            s.workers,
            sig3(s.total.iops),
            sig3(s.total.mb_s),
            show(latency.map(|l| l.mean_ns)),
            show(latency.and_then(|l| percentile(l, 99.0))),
            show(latency.and_then(|l| percentile(l, 99.99))),
            s.cpu_us_per_io.map_or_else(|| "—".to_string(), sig3),
            if stop_column { format!("<td>{}</td>", esc(&s.stop_reason)) } else { String::new() }
        );
    }
    out.push_str("</table>\n");
    let mut spans: Vec<&str> = points.iter().map(iolab_analysis::compare::latency_span).collect();
    spans.sort_unstable();
    spans.dedup();
    let _ = writeln!(out, "<p class=\"note\">Latencies are {}.</p>", esc(&spans.join(" and ")));
    if !spots.is_empty() {
        out.push_str("<p class=\"note\">★ the sweet spot of a load curve: the most IOPS before latency grows faster than IOPS (where latency never did, no knee was found, its best point).</p>\n");
    }
    if points.iter().any(|p| p.verdict.as_ref().is_some_and(|v| v.cause.disturbs_the_measure())) {
        out.push_str("<p class=\"note\">⚠ disturbed: the point's verdict is another load or a stolen CPU, so its figures are not the target's alone; a sweep leaves it out of the sweet spot.</p>\n");
    }
    for point in points {
        // Where the histogram was not kept (an fio summary), that the mean lies above p99.
        if let Some(words) = point.summary.total.latency.as_ref().and_then(|l| l.tail_words()) {
            let _ = writeln!(out, "<p class=\"note\">The mean of {} {}.</p>", esc(&point.name), esc(&words));
        }
    }
}

/// The `seq` of each point that is a sweep curve's sweet spot.
fn sweet_spots(subject: &Subject<'_>) -> Vec<u32> {
    let mut seqs = Vec::new();
    for sweep in subject.study.sweeps() {
        for spot in sweep.curves.iter().filter_map(|c| c.sweet_spot.as_ref()) {
            if let Some(point) = sweep.rows.get(spot.row).and_then(|r| subject.point_named(&r.name)) {
                seqs.push(point.seq);
            }
        }
    }
    seqs
}

fn percentile(latency: &iolab_stats::result::LatencySummary, p: f64) -> Option<f64> {
    latency.percentiles.iter().find(|x| (x.p - p).abs() < 1e-9).map(|x| x.ns as f64)
}

/// The study's own conclusions: the sweep's and ramp's verdict lines, the steady outcome, the cliffs.
fn study_verdict(out: &mut String, study: &Study) {
    let mut lines: Vec<String> = Vec::new();
    for sweep in study.sweeps() {
        lines.extend(sweep.verdict.iter().cloned());
    }
    match study {
        Study::Ramp(ramp) => lines.extend(ramp.verdict.iter().cloned()),
        Study::Cliff(cliff) => {
            if let Some(note) = &cliff.found.note {
                lines.push(note.clone());
            }
            for c in &cliff.found.cliffs {
                lines.push(format!(
                    "cliff after {} bytes written: {:.0} MB/s before, {:.0} MB/s after (-{:.0}%)",
                    c.at_bytes, c.before_mb_s, c.after_mb_s, c.drop_pct
                ));
            }
        }
        Study::Cache(cache) => lines.extend(crate::charts::cache::verdict(cache)),
        _ => {}
    }
    for (what, rounds) in study.steady_rounds() {
        let prefix = if what.is_empty() { String::new() } else { format!("{what}: ") };
        lines.push(format!("{prefix}{}", crate::studies::outcome(rounds)));
    }
    if lines.is_empty() {
        return;
    }
    out.push_str("<h3>Verdict</h3>\n<ul class=\"study-verdict\">\n");
    for line in lines {
        let _ = writeln!(out, "<li>{}</li>", esc(&line));
    }
    out.push_str("</ul>\n");
}

/// What limited each point, with the figures that show it.
fn point_verdicts(out: &mut String, points: &[Point]) {
    let judged: Vec<&Point> = points.iter().filter(|p| p.verdict.is_some()).collect();
    if judged.is_empty() {
        return;
    }
    out.push_str("<h3>What limited each point</h3>\n");
    // A long sweep's evidence folds away (no script: <details> opens by itself).
    let open = if judged.len() <= 3 { " open" } else { "" };
    for point in judged {
        let Some(verdict) = &point.verdict else { continue };
        let _ = write!(
            out,
            "<div class=\"verdict\"><span class=\"point\">{}</span>: <span class=\"cause\">{}</span>. {}",
            esc(&point.name),
            esc(verdict.cause.name()),
            esc(&verdict.summary)
        );
        if !verdict.evidence.is_empty() {
            let _ =
                write!(out, "<details{open}><summary>evidence ({})</summary><ul>", verdict.evidence.len());
            for line in &verdict.evidence {
                let _ = write!(out, "<li>{}</li>", esc(line));
            }
            out.push_str("</ul></details>");
        }
        out.push_str("</div>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(utc(1_795_370_214), "2026-11-22 17:56:54");
    }
}
