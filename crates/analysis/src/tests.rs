//! Tests of the ladder and scale verdicts on synthetic results.
//!
//! `Synth` builds a `JobResult` from the few figures the analysis reads (IOPS, CPU per I/O and
//! its split by thread class, latency percentiles, core load, groups and what the kernel
//! granted), so each test states the situation it judges in a handful of numbers.

use iolab_spec::ladder::Rung;
use iolab_stats::result::{
    Bottleneck, CpuReport, ErrorReport, GroupResult, JobResult, LatencySummary, OpSummary, Percentile,
    QueueInfo, StopReason, TargetResult, Verdict,
};
use iolab_stats::threads::{ThreadClass, ThreadClassCpu};

use crate::ladder::{self, LadderRow, LadderSummary, RungOutcome};
use crate::scale::{self, ScaleSummary};
use crate::{cpu, ladder::NOISE_PCT};

/// Every synthetic job measured for this long.
const MEASURED_S: f64 = 10.0;
const BLOCK: u64 = 4096;

/// A synthetic job result, built from what the analysis reads.
struct Synth {
    iops: f64,
    /// Process CPU per I/O; the thread classes below are parts of it.
    cpu_us_per_io: f64,
    /// Process CPU seconds, overriding `cpu_us_per_io` (for jobs that did no I/O but used CPU).
    process_s: Option<f64>,
    p50_ns: u64,
    p99_ns: u64,
    classes: Vec<ThreadClassCpu>,
    machine_busy_pct: Vec<f64>,
    /// One group per target, with that target's IOPS; `None` gives one group with the job's.
    groups: Option<Vec<(String, f64)>>,
    engine_setup: Vec<String>,
}

impl Synth {
    fn new(iops: f64, cpu_us_per_io: f64) -> Self {
        Synth {
            iops,
            cpu_us_per_io,
            process_s: None,
            p50_ns: 20_000,
            p99_ns: 80_000,
            classes: Vec::new(),
            machine_busy_pct: vec![30.0, 25.0, 20.0, 25.0],
            groups: None,
            engine_setup: Vec::new(),
        }
    }

    /// All targets at once: one group per target, the job's IOPS their sum.
    fn together(targets: &[(&str, f64)], cpu_us_per_io: f64) -> Self {
        let mut synth = Synth::new(targets.iter().map(|t| t.1).sum(), cpu_us_per_io);
        synth.groups = Some(targets.iter().map(|&(path, iops)| (path.to_string(), iops)).collect());
        synth
    }

    /// One target alone.
    fn alone(path: &str, iops: f64, cpu_us_per_io: f64) -> Self {
        Synth::together(&[(path, iops)], cpu_us_per_io)
    }

    fn latency_us(mut self, p50_us: f64, p99_us: f64) -> Self {
        self.p50_ns = (p50_us * 1e3).round() as u64;
        self.p99_ns = (p99_us * 1e3).round() as u64;
        self
    }

    fn process_s(mut self, seconds: f64) -> Self {
        self.process_s = Some(seconds);
        self
    }

    /// `threads` threads of `class` spending `us_per_io` of CPU per I/O of the job, the busiest
    /// of them `busiest_pct` busy.
    fn class(mut self, class: ThreadClass, threads: u32, us_per_io: f64, busiest_pct: f64) -> Self {
        let seconds = us_per_io * self.ios() as f64 / 1e6;
        // Workers run user code too; io_uring's kernel threads only system time.
        let user_s = if class == ThreadClass::Worker { seconds * 0.25 } else { 0.0 };
        self.classes.push(ThreadClassCpu {
            class,
            threads,
            user_s,
            system_s: seconds - user_s,
            busiest_thread_pct: busiest_pct,
            runqueue_wait_s: 0.0,
            busiest_demand_pct: busiest_pct,
        });
        self
    }

    fn machine(mut self, cores_busy_pct: &[f64]) -> Self {
        self.machine_busy_pct = cores_busy_pct.to_vec();
        self
    }

    fn setup(mut self, granted: &[&str]) -> Self {
        self.engine_setup = granted.iter().map(|s| s.to_string()).collect();
        self
    }

    fn ios(&self) -> u64 {
        (self.iops * MEASURED_S).round() as u64
    }

    fn build(self) -> JobResult {
        let ios = self.ios();
        let process_s = self.process_s.unwrap_or(self.cpu_us_per_io * ios as f64 / 1e6);
        let total = op_summary(self.iops, self.p50_ns, self.p99_ns);
        let groups = match &self.groups {
            None => vec![group("g1", &[("/dev/target0".to_string(), self.iops)], &self)],
            Some(targets) => targets
                .iter()
                .enumerate()
                .map(|(i, target)| group(&format!("t{}", i + 1), std::slice::from_ref(target), &self))
                .collect(),
        };
        JobResult {
            name: "synthetic".into(),
            spec: spec(),
            stop_reason: StopReason::Runtime,
            measured_s: MEASURED_S,
            ramp_s: 2.0,
            window_start_unix_ns: 0,
            fleet: None,
            groups,
            read: total.clone(),
            write: op_summary(0.0, 0, 0),
            total,
            series: Vec::new(),
            cpu: CpuReport {
                user_s: process_s * 0.2,
                system_s: process_s * 0.8,
                us_per_io: if ios > 0 { process_s * 1e6 / ios as f64 } else { 0.0 },
                machine_busy_pct: self.machine_busy_pct,
                threads: self.classes,
                unattributed_s: 0.0,
                lane_waits: None,
                io_wq_waits: None,
            },
            errors: ErrorReport::default(),
            notes: Vec::new(),
            slots: None,
            machine: None,
            devices: Vec::new(),
            verdict: Verdict::not_judged(),
            histograms: Default::default(),
            verify: None,
            trial: None,
            disturbed_attempts: Vec::new(),
        }
    }
}

fn spec() -> iolab_spec::JobSpec {
    iolab_spec::resolve(None, &iolab_spec::defaults()).expect("the defaults resolve").jobs.remove(0)
}

/// Random reads of `BLOCK` bytes at `iops` for `MEASURED_S`; no latency when no I/O.
fn op_summary(iops: f64, p50_ns: u64, p99_ns: u64) -> OpSummary {
    let ios = (iops * MEASURED_S).round() as u64;
    let mb_s = iops * BLOCK as f64 / 1e6;
    OpSummary {
        ios,
        bytes: ios * BLOCK,
        iops,
        mb_s,
        mib_s: iops * BLOCK as f64 / (1u64 << 20) as f64,
        latency: (ios > 0).then(|| LatencySummary {
            min_ns: p50_ns / 4,
            mean_ns: p50_ns as f64 * 1.1,
            stdev_ns: p50_ns as f64 / 3.0,
            max_ns: p99_ns * 10,
            percentiles: vec![
                Percentile { p: 50.0, ns: p50_ns },
                Percentile { p: 90.0, ns: (p50_ns + p99_ns) / 2 },
                Percentile { p: 99.0, ns: p99_ns },
            ],
            within: Vec::new(),
            tail: None,
        }),
    }
}

fn group(name: &str, targets: &[(String, f64)], synth: &Synth) -> GroupResult {
    let iops = targets.iter().map(|t| t.1).sum();
    let total = op_summary(iops, synth.p50_ns, synth.p99_ns);
    GroupResult {
        name: name.into(),
        targets: targets
            .iter()
            .map(|(path, iops)| {
                let total = op_summary(*iops, synth.p50_ns, synth.p99_ns);
                TargetResult {
                    path: path.clone(),
                    device: None,
                    in_memory: false,
                    read: total.clone(),
                    write: op_summary(0.0, 0, 0),
                    total,
                }
            })
            .collect(),
        stripe_bytes: None,
        access: "randread".into(),
        engine: "uring".into(),
        engine_setup: synth.engine_setup.clone(),
        direct: true,
        slots: None,
        qd: 32,
        workers: 1,
        threads: 1,
        cpus: Vec::new(),
        read: total.clone(),
        write: op_summary(0.0, 0, 0),
        total,
        series: Vec::new(),
        rate: None,
        replay: None,
        blocks: None,
        data: None,
        histograms: Default::default(),
    }
}

fn ran(rung: Rung, job: &JobResult) -> RungOutcome<'_> {
    RungOutcome { rung, result: Ok(job) }
}

fn skipped(rung: Rung, why: &str) -> RungOutcome<'static> {
    RungOutcome { rung, result: Err(why.to_string()) }
}

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0)
}

/// The finding that starts with `prefix`, or a failure listing every finding.
fn finding<'a>(verdict: &'a [String], prefix: &str) -> &'a str {
    verdict
        .iter()
        .find(|w| w.starts_with(prefix))
        .unwrap_or_else(|| panic!("no finding starting with {prefix:?} in {verdict:#?}"))
}

fn mentions(verdict: &[String], needle: &str) -> bool {
    verdict.iter().any(|w| w.contains(needle))
}

/// No figure of a summary may be NaN or infinite, nor print as one.
fn assert_ladder_finite(summary: &LadderSummary) {
    for row in &summary.rows {
        let LadderRow { iops, cpu_us_per_io, worker_us_per_io, io_wq_us_per_io, sqpoll_us_per_io, .. } = row;
        for (what, value) in [
            ("iops", iops),
            ("cpu_us_per_io", cpu_us_per_io),
            ("worker_us_per_io", worker_us_per_io),
            ("io_wq_us_per_io", io_wq_us_per_io),
            ("sqpoll_us_per_io", sqpoll_us_per_io),
        ] {
            assert!(value.is_finite(), "{} {what} = {value}", row.name);
        }
    }
    assert_words_finite(&summary.verdict);
}

fn assert_scale_finite(summary: &ScaleSummary) {
    for row in &summary.rows {
        for (what, value) in [
            ("alone_iops", row.alone_iops),
            ("together_iops", row.together_iops),
            ("kept_pct", row.kept_pct),
            ("alone_cpu_us_per_io", row.alone_cpu_us_per_io),
        ] {
            assert!(value.is_finite(), "{} {what} = {value}", row.target);
        }
    }
    for (what, value) in [
        ("sum_of_singles_iops", summary.sum_of_singles_iops),
        ("together_iops", summary.together_iops),
        ("efficiency_pct", summary.efficiency_pct),
        ("together_cpu_us_per_io", summary.together_cpu_us_per_io),
    ] {
        assert!(value.is_finite(), "{what} = {value}");
    }
    assert_words_finite(&summary.verdict);
}

fn assert_words_finite(verdict: &[String]) {
    for words in verdict {
        let lower = words.to_lowercase();
        assert!(!lower.contains("nan") && !lower.contains("inf%") && !lower.contains("inf "), "{words}");
        // f64::MAX and friends print as hundreds of digits.
        assert!(!words.contains("0000000000"), "{words}");
    }
}

// ---------------------------------------------------------------------------------------------
// The ladder
// ---------------------------------------------------------------------------------------------

#[test]
fn ladder_names_the_cheapest_and_the_fastest_rung_with_their_figures() {
    let psync =
        Synth::new(90_000.0, 1.5).class(ThreadClass::Worker, 32, 1.4, 60.0).latency_us(11.0, 30.0).build();
    let aio = Synth::new(160_000.0, 1.8).class(ThreadClass::Worker, 1, 1.7, 88.0).build();
    let uring = Synth::new(150_000.0, 2.1).class(ThreadClass::Worker, 1, 2.0, 90.0).build();
    let summary =
        ladder::summarize(&[ran(Rung::Psync, &psync), ran(Rung::Aio, &aio), ran(Rung::Uring, &uring)]);

    assert_eq!(
        summary.verdict[0],
        "cheapest on this target: psync at 1.50 us of CPU per I/O (90,000 IOPS); fastest: aio at 160,000 IOPS (1.80 us per I/O)"
    );
    let row = &summary.rows[0];
    assert_eq!(
        (row.rung, row.name.as_str(), row.what.as_str()),
        (Rung::Psync, "psync", Rung::Psync.describe())
    );
    assert_eq!(row.skipped, None);
    assert_eq!((row.p50_ns, row.p99_ns), (11_000, 30_000));
    assert!(close(row.iops, 90_000.0), "{row:?}");
    assert!(close(row.cpu_us_per_io, 1.5), "{row:?}");
    assert!(close(row.worker_us_per_io, 1.4), "{row:?}");
    assert_eq!((row.io_wq_us_per_io, row.sqpoll_us_per_io, row.io_wq_threads), (0.0, 0.0, 0));
    assert_eq!(summary.rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["psync", "aio", "uring"]);
    // No io-wq anywhere: no punting finding; no uring+flags: no flags finding.
    assert_eq!(summary.verdict.len(), 1, "{:#?}", summary.verdict);
    assert_ladder_finite(&summary);
}

#[test]
fn ladder_reports_io_uring_punting_against_the_cheapest_inline_interface() {
    // zram: psync and aio complete inline; every io_uring request goes to an io-wq thread.
    let psync =
        Synth::new(400_000.0, 1.5).class(ThreadClass::Worker, 32, 1.5, 70.0).latency_us(2.0, 6.0).build();
    let aio =
        Synth::new(380_000.0, 1.8).class(ThreadClass::Worker, 1, 1.8, 85.0).latency_us(2.5, 8.0).build();
    let uring = Synth::new(300_000.0, 4.0)
        .class(ThreadClass::Worker, 1, 1.0, 40.0)
        .class(ThreadClass::IoWq, 4, 3.0, 70.0)
        .latency_us(45.0, 120.0)
        .build();
    let flags = Synth::new(310_000.0, 3.6)
        .class(ThreadClass::Worker, 1, 0.9, 40.0)
        .class(ThreadClass::IoWq, 4, 2.7, 70.0)
        .latency_us(44.0, 110.0)
        .setup(&["single_issuer", "defer_taskrun"])
        .build();
    let summary = ladder::summarize(&[
        ran(Rung::Psync, &psync),
        ran(Rung::Aio, &aio),
        ran(Rung::Uring, &uring),
        ran(Rung::UringFlags, &flags),
    ]);

    let row = &summary.rows[2];
    assert!(close(row.io_wq_us_per_io, 3.0) && close(row.cpu_us_per_io, 4.0), "{row:?}");
    assert_eq!(row.io_wq_threads, 4);
    assert_eq!(
        finding(&summary.verdict, "io_uring punted"),
        "io_uring punted requests to io-wq kernel worker threads in 2 of 2 io_uring rungs: \
         in uring they ran 4 io-wq thread(s) costing 3.00 of its 4.00 us of CPU per I/O (75%), \
         and p50 latency was 45.0 us; psync completes inline here at 1.50 us per I/O and p50 2.0 us \
         (the target cannot take io_uring's inline async path, e.g. zram or buffered I/O that misses the page cache)"
    );
    // Punting comes right after the cheapest/fastest line: it is the most important finding.
    assert!(summary.verdict[1].starts_with("io_uring punted"), "{:#?}", summary.verdict);
    assert!(summary.verdict[0].starts_with("cheapest on this target: psync at 1.50 us"));
    assert_ladder_finite(&summary);
}

#[test]
fn ladder_punting_without_an_inline_rung_still_gives_the_cost() {
    let uring =
        Synth::new(100_000.0, 5.0).class(ThreadClass::IoWq, 2, 2.0, 50.0).latency_us(30.0, 90.0).build();
    let summary = ladder::summarize(&[skipped(Rung::Psync, "not asked for"), ran(Rung::Uring, &uring)]);
    let words = finding(&summary.verdict, "io_uring punted");
    assert!(words.contains(
        "in 1 of 1 io_uring rungs: in uring they ran 2 io-wq thread(s) costing 2.00 of its 5.00 us"
    ));
    assert!(words.contains("(40%), and p50 latency was 30.0 us (the target"), "{words}");
    assert!(!words.contains("completes inline"), "{words}");
}

#[test]
fn ladder_says_nothing_of_punting_when_io_wq_is_tiny_or_absent() {
    // A loop device: io_uring's inline path works; io-wq threads barely show, or not at all.
    let psync = Synth::new(200_000.0, 2.0).class(ThreadClass::Worker, 32, 2.0, 50.0).build();
    let uring = Synth::new(260_000.0, 2.0)
        .class(ThreadClass::Worker, 1, 1.9, 80.0)
        .class(ThreadClass::IoWq, 1, 0.1, 1.0) // 5% of the rung's CPU
        .build();
    let flags =
        Synth::new(270_000.0, 1.9).class(ThreadClass::Worker, 1, 1.9, 80.0).setup(&["coop_taskrun"]).build();
    // io-wq time but no thread counted: not a punt either.
    let registered = Synth::new(280_000.0, 1.8).class(ThreadClass::IoWq, 0, 0.5, 0.0).build();
    let summary = ladder::summarize(&[
        ran(Rung::Psync, &psync),
        ran(Rung::Uring, &uring),
        ran(Rung::UringFlags, &flags),
        ran(Rung::UringRegistered, &registered),
    ]);
    assert!(!mentions(&summary.verdict, "punted"), "{:#?}", summary.verdict);
    assert!(!mentions(&summary.verdict, "io-wq"), "{:#?}", summary.verdict);
    assert_eq!(summary.rows[1].io_wq_threads, 1);
    assert!(close(summary.rows[1].io_wq_us_per_io, 0.1));
}

#[test]
fn ladder_punting_share_is_finite_when_process_cpu_is_missing() {
    // io-wq threads sampled but the process CPU read as zero: no "inf%" in the verdict.
    let uring = Synth::new(100_000.0, 0.0).class(ThreadClass::IoWq, 2, 2.0, 50.0).build();
    let summary = ladder::summarize(&[ran(Rung::Uring, &uring)]);
    assert_ladder_finite(&summary);
}

#[test]
fn ring_flags_change_is_reported_with_sign_and_direction() {
    let plain = Synth::new(100_000.0, 2.0).build();
    let better = Synth::new(112_000.0, 1.7).setup(&["single_issuer", "defer_taskrun"]).build();
    let summary = ladder::summarize(&[ran(Rung::Uring, &plain), ran(Rung::UringFlags, &better)]);
    assert_eq!(
        finding(&summary.verdict, "ring setup flags"),
        "ring setup flags (single_issuer+defer_taskrun): CPU per I/O -15% (better), IOPS +12% (better)"
    );

    let worse = Synth::new(90_000.0, 2.3).setup(&["coop_taskrun"]).build();
    let summary = ladder::summarize(&[ran(Rung::Uring, &plain), ran(Rung::UringFlags, &worse)]);
    assert_eq!(
        finding(&summary.verdict, "ring setup flags"),
        "ring setup flags (coop_taskrun): CPU per I/O +15% (worse), IOPS -10% (worse)"
    );

    // Mixed: cheaper but slower.
    let mixed = Synth::new(80_000.0, 1.5).setup(&["coop_taskrun"]).build();
    let summary = ladder::summarize(&[ran(Rung::Uring, &plain), ran(Rung::UringFlags, &mixed)]);
    assert_eq!(
        finding(&summary.verdict, "ring setup flags"),
        "ring setup flags (coop_taskrun): CPU per I/O -25% (better), IOPS -20% (worse)"
    );
}

#[test]
fn ring_flags_within_noise_are_no_measurable_difference() {
    assert_eq!(NOISE_PCT, 3.0, "the figures below sit either side of 3%");
    let plain = Synth::new(100_000.0, 2.0).build();
    let flags = Synth::new(97_500.0, 2.04).setup(&["single_issuer", "defer_taskrun", "sqpoll"]).build();
    let summary = ladder::summarize(&[ran(Rung::Uring, &plain), ran(Rung::UringFlags, &flags)]);
    assert_eq!(
        finding(&summary.verdict, "ring setup flags"),
        "ring setup flags (single_issuer+defer_taskrun): no measurable difference in CPU per I/O, \
         no measurable difference in IOPS"
    );

    // Just over the noise line is a difference.
    let flags = Synth::new(104_000.0, 2.0).setup(&["coop_taskrun"]).build();
    let summary = ladder::summarize(&[ran(Rung::Uring, &plain), ran(Rung::UringFlags, &flags)]);
    assert!(
        finding(&summary.verdict, "ring setup flags").ends_with("IOPS +4% (better)"),
        "{:#?}",
        summary.verdict
    );
}

#[test]
fn ring_flags_the_kernel_did_not_grant_are_not_credited_with_a_change() {
    // Without any flag granted, uring+flags ran the same plain ring as uring: a 10% gap between
    // the two runs is run-to-run variation, not the flags' doing.
    let plain = Synth::new(100_000.0, 2.0).build();
    let flags = Synth::new(110_000.0, 1.8).build();
    let summary = ladder::summarize(&[ran(Rung::Uring, &plain), ran(Rung::UringFlags, &flags)]);
    let words = finding(&summary.verdict, "ring setup flags");
    assert_eq!(
        words,
        "ring setup flags: none offered by this kernel, so uring+flags ran the same plain ring as uring; \
         any difference between the two is run-to-run variation"
    );
    assert!(!words.contains("better") && !words.contains("worse"), "{words}");
}

#[test]
fn registered_and_sqpoll_steps_are_described() {
    let flags = Synth::new(200_000.0, 2.0).setup(&["single_issuer", "defer_taskrun"]).build();
    let registered = Synth::new(220_000.0, 1.8)
        .setup(&["single_issuer", "defer_taskrun", "fixed_files", "fixed_buffers"])
        .build();
    let sqpoll = Synth::new(240_000.0, 2.6)
        .class(ThreadClass::Worker, 1, 1.0, 60.0)
        .class(ThreadClass::Sqpoll, 1, 1.6, 100.0)
        .setup(&["single_issuer", "sqpoll", "fixed_files", "fixed_buffers"])
        .build();
    let summary = ladder::summarize(&[
        ran(Rung::UringFlags, &flags),
        ran(Rung::UringRegistered, &registered),
        ran(Rung::UringSqpoll, &sqpoll),
    ]);
    assert_eq!(
        finding(&summary.verdict, "registered files"),
        "registered files and buffers: CPU per I/O -10% (better), IOPS +10% (better)"
    );
    assert_eq!(
        finding(&summary.verdict, "SQPOLL"),
        "SQPOLL: the polling thread spends 1.60 us per I/O (it spins for a whole core while busy); \
         total CPU per I/O +44% (worse), IOPS +9% (better)"
    );
    assert!(close(summary.rows[2].sqpoll_us_per_io, 1.6));
    assert_eq!(summary.rows[2].engine_setup, ["single_issuer", "sqpoll", "fixed_files", "fixed_buffers"]);
    // An SQPOLL thread at 100% is by design, not a punt and not a finding of its own.
    assert!(!mentions(&summary.verdict, "punted"));
}

#[test]
fn skipped_rung_is_a_row_and_a_finding() {
    let why = "no poll queues on /dev/nvme0n1 (load nvme with poll_queues=N)";
    let registered = Synth::new(500_000.0, 1.2).build();
    let summary =
        ladder::summarize(&[ran(Rung::UringRegistered, &registered), skipped(Rung::UringIopoll, why)]);
    let row = &summary.rows[1];
    assert_eq!((row.rung, row.name.as_str()), (Rung::UringIopoll, "uring+iopoll"));
    assert_eq!(row.skipped.as_deref(), Some(why));
    assert_eq!((row.iops, row.cpu_us_per_io, row.p50_ns, row.p99_ns), (0.0, 0.0, 0, 0));
    assert!(row.engine_setup.is_empty());
    assert_eq!(
        summary.verdict.last().map(String::as_str),
        Some(format!("uring+iopoll not measured: {why}").as_str())
    );
    // The skipped rung is neither cheapest (0 us) nor compared.
    assert!(summary.verdict[0].starts_with("cheapest on this target: uring+registered at 1.20 us"));
    assert_ladder_finite(&summary);
}

#[test]
fn ladder_with_nothing_run_has_a_single_finding() {
    let idle = Synth::new(0.0, 0.0).process_s(0.3).build();
    let summary = ladder::summarize(&[
        skipped(Rung::Psync, "not asked for"),
        ran(Rung::Uring, &idle),
        skipped(Rung::UringIopoll, "no poll queues"),
    ]);
    assert_eq!(summary.verdict, ["no rung completed any I/O; nothing to compare"]);
    assert_eq!(summary.rows.len(), 3);
    assert_eq!(summary.rows[1].cpu_us_per_io, 0.0, "no I/O, no CPU per I/O");
    assert_eq!((summary.rows[1].p50_ns, summary.rows[1].p99_ns), (0, 0), "no I/O, no latency");
    assert_ladder_finite(&summary);

    let empty = ladder::summarize(&[]);
    assert!(empty.rows.is_empty());
    assert_eq!(empty.verdict, ["no rung completed any I/O; nothing to compare"]);
}

#[test]
fn rung_without_io_is_neither_cheapest_nor_fastest() {
    // uring+sqpoll ran but completed nothing (its CPU per I/O is 0, which would otherwise win).
    let psync = Synth::new(50_000.0, 1.5).build();
    let aio = Synth::new(60_000.0, 1.7).build();
    let stalled = Synth::new(0.0, 0.0).process_s(10.0).class(ThreadClass::Sqpoll, 1, 0.0, 100.0).build();
    let summary = ladder::summarize(&[
        ran(Rung::Psync, &psync),
        ran(Rung::Aio, &aio),
        ran(Rung::UringSqpoll, &stalled),
    ]);
    assert_eq!(
        summary.verdict[0],
        "cheapest on this target: psync at 1.50 us of CPU per I/O (50,000 IOPS); fastest: aio at 60,000 IOPS (1.70 us per I/O)"
    );
    assert!(!mentions(&summary.verdict, "uring+sqpoll"), "{:#?}", summary.verdict);
    assert_ladder_finite(&summary);
}

#[test]
fn ladder_summary_serializes_to_json() {
    let psync = Synth::new(90_000.0, 1.5).build();
    let uring = Synth::new(100_000.0, 4.0).class(ThreadClass::IoWq, 3, 3.0, 60.0).setup(&[]).build();
    let summary = ladder::summarize(&[
        ran(Rung::Psync, &psync),
        ran(Rung::Uring, &uring),
        skipped(Rung::UringIopoll, "no poll queues"),
    ]);
    let json = serde_json::to_value(&summary).expect("serializes");
    let rows = json["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["rung"], "psync");
    assert_eq!(rows[0]["name"], "psync");
    assert_eq!(rows[0]["skipped"], serde_json::Value::Null);
    assert_eq!(rows[1]["io_wq_threads"], 3);
    assert!(rows[1]["io_wq_us_per_io"].as_f64().is_some_and(|v| close(v, 3.0)));
    assert_eq!(rows[2]["rung"], "uring_iopoll");
    assert_eq!(rows[2]["skipped"], "no poll queues");
    // Every figure is a number (serde_json writes NaN and infinities as null).
    for row in rows {
        for key in ["iops", "p50_ns", "p99_ns", "cpu_us_per_io", "worker_us_per_io", "io_wq_us_per_io"] {
            assert!(row[key].is_number(), "{key} of {row}");
        }
    }
    let verdict: Vec<String> = serde_json::from_value(json["verdict"].clone()).expect("verdict is strings");
    assert_eq!(verdict, summary.verdict);
}

// ---------------------------------------------------------------------------------------------
// Scaling
// ---------------------------------------------------------------------------------------------

const A: &str = "/dev/zram0";
const B: &str = "/dev/zram1";
const C: &str = "/dev/zram2";

#[test]
fn scale_efficiency_is_together_over_the_sum_of_singles() {
    let a = Synth::alone(A, 100_000.0, 2.0).build();
    let b = Synth::alone(B, 100_000.0, 2.0).build();
    let together = Synth::together(&[(A, 95_000.0), (B, 93_000.0)], 2.05).build();
    let summary = scale::summarize(&[&a, &b], &together);

    assert!(close(summary.sum_of_singles_iops, 200_000.0));
    assert!(close(summary.together_iops, 188_000.0));
    assert!(close(summary.efficiency_pct, 94.0), "{}", summary.efficiency_pct);
    assert!(close(summary.together_cpu_us_per_io, 2.05));
    let targets: Vec<&str> = summary.rows.iter().map(|r| r.target.as_str()).collect();
    assert_eq!(targets, [A, B]);
    assert!(close(summary.rows[0].kept_pct, 95.0) && close(summary.rows[1].kept_pct, 93.0));
    assert!(close(summary.rows[1].alone_cpu_us_per_io, 2.0));
    assert_eq!(
        summary.verdict,
        [
            "2 targets together gave 188000 IOPS, 94% of the sum of their singles (200000 IOPS)",
            "the targets scale: running them together costs little or nothing",
        ]
    );
    assert_scale_finite(&summary);
}

#[test]
fn scale_at_exactly_the_line_scales_and_just_below_does_not() {
    let a = Synth::alone(A, 100_000.0, 2.0).build();
    let b = Synth::alone(B, 100_000.0, 2.0).build();
    let at = Synth::together(&[(A, 90_000.0), (B, 90_000.0)], 2.0).build();
    assert!(mentions(&scale::summarize(&[&a, &b], &at).verdict, "the targets scale"));
    let below = Synth::together(&[(A, 89_000.0), (B, 89_000.0)], 2.0).build();
    let summary = scale::summarize(&[&a, &b], &below);
    assert!(!mentions(&summary.verdict, "the targets scale"), "{:#?}", summary.verdict);
    assert!(summary.verdict[0].contains("89% of the sum"), "{:#?}", summary.verdict);
}

#[test]
fn scale_stopped_at_the_cpu_when_every_core_is_busy() {
    let a = Synth::alone(A, 100_000.0, 2.0).build();
    let b = Synth::alone(B, 100_000.0, 2.0).build();
    let together = Synth::together(&[(A, 61_000.0), (B, 59_000.0)], 2.0).machine(&[99.0, 98.0]).build();
    let summary = scale::summarize(&[&a, &b], &together);
    assert_eq!(
        summary.verdict[0],
        "2 targets together gave 120000 IOPS, 60% of the sum of their singles (200000 IOPS)"
    );
    let busy = format!("{:.0}", (99.0 + 98.0) / 2.0);
    assert_eq!(
        finding(&summary.verdict, "scaling stopped"),
        format!("scaling stopped at the CPU: the machine's CPU: its 2 cores were {busy}% busy on average")
    );
    // With the CPU named as the limit, no "shared resource" guess.
    assert!(!mentions(&summary.verdict, "a resource they share"), "{:#?}", summary.verdict);
    assert_scale_finite(&summary);
}

#[test]
fn scale_names_a_saturated_submitting_thread() {
    let a = Synth::alone(A, 100_000.0, 2.0).class(ThreadClass::Worker, 1, 1.8, 60.0).build();
    let b = Synth::alone(B, 100_000.0, 2.0).class(ThreadClass::Worker, 1, 1.8, 60.0).build();
    let together = Synth::together(&[(A, 70_000.0), (B, 70_000.0)], 2.0)
        .class(ThreadClass::Worker, 2, 1.8, 97.0)
        .class(ThreadClass::Sqpoll, 1, 0.0, 100.0)
        .machine(&[50.0, 45.0, 10.0, 5.0])
        .build();
    let summary = scale::summarize(&[&a, &b], &together);
    assert_eq!(
        finding(&summary.verdict, "scaling stopped"),
        "scaling stopped at the CPU: a submitting thread: the busiest worker was 97% busy, a whole core"
    );
    assert_scale_finite(&summary);
}

#[test]
fn scale_says_when_a_target_was_cpu_bound_even_alone() {
    let a = Synth::alone(A, 100_000.0, 2.0).class(ThreadClass::Worker, 1, 1.8, 99.0).build();
    let b = Synth::alone(B, 100_000.0, 2.0).build();
    let together = Synth::together(&[(A, 60_000.0), (B, 60_000.0)], 2.0).build();
    let summary = scale::summarize(&[&a, &b], &together);
    assert!(!mentions(&summary.verdict, "scaling stopped"), "{:#?}", summary.verdict);
    let words = finding(&summary.verdict, "even alone");
    assert!(words.contains("the busiest worker was 99% busy"), "{words}");
}

#[test]
fn scale_names_the_target_that_lost_much_more_than_the_others() {
    let singles: Vec<JobResult> =
        [A, B, C].iter().map(|path| Synth::alone(path, 100_000.0, 2.0).build()).collect();
    let together = Synth::together(&[(A, 95_000.0), (B, 40_000.0), (C, 92_000.0)], 2.0).build();
    let summary = scale::summarize(&singles.iter().collect::<Vec<_>>(), &together);
    assert_eq!(
        summary.verdict[0],
        "3 targets together gave 227000 IOPS, 76% of the sum of their singles (300000 IOPS)"
    );
    assert_eq!(
        finding(&summary.verdict, B),
        "/dev/zram1 lost the most: it kept 40% of the IOPS it gave alone, the others up to 95%"
    );
    assert!(!mentions(&summary.verdict, "a resource they share"));
    assert_scale_finite(&summary);
}

#[test]
fn scale_even_losses_with_idle_cpu_point_at_a_shared_resource() {
    let a = Synth::alone(A, 100_000.0, 2.0).build();
    let b = Synth::alone(B, 100_000.0, 2.0).build();
    let together = Synth::together(&[(A, 60_000.0), (B, 58_000.0)], 2.0).machine(&[30.0, 25.0]).build();
    let summary = scale::summarize(&[&a, &b], &together);
    assert_eq!(
        summary.verdict,
        [
            "2 targets together gave 118000 IOPS, 59% of the sum of their singles (200000 IOPS)",
            "every target lost about the same share (each kept 58-60%) and no CPU was saturated: \
             a resource they share is the limit (the same backing device, bus or host path)",
        ]
    );
}

#[test]
fn scale_explains_a_together_run_heavy_in_io_wq() {
    let a = Synth::alone(A, 100_000.0, 4.0).build();
    let b = Synth::alone(B, 100_000.0, 4.0).build();
    let together = Synth::together(&[(A, 60_000.0), (B, 60_000.0)], 4.0)
        .class(ThreadClass::Worker, 2, 1.0, 50.0)
        .class(ThreadClass::IoWq, 8, 3.0, 60.0)
        .build();
    let summary = scale::summarize(&[&a, &b], &together);
    assert_eq!(
        finding(&summary.verdict, "8 io-wq kernel threads"),
        "8 io-wq kernel threads used 75% of the process's CPU together: io_uring punted requests on these \
         targets to kernel worker threads, and each punted I/O costs a thread hand-off"
    );

    // A trickle of io-wq time is not worth a sentence.
    let light =
        Synth::together(&[(A, 60_000.0), (B, 60_000.0)], 4.0).class(ThreadClass::IoWq, 1, 0.2, 2.0).build();
    assert!(!mentions(&scale::summarize(&[&a, &b], &light).verdict, "io-wq"));
}

#[test]
fn scale_cpu_per_io_rising_together_means_contention() {
    let a = Synth::alone(A, 100_000.0, 2.0).build();
    let b = Synth::alone(B, 100_000.0, 2.0).build();
    let together = Synth::together(&[(A, 60_000.0), (B, 60_000.0)], 2.6).build();
    let summary = scale::summarize(&[&a, &b], &together);
    assert_eq!(
        finding(&summary.verdict, "CPU per I/O rose"),
        "CPU per I/O rose from 2.00 us alone to 2.60 us together: the targets contend for a shared kernel path or lock"
    );

    // A rise under 15% is not called contention.
    let together = Synth::together(&[(A, 60_000.0), (B, 60_000.0)], 2.2).build();
    assert!(!mentions(&scale::summarize(&[&a, &b], &together).verdict, "contend"));
}

#[test]
fn scale_contention_compares_with_the_alone_cost_weighted_by_iops() {
    // A cheap slow target and a costly fast one: together, with no contention at all, the
    // cost per I/O is dominated by the fast one. An unweighted mean of the singles (3.00 us)
    // would call that a 55% rise.
    let a = Synth::alone(A, 10_000.0, 1.0).build();
    let b = Synth::alone(B, 100_000.0, 5.0).build();
    let unchanged = (6_000.0 * 1.0 + 60_000.0 * 5.0) / 66_000.0;
    let together = Synth::together(&[(A, 6_000.0), (B, 60_000.0)], unchanged).build();
    let summary = scale::summarize(&[&a, &b], &together);
    assert!(!mentions(&summary.verdict, "contend"), "{:#?}", summary.verdict);

    // A real rise is still seen, measured from the weighted cost (4.64 us).
    let together = Synth::together(&[(A, 6_000.0), (B, 60_000.0)], 6.0).build();
    let summary = scale::summarize(&[&a, &b], &together);
    assert_eq!(
        finding(&summary.verdict, "CPU per I/O rose"),
        "CPU per I/O rose from 4.64 us alone to 6.00 us together: the targets contend for a shared kernel path or lock"
    );
}

#[test]
fn scale_with_zero_iops_singles_does_not_panic_or_print_nonsense() {
    let a = Synth::alone(A, 0.0, 0.0).process_s(0.5).build();
    let b = Synth::alone(B, 0.0, 0.0).build();
    let together = Synth::together(&[(A, 0.0), (B, 0.0)], 0.0).build();
    let summary = scale::summarize(&[&a, &b], &together);
    assert_scale_finite(&summary);
    assert_eq!(summary.efficiency_pct, 0.0);
    assert!(summary.rows.iter().all(|r| r.kept_pct == 0.0));
    // Nothing was measured, so nothing is blamed.
    assert_eq!(
        summary.verdict,
        [
            "2 targets together gave 0 IOPS, 0% of the sum of their singles (0 IOPS)",
            "the targets alone completed no I/O, so there is nothing to compare the together run with",
        ]
    );

    // Singles with no I/O but a together run that did some.
    let together = Synth::together(&[(A, 50_000.0), (B, 50_000.0)], 2.0).build();
    let summary = scale::summarize(&[&a, &b], &together);
    assert_scale_finite(&summary);
    assert!(mentions(&summary.verdict, "nothing to compare"), "{:#?}", summary.verdict);

    // One single did no I/O: the other target is still judged, without a 0% "loss".
    let c = Synth::alone(C, 100_000.0, 2.0).build();
    let together = Synth::together(&[(A, 0.0), (C, 60_000.0)], 2.0).build();
    let summary = scale::summarize(&[&a, &c], &together);
    assert_scale_finite(&summary);
    assert!(!mentions(&summary.verdict, "lost the most"), "{:#?}", summary.verdict);
    assert!(!mentions(&summary.verdict, "a resource they share"), "{:#?}", summary.verdict);
    assert_eq!(
        finding(&summary.verdict, A),
        "/dev/zram0 completed no I/O alone, so what it kept together cannot be judged"
    );
    assert!(close(summary.efficiency_pct, 60.0));

    let empty = scale::summarize(&[], &Synth::together(&[], 0.0).build());
    assert!(empty.rows.is_empty());
    assert_scale_finite(&empty);
}

#[test]
fn scale_summary_serializes_to_json() {
    let a = Synth::alone(A, 100_000.0, 2.0).build();
    let b = Synth::alone(B, 80_000.0, 2.5).build();
    let together = Synth::together(&[(A, 70_000.0), (B, 50_000.0)], 2.4).build();
    let summary = scale::summarize(&[&a, &b], &together);
    let json = serde_json::to_value(&summary).expect("serializes");
    assert!(json["sum_of_singles_iops"].as_f64().is_some_and(|v| close(v, 180_000.0)));
    assert!(json["efficiency_pct"].as_f64().is_some_and(|v| close(v, 120_000.0 / 180_000.0 * 100.0)));
    assert!(json["together_cpu_us_per_io"].as_f64().is_some_and(|v| close(v, 2.4)));
    assert_eq!(json["rows"][1]["target"], B);
    assert!(json["rows"][1]["kept_pct"].as_f64().is_some_and(|v| close(v, 62.5)));
    assert!(json["rows"][1]["alone_cpu_us_per_io"].as_f64().is_some_and(|v| close(v, 2.5)));
    let verdict: Vec<String> = serde_json::from_value(json["verdict"].clone()).expect("verdict is strings");
    assert_eq!(verdict, summary.verdict);
    assert_eq!(
        verdict[0],
        "2 targets together gave 120000 IOPS, 67% of the sum of their singles (180000 IOPS)"
    );
}

// ---------------------------------------------------------------------------------------------
// Reading CPU figures
// ---------------------------------------------------------------------------------------------

#[test]
fn cpu_saturation_thresholds_and_what_does_not_count() {
    let job = |machine: &[f64], worker_pct: f64| {
        Synth::new(1000.0, 2.0).class(ThreadClass::Worker, 1, 1.0, worker_pct).machine(machine).build()
    };
    assert_eq!(cpu::saturation(&job(&[], 10.0)), None);
    assert_eq!(cpu::machine_busy_pct(&job(&[], 10.0)), 0.0);
    assert_eq!(cpu::saturation(&job(&[89.0, 89.0], 10.0)), None);
    assert_eq!(
        cpu::saturation(&job(&[90.0, 92.0], 10.0)).as_deref(),
        Some("the machine's CPU: its 2 cores were 91% busy on average")
    );
    assert_eq!(cpu::saturation(&job(&[20.0], 94.9)), None);
    assert_eq!(
        cpu::saturation(&job(&[20.0], 95.0)).as_deref(),
        Some("a submitting thread: the busiest worker was 95% busy, a whole core")
    );
    // A spinning SQPOLL thread says nothing about saturation.
    let sqpoll = Synth::new(1000.0, 2.0).class(ThreadClass::Sqpoll, 1, 1.0, 100.0).machine(&[30.0]).build();
    assert_eq!(cpu::saturation(&sqpoll), None);
    assert_eq!(cpu::busiest_pct(&sqpoll, ThreadClass::Worker), 0.0);
    assert_eq!(cpu::class_s(&sqpoll, ThreadClass::IoWq), (0.0, 0));
    let (seconds, threads) = cpu::class_s(&sqpoll, ThreadClass::Sqpoll);
    assert!(close(seconds, 1.0 * 10_000.0 / 1e6) && threads == 1);
    assert!(close(cpu::process_s(&sqpoll), 2.0 * 10_000.0 / 1e6));
}

// ---- sweeps ----

/// A device with 8 parallel channels and a 100 us service time at QD `qd`: IOPS grow with QD up
/// to 8, then latency does (Little's law).
fn channel_point(qd: u32, verdict: Bottleneck) -> JobResult {
    let service_us = 100.0;
    let iops = f64::from(qd.min(8)) / (service_us / 1e6);
    let mean_us = if qd <= 8 { service_us } else { f64::from(qd) * service_us / 8.0 };
    let mut job = Synth::new(iops, 2.0).latency_us(mean_us / 1.1, mean_us * 2.0).build();
    job.groups[0].qd = qd;
    job.verdict.cause = verdict;
    job
}

fn sweep_of(jobs: &[JobResult], names: &[String]) -> crate::sweep::SweepSummary {
    let points: Vec<crate::sweep::PointOutcome<'_>> = jobs
        .iter()
        .zip(names)
        .map(|(result, name)| crate::sweep::PointOutcome {
            name,
            curve: 0,
            curve_name: "",
            figures: crate::sweep::PointFigures::of(result),
            repeat_iops: vec![result.total.iops],
        })
        .collect();
    crate::sweep::summarize(iolab_spec::sweep::LoadAxis::Qd, &points)
}

#[test]
fn a_sweep_marks_the_knee_of_each_curve_and_the_saturation_past_it() {
    let qds = [1, 2, 4, 8, 16, 32, 64];
    let jobs: Vec<JobResult> = qds.iter().map(|&q| channel_point(q, Bottleneck::Device)).collect();
    let names: Vec<String> = qds.iter().map(|q| format!("qd {q}")).collect();
    let summary = sweep_of(&jobs, &names);
    let curve = &summary.curves[0];
    let spot = curve.sweet_spot.as_ref().expect("a sweet spot");
    assert!(spot.knee_found);
    assert_eq!(summary.rows[spot.row].qd, 8);
    assert_eq!(summary.rows[spot.row].outstanding, 8);
    let saturation = curve.saturation.as_deref().expect("saturated past the knee");
    assert!(saturation.contains("from 8 to 64 outstanding"), "{saturation}");
    assert!(saturation.contains("the device counters agree"), "{saturation}");
    let spot_words = finding(&summary.verdict, "sweet spot at qd 8");
    assert!(spot_words.contains("80,000 IOPS"), "{:?}", summary.verdict);
    // What limited the sweet spot itself (issue 36 item 1), from its row's verdict.
    let limit = format!("limited there by {}", summary.rows[spot.row].bottleneck.name());
    assert!(spot_words.contains(&limit), "{spot_words}");
    assert_words_finite(&summary.verdict);
}

/// Issue 30: "6 of 8 points disturbed, sweet spot printed as certain". A point another load
/// shared (here QD 8, the knee, and QD 16 with IOPS a neighbour lent it) is kept and marked,
/// but the sweet spot is found among the others.
#[test]
fn disturbed_points_are_kept_but_take_no_part_in_the_sweet_spot() {
    let qds = [1, 2, 4, 8, 16, 32, 64];
    let mut jobs: Vec<JobResult> = qds.iter().map(|&q| channel_point(q, Bottleneck::Device)).collect();
    jobs[3].verdict.cause = Bottleneck::OtherLoad;
    jobs[4].verdict.cause = Bottleneck::Steal;
    jobs[4].total.iops *= 3.0;
    let names: Vec<String> = qds.iter().map(|q| format!("qd {q}")).collect();
    let summary = sweep_of(&jobs, &names);
    assert_eq!(summary.rows.len(), 7, "every point is kept");
    let marked: Vec<u32> = summary.rows.iter().filter(|r| r.disturbed).map(|r| r.qd).collect();
    assert_eq!(marked, [8, 16]);
    let spot = summary.curves[0].sweet_spot.as_ref().expect("a sweet spot");
    assert!(!summary.rows[spot.row].disturbed, "{:?}", summary.rows[spot.row]);
    let left = finding(&summary.verdict, "2 of 7 points left out of the sweet spot");
    assert!(left.ends_with("qd 8, qd 16"), "{left}");

    // Every point disturbed: no sweet spot, and that is said.
    for job in &mut jobs {
        job.verdict.cause = Bottleneck::OtherLoad;
    }
    let summary = sweep_of(&jobs, &names);
    assert!(summary.curves[0].sweet_spot.is_none());
    assert!(mentions(&summary.verdict, "no sweet spot: every point was disturbed"), "{:?}", summary.verdict);
}

#[test]
fn the_curve_overrules_a_point_that_asks_for_more_load() {
    let qds = [4, 8, 16, 32];
    let jobs: Vec<JobResult> = qds.iter().map(|&q| channel_point(q, Bottleneck::Concurrency)).collect();
    let names: Vec<String> = qds.iter().map(|q| format!("qd {q}")).collect();
    let saturation = sweep_of(&jobs, &names).curves[0].saturation.clone().expect("saturated");
    assert!(saturation.contains("overruled by the curve"), "{saturation}");
}

#[test]
fn a_curve_still_climbing_has_no_saturation_and_no_knee() {
    let qds = [1, 2, 4, 8];
    let jobs: Vec<JobResult> = qds.iter().map(|&q| channel_point(q, Bottleneck::Concurrency)).collect();
    let names: Vec<String> = qds.iter().map(|q| format!("qd {q}")).collect();
    let summary = sweep_of(&jobs, &names);
    let spot = summary.curves[0].sweet_spot.as_ref().expect("best point");
    assert!(!spot.knee_found);
    assert_eq!(summary.rows[spot.row].qd, 8);
    assert!(summary.curves[0].saturation.is_none());
    assert!(mentions(&summary.verdict, "no knee in range"), "{:?}", summary.verdict);
}

#[test]
fn a_sweep_without_a_load_axis_names_no_sweet_spot() {
    let jobs = [channel_point(32, Bottleneck::Device), channel_point(32, Bottleneck::Device)];
    let names = ["read 100%".to_string(), "read 0%".to_string()];
    let points: Vec<crate::sweep::PointOutcome<'_>> = jobs
        .iter()
        .zip(&names)
        .map(|(result, name)| crate::sweep::PointOutcome {
            name,
            curve: 0,
            curve_name: "",
            figures: crate::sweep::PointFigures::of(result),
            repeat_iops: vec![result.total.iops],
        })
        .collect();
    let summary = crate::sweep::summarize(iolab_spec::sweep::LoadAxis::None, &points);
    assert!(summary.curves.iter().all(|c| c.sweet_spot.is_none()));
    assert!(mentions(&summary.verdict, "not a load curve"), "{:?}", summary.verdict);
}

#[test]
fn points_that_never_settled_are_named() {
    use crate::rounds::{SteadyRounds, Tracked};
    use crate::steady::SteadyRule;
    let jobs = [channel_point(1, Bottleneck::Device), channel_point(2, Bottleneck::Device)];
    let names = ["qd 1".to_string(), "qd 2".to_string()];
    let rule = SteadyRule { window: 2, max_range_pct: 5.0, max_slope_pct: 5.0, max_rounds: 3 };
    let mut settled = SteadyRounds::new(Tracked::Iops, rule);
    for _ in 0..2 {
        settled.add(&jobs[0]);
    }
    let mut restless = SteadyRounds::new(Tracked::Iops, rule);
    for job in [&jobs[0], &jobs[1], &jobs[0]] {
        restless.add(job);
    }
    let summary = crate::sweep::with_steady_rounds(sweep_of(&jobs, &names), vec![settled, restless]);
    assert!(
        mentions(&summary.verdict, "qd 2: steady state NOT reached after 3 rounds"),
        "{:?}",
        summary.verdict
    );
    assert!(mentions(&summary.verdict, "1 of 2 points reached steady state"), "{:?}", summary.verdict);
    assert!(!mentions(&summary.verdict, "qd 1: steady"), "{:?}", summary.verdict);
}

// ---- ramps ----

/// A level of a ramp: open loop at `asked` IOPS, `achieved`, response p99 `p99_us`.
fn level(asked: f64, achieved: f64, p99_us: f64, sustained: bool, machine_pct: f64) -> JobResult {
    let mut job =
        Synth::new(achieved, 3.0).latency_us(p99_us / 4.0, p99_us / 2.0).machine(&[machine_pct; 2]).build();
    job.groups[0].rate = Some(iolab_stats::result::RateReport {
        target_iops: asked,
        arrival: iolab_spec::Arrival::Uniform,
        scheduled_ios: (asked * MEASURED_S) as u64,
        completed_ios: (achieved * MEASURED_S) as u64,
        achieved_iops: achieved,
        shortfall_pct: 100.0 * (1.0 - achieved / asked).max(0.0),
        sustained,
        max_lag_ns: 10_000,
        response: op_summary(achieved, (p99_us * 250.0) as u64, (p99_us * 1e3) as u64).latency,
    });
    job
}

#[test]
fn a_ramp_row_crosses_on_response_time_and_machine_cpu() {
    use crate::ramp::{row, RampLimits};
    let limits = RampLimits { latency: Some("p99=2ms".parse().expect("limit")), max_cpu_pct: Some(80.0) };
    let calm = row(50, &level(50_000.0, 50_000.0, 400.0, true, 40.0), &limits);
    assert_eq!((calm.crossed.as_deref(), calm.response_p99_ns), (None, 400_000));
    let slow = row(90, &level(90_000.0, 90_000.0, 3_000.0, true, 40.0), &limits);
    assert!(slow.crossed.as_deref().is_some_and(|c| c.contains("3.00ms > 2ms")), "{slow:?}");
    let busy = row(90, &level(90_000.0, 90_000.0, 400.0, true, 95.0), &limits);
    assert!(busy.crossed.as_deref().is_some_and(|c| c.contains("machine CPU 95% > 80%")), "{busy:?}");
}

#[test]
fn a_ramp_names_the_most_iops_sustained_within_the_limits() {
    use crate::ramp::{row, summarize, RampLimits};
    let limits = RampLimits { latency: Some("p99=2ms".parse().expect("limit")), max_cpu_pct: None };
    let rows = vec![
        row(25, &level(25_000.0, 25_000.0, 300.0, true, 30.0), &limits),
        row(50, &level(50_000.0, 50_000.0, 900.0, true, 50.0), &limits),
        row(75, &level(75_000.0, 61_000.0, 1_500.0, false, 90.0), &limits),
        row(100, &level(100_000.0, 62_000.0, 9_000.0, false, 95.0), &limits),
    ];
    let summary = summarize(100_000.0, limits, rows);
    assert!(
        finding(&summary.verdict, "the target sustains").contains("50,000 IOPS (50%"),
        "{:?}",
        summary.verdict
    );
    assert!(mentions(&summary.verdict, "stopped at 100%"), "{:?}", summary.verdict);
    assert!(
        mentions(&summary.verdict, "from 75% (75,000 IOPS asked) the schedule was not sustained"),
        "{:?}",
        summary.verdict
    );
    assert_words_finite(&summary.verdict);
}

#[test]
fn scale_names_the_kernel_threads_that_were_the_wall() {
    use iolab_stats::kernel_threads::KernelRole;
    use iolab_stats::machine::{CpuOwner, MachineReport, OwnerKind};
    use iolab_stats::result::DeviceActivity;

    let a = Synth::alone(A, 100_000.0, 2.0).build();
    let b = Synth::alone(B, 100_000.0, 2.0).build();
    let mut together = Synth::together(&[(A, 55_000.0), (B, 55_000.0)], 2.0).machine(&[99.0, 99.0]).build();
    // Two loop devices, each driver's worker at its limit, on a 2-core machine: the field
    // reports' software-RAID wall, named.
    let device = |name: &str| DeviceActivity {
        device: name.into(),
        reads: 1,
        writes: 0,
        read_bytes: 4096,
        write_bytes: 0,
        iops: 1.0,
        util_pct: 99.0,
        avg_queue: 16.0,
        read_await_us: None,
        write_await_us: None,
        queue: QueueInfo::default(),
    };
    together.devices = vec![device("loop0"), device("loop1")];
    let worker = |device: &str, pct: f64| CpuOwner {
        name: format!("{device} workers"),
        kind: OwnerKind::Kernel,
        role: Some(KernelRole::BlockWorker),
        serves: Some(device.into()),
        threads: 1,
        cpu_s: pct / 100.0 * together.measured_s,
        machine_pct: pct / 2.0,
        busiest_thread: format!("kworker/u8:1-{device}"),
        busiest_thread_pct: pct,
        pids: Vec::new(),
        read_bytes: None,
        write_bytes: None,
        devices: None,
    };
    together.machine = Some(MachineReport {
        cores: 2,
        window_s: together.measured_s,
        owners: vec![worker("loop0", 100.0), worker("loop1", 99.0), worker("loop7", 100.0)],
        ..Default::default()
    });
    let summary = scale::summarize(&[&a, &b], &together);
    assert_eq!(
        finding(&summary.verdict, "the wall"),
        "the wall: loop0 workers at 100% of a core (kworker/u8:1-loop0), loop1 workers at 99% of a core (kworker/u8:1-loop1) on a 2-core machine"
    );
    assert_scale_finite(&summary);
}

#[test]
fn a_ramp_level_whose_ios_started_late_did_not_keep_up_and_says_whose_fault() {
    use crate::ramp::{row, summarize, RampLimits};
    let rate = |max_lag_ns: u64| iolab_stats::result::RateReport {
        target_iops: 2_000.0,
        arrival: iolab_spec::Arrival::Uniform,
        scheduled_ios: 2_000,
        completed_ios: 2_000,
        achieved_iops: 2_000.0,
        shortfall_pct: 0.0,
        sustained: true,
        max_lag_ns,
        response: None,
    };
    let mut on_time = Synth::alone(A, 2_000.0, 5.0).class(ThreadClass::Worker, 1, 5.0, 20.0).build();
    on_time.groups[0].rate = Some(rate(300_000));
    let mut late = on_time.clone();
    late.groups[0].rate = Some(rate(20_000_000));
    // The lane wanted 60% of the window and ran 20%: it waited for a CPU.
    late.cpu.threads[0].busiest_demand_pct = 60.0;
    let limits = RampLimits::default();
    let (kept, missed) = (row(10, &on_time, &limits), row(25, &late, &limits));
    assert!(kept.kept_up && kept.late.is_none(), "{kept:?}");
    assert!(missed.sustained && !missed.kept_up, "{missed:?}");
    assert_eq!(
        missed.late.as_deref(),
        Some("I/Os started up to 20.0ms late: the load generator fell behind (its thread waited 40% of the level for a CPU), not the device")
    );
    let summary = summarize(20_000.0, limits, vec![kept, missed]);
    assert!(
        summary.verdict[0].contains("(10% of the"),
        "the best level kept up is 10%: {:?}",
        summary.verdict
    );
    assert!(
        finding(&summary.verdict, "at 25%").contains("did not keep up although its I/Os completed"),
        "{:?}",
        summary.verdict
    );
}

/// A sweep point measured as the zram sweep gave it: outstanding = qd x workers, mean
/// latency by Little's law; `repeats` IOPS of each pass (the median is the point's).
fn swept(qd: u32, workers: u32, repeats: &[f64]) -> (String, crate::sweep::PointFigures, Vec<f64>) {
    let mut sorted = repeats.to_vec();
    sorted.sort_by(f64::total_cmp);
    let iops = sorted[sorted.len() / 2];
    let mean_ns = f64::from(qd * workers) / iops * 1e9;
    let figures = crate::sweep::PointFigures {
        access: "4KiB random 70% read".into(),
        qd,
        workers,
        outstanding: qd * workers,
        total: op_summary(iops, (mean_ns / 1.1) as u64, (mean_ns * 3.0) as u64),
        cpu_us_per_io: 2.0,
        bottleneck: Bottleneck::Undetermined,
        retried: 0,
    };
    (format!("qd {qd}, workers {workers}"), figures, repeats.to_vec())
}

fn sweep_curves(
    curves: &[Vec<(String, crate::sweep::PointFigures, Vec<f64>)>],
) -> crate::sweep::SweepSummary {
    let points: Vec<crate::sweep::PointOutcome<'_>> = curves
        .iter()
        .enumerate()
        .flat_map(|(curve, points)| {
            points.iter().map(move |(name, figures, repeats)| crate::sweep::PointOutcome {
                name,
                curve,
                curve_name: "",
                figures: figures.clone(),
                repeat_iops: repeats.clone(),
            })
        })
        .collect();
    crate::sweep::summarize(iolab_spec::sweep::LoadAxis::Qd, &points)
}

#[test]
fn a_saturation_claim_holds_for_the_whole_workload_not_the_last_point() {
    // The zram sweep, 70/30: with 2 workers the knee is early (QD 2), yet QD 16 and 64
    // gave far more IOPS before QD 128 fell back; "saturated at about 159,205 IOPS" was false.
    let one = vec![
        swept(1, 1, &[90_000.0]),
        swept(4, 1, &[150_000.0]),
        swept(16, 1, &[160_000.0]),
        swept(128, 1, &[150_000.0]),
    ];
    let two = vec![
        swept(2, 2, &[159_205.0]),
        swept(16, 2, &[222_914.0]),
        swept(64, 2, &[256_223.0]),
        swept(128, 2, &[143_000.0]),
    ];
    let summary = sweep_curves(&[one, two]);
    let claims: Vec<&String> = summary.verdict.iter().filter(|w| w.contains("saturated")).collect();
    assert!(!claims.is_empty(), "{:#?}", summary.verdict);
    for claim in claims {
        assert!(!claim.contains("is saturated at about 159,205"), "{claim}");
        assert!(!claim.contains("is saturated at about 160,000"), "2 workers gave 256,223: {claim}");
    }
    assert!(
        summary.verdict.iter().any(|w| w.contains("not saturated at the sweet spot") && w.contains("256,223 IOPS at QD 64 x 2")),
        "{:#?}",
        summary.verdict
    );
}

#[test]
fn repeats_say_how_certain_a_sweet_spot_is() {
    // Three passes each: QD 4 and QD 8 overlap (a tie); a single pass says it is one.
    let noisy = vec![
        swept(1, 1, &[60_000.0, 61_000.0, 59_000.0]),
        swept(2, 1, &[110_000.0, 112_000.0, 108_000.0]),
        swept(4, 1, &[190_000.0, 215_000.0, 200_000.0]),
        swept(8, 1, &[205_000.0, 196_000.0, 230_000.0]),
        swept(16, 1, &[207_000.0, 209_000.0, 204_000.0]),
    ];
    let summary = sweep_curves(&[noisy]);
    let spot = finding(&summary.verdict, "sweet spot");
    assert!(spot.contains("uncertain:") && spot.contains("within its repeats' spread"), "{spot}");
    let row = &summary.rows[summary.curves[0].sweet_spot.as_ref().expect("a spot").row];
    assert_eq!(row.repeats, 3);
    assert!(row.iops_low <= row.iops && row.iops <= row.iops_high);

    let clear = vec![
        swept(1, 1, &[60_000.0, 61_000.0]),
        swept(2, 1, &[110_000.0, 111_000.0]),
        swept(4, 1, &[112_000.0, 113_000.0]),
        swept(8, 1, &[113_500.0, 114_000.0]),
    ];
    let summary = sweep_curves(&[clear]);
    let spot = summary
        .verdict
        .iter()
        .find(|w| w.contains("sweet spot") || w.contains("best point"))
        .expect("a spot");
    assert!(spot.contains("certain:") && !spot.contains("uncertain"), "{spot}");

    let once = vec![swept(1, 1, &[60_000.0]), swept(2, 1, &[110_000.0]), swept(4, 1, &[112_000.0])];
    let summary = sweep_curves(&[once]);
    assert!(summary.verdict.iter().any(|w| w.contains("from a single pass")), "{:#?}", summary.verdict);
}

#[test]
fn a_blender_names_the_group_that_lost_to_the_others_and_how_its_tail_grew() {
    let db = Synth::alone("/dev/a", 30_000.0, 2.0).latency_us(100.0, 200.0).build();
    let backup = Synth::alone("/dev/b", 1_000.0, 2.0).latency_us(500.0, 900.0).build();
    let together =
        Synth::together(&[("/dev/a", 12_000.0), ("/dev/b", 980.0)], 2.0).latency_us(300.0, 800.0).build();
    let s = crate::blend::summarize(&[&db, &backup], &together);
    let kept: Vec<f64> = s.rows.iter().map(|r| r.kept_pct.round()).collect();
    assert_eq!(kept, [40.0, 98.0]);
    assert_eq!((s.rows[0].alone_p99_ns, s.rows[0].together_p99_ns), (Some(200_000), Some(800_000)));
    assert!((s.kept_pct - 12_980.0 / 31_000.0 * 100.0).abs() < 1e-9);
    // Only the group below 90% is named: the backup kept its pace.
    assert_eq!(s.verdict.len(), 1, "{:?}", s.verdict);
    assert!(
        s.verdict[0].starts_with("t1 ") && s.verdict[0].contains("kept 40% of its IOPS"),
        "{:?}",
        s.verdict
    );
    assert!(s.verdict[0].contains("p99 grew 4.0x (200us to 800us)"), "{:?}", s.verdict);

    let calm = Synth::together(&[("/dev/a", 29_000.0), ("/dev/b", 990.0)], 2.0).build();
    let s = crate::blend::summarize(&[&db, &backup], &calm);
    assert!(s.verdict[0].contains("do not slow each other"), "{:?}", s.verdict);
}
