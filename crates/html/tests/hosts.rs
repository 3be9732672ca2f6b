//! The Hosts panel of a point run across a fleet: drawn from the fleet breakdown as iolab
//! serializes it (`iolab_stats::fleet`), host names escaped wherever they appear.

mod support;

use iolab_html::render;
use iolab_stats::fleet::{FleetReport, HostResult, HostStatus};
use iolab_stats::result::{
    Bottleneck, CpuReport, LatencySummary, OpSummary, Percentile, SeriesPoint, Verdict,
};
use support::iolab_run;

fn ops(iops: f64, p99_ns: u64) -> OpSummary {
    OpSummary {
        ios: (iops * 3.0) as u64,
        bytes: (iops * 3.0) as u64 * 4096,
        iops,
        mb_s: iops * 4096.0 / 1e6,
        mib_s: iops * 4096.0 / 1048576.0,
        latency: Some(LatencySummary {
            min_ns: 20_000,
            mean_ns: p99_ns as f64 / 3.0,
            stdev_ns: 1.0,
            max_ns: p99_ns * 5,
            percentiles: vec![Percentile { p: 50.0, ns: p99_ns / 4 }, Percentile { p: 99.0, ns: p99_ns }],
            within: Vec::new(),
            tail: None,
        }),
    }
}

fn series(iops: f64, seconds: usize) -> Vec<SeriesPoint> {
    (0..seconds)
        .map(|t| SeriesPoint {
            t_s: t as f64,
            duration_s: 1.0,
            iops: iops + 100.0 * t as f64,
            read_iops: iops,
            write_iops: 0.0,
            mb_s: iops * 4096.0 / 1e6,
            mean_ns: 100_000.0,
            p99_ns: 400_000,
        })
        .collect()
}

fn host(name: &str, hostname: &str, iops: f64) -> HostResult {
    HostResult {
        host: name.into(),
        hostname: hostname.into(),
        status: HostStatus::Ok,
        failure: None,
        start_offset_ns: 1_500_000,
        clock_offset_ns: -20_000,
        measured_s: 3.0,
        read: ops(iops, 800_000),
        write: ops(0.0, 0),
        total: ops(iops, 800_000),
        series: series(iops, 3),
        cpu: CpuReport { us_per_io: 4.25, ..Default::default() },
        errors: 0,
        devices: Vec::new(),
        machine: None,
        verdict: Some(Verdict::of(Bottleneck::SubmittingCpu, "a worker was 99% busy".into(), Vec::new())),
        link_mb_s: Some(1180.0),
    }
}

/// A stored run whose one point ran on two hosts, and a third that failed; names from the network.
fn fleet_run() -> iolab_store::StoredRun {
    let mut failed = host("10.0.0.3:7878", "<b>node-c</b>", 9000.0);
    failed.status = HostStatus::Failed;
    failed.failure = Some("connection refused <script>".into());
    failed.verdict = None;
    failed.total.latency = None;
    failed.series = series(9000.0, 2);
    let fleet = FleetReport {
        hosts: vec![
            host("10.0.0.1:7878", "node-a", 58_000.0),
            host("<img src=x onerror=alert(1)>", "node-&-b", 41_000.0),
            failed,
        ],
        start_skew_ns: 1_500_000,
        merge_latency_ms: 12.0,
        max_stream_lag_ms: 3.0,
    };
    let mut run = iolab_run(7, "run", "run.json");
    run.points.truncate(1);
    run.points[0].result["fleet"] = serde_json::to_value(&fleet).expect("serializes");
    run
}

#[test]
fn a_fleet_point_has_a_hosts_panel() {
    let html = render(&[fleet_run()]).expect("renders");
    let panel = html.split("<section class=\"hosts\">").nth(1).expect("a Hosts panel");
    let panel = panel.split("</section>").next().expect("closed");
    assert!(panel.contains("<h3>Hosts</h3>"));
    assert!(panel.contains("3 host(s), 1 failed (not merged); their windows opened up to 1.50ms apart."));
    // One row per host: numbered, with its figures, verdict and link.
    assert_eq!(panel.matches("<tr><td><span class=\"swatch\"").count(), 3);
    assert!(panel.contains("<td>10.0.0.1:7878</td><td>node-a</td><td class=\"\">ok</td><td class=\"num\">+1.50ms</td><td class=\"num\">58k</td>"), "{panel}");
    assert!(
        panel.contains("<td title=\"a worker was 99% busy\">submitting cpu</td><td class=\"num\">1180</td>")
    );
    assert!(panel.contains("<td class=\"num\">4.25</td>"));
    // Both charts, each host named in the legend in its table order.
    for kind in ["hosts-iops", "hosts-bars"] {
        let chart = panel.split(&format!("data-chart=\"{kind}\"")).nth(1).expect(kind);
        let chart = chart.split("</figure>").next().expect("closed");
        assert!(chart.contains("1 10.0.0.1:7878 (node-a)"), "{kind}");
        assert!(chart.contains("3 10.0.0.3:7878 (&lt;b&gt;node-c&lt;/b&gt;)"), "{kind}");
    }
    assert!(panel.contains("58k IOPS, p99 800 µs"), "the bar legend gives IOPS and p99");
}

#[test]
fn host_names_and_failures_are_escaped() {
    let html = render(&[fleet_run()]).expect("renders");
    assert!(!html.contains("<img") && !html.contains("<b>") && !html.contains("<script"));
    assert!(html.contains("<td>&lt;img src=x onerror=alert(1)&gt;</td><td>node-&amp;-b</td>"));
    assert!(html.contains("failed: connection refused &lt;script&gt;"));
    assert!(
        html.contains("2 &lt;img src=x onerror=alert(1)&gt; (node-&amp;-b)"),
        "escaped in the charts too"
    );
}

#[test]
fn a_point_without_a_fleet_has_no_panel() {
    let run = iolab_run(7, "run", "run.json");
    assert!(!render(&[run]).expect("renders").contains("class=\"hosts\""));
}
