//! Tests of the fleet merge against a brute-force recorder.
//!
//! Three hosts each record their own I/Os (a fast host, a slow one with a long tail, a third
//! spread over decades), in two groups and three intervals, as an agent would; every I/O also
//! goes into one recorder of the whole fleet and into a sorted list of raw latencies. Each host's
//! result then travels as the wire carries it (encoded histograms, JSON) before it is merged.

use iolab_spec::{JobSpec, Nanos};
use iolab_stats::encoded::EncodedHistograms;
use iolab_stats::fleet::HostStatus;
use iolab_stats::result::{
    Bottleneck, CpuReport, DeviceActivity, ErrorReport, GroupResult, IoErrorRecord, JobResult, QueueInfo,
    RateReport, SeriesPoint, StopReason, TargetResult, Verdict,
};
use iolab_stats::threads::{ThreadClass, ThreadClassCpu};
use iolab_stats::{IntervalStats, OpStats, PERCENTILES};

use crate::merge::{merge, FinishedHost, HostOutcome, HostPart, MergeError};
use crate::protocol::AgentResult;

const INTERVALS: usize = 3;
const GROUPS: usize = 2;
const BLOCK: u64 = 4096;
/// When the fleet's measured window opened, on the coordinator's clock.
const T0: u64 = 1_700_000_000_000_000_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// Uniform in 0..1.
    fn unit(&mut self) -> f64 {
        self.next() as f64 / (1u64 << 31) as f64
    }
}

/// How a host's latencies (ns) are distributed.
#[derive(Clone, Copy)]
enum Shape {
    /// 40-160 us.
    Fast,
    /// 0.2-2 ms, and one I/O in 400 takes 20-80 ms.
    SlowWithTail,
    /// Log-uniform over 10 us - 100 ms.
    Decades,
}

impl Shape {
    fn sample(self, rng: &mut Rng) -> u64 {
        match self {
            Shape::Fast => 40_000 + rng.next() % 120_000,
            Shape::SlowWithTail if rng.next() % 400 == 0 => 20_000_000 + rng.next() % 60_000_000,
            Shape::SlowWithTail => 200_000 + rng.next() % 1_800_000,
            Shape::Decades => (1e4 * 1e4f64.powf(rng.unit())) as u64,
        }
    }
}

/// Everything every host recorded, as one recorder would have.
#[derive(Default)]
struct Fleet {
    all: IntervalStats,
    groups: [IntervalStats; GROUPS],
    intervals: [IntervalStats; INTERVALS],
    raw: Vec<u64>,
}

/// One host's own recording, before it becomes a result.
struct Recorded {
    groups: [IntervalStats; GROUPS],
    intervals: [IntervalStats; INTERVALS],
}

fn record(shape: Shape, seed: u64, ios: usize, fleet: &mut Fleet) -> Recorded {
    let mut rng = Rng(seed);
    let mut own = Recorded { groups: Default::default(), intervals: Default::default() };
    for i in 0..ios {
        let ns = shape.sample(&mut rng);
        let g = (rng.next() % GROUPS as u64) as usize;
        let interval = i * INTERVALS / ios;
        let write = rng.next() % 10 < 3;
        for stats in [
            &mut own.groups[g],
            &mut own.intervals[interval],
            &mut fleet.all,
            &mut fleet.groups[g],
            &mut fleet.intervals[interval],
        ] {
            if write { &mut stats.write } else { &mut stats.read }.record(ns, BLOCK);
        }
        fleet.raw.push(ns);
    }
    own
}

fn spec() -> JobSpec {
    let mut job =
        iolab_spec::resolve(None, &iolab_spec::defaults()).expect("the defaults resolve").jobs.remove(0);
    let mut second = job.groups[0].clone();
    second.name = "g2".into();
    job.groups.push(second);
    job
}

fn verdict(cause: Bottleneck) -> Verdict {
    Verdict::of(cause, format!("{} on its own", cause.name()), Vec::new())
}

/// The result an agent would hand over for `own`, measured over `measured_s`, its window
/// opening at `start` on its own clock.
fn agent_result(own: &Recorded, measured_s: f64, start: u64, job: &JobSpec) -> AgentResult {
    let slo = &job.slo;
    let mut all = IntervalStats::default();
    own.groups.iter().for_each(|g| all.merge(g));
    let interval_s = measured_s / INTERVALS as f64;
    let series: Vec<SeriesPoint> = own
        .intervals
        .iter()
        .enumerate()
        .map(|(i, s)| s.point(Nanos((i as f64 * interval_s * 1e9) as u64), Nanos((interval_s * 1e9) as u64)))
        .collect();
    let groups: Vec<GroupResult> = own
        .groups
        .iter()
        .enumerate()
        .map(|(g, stats)| GroupResult {
            name: job.groups[g].name.clone(),
            targets: vec![TargetResult {
                path: format!("/data/f{g}"),
                device: Some("nvme0n1".into()),
                in_memory: false,
                read: stats.read.summary(measured_s, slo),
                write: stats.write.summary(measured_s, slo),
                total: stats.combined().summary(measured_s, slo),
            }],
            stripe_bytes: None,
            access: "4KiB random 70% read".into(),
            engine: "uring".into(),
            engine_setup: vec!["single_issuer".into(), "fixed_files".into()],
            direct: true,
            slots: None,
            qd: 32,
            workers: 1,
            threads: 1,
            cpus: Vec::new(),
            read: stats.read.summary(measured_s, slo),
            write: stats.write.summary(measured_s, slo),
            total: stats.combined().summary(measured_s, slo),
            series: series.clone(),
            rate: None,
            replay: None,
            blocks: None,
            data: None,
            histograms: stats.clone(),
        })
        .collect();
    let ios = all.ios();
    let result = JobResult {
        name: job.name.clone(),
        spec: job.clone(),
        stop_reason: StopReason::Runtime,
        measured_s,
        ramp_s: 1.0,
        window_start_unix_ns: start,
        groups,
        read: all.read.summary(measured_s, slo),
        write: all.write.summary(measured_s, slo),
        total: all.combined().summary(measured_s, slo),
        series,
        cpu: CpuReport {
            user_s: 1.0,
            system_s: 2.0,
            us_per_io: 3e6 / ios as f64,
            machine_busy_pct: vec![40.0, 30.0],
            threads: vec![ThreadClassCpu {
                class: ThreadClass::Worker,
                threads: 2,
                user_s: 1.0,
                system_s: 2.0,
                busiest_thread_pct: 60.0,
                runqueue_wait_s: 0.0,
                busiest_demand_pct: 60.0,
            }],
            unattributed_s: 0.0,
            lane_waits: Some(iolab_stats::lane_waits::LaneWaits {
                samples: 100,
                running: 40,
                sleeping: vec![iolab_stats::lane_waits::WaitChannel {
                    function: "io_cqring_wait".into(),
                    samples: 60,
                }],
                watched_ns: 2_000_000_000,
                wanted_ns: 900_000_000,
            }),
            io_wq_waits: None,
        },
        errors: ErrorReport {
            count: 1,
            first: vec![IoErrorRecord {
                group: "g1".into(),
                target: "/data/f0".into(),
                op: "read".into(),
                offset: 4096,
                len: 4096,
                errno: 5,
                message: "Input/output error (os error 5)".into(),
            }],
            stuck: None,
            engine: None,
        },
        notes: vec!["io_uring with fixed files".into()],
        slots: None,
        machine: None,
        devices: vec![DeviceActivity {
            device: "nvme0n1".into(),
            reads: 1,
            writes: 1,
            read_bytes: BLOCK,
            write_bytes: BLOCK,
            iops: 1.0,
            util_pct: 97.0,
            avg_queue: 60.0,
            read_await_us: None,
            write_await_us: None,
            queue: QueueInfo::default(),
        }],
        verdict: verdict(Bottleneck::Device),
        fleet: None,
        histograms: all.clone(),
        verify: None,
        trial: None,
        disturbed_attempts: Vec::new(),
    };
    AgentResult {
        histograms: EncodedHistograms::encode(&result.histograms),
        groups: result.groups.iter().map(|g| EncodedHistograms::encode(&g.histograms)).collect(),
        intervals: own.intervals.iter().map(EncodedHistograms::encode).collect(),
        result,
    }
}

/// The agent's result as the coordinator gets it: through JSON, histograms decoded.
fn over_the_wire(agent: &AgentResult) -> FinishedHost {
    let json = serde_json::to_string(agent).expect("serializes");
    let back: AgentResult = serde_json::from_str(&json).expect("parses");
    FinishedHost::decode(back).expect("decodes")
}

fn finished(host: &str, clock_offset_ns: i64, agent: &AgentResult) -> HostPart {
    HostPart {
        host: host.into(),
        hostname: format!("node-{host}"),
        clock_offset_ns,
        outcome: HostOutcome::Finished(Box::new(over_the_wire(agent))),
    }
}

fn failed(host: &str) -> HostPart {
    let point = |t_s: f64, iops: f64| SeriesPoint {
        t_s,
        duration_s: 1.0,
        iops,
        read_iops: iops,
        write_iops: 0.0,
        mb_s: iops * BLOCK as f64 / 1e6,
        mean_ns: 100_000.0,
        p99_ns: 300_000,
    };
    HostPart {
        host: host.into(),
        hostname: format!("node-{host}"),
        clock_offset_ns: 0,
        outcome: HostOutcome::Failed {
            reason: "connection refused".into(),
            live_series: vec![point(0.0, 9000.0), point(1.0, 11_000.0)],
        },
    }
}

/// Three finished hosts (started 0, 2 and 1 ms after the earliest, with clocks 0, +5 and -3 ms
/// off the coordinator's) and a fourth that failed; the brute-force fleet; the hosts' results.
fn fleet_of_four() -> (JobSpec, Vec<HostPart>, Fleet, Vec<AgentResult>) {
    let job = spec();
    let mut fleet = Fleet::default();
    let ms = 1_000_000u64;
    let hosts = [
        (Shape::Fast, 40_000, 3.000, T0, 0i64),
        (Shape::SlowWithTail, 15_000, 3.004, T0 + 7 * ms, 5_000_000),
        (Shape::Decades, 25_000, 2.998, T0 - 2 * ms, -3_000_000),
    ];
    let agents: Vec<AgentResult> = hosts
        .iter()
        .enumerate()
        .map(|(i, &(shape, ios, measured_s, start, _))| {
            let own = record(shape, 100 + i as u64, ios, &mut fleet);
            agent_result(&own, measured_s, start, &job)
        })
        .collect();
    fleet.raw.sort_unstable();
    let mut parts: Vec<HostPart> = ["h1", "h2", "h3"]
        .iter()
        .zip(&agents)
        .zip(&hosts)
        .map(|((name, agent), h)| finished(name, h.4, agent))
        .collect();
    parts.insert(2, failed("hx"));
    (job, parts, fleet, agents)
}

#[test]
fn merged_latencies_are_those_of_every_io_together() {
    let (job, parts, fleet, _) = fleet_of_four();
    let merged = merge(&job, &parts, &[None, Some(1180.0), None, None]).expect("merges");
    let slo = &job.slo;
    let union = fleet.all.combined();
    for (what, got, want) in [
        ("read", &merged.read, &fleet.all.read),
        ("write", &merged.write, &fleet.all.write),
        ("total", &merged.total, &union),
    ] {
        assert_eq!((got.ios, got.bytes), (want.ios(), want.bytes()), "{what}");
        assert_eq!(got.latency, want.latency_summary(slo), "{what}: percentiles, min, max, mean, stdev");
    }
    assert_eq!(merged.histograms.read.histogram(), fleet.all.read.histogram());
    assert_eq!(merged.histograms.write.moments(), fleet.all.write.moments());

    // Every percentile, to 99.9999, within 0.1% of the exact order statistic of the raw values.
    let latency = merged.total.latency.as_ref().expect("I/Os");
    let raw = &fleet.raw;
    assert_eq!((latency.min_ns, latency.max_ns), (raw[0], raw[raw.len() - 1]));
    let exact_mean = raw.iter().map(|&v| v as f64).sum::<f64>() / raw.len() as f64;
    assert!((latency.mean_ns - exact_mean).abs() < 1e-6 * exact_mean);
    assert_eq!(latency.percentiles.len(), PERCENTILES.len());
    for (p, got) in PERCENTILES.iter().zip(&latency.percentiles) {
        assert_eq!(got.p, *p);
        let rank = ((p / 100.0) * raw.len() as f64).ceil() as usize - 1;
        let exact = raw[rank] as f64;
        let error = (got.ns as f64 - exact).abs() / exact;
        assert!(error <= 0.001, "p{p}: {} vs exact {exact}", got.ns);
    }
    // The slow hosts' tails are the fleet's: its p99.9 lies beyond 20 ms, where the fast host has nothing.
    assert!(latency.percentiles[3].ns > 20_000_000, "{:?}", latency.percentiles);
}

#[test]
fn rates_are_the_sum_of_each_hosts_own() {
    let (job, parts, _, agents) = fleet_of_four();
    let merged = merge(&job, &parts, &[]).expect("merges");
    let sum = |pick: fn(&AgentResult) -> f64| agents.iter().map(pick).sum::<f64>();
    assert!((merged.total.iops - sum(|a| a.result.total.iops)).abs() < 1e-6);
    assert!((merged.read.mb_s - sum(|a| a.result.read.mb_s)).abs() < 1e-9);
    assert!((merged.write.mib_s - sum(|a| a.result.write.mib_s)).abs() < 1e-9);
    assert!((merged.measured_s - 3.0006666).abs() < 1e-6, "the mean of the finished hosts'");
    assert_eq!(merged.total.ios, agents.iter().map(|a| a.result.total.ios).sum::<u64>(), "hx left out");
}

#[test]
fn groups_merge_exactly_and_list_each_hosts_targets() {
    let (job, parts, fleet, _) = fleet_of_four();
    let merged = merge(&job, &parts, &[]).expect("merges");
    assert_eq!(merged.groups.len(), GROUPS);
    for (g, group) in merged.groups.iter().enumerate() {
        assert_eq!(group.total.latency, fleet.groups[g].combined().latency_summary(&job.slo), "group {g}");
        assert_eq!(group.read.ios, fleet.groups[g].read.ios());
        let paths: Vec<&str> = group.targets.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(paths, [format!("h1:/data/f{g}"), format!("h2:/data/f{g}"), format!("h3:/data/f{g}")]);
        assert_eq!(group.targets[1].device.as_deref(), Some("h2:nvme0n1"));
        assert_eq!((group.qd, group.workers, group.threads), (32, 3, 3));
        assert_eq!(group.engine_setup, ["single_issuer", "fixed_files"]);
        assert_eq!(group.series.len(), INTERVALS);
    }
}

#[test]
fn each_interval_merges_exactly() {
    let (job, parts, fleet, agents) = fleet_of_four();
    let merged = merge(&job, &parts, &[]).expect("merges");
    assert_eq!(merged.series.len(), INTERVALS);
    for (i, point) in merged.series.iter().enumerate() {
        let union = fleet.intervals[i].combined();
        assert_eq!(point.p99_ns, union.percentile_ns(99.0), "interval {i}");
        assert_eq!(point.mean_ns, union.mean_ns(), "interval {i}");
        let iops: f64 = agents.iter().map(|a| a.result.series[i].iops).sum();
        assert!((point.iops - iops).abs() < 1e-6);
        assert_eq!(point.t_s, agents[0].result.series[i].t_s, "timed as the first host's");
    }
}

#[test]
fn the_fleet_report_has_every_host_its_start_and_its_link() {
    let (job, parts, _, agents) = fleet_of_four();
    let merged = merge(&job, &parts, &[None, Some(1180.0), None, None]).expect("merges");
    let fleet = merged.fleet.as_ref().expect("a fleet report");
    let names: Vec<&str> = fleet.hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(names, ["h1", "h2", "hx", "h3"]);
    assert_eq!(fleet.start_skew_ns, 2_000_000);
    let offsets: Vec<u64> = fleet.hosts.iter().map(|h| h.start_offset_ns).collect();
    assert_eq!(offsets, [0, 2_000_000, 0, 1_000_000]);
    assert_eq!(merged.window_start_unix_ns, T0, "the earliest, on the coordinator's clock");
    assert_eq!(fleet.hosts[1].link_mb_s, Some(1180.0));
    assert_eq!(fleet.hosts[1].total, agents[1].result.total);
    assert_eq!(fleet.hosts[1].clock_offset_ns, 5_000_000);
    assert_eq!((fleet.merge_latency_ms, fleet.max_stream_lag_ms), (0.0, 0.0));

    let hx = &fleet.hosts[2];
    assert_eq!(hx.status, HostStatus::Failed);
    assert_eq!(hx.failure.as_deref(), Some("connection refused"));
    assert_eq!(hx.series.len(), 2);
    assert_eq!((hx.total.iops, hx.total.ios, hx.verdict.clone()), (10_000.0, 20_000, None));

    // Measured and merged, not judged (issue 33): the fleet's verdict is judged after the
    // merged result is kept (analysis' fleet_verdict_tests hold its rules); each host's is its
    // agent's.
    assert_eq!(merged.verdict, Verdict::not_judged());
    assert_eq!(fleet.hosts[0].verdict.as_ref().map(|v| v.cause), Some(Bottleneck::Device));
}

#[test]
fn cpu_errors_devices_and_notes_are_the_fleets() {
    let (job, parts, _, _) = fleet_of_four();
    let merged = merge(&job, &parts, &[]).expect("merges");
    assert_eq!((merged.cpu.user_s, merged.cpu.system_s), (3.0, 6.0));
    assert!((merged.cpu.us_per_io - 9e6 / merged.total.ios as f64).abs() < 1e-9);
    assert_eq!(merged.cpu.machine_busy_pct.len(), 6);
    assert_eq!(merged.cpu.threads[0].threads, 6);
    let waits = merged.cpu.lane_waits.as_ref().expect("the lanes' samples");
    assert_eq!((waits.samples, waits.running, waits.sleeping[0].samples), (300, 120, 180));
    assert_eq!((waits.watched_ns, waits.wanted_ns), (6_000_000_000, 2_700_000_000));
    assert_eq!(merged.errors.count, 3);
    let targets: Vec<&str> = merged.errors.first.iter().map(|e| e.target.as_str()).collect();
    assert_eq!(targets, ["h1:/data/f0", "h2:/data/f0", "h3:/data/f0"]);
    let devices: Vec<&str> = merged.devices.iter().map(|d| d.device.as_str()).collect();
    assert_eq!(devices, ["h1:nvme0n1", "h2:nvme0n1", "h3:nvme0n1"]);
    assert_eq!(merged.notes[0], "io_uring with fixed files", "once, not per host");
    assert_eq!(merged.notes.len(), 2);
    assert!(merged.notes[1].starts_with("fleet of 4 hosts (h1, h2, hx, h3): "), "{}", merged.notes[1]);
    assert!(merged.notes[1].ends_with("up to 2.00ms apart; not merged (failed): hx"), "{}", merged.notes[1]);
    assert_eq!((merged.name.as_str(), merged.stop_reason), (job.name.as_str(), StopReason::Runtime));
}

#[test]
fn a_hosts_stop_reason_other_than_runtime_is_the_fleets() {
    let (job, mut parts, _, _) = fleet_of_four();
    if let HostOutcome::Finished(host) = &mut parts[3].outcome {
        host.result.stop_reason = StopReason::IoError;
    }
    assert_eq!(merge(&job, &parts, &[]).expect("merges").stop_reason, StopReason::IoError);
}

#[test]
fn open_loop_groups_sum_their_schedules() {
    let (job, mut parts, _, _) = fleet_of_four();
    let rate = |scheduled: u64, completed: u64, lag: u64| {
        Some(RateReport {
            target_iops: 1000.0,
            arrival: iolab_spec::Arrival::Uniform,
            scheduled_ios: scheduled,
            completed_ios: completed,
            achieved_iops: completed as f64 / 3.0,
            shortfall_pct: 0.0,
            sustained: true,
            max_lag_ns: lag,
            response: None,
        })
    };
    let reports = [rate(3000, 3000, 1_000), rate(3000, 2900, 5_000), rate(3000, 3000, 2_000)];
    let mut response = OpStats::default();
    for (part, report) in
        parts.iter_mut().filter(|p| matches!(p.outcome, HostOutcome::Finished(_))).zip(reports)
    {
        let HostOutcome::Finished(host) = &mut part.outcome else { continue };
        let group = &mut host.result.groups[0];
        group.rate = report;
        let mut own = OpStats::default();
        own.record(300_000 + response.ios() * 1000, BLOCK);
        response.merge(&own);
        group.histograms.response = Some(own);
    }
    let merged = merge(&job, &parts, &[]).expect("merges");
    let report = merged.groups[0].rate.as_ref().expect("open loop");
    assert_eq!((report.target_iops, report.scheduled_ios, report.completed_ios), (3000.0, 9000, 8900));
    assert_eq!(report.max_lag_ns, 5_000);
    assert!((report.shortfall_pct - 100.0 / 90.0).abs() < 1e-9);
    assert!(!report.sustained, "8900 of 9000 is under 99%");
    assert!((report.achieved_iops - 8900.0 / 3.0).abs() < 1e-9);
    assert_eq!(report.response, response.latency_summary(&job.slo));
    assert!(merged.groups[1].rate.is_none());
}

#[test]
fn no_finished_host_is_an_error() {
    let job = spec();
    let err = merge(&job, &[failed("h1"), failed("h2")], &[]).expect_err("nothing to merge");
    assert_eq!(
        err,
        MergeError::NoHostFinished("h1 failed: connection refused; h2 failed: connection refused".into())
    );
    assert!(err.to_string().contains("check the hosts and rerun"));
    assert_eq!(
        merge(&job, &[], &[]).expect_err("no hosts"),
        MergeError::NoHostFinished("no host was given".into())
    );
}

#[test]
fn a_host_that_ran_another_job_is_refused() {
    let (mut job, parts, _, _) = fleet_of_four();
    job.groups.truncate(1);
    assert_eq!(
        merge(&job, &parts, &[]).expect_err("groups differ"),
        MergeError::GroupsDiffer { host: "h1".into(), got: 2, expected: 1 }
    );
}

#[test]
fn a_result_missing_group_histograms_does_not_decode() {
    let (_, _, _, mut agents) = fleet_of_four();
    agents[0].groups.pop();
    let err = FinishedHost::decode(agents.remove(0)).expect_err("damaged");
    assert!(err.to_string().contains("1 group histograms for 2 groups"), "{err}");
}
