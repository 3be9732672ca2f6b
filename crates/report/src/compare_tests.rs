use super::*;
use iolab_stats::encoded::EncodedHistograms;
use iolab_stats::result::OpSummary;
use iolab_stats::OpStats;
use iolab_stats::{IntervalStats, PERCENTILES};
use iolab_store::{Point, PointSummary};

/// Statistics of reads with these latencies (ns), 4 KiB each.
fn recorded(latencies: &[u64]) -> OpStats {
    let mut stats = OpStats::default();
    for &ns in latencies {
        stats.record(ns, 4096);
    }
    stats
}

/// `count` latencies: `slow` of them at `slow_ns`, the rest at `fast_ns`.
fn latencies(count: usize, fast_ns: u64, slow: usize, slow_ns: u64) -> Vec<u64> {
    (0..count).map(|i| if i < slow { slow_ns } else { fast_ns }).collect()
}

/// A stored iolab point of reads with `latencies`, at `iops`, with its histograms.
fn point(seq: u32, name: &str, iops: f64, latencies: &[u64], cpu: Option<f64>) -> Point {
    let read = recorded(latencies);
    let histograms = EncodedHistograms::encode(&IntervalStats {
        read: read.clone(),
        write: OpStats::default(),
        response: None,
        ..Default::default()
    });
    let mut total: OpSummary = read.summary(1.0, &[]);
    total.iops = iops;
    total.mb_s = iops * 4096.0 / 1e6;
    Point {
        seq,
        name: name.to_string(),
        source: "iolab".into(),
        completed_at_unix_s: 1_700_000_000,
        spec: serde_json::Value::Null,
        summary: PointSummary {
            engine: "uring".into(),
            access: "randread 4KiB".into(),
            qd: 32,
            workers: 1,
            targets: vec!["/tmp/scratch".into()],
            measured_s: 1.0,
            read: total.clone(),
            write: OpStats::default().summary(1.0, &[]),
            total,
            cpu_us_per_io: cpu,
            stop_reason: "runtime".into(),
        },
        series: Vec::new(),
        verdict: None,
        histograms: Some(histograms),
        result: serde_json::Value::Null,
    }
}

/// A point at `iops` whose every I/O took `latency_ns`.
fn flat(seq: u32, name: &str, iops: f64, latency_ns: u64) -> Point {
    point(seq, name, iops, &[latency_ns; 100], Some(2.0))
}

/// As a fio import stores it: no histograms, no CPU per I/O.
fn fio(mut point: Point) -> Point {
    point.source = "fio".into();
    point.histograms = None;
    point.summary.cpu_us_per_io = None;
    point
}

fn input(label: &str, points: Vec<Point>) -> CompareInput {
    CompareInput { label: label.into(), points }
}

fn metric(row: &Row, metric: Metric) -> &MetricRow {
    row.metrics.iter().find(|m| m.metric == metric).expect("every metric has a row")
}

fn vs(row: &Row, m: Metric, side: usize) -> &Difference {
    metric(row, m).vs_baseline[side].as_ref().expect("a difference")
}

fn value(row: &Row, m: Metric, side: usize) -> f64 {
    metric(row, m).values[side].as_ref().expect("a value").value
}

/// A point of a QD sweep: named "qd{qd}", run at that depth.
fn at_qd(seq: u32, qd: u32, iops: f64) -> Point {
    let mut point = flat(seq, &format!("qd{qd}"), iops, 10_000);
    point.summary.qd = qd;
    point
}

/// `point` running another access.
fn running(access: &str, mut point: Point) -> Point {
    point.summary.access = access.into();
    point
}

#[test]
fn points_pair_by_workload_and_load_and_leftovers_are_listed_with_the_reason() {
    let a = input("#12", vec![at_qd(0, 1, 100.0), at_qd(1, 2, 200.0), at_qd(2, 4, 400.0)]);
    let b = input("#13", vec![at_qd(0, 2, 220.0), at_qd(1, 1, 110.0), at_qd(2, 8, 800.0)]);
    let c = compare(&[a, b]);
    assert_eq!(c.sides[1].matched_by, Some(MatchedBy::Workload));
    let names: Vec<&str> = c.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["qd1", "qd2"]);
    // qd1 of #13 is its second point: matched by what it ran, not by place.
    assert_eq!(value(&c.rows[0], Metric::Iops, 1), 110.0);
    assert_eq!(c.rows[0].members[1].as_ref().map(|m| m.seqs.clone()), Some(vec![1]));
    let unmatched: Vec<(&str, &str)> =
        c.unmatched.iter().map(|u| (u.side.as_str(), u.point.as_str())).collect();
    assert_eq!(unmatched, [("#13", "qd8"), ("#12", "qd4")]);
    let text = compare_text(&c);
    assert!(
        text.contains(
            "#13 qd8: #12 ran 'randread 4KiB' only at QD 1 x 1, QD 2 x 1, QD 4 x 1, not at QD 8 x 1"
        ),
        "{text}"
    );
    assert!(text
        .contains("#12 qd4: #13 ran 'randread 4KiB' only at QD 2 x 1, QD 1 x 1, QD 8 x 1, not at QD 4 x 1"));
}

/// Issue 36: `compare "4:qd 32" 1` set a 4 KiB random read beside a 1 MiB sequential read because
/// they came first, then warned. Points pair by what they ran, wherever they stand; a workload
/// the baseline did not run is listed, never compared.
#[test]
fn different_workloads_never_pair_whatever_their_place() {
    let seq = "1MiB sequential read";
    let a = input("#1", vec![flat(0, "a1", 100.0, 10_000), running(seq, flat(1, "a2", 200.0, 10_000))]);
    let b = input(
        "#2",
        vec![
            running(seq, flat(0, "b1", 250.0, 10_000)),
            flat(1, "b2", 150.0, 10_000),
            running("4KiB random write", flat(2, "b3", 1.0, 1)),
        ],
    );
    let c = compare(&[a, b]);
    assert_eq!(c.rows.len(), 2);
    assert_eq!(c.rows[0].members[1].as_ref().map(|m| m.name.as_str()), Some("b2"));
    assert_eq!(c.rows[1].members[1].as_ref().map(|m| m.name.as_str()), Some("b1"));
    assert_eq!(value(&c.rows[1], Metric::Iops, 1), 250.0);
    assert_eq!(c.unmatched.len(), 1);
    assert_eq!(
        (c.unmatched[0].point.as_str(), c.unmatched[0].why.as_str()),
        ("b3", "#1 ran no '4KiB random write'")
    );

    // One point each: the same workload pairs whatever the names...
    let c = compare(&[
        input("#1", vec![flat(0, "mine", 100.0, 10_000)]),
        input("#2", vec![fio(flat(0, "theirs", 90.0, 10_000))]),
    ]);
    assert_eq!(c.sides[1].matched_by, Some(MatchedBy::Workload));
    assert_eq!(c.rows.len(), 1);
    assert!(c.unmatched.is_empty());
    assert!(compare_text(&c).contains("point mine (#1: uring, QD 32 x 1, 1 run; #2 'theirs':"));
    // ...and another workload does not, with the reason.
    let c = compare(&[
        input("#4", vec![flat(0, "qd 32", 172_989.0, 10_000)]),
        input("#1", vec![running(seq, flat(0, "seq", 5_937.0, 10_000))]),
    ]);
    assert!(c.rows.is_empty());
    let text = compare_text(&c);
    assert!(!text.contains("worse"), "{text}");
    assert!(
        text.contains(
            "#1 seq: not the same workload: 'randread 4KiB' vs '1MiB sequential read'; not compared"
        ),
        "{text}"
    );
    assert!(
        text.contains("'randread 4KiB': only #4 ran it; not compared (#1 ran other workloads)."),
        "{text}"
    );
}

/// Several points of one workload and load (a ladder's rungs) pair by name only.
#[test]
fn points_alike_in_workload_and_load_pair_by_name_only() {
    let rungs = |label: &str, names: &[&str]| {
        input(
            label,
            names.iter().enumerate().map(|(i, n)| flat(i as u32, n, 100.0 * (i + 1) as f64, 1)).collect(),
        )
    };
    let c = compare(&[rungs("#1", &["psync", "aio", "uring"]), rungs("#2", &["uring", "psync", "sqpoll"])]);
    let pairs: Vec<(&str, &str)> = c
        .rows
        .iter()
        .map(|r| (r.name.as_str(), r.members[1].as_ref().map_or("", |m| m.name.as_str())))
        .collect();
    assert_eq!(pairs, [("psync", "psync"), ("uring", "uring")]);
    let why: Vec<&str> = c.unmatched.iter().map(|u| u.why.as_str()).collect();
    assert_eq!(
        why,
        [
            "#1 has no point named 'sqpoll' of 'randread 4KiB' at QD 32 x 1, and its points there have other names",
            "#2 has no point named 'aio' of 'randread 4KiB' at QD 32 x 1, and its points there have other names",
        ]
    );
}

#[test]
fn differences_are_relative_to_the_first_side_and_say_which_way_is_better() {
    let a = input("A", vec![point(0, "p", 1000.0, &[100_000; 50], Some(4.0))]);
    let b = input("B", vec![point(0, "p", 1100.0, &[80_000; 50], Some(5.0))]);
    let c3 = input("C", vec![point(0, "p", 900.0, &[120_000; 50], Some(4.0))]);
    let c = compare(&[a, b, c3]);
    let row = &c.rows[0];
    let iops = vs(row, Metric::Iops, 1);
    assert!((iops.pct - 10.0).abs() < 1e-9);
    assert_eq!(iops.outcome, Outcome::Better);
    let mean = vs(row, Metric::MeanNs, 1);
    assert!((mean.pct + 20.0).abs() < 1e-9);
    assert_eq!(mean.outcome, Outcome::Better);
    let p99 = vs(row, Metric::P99Ns, 1);
    assert!(p99.pct < -19.0 && p99.pct > -21.0, "histogram precision is 0.1%: {}", p99.pct);
    assert_eq!(vs(row, Metric::CpuUsPerIo, 1).outcome, Outcome::Worse);
    assert!((vs(row, Metric::CpuUsPerIo, 1).pct - 25.0).abs() < 1e-9);
    // The third side is judged against the first, not the second.
    let iops_c = vs(row, Metric::Iops, 2);
    assert!((iops_c.pct + 10.0).abs() < 1e-9);
    assert_eq!(iops_c.outcome, Outcome::Worse);
    assert_eq!(vs(row, Metric::MeanNs, 2).outcome, Outcome::Worse);
    assert_eq!(vs(row, Metric::CpuUsPerIo, 2).outcome, Outcome::Equal);
    assert!(metric(row, Metric::Iops).vs_baseline[0].is_none());
    assert_eq!(c.summaries.len(), 2);
    assert_eq!(c.summaries[1].side, "C");
    assert_eq!(c.summaries[1].baseline, "A");
}

#[test]
fn single_runs_say_once_that_the_noise_is_unknown() {
    let c = compare(&[
        input("A", vec![flat(0, "p", 1000.0, 10_000)]),
        input("B", vec![flat(0, "p", 1010.0, 10_000)]),
    ]);
    let row = &c.rows[0];
    assert!(row.metrics.iter().filter_map(|m| m.vs_baseline[1].as_ref()).all(|d| d.noise == Noise::Unknown));
    assert_eq!(c.notes, [SINGLE_RUNS_NOTE]);
    let text = compare_text(&c);
    assert_eq!(text.matches("noise unknown").count(), 1, "{text}");
    assert!(!text.contains("within noise") && !text.contains("beyond noise"), "not per cell: {text}");
    assert!(text.contains("+1.0% better"), "{text}");
    assert!(
        text.contains("B vs A: IOPS +1.0% better; mean +0.0% equal; p99 +0.0% equal; CPU/I/O +0.0% equal"),
        "{text}"
    );
}

/// Repeats of one point: IOPS of each repeat given, latencies alike.
fn repeated(label: &str, iops: &[f64]) -> CompareInput {
    input(label, iops.iter().enumerate().map(|(i, &v)| flat(i as u32, "qd32", v, 10_000)).collect())
}

#[test]
fn a_difference_inside_the_repeats_spread_is_within_noise() {
    let c = compare(&[repeated("A", &[1000.0, 1100.0, 950.0]), repeated("B", &[1020.0, 1080.0, 990.0])]);
    let row = &c.rows[0];
    assert_eq!(row.members[0].as_ref().map(|m| m.seqs.len()), Some(3));
    assert!((value(row, Metric::Iops, 0) - 3050.0 / 3.0).abs() < 1e-3, "mean of the repeats");
    let iops = vs(row, Metric::Iops, 1);
    assert_eq!(iops.noise, Noise::Within);
    // A's spread (1100 - 950) / 1016.7 is the larger.
    let noise = iops.noise_pct.expect("repeats give a noise");
    assert!((noise - 150.0 / (3050.0 / 3.0) * 100.0).abs() < 1e-9, "{noise}");
    assert!(!c.notes.iter().any(|n| n == SINGLE_RUNS_NOTE));
    let text = compare_text(&c);
    assert!(text.contains("+1.3% better (within noise 14.8%)"), "{text}");
    assert!(text.contains("B vs A: IOPS +1.3% better (within noise)"), "{text}");
}

#[test]
fn a_difference_clear_of_both_ranges_is_beyond_noise() {
    let c = compare(&[repeated("A", &[1000.0, 1010.0, 990.0]), repeated("B", &[1500.0, 1510.0, 1490.0])]);
    let iops = vs(&c.rows[0], Metric::Iops, 1);
    assert_eq!(iops.noise, Noise::Beyond);
    assert!((iops.pct - 50.0).abs() < 1e-9);
    let text = compare_text(&c);
    assert!(text.contains("+50.0% better (beyond noise 2.0%)"), "{text}");
    assert!(text.contains("B vs A: IOPS +50.0% better (beyond noise)"), "{text}");
    // Latencies were the same in every repeat: no spread, no difference, within noise.
    assert_eq!(vs(&c.rows[0], Metric::P99Ns, 1).noise, Noise::Within);
}

#[test]
fn separate_ranges_are_not_enough_when_the_spread_is_larger_than_the_difference() {
    // A spreads over 9.7% of its mean; B sits just above A's range, +6.6% away.
    let c = compare(&[repeated("A", &[1000.0, 1001.0, 1100.0]), repeated("B", &[1101.0, 1102.0, 1103.0])]);
    let iops = vs(&c.rows[0], Metric::Iops, 1);
    assert!(iops.pct > 6.0 && iops.pct < 7.0);
    assert_eq!(iops.noise, Noise::Within);
    // And a single run against repeats: outside their range and farther than their spread.
    let c = compare(&[repeated("A", &[1000.0, 1010.0, 990.0]), repeated("B", &[1100.0])]);
    assert_eq!(vs(&c.rows[0], Metric::Iops, 1).noise, Noise::Beyond);
    let c = compare(&[repeated("A", &[1000.0, 1010.0, 990.0]), repeated("B", &[1015.0])]);
    assert_eq!(vs(&c.rows[0], Metric::Iops, 1).noise, Noise::Within);
}

#[test]
fn repeated_percentiles_come_from_the_merged_histograms() {
    // Two quiet repeats and one with a 10% tail at 5 ms: each repeat's p99 is 100us, 100us and
    // 5ms (median 100us), while 100 of all 3000 I/Os (3.3%) took 5 ms, so the p99 of them all
    // is 5 ms.
    let runs = [
        latencies(1000, 100_000, 0, 0),
        latencies(1000, 120_000, 0, 0),
        latencies(1000, 100_000, 100, 5_000_000),
    ];
    let points: Vec<Point> =
        runs.iter().enumerate().map(|(i, l)| point(i as u32, "p", 1000.0, l, Some(2.0))).collect();
    let single = flat(0, "p", 1000.0, 100_000);
    let c = compare(&[input("A", points), input("B", vec![single])]);
    let row = &c.rows[0];
    assert_eq!(row.members[0].as_ref().map(|m| m.percentiles_from), Some(PercentileSource::MergedHistograms));
    let brute = recorded(&runs.concat());
    for (m, p) in
        [(Metric::P50Ns, 50.0), (Metric::P99Ns, 99.0), (Metric::P999Ns, 99.9), (Metric::P9999Ns, 99.99)]
    {
        assert_eq!(value(row, m, 0), brute.percentile_ns(p) as f64, "{}", m.label());
    }
    assert!(value(row, Metric::P99Ns, 0) > 4_900_000.0, "not the median of the repeats' p99");
    // The repeats' own p99s still show the noise.
    let p99 = metric(row, Metric::P99Ns).values[0].clone().expect("a value");
    assert_eq!(p99.repeats.len(), 3);
    assert!(p99.repeats.iter().filter(|&&ns| ns < 200_000.0).count() == 2);
    // The mean is that of all the I/Os.
    assert!((value(row, Metric::MeanNs, 0) - brute.mean_ns()).abs() < 1e-6);
    assert!(PERCENTILES.contains(&99.99));
}

#[test]
fn without_histograms_percentiles_are_the_median_of_the_repeats_and_say_so() {
    let runs =
        [latencies(100, 100_000, 0, 0), latencies(100, 300_000, 0, 0), latencies(100, 200_000, 50, 900_000)];
    let points: Vec<Point> =
        runs.iter().enumerate().map(|(i, l)| fio(point(i as u32, "p", 1000.0, l, None))).collect();
    let c = compare(&[input("#7", points), input("#8", vec![flat(0, "p", 1000.0, 100_000)])]);
    let row = &c.rows[0];
    assert_eq!(row.members[0].as_ref().map(|m| m.percentiles_from), Some(PercentileSource::MedianOfRepeats));
    // p50 of each repeat: 100us, 300us, 900us (half of the third took 900us).
    let p50s: Vec<f64> = runs.iter().map(|l| recorded(l).percentile_ns(50.0) as f64).collect();
    let mut sorted = p50s.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(value(row, Metric::P50Ns, 0), sorted[1]);
    let text = compare_text(&c);
    assert!(text.contains("percentiles of #7 are the median of the repeats"), "{text}");
    // fio measured no CPU: shown as missing, and not compared.
    assert!(metric(row, Metric::CpuUsPerIo).values[0].is_none());
    assert!(metric(row, Metric::CpuUsPerIo).vs_baseline[1].is_none());
    assert!(text.contains("CPU/I/O not compared"), "{text}");
}

#[test]
fn a_damaged_histogram_falls_back_to_the_median_with_a_note() {
    let mut points: Vec<Point> = (0..2).map(|i| flat(i, "p", 1000.0, 100_000)).collect();
    if let Some(read) = points[1].histograms.as_mut().and_then(|h| h.read.as_mut()) {
        read.hdr = "not base64!".into();
    }
    let c = compare(&[input("A", points), input("B", vec![flat(0, "p", 1000.0, 100_000)])]);
    assert_eq!(
        c.rows[0].members[0].as_ref().map(|m| m.percentiles_from),
        Some(PercentileSource::MedianOfRepeats)
    );
    assert!(c.notes.iter().any(|n| n.starts_with("A p (seq 1): a histogram is damaged")), "{:?}", c.notes);
}

#[test]
fn a_side_without_io_compares_what_it_can() {
    let mut idle = point(0, "p", 0.0, &[], None);
    idle.summary.total.iops = 0.0;
    let c = compare(&[input("A", vec![flat(0, "p", 1000.0, 100_000)]), input("B", vec![idle.clone()])]);
    let row = &c.rows[0];
    let iops = vs(row, Metric::Iops, 1);
    assert_eq!((iops.pct, iops.outcome), (-100.0, Outcome::Worse));
    for m in [Metric::MeanNs, Metric::P50Ns, Metric::P9999Ns, Metric::CpuUsPerIo] {
        assert!(metric(row, m).values[1].is_none(), "{}", m.label());
        assert!(metric(row, m).vs_baseline[1].is_none(), "{}", m.label());
    }
    let text = compare_text(&c);
    assert!(text.contains("-100.0% worse"), "{text}");
    // With the idle side first there is nothing to be relative to.
    let c = compare(&[input("B", vec![idle]), input("A", vec![flat(0, "p", 1000.0, 100_000)])]);
    assert!(metric(&c.rows[0], Metric::Iops).vs_baseline[1].is_none());
    assert!(compare_text(&c).contains("IOPS not compared"));
}

/// Two points the user named, one each, of one workload at different loads, are compared: with
/// a warning that says the loads.
#[test]
fn one_point_each_at_different_loads_pairs_with_a_warning() {
    let mut other = flat(0, "p", 1000.0, 100_000);
    other.summary.qd = 16;
    other.summary.workers = 4;
    let c = compare(&[input("A", vec![flat(0, "p", 900.0, 100_000)]), input("B", vec![other])]);
    assert_eq!(c.sides[1].matched_by, Some(MatchedBy::Single));
    assert_eq!(c.rows[0].warnings, ["not the same load for B: QD 32 x 1 vs QD 16 x 4"]);
    let text = compare_text(&c);
    assert!(text.contains("warning: not the same load for B: QD 32 x 1 vs QD 16 x 4"), "{text}");
    assert!(text.contains("one point each, at different loads"), "{text}");
    let c = compare(&[
        input("A", vec![flat(0, "p", 900.0, 100_000)]),
        input("B", vec![flat(0, "p", 1000.0, 100_000)]),
    ]);
    assert!(c.rows[0].warnings.is_empty());
}

/// A rate asked is part of the load: a ramp's steps pair step by step.
#[test]
fn a_rate_asked_is_part_of_the_load() {
    let step = |seq: u32, rate: u64, iops: f64| {
        let mut point = flat(seq, &format!("{rate} IOPS"), iops, 10_000);
        point.spec = serde_json::json!({ "groups": [{ "rate": { "iops": rate } }] });
        point
    };
    let c = compare(&[
        input("#1", vec![step(0, 1000, 1000.0), step(1, 2000, 2000.0)]),
        input("#2", vec![step(0, 2000, 1900.0), step(1, 4000, 3000.0)]),
    ]);
    assert_eq!(c.rows.len(), 1);
    assert_eq!(value(&c.rows[0], Metric::Iops, 1), 1900.0);
    assert_eq!(c.rows[0].members[1].as_ref().and_then(|m| m.rate_iops), Some(2000));
    assert!(
        c.unmatched.iter().any(|u| u.why.contains("not at QD 32 x 1 at 4,000 IOPS asked")),
        "{:?}",
        c.unmatched
    );
}

#[test]
fn the_summary_over_many_points_is_the_geometric_mean() {
    let a = input("A", vec![at_qd(0, 1, 100.0), at_qd(1, 2, 100.0)]);
    let b = input("B", vec![at_qd(0, 1, 110.0), at_qd(1, 2, 121.0)]);
    let c = compare(&[a, b]);
    let iops = &c.summaries[0].metrics[0];
    assert_eq!((iops.metric, iops.points), (Metric::Iops, 2));
    let expected = ((1.1f64 * 1.21).sqrt() - 1.0) * 100.0;
    assert!((iops.change_pct.expect("compared") - expected).abs() < 1e-9);
    assert!(
        c.summaries[0].text.starts_with("B vs A: IOPS +15.4% over 2 points (better at 2); mean"),
        "{}",
        c.summaries[0].text
    );
}

/// Issue 30: `compare`'s closing line ranked two devices by points another load disturbed.
/// Such a row is shown, and left out of the closing line, which says so.
#[test]
fn the_summary_leaves_out_points_another_load_disturbed_and_says_how_many() {
    let disturbed = |mut point: Point| {
        let cause = iolab_stats::result::Bottleneck::OtherLoad;
        point.verdict = Some(iolab_stats::result::Verdict::of(cause, "Another load.".into(), vec![]));
        point
    };
    let a = input("A", vec![at_qd(0, 1, 100.0), at_qd(1, 2, 100.0)]);
    let b = input("B", vec![at_qd(0, 1, 110.0), disturbed(at_qd(1, 2, 50.0))]);
    let c = compare(&[a, b]);
    assert_eq!(c.rows.len(), 2, "the disturbed row is shown");
    let summary = &c.summaries[0];
    assert_eq!((summary.metrics[0].points, summary.left_out), (1, 1));
    assert!(summary.text.starts_with("B vs A: IOPS +10.0% better;"), "{}", summary.text);
    assert!(
        summary.text.ends_with("; 1 point left out: another load or a stolen CPU disturbed it"),
        "{}",
        summary.text
    );
}

/// Issue 36: "#5 vs #4: IOPS -17.1% worse over 8 points" hid that #5 won 6 of the 8. The
/// closing line counts each way, and the conclusion says it load by load.
#[test]
fn the_summary_counts_the_points_each_side_won() {
    let base: Vec<f64> = vec![100.0, 100.0, 100.0, 100.0, 100.0, 100.0, 1000.0, 1000.0];
    let side: Vec<f64> = vec![105.0, 105.0, 105.0, 105.0, 105.0, 105.0, 300.0, 300.0];
    let sweep = |label: &str, iops: &[f64]| {
        input(label, iops.iter().enumerate().map(|(i, &v)| at_qd(i as u32, 1 << i, v)).collect())
    };
    let c = compare(&[sweep("#4", &base), sweep("#5", &side)]);
    let iops = &c.summaries[0].metrics[0];
    assert_eq!((iops.better, iops.worse, iops.equal), (6, 2, 0));
    assert!(iops.change_pct.is_some_and(|p| p < 0.0), "the geometric mean is worse");
    let text = compare_text(&c);
    assert!(text.contains("#5 vs #4: IOPS -23.2% over 8 points (better at 6, worse at 2); mean"), "{text}");
    assert!(
        text.contains(
            "#4 is best, 1,000 IOPS at QD 64 x 1 (p99 10.0us, limit not judged); 3.3x the IOPS of #5's best"
        ),
        "{text}"
    );
    assert!(text.contains("At the 8 loads both ran, #5 had more IOPS than #4 at 6, fewer at 2."), "{text}");
}

/// The conclusion names the best side at each workload, its load and what limited it, and the
/// runner-up, with the difference judged against the noise.
#[test]
fn the_conclusion_names_the_best_side_its_load_and_its_limit() {
    let judged = |mut point: Point, cause| {
        point.verdict = Some(iolab_stats::result::Verdict::of(cause, String::new(), vec![]));
        point
    };
    use iolab_stats::result::Bottleneck::{Concurrency, Device};
    let sweep = |label: &str, iops: &[f64; 3]| {
        let points = (0..3u32)
            .flat_map(|i| {
                (0..3).map(move |r| {
                    let spread = [0.99, 1.0, 1.01][r];
                    let cause = if i == 2 { Device } else { Concurrency };
                    judged(at_qd(i * 3 + r as u32, 1 << (2 * i), iops[i as usize] * spread), cause)
                })
            })
            .collect();
        input(label, points)
    };
    let c = compare(&[sweep("#12", &[1000.0, 3000.0, 5000.0]), sweep("#13", &[1200.0, 3600.0, 4000.0])]);
    assert_eq!(c.conclusions.len(), 1);
    let conclusion = &c.conclusions[0];
    assert!(
        conclusion.starts_with(
            "'randread 4KiB': #12 is best, 5,000 IOPS at QD 16 x 1 (p99 10.0us, limited by device); 25.0% more IOPS \
             than #13's best, 4,000 IOPS at QD 16 x 1 (p99 10.0us, limited by device); beyond noise (2.0%)."
        ),
        "{conclusion}"
    );
    assert!(
        conclusion.ends_with(
            "At the 3 loads both ran, #13 had more IOPS than #12 at 2, fewer at 1 (beyond noise: 2 and 1)."
        ),
        "{conclusion}"
    );
    assert!(compare_text(&c).contains(&format!("\nconclusion:\n  {conclusion}\n")));
}

#[test]
fn json_parses_back_with_the_schema_and_figures() {
    let c = compare(&[repeated("#12", &[1000.0, 1010.0, 990.0]), repeated("#13", &[1500.0, 1510.0, 1490.0])]);
    let json: serde_json::Value = serde_json::from_str(&compare_json(&c)).expect("the JSON parses");
    assert_eq!(json["schema"], COMPARE_SCHEMA);
    assert_eq!(json["sides"][1]["label"], "#13");
    assert_eq!(json["sides"][1]["matched_by"], "workload");
    let iops = &json["rows"][0]["metrics"][0];
    assert_eq!(iops["metric"], "iops");
    assert_eq!(iops["higher_is_better"], true);
    assert_eq!(iops["values"][1]["repeats"].as_array().map(Vec::len), Some(3));
    assert_eq!(iops["vs_baseline"][0], serde_json::Value::Null);
    assert_eq!(iops["vs_baseline"][1]["noise"], "beyond");
    assert_eq!(iops["vs_baseline"][1]["outcome"], "better");
    assert!((iops["vs_baseline"][1]["pct"].as_f64().expect("a number") - 50.0).abs() < 1e-9);
    assert_eq!(json["rows"][0]["metrics"][3]["metric"], "lat_ns");
    assert_eq!(json["rows"][0]["metrics"][6]["metric"], "p99_9_ns");
    assert_eq!(json["rows"][0]["members"][0]["percentiles_from"], "merged_histograms");
    assert!(json["summaries"][0]["text"].as_str().is_some_and(|t| t.starts_with("#13 vs #12: IOPS +50.0%")));
}

#[test]
fn text_is_an_aligned_table_naming_each_side() {
    let a = input("#12", vec![point(0, "qd32", 12_345.0, &[250_000; 100], Some(3.5))]);
    let b = input("#13", vec![point(0, "qd32", 13_580.0, &[200_000; 100], Some(3.0))]);
    let text = compare_text(&compare(&[a, b]));
    assert!(text.starts_with("comparison of 2 sides, each against #12\n"), "{text}");
    assert!(
        text.contains("#12  iolab, uring, randread 4KiB, QD 32 x 1 worker(s), /tmp/scratch; 1 point"),
        "{text}"
    );
    let table: Vec<&str> =
        text.lines().skip_while(|l| !l.starts_with("point qd32")).skip(1).take(9).collect();
    assert!(table[0].contains("#12") && table[0].contains("vs #12"), "{text}");
    let iops = table[1];
    assert!(iops.contains("12,345") && iops.contains("13,580") && iops.contains("+10.0% better"), "{text}");
    assert!(
        table[3].contains("250us") && table[3].contains("200us") && table[3].contains("-20.0% better"),
        "{text}"
    );
    assert!(table[8].contains("3.50us") && table[8].contains("-14.3% better"), "{text}");
    // Aligned: every value of a column ends at the same place.
    let end = |line: &str, cell: &str| line.find(cell).map(|i| i + cell.len());
    assert_eq!(end(table[1], "12,345"), end(table[2], "50.6"), "{text}");
    assert!(text.contains("#13 vs #12: IOPS +10.0% better; mean -20.0% better; p99 -20."), "{text}");
}

#[test]
fn too_few_sides_say_there_is_nothing_to_compare() {
    let c = compare(&[]);
    assert_eq!(c.notes, ["nothing to compare: no sides given"]);
    assert!(compare_text(&c).contains("nothing to compare"));
    let c = compare(&[input("#1", vec![flat(0, "p", 1.0, 1)])]);
    assert!(c.rows.is_empty() && c.summaries.is_empty());
    assert_eq!(c.notes, ["nothing to compare: one side only"]);
    let c = compare(&[input("#1", vec![flat(0, "p", 1.0, 1)]), input("#2", Vec::new())]);
    assert!(c.rows.is_empty());
    assert_eq!(c.unmatched.len(), 1);
    assert!(compare_text(&c).contains("#2  no points"));
}
