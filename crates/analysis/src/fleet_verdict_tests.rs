//! Tests of the fleet verdict on synthetic fleets.
//!
//! `fleet()` is four hosts that started within 2 ms of each other in a 10 s window, each 50k IOPS
//! of 4 KiB (205 MB/s) at 100 us mean, each judged "device" on its own, no link measured. Each
//! test changes the few figures of the situation it judges.

use iolab_stats::fleet::{FleetReport, HostResult, HostStatus};
use iolab_stats::result::{
    Bottleneck, CpuReport, DeviceActivity, LatencySummary, OpSummary, QueueInfo, Verdict,
};
use iolab_stats::threads::{ThreadClass, ThreadClassCpu};

use crate::fleet_verdict::judge_fleet;

const MEASURED_S: f64 = 10.0;

fn ops(iops: f64, mean_ns: f64) -> OpSummary {
    let ios = (iops * MEASURED_S) as u64;
    OpSummary {
        ios,
        bytes: ios * 4096,
        iops,
        mb_s: iops * 4096.0 / 1e6,
        mib_s: iops * 4096.0 / (1u64 << 20) as f64,
        latency: Some(LatencySummary {
            min_ns: 10_000,
            mean_ns,
            stdev_ns: mean_ns / 3.0,
            max_ns: 10 * mean_ns as u64,
            percentiles: Vec::new(),
            within: Vec::new(),
            tail: None,
        }),
    }
}

fn verdict(cause: Bottleneck, summary: &str) -> Option<Verdict> {
    Some(Verdict::of(cause, summary.into(), Vec::new()))
}

fn device(util_pct: f64) -> DeviceActivity {
    DeviceActivity {
        device: "nvme0n1".into(),
        reads: 500_000,
        writes: 0,
        read_bytes: 500_000 * 4096,
        write_bytes: 0,
        iops: 50_000.0,
        util_pct,
        avg_queue: 4.0,
        read_await_us: Some(80.0),
        write_await_us: None,
        queue: QueueInfo {
            nr_requests: Some(1023),
            hw_queue_depth: Some(1023),
            hw_queues: Some(8),
            scheduler: Some("none".into()),
            rotational: Some(false),
            ..QueueInfo::default()
        },
    }
}

fn host(name: &str, offset_ns: u64) -> HostResult {
    HostResult {
        host: name.into(),
        hostname: format!("node-{name}"),
        status: HostStatus::Ok,
        failure: None,
        start_offset_ns: offset_ns,
        clock_offset_ns: 0,
        measured_s: MEASURED_S,
        read: ops(50_000.0, 100_000.0),
        write: ops(0.0, 0.0),
        total: ops(50_000.0, 100_000.0),
        series: Vec::new(),
        cpu: CpuReport {
            user_s: 1.0,
            system_s: 2.0,
            us_per_io: 6.0,
            machine_busy_pct: vec![30.0, 20.0],
            threads: vec![ThreadClassCpu {
                class: ThreadClass::Worker,
                threads: 1,
                user_s: 1.0,
                system_s: 2.0,
                busiest_thread_pct: 30.0,
                runqueue_wait_s: 0.0,
                busiest_demand_pct: 30.0,
            }],
            unattributed_s: 0.0,
            lane_waits: None,
            io_wq_waits: None,
        },
        errors: 0,
        machine: None,
        devices: vec![device(97.0)],
        verdict: verdict(Bottleneck::Device, "nvme0n1 was busy 97% of the window."),
        link_mb_s: None,
    }
}

fn fleet() -> FleetReport {
    FleetReport {
        hosts: vec![host("h1", 0), host("h2", 2_000_000), host("h3", 500_000), host("h4", 1_000_000)],
        start_skew_ns: 2_000_000,
        merge_latency_ms: 0.0,
        max_stream_lag_ms: 0.0,
    }
}

#[test]
fn hosts_that_agree_give_their_cause_and_the_slowest_is_named() {
    let mut report = fleet();
    report.hosts[1].total.iops = 41_000.0;
    report.hosts[3].verdict = verdict(Bottleneck::Concurrency, "raise --qd");
    let verdict = judge_fleet(&report, MEASURED_S);
    assert_eq!(verdict.cause, Bottleneck::Device);
    assert!(
        verdict
            .summary
            .starts_with("Device on 3 of 4 hosts (h2 slowest: 41k IOPS vs 48k mean). On h2: nvme0n1"),
        "{}",
        verdict.summary
    );
    assert!(verdict.evidence[0].starts_with("h1 (node-h1): 50,000 IOPS, 205 MB/s, started +0ns, device"));
    assert!(verdict.evidence.iter().any(|l| l.starts_with("start skew 2.00ms (0.02% of the 10.0 s window)")));
}

#[test]
fn a_tie_goes_to_the_slowest_host() {
    let mut report = fleet();
    report.hosts.truncate(2);
    report.hosts[0].verdict = verdict(Bottleneck::SubmittingCpu, "a worker was 99% busy");
    report.hosts[0].total.iops = 30_000.0;
    let verdict = judge_fleet(&report, MEASURED_S);
    assert_eq!(verdict.cause, Bottleneck::SubmittingCpu);
    assert!(
        verdict.summary.contains("on 1 of 2 hosts (h1 slowest: 30k IOPS vs 40k mean)"),
        "{}",
        verdict.summary
    );
}

#[test]
fn skew_beyond_five_percent_of_the_window_is_the_coordinator() {
    let mut report = fleet();
    report.start_skew_ns = 600_000_000;
    let verdict = judge_fleet(&report, MEASURED_S);
    assert_eq!(verdict.cause, Bottleneck::Coordinator);
    assert!(verdict.summary.starts_with("Hosts started up to 600ms apart (6% of the 10.0 s window): the coordinator could not start them together"), "{}", verdict.summary);
    // 4% of the window is together enough; over a second never is.
    report.start_skew_ns = 400_000_000;
    assert_eq!(judge_fleet(&report, MEASURED_S).cause, Bottleneck::Device);
    report.start_skew_ns = 1_100_000_000;
    assert_eq!(judge_fleet(&report, 60.0).cause, Bottleneck::Coordinator);
}

#[test]
fn a_late_live_stream_is_the_coordinator() {
    let mut report = fleet();
    report.max_stream_lag_ms = 2500.0;
    let verdict = judge_fleet(&report, MEASURED_S);
    assert_eq!(verdict.cause, Bottleneck::Coordinator);
    assert!(verdict.summary.contains("fell behind reading the hosts' live figures (up to 2.5 s late)"));
    assert!(verdict.evidence.iter().any(|l| l == "live figures arrived up to 2500 ms late"));
    report.max_stream_lag_ms = 1500.0;
    assert_eq!(judge_fleet(&report, MEASURED_S).cause, Bottleneck::Device);
}

#[test]
fn storage_traffic_near_the_link_is_the_network() {
    let mut report = fleet();
    report.hosts[1].total.mb_s = 1150.0;
    report.hosts[1].link_mb_s = Some(1180.0);
    report.hosts[2].link_mb_s = Some(10_000.0);
    let verdict = judge_fleet(&report, MEASURED_S);
    assert_eq!(verdict.cause, Bottleneck::Network);
    assert_eq!(
        verdict.summary,
        "Host h2 moved 1,150 MB/s over a link measured at 1,180 MB/s (97%): the network, not its storage, was the limit."
    );
    assert!(verdict.evidence[1].contains(", link 1,180 MB/s,"));
    // 80% of the link is not "near" it.
    report.hosts[1].total.mb_s = 944.0;
    assert_eq!(judge_fleet(&report, MEASURED_S).cause, Bottleneck::Device);
}

/// An idle host, twice as slow as its peers: the time went outside the machine.
fn waiting(report: &mut FleetReport) {
    let h = &mut report.hosts[2];
    h.verdict = verdict(Bottleneck::Concurrency, "Nothing was saturated");
    h.devices = vec![device(20.0)];
    h.cpu.threads[0].busiest_thread_pct = 12.0;
    h.total = ops(20_000.0, 250_000.0);
}

#[test]
fn an_idle_host_with_high_latency_waited_on_the_network() {
    let mut report = fleet();
    waiting(&mut report);
    let verdict = judge_fleet(&report, MEASURED_S);
    assert_eq!(verdict.cause, Bottleneck::Network, "{}", verdict.summary);
    assert!(verdict
        .summary
        .starts_with("Host h3's agent waited: mean latency 250us, 2.5x the other hosts' median"));
}

#[test]
fn the_waiting_rule_needs_every_piece_of_evidence() {
    type Change = fn(&mut HostResult);
    let cases: [(&str, Change); 6] = [
        ("a busy device", |h| h.devices[0].util_pct = 60.0),
        ("a busy core", |h| h.cpu.machine_busy_pct[1] = 70.0),
        ("no CPU figures", |h| h.cpu = CpuReport::default()),
        ("a saturated cause", |h| h.verdict = verdict(Bottleneck::Queue, "queue")),
        ("latency near its peers'", |h| h.total = ops(45_000.0, 150_000.0)),
        ("no latency", |h| h.total.latency = None),
    ];
    for (what, change) in cases {
        let mut report = fleet();
        waiting(&mut report);
        change(&mut report.hosts[2]);
        assert_ne!(judge_fleet(&report, MEASURED_S).cause, Bottleneck::Network, "{what}");
    }
    // One host has no peer to be slow against.
    let mut report = fleet();
    waiting(&mut report);
    report.hosts = vec![report.hosts[2].clone()];
    assert_eq!(judge_fleet(&report, MEASURED_S).cause, Bottleneck::Concurrency);
}

#[test]
fn failed_hosts_are_in_the_evidence_and_out_of_the_judgement() {
    let mut report = fleet();
    let h3 = &mut report.hosts[2];
    h3.status = HostStatus::Failed;
    h3.failure = Some("connection refused".into());
    h3.verdict = None;
    h3.total.iops = 0.0;
    let verdict = judge_fleet(&report, MEASURED_S);
    assert_eq!(verdict.cause, Bottleneck::Device);
    assert!(verdict.summary.starts_with("Device on 3 of 3 hosts"), "{}", verdict.summary);
    assert!(verdict.evidence.iter().any(|l| l == "h3 failed: connection refused; not merged"));

    for h in &mut report.hosts {
        h.status = HostStatus::Failed;
    }
    let verdict = judge_fleet(&report, MEASURED_S);
    assert_eq!(verdict.cause, Bottleneck::Undetermined);
    assert!(!verdict.evidence.iter().any(|l| l.starts_with("start skew")));
}

#[test]
fn a_kernel_thread_on_the_hosts_is_named_with_the_slowest_host() {
    // Each agent judges its own machine: two hosts whose dm-crypt thread was the wall.
    let mut report = fleet();
    report.hosts.truncate(3);
    report.hosts[1].total.iops = 30_000.0;
    for h in [1, 2] {
        report.hosts[h].verdict = verdict(
            Bottleneck::KernelThread,
            "dm-0's encryption thread kcryptd/253:0 ran at 100% of one core: dm-crypt, not the storage below it, is the limit.",
        );
    }
    let verdict = judge_fleet(&report, MEASURED_S);
    assert_eq!(verdict.cause, Bottleneck::KernelThread);
    assert!(
        verdict.summary.starts_with("Kernel thread on 2 of 3 hosts (h2 slowest")
            && verdict
                .summary
                .contains("On h2: dm-0's encryption thread kcryptd/253:0 ran at 100% of one core"),
        "{}",
        verdict.summary
    );
}
