//! The report of real stored runs: every chart kind drawn where its data is, with units on the
//! axes, a legend entry per run, the sweet spot marked, finite coordinates, nothing fetched.

mod support;

use iolab_html::{render, HtmlError};
use support::{all_runs, fio_run, iolab_run};

/// Each `<figure data-chart=KIND>` of the page with its inner HTML, in order.
fn figures(html: &str) -> Vec<(String, String)> {
    html.split("<figure class=\"chart\" data-chart=\"")
        .skip(1)
        .map(|rest| {
            let (kind, body) = rest.split_once('"').expect("a quoted kind");
            let body = body.split_once('>').expect("the tag's end").1;
            let body = body.split("</figure>").next().expect("a closed figure");
            (kind.to_string(), body.to_string())
        })
        .collect()
}

/// Every panel of chart `kind` (one per workload), one after another.
fn figure(all: &[(String, String)], kind: &str) -> String {
    let panels: Vec<&str> = all.iter().filter(|(k, _)| k == kind).map(|(_, body)| body.as_str()).collect();
    assert!(!panels.is_empty(), "no {kind} chart; have {:?}", all.iter().map(|f| &f.0).collect::<Vec<_>>());
    panels.concat()
}

/// The text of every `<text>` element of `svg`, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split("</text>").next()?.trim().to_string()))
        .collect()
}

/// Whether some text of `svg` starts with `prefix`.
fn has_text(svg: &str, prefix: &str) -> bool {
    texts(svg).iter().any(|t| t.starts_with(prefix))
}

/// Every coordinate attribute of every SVG element holds only numbers.
fn assert_finite_coordinates(svg: &str, kind: &str) {
    for attr in ["x", "y", "cx", "cy", "r", "width", "height", "points", "x1", "x2", "y1", "y2", "d"] {
        let needle = format!(" {attr}=\"");
        for piece in svg.split(&needle).skip(1) {
            let value = piece.split('"').next().unwrap_or_default();
            let numeric = value.chars().all(|c| c.is_ascii_digit() || " ,.-eMLZ".contains(c));
            assert!(numeric && !value.is_empty(), "{kind}: {attr}=\"{value}\"");
        }
    }
    let lower = svg.to_ascii_lowercase();
    assert!(!lower.contains("nan") && !lower.contains("inf\""), "{kind}: a NaN or infinite value");
}

#[test]
fn every_chart_kind_is_drawn_from_real_runs() {
    let runs = all_runs();
    let html = render(&runs).expect("renders");
    if let Some(dir) = std::env::var_os("IOLAB_HTML_KEEP") {
        std::fs::write(std::path::Path::new(&dir).join("all.html"), &html).expect("keeps the page");
    }
    let all = figures(&html);

    // Which chart, the axis labels (with units) it must carry, and the runs its legend names.
    let expected: [(&str, &[&str], &[i64]); 11] = [
        ("qd-iops", &["outstanding I/Os (QD × workers)", "IOPS (I/Os per second)"], &[1, 2, 3]),
        ("qd-latency", &["outstanding I/Os (QD × workers)", "latency (µs"], &[1, 2, 3]),
        ("latency-iops", &["IOPS (I/Os per second)", "latency ("], &[1, 2, 3]),
        ("ramp", &["achieved IOPS (I/Os per second)", "latency ("], &[9]),
        ("percentiles", &["percentile (%)", "latency ("], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
        ("histogram", &["share of I/Os per bucket (%)", "latency ("], &[1, 2, 3, 4, 5]),
        ("series-iops", &["time since the measurement started (s)", "IOPS (I/Os per second)"], &[7, 8]),
        ("series-p99", &["time since the measurement started (s)", "p99 latency ("], &[7, 8]),
        ("cpu-per-io", &["IOPS (I/Os per second)", "CPU per I/O (µs"], &[1, 2, 3, 4, 5, 7, 8, 9]),
        ("cliff", &["written (MiB)", "throughput (MB/s"], &[5, 6]),
        ("steady", &["round", "IOPS"], &[3]),
    ];
    for (kind, axes, legend) in expected {
        let svg = &figure(&all, kind);
        assert!(svg.trim_start().starts_with("<svg "), "{kind}: no svg");
        for axis in axes {
            assert!(has_text(svg, axis), "{kind}: no axis label '{axis}' in {:?}", texts(svg));
        }
        for id in legend {
            let run = &runs[(*id - 1) as usize];
            let name = format!("#{id} {} ", run.info.kind);
            assert!(has_text(svg, &name), "{kind}: no legend entry for run {id}");
        }
    }
    for (kind, svg) in &all {
        assert_finite_coordinates(svg, kind);
    }

    // The sweet spots: run 1's knee at qd 8, run 2's per curve, on each load chart.
    for kind in ["qd-iops", "qd-latency", "latency-iops"] {
        let svg = &figure(&all, kind);
        let labels = texts(svg);
        assert!(
            labels.iter().any(|t| t == "#1 sweet spot: qd 8"),
            "{kind}: run 1's sweet spot in {labels:?}"
        );
        assert!(labels.iter().any(|t| t == "#2 sweet spot: bs 64KiB, qd 2"), "{kind}: run 2's knee");
        assert!(labels.iter().any(|t| t == "#2 best (no knee): bs 4KiB, qd 8"), "{kind}: run 2's best point");
    }
    // Every run with a histogram is in the histogram panel of its workload: none left out.
    let histogram = figure(&all, "histogram");
    for id in [6, 9] {
        assert!(has_text(&histogram, &format!("#{id} ")), "run {id} is left out of the histograms");
    }
    // Steady state: the steady run and each point of the sweep run --until-steady.
    let steady: Vec<&String> = all.iter().filter(|(k, _)| k == "steady").map(|(_, b)| b).collect();
    assert_eq!(steady.len(), 3);
    assert!(has_text(steady[2], "#4 steady "), "the steady run's own chart comes after the sweep's");
    for svg in &steady {
        assert!(has_text(svg, "measurement window: rounds "), "the window is named");
        assert!(has_text(svg, "range band: average ± 10% (range "), "the range criterion");
        assert!(
            texts(svg).iter().any(|t| t.starts_with("least-squares line: ") && t.contains("(max 10%: ")),
            "the slope criterion"
        );
    }
    // The cliff run's cliff is marked; the flat one says why there is none.
    let cliff = &figure(&all, "cliff");
    assert!(has_text(cliff, "cliff 1: -40% after 95.7 MiB"), "the cliff is labelled");
    assert!(cliff.contains("#6 cliff uring iolab-scratch-21028.dat: no cliff"), "the flat log is explained");
}

#[test]
fn the_page_is_self_contained() {
    let html = render(&all_runs()).expect("renders");
    let mut rest = html.as_str();
    while let Some(at) = rest.find("http") {
        let url = &rest[at..];
        assert!(
            url.starts_with("http://www.w3.org/2000/svg\""),
            "a reference to the network: {}",
            &url[..url.len().min(60)]
        );
        rest = &rest[at + 4..];
    }
    for banned in ["<script", "<link", " src=", "url(", "@import", "<iframe"] {
        assert!(!html.contains(banned), "the page holds {banned}");
    }
}

#[test]
fn each_run_has_its_header_environment_and_verdicts() {
    let runs = all_runs();
    let html = render(&runs).expect("renders");
    for run in &runs {
        assert!(html.contains(&format!("<h2 id=\"run-{}\">", run.info.id)), "run {}", run.info.id);
    }
    // The free-form environment, flattened one level, its keys in words.
    assert!(html.contains("<th>kernel</th>") && html.contains("<th>governors</th>"));
    // Each point's verdict with its evidence, and a sweep's own verdict.
    assert!(
        html.contains("<span class=\"cause\">device</span>")
            || html.contains("<span class=\"cause\">concurrency</span>")
    );
    assert!(html.contains("<li>sweet spot at qd 8 (QD 8 x 1 worker(s))"));
    assert!(html.contains("steady state NOT reached: gave up after 8 rounds"));
}

#[test]
fn a_fio_import_alone_renders_what_it_has() {
    let html = render(&[fio_run(3, "fio.json")]).expect("renders");
    let all = figures(&html);
    let kinds: Vec<&str> = all.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["percentiles"], "fio JSON has percentiles only");
    assert!(has_text(&figure(&all, "percentiles"), "#3 fio "));
    assert!(html.contains("<td>randread 4k</td>"));
}

/// Issue 36: the fio run was missing from the per-interval charts with no note why. A run whose
/// point of a charted workload has no series is named under the chart, with the reason.
#[test]
fn a_run_without_a_series_is_named_under_the_series_charts() {
    let run = iolab_run(7, "run", "run.json");
    let mut imported = iolab_run(11, "run", "run.json");
    for point in &mut imported.points {
        point.series.clear();
        point.source = "fio".into();
    }
    let html = render(&[run, imported]).expect("renders");
    let all = figures(&html);
    let series = figure(&all, "series-iops");
    assert!(has_text(&series, "#7 run ") && !has_text(&series, "#11 run "));
    assert!(
        html.contains("Not drawn here: #11 run uring iolab-scratch-20648.dat: fio&#39;s JSON holds no per-interval figures"),
        "the caption says why: {}",
        series.split("<figcaption>").nth(1).unwrap_or_default()
    );
}

/// A mean above p99 in a result kept without its histogram (an fio summary) is said too,
/// without the shares it cannot give.
#[test]
fn a_mean_above_p99_without_a_histogram_is_said() {
    let mut run = fio_run(3, "fio.json");
    let latency = run.points[0].summary.total.latency.as_mut().expect("fio's latency");
    latency.tail = None;
    let p99 = latency.percentile(99.0).expect("a p99") as f64;
    latency.mean_ns = p99 * 3.0;
    let html = render(&[run]).expect("renders");
    assert!(
        html.contains("lies above its p99, ") && html.contains("kept no histogram to say by how much"),
        "the note"
    );
}

#[test]
fn points_without_histograms_are_left_out_of_the_histogram_only() {
    let mut run = iolab_run(7, "run", "run.json");
    let mut other = iolab_run(8, "run", "run_rw.json");
    other.points.iter_mut().for_each(|p| p.histograms = None);
    let html = render(&[run.clone(), other.clone()]).expect("renders");
    let all = figures(&html);
    let histogram = &figure(&all, "histogram");
    assert!(has_text(histogram, "#7 run ") && !has_text(histogram, "#8 run "));
    assert!(has_text(&figure(&all, "percentiles"), "#8 run "));

    // A damaged histogram is said in the caption, not fatal.
    if let Some(h) = run.points[0].histograms.as_mut() {
        h.read.as_mut().expect("reads").hdr = "damaged!".into();
    }
    let html = render(&[run, other]).expect("renders");
    assert!(!html.contains("data-chart=\"histogram\""));
}

#[test]
fn no_runs_is_an_error() {
    assert!(matches!(render(&[]), Err(HtmlError::NoRuns)));
}

/// Names come from the user (labels, paths, job names): they are text, never markup.
#[test]
fn names_are_escaped() {
    let mut run = iolab_run(7, "run", "run.json");
    run.info.label = "<script>alert(1)</script>".into();
    run.points[0].name = "<img onerror=x>".into();
    run.points[0].summary.targets = vec!["/tmp/<b>&".into()];
    let html = render(&[run]).expect("renders");
    assert!(!html.contains("<script") && !html.contains("<img") && !html.contains("<b>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

/// Values a log axis cannot show (a latency of 0) leave a chart out rather than drawing nothing.
#[test]
fn a_chart_with_nothing_drawable_is_left_out() {
    let mut run = fio_run(3, "fio.json");
    for point in &mut run.points {
        if let Some(latency) = point.summary.total.latency.as_mut() {
            latency.percentiles.iter_mut().for_each(|p| p.ns = 0);
        }
    }
    let html = render(&[run]).expect("renders");
    assert!(figures(&html).is_empty());
    assert!(html.contains("None of these runs has data to chart."));
}

/// The summary (issue 20, item 7): per workload, the fastest run first and each other run's
/// difference as `iolab compare` computes it; runs of other workloads are not compared.
#[test]
fn the_summary_compares_runs_where_they_ran_the_same_workload() {
    let runs = support::comparison_runs();
    let html = render(&runs).expect("renders");
    let summary = html
        .split("<section class=\"summary\">")
        .nth(1)
        .expect("a summary")
        .split("</section>")
        .next()
        .unwrap_or_default();
    let comparison = summary.split("<table").next().unwrap_or_default();
    assert!(comparison.contains("<strong>4KiB random read</strong>: "), "{comparison}");
    // The 1 MiB sweep is alone in its workload: listed in the table, compared with nothing.
    assert!(!comparison.contains("1MiB random read") && summary.contains("1MiB random read"));
    // #1 against the fastest (#4's RND4K Q32T16 read), to the percent.
    let iops = |run: usize, point: &str| {
        runs[run].points.iter().find(|p| p.name == point).map(|p| p.summary.total.iops).expect("the point")
    };
    let fewer = (1.0 - iops(0, "qd 16") / iops(3, "RND4K Q32T16 read")) * 100.0;
    assert!(
        comparison.contains(&format!("gives {fewer:.0}% fewer IOPS (best at qd 16, no knee)")),
        "{comparison}"
    );
    assert!(comparison.contains("each measured once: noise unknown"), "single runs say so");
}

/// With repeats (`--repeat`), the summary judges noise by compare's rule: a 4x difference
/// between repeats that agree within 2% is beyond it.
#[test]
fn repeated_points_are_judged_beyond_noise() {
    let repeat = |mut run: iolab_store::StoredRun| {
        let again: Vec<_> = run
            .points
            .iter()
            .map(|p| {
                let mut p = p.clone();
                p.seq += 100;
                p.summary.total.iops *= 1.02;
                p
            })
            .collect();
        run.points.extend(again);
        run
    };
    let runs = [
        repeat(support::stored_run("stored_sweep_4k.json")),
        repeat(support::stored_run("stored_sweep_4k_b.json")),
    ];
    let html = render(&runs).expect("renders");
    let summary = html.split("<section class=\"summary\">").nth(1).expect("a summary");
    assert!(
        summary.contains("fewer IOPS (best at qd 16, no knee) with a") && summary.contains(", beyond noise"),
        "{summary}"
    );
    assert!(!summary.contains("noise unknown"));
}
