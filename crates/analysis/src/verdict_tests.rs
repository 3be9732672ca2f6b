//! Tests of the bottleneck verdict on synthetic results.
//!
//! `base()` is an unremarkable job: 4 KiB random reads at QD 32 x 1 worker through io_uring
//! with O_DIRECT on /data/f, a file on the SSD vdb, which was half busy; one worker 40% busy on
//! a two-core machine. Each test changes the few figures of the situation it judges.

use iolab_stats::result::{
    Bottleneck, CpuReport, DeviceActivity, ErrorReport, GroupResult, JobResult, OpSummary, QueueInfo,
    StopReason, TargetResult, Verdict,
};
use iolab_stats::threads::{ThreadClass, ThreadClassCpu};

use crate::verdict::judge;

const MEASURED_S: f64 = 10.0;
const IOPS: f64 = 50_000.0;
const BLOCK: u64 = 4096;

fn ops(iops: f64) -> OpSummary {
    let ios = (iops * MEASURED_S) as u64;
    OpSummary {
        ios,
        bytes: ios * BLOCK,
        iops,
        mb_s: iops * BLOCK as f64 / 1e6,
        mib_s: iops * BLOCK as f64 / (1u64 << 20) as f64,
        latency: None,
    }
}

fn target(path: &str, device: Option<&str>, iops: f64) -> TargetResult {
    TargetResult {
        path: path.into(),
        device: device.map(str::to_string),
        in_memory: false,
        read: ops(iops),
        write: ops(0.0),
        total: ops(iops),
    }
}

fn device(name: &str, util_pct: f64, avg_queue: f64) -> DeviceActivity {
    let reads = (IOPS * MEASURED_S) as u64;
    DeviceActivity {
        device: name.into(),
        reads,
        writes: 0,
        read_bytes: reads * BLOCK,
        write_bytes: 0,
        iops: IOPS,
        util_pct,
        avg_queue,
        read_await_us: Some(avg_queue / IOPS * 1e6),
        write_await_us: None,
        queue: QueueInfo {
            nr_requests: Some(256),
            hw_queue_depth: Some(1023),
            hw_queues: Some(1),
            scheduler: Some("none".into()),
            rotational: Some(false),
            ..QueueInfo::default()
        },
    }
}

fn thread_class(
    class: ThreadClass,
    threads: u32,
    user_s: f64,
    system_s: f64,
    busiest_pct: f64,
) -> ThreadClassCpu {
    ThreadClassCpu {
        class,
        threads,
        user_s,
        system_s,
        busiest_thread_pct: busiest_pct,
        runqueue_wait_s: 0.0,
        busiest_demand_pct: busiest_pct,
    }
}

fn base() -> JobResult {
    let spec =
        iolab_spec::resolve(None, &iolab_spec::defaults()).expect("the defaults resolve").jobs.remove(0);
    let group = GroupResult {
        name: "g1".into(),
        targets: vec![target("/data/f", Some("vdb"), IOPS)],
        stripe_bytes: None,
        access: "4KiB random read".into(),
        engine: "uring".into(),
        engine_setup: vec!["single_issuer".into()],
        direct: true,
        slots: None,
        qd: 32,
        workers: 1,
        threads: 1,
        cpus: Vec::new(),
        read: ops(IOPS),
        write: ops(0.0),
        total: ops(IOPS),
        series: Vec::new(),
        rate: None,
        replay: None,
        blocks: None,
        data: None,
        histograms: Default::default(),
    };
    JobResult {
        name: "synthetic".into(),
        spec,
        stop_reason: StopReason::Runtime,
        measured_s: MEASURED_S,
        ramp_s: 1.0,
        window_start_unix_ns: 0,
        fleet: None,
        groups: vec![group],
        read: ops(IOPS),
        write: ops(0.0),
        total: ops(IOPS),
        series: Vec::new(),
        cpu: CpuReport {
            user_s: 1.0,
            system_s: 3.0,
            us_per_io: 4.0 / (IOPS * MEASURED_S) * 1e6,
            machine_busy_pct: vec![45.0, 20.0],
            threads: vec![
                thread_class(ThreadClass::Worker, 1, 1.0, 3.0, 40.0),
                thread_class(ThreadClass::Other, 2, 0.0, 0.05, 1.0),
            ],
            unattributed_s: 0.0,
            lane_waits: None,
            io_wq_waits: None,
        },
        errors: ErrorReport::default(),
        notes: Vec::new(),
        slots: None,
        machine: None,
        devices: vec![device("vdb", 50.0, 8.0)],
        verdict: Verdict::not_judged(),
        histograms: Default::default(),
        verify: None,
        trial: None,
        disturbed_attempts: Vec::new(),
    }
}

fn worker_busy(job: &mut JobResult, pct: f64) {
    job.cpu.threads[0].busiest_thread_pct = pct;
}

fn vdb(job: &mut JobResult) -> &mut DeviceActivity {
    &mut job.devices[0]
}

fn buffered(job: &mut JobResult) {
    job.groups[0].direct = false;
}

fn qd(job: &mut JobResult, qd: u32) {
    job.groups[0].qd = qd;
}

/// The verdict, checked for what every verdict must be: one sentence, finite figures.
fn verdict(job: &JobResult) -> Verdict {
    let verdict = judge(job);
    assert!(verdict.summary.ends_with('.'), "not a sentence: {:?}", verdict.summary);
    assert!(!verdict.summary.contains('\n'), "more than one line: {:?}", verdict.summary);
    for line in std::iter::once(&verdict.summary).chain(&verdict.evidence) {
        assert!(!line.contains("NaN") && !line.contains("inf"), "{line}");
    }
    verdict
}

fn assert_cause(job: &JobResult, cause: Bottleneck) -> Verdict {
    let verdict = verdict(job);
    assert_eq!(verdict.cause, cause, "{verdict:#?}");
    verdict
}

// --- each cause ---

#[test]
fn a_busy_device_holding_every_request_is_the_limit_but_an_ssd_needs_a_sweep_to_prove_it() {
    let mut job = base();
    *vdb(&mut job) = device("vdb", 99.0, 31.2);
    let v = assert_cause(&job, Bottleneck::Device);
    assert!(v.summary.contains("vdb was busy 99%"), "{}", v.summary);
    assert!(v.summary.contains("QD sweep"), "{}", v.summary);
    assert!(
        v.evidence[0].starts_with("vdb: busy 99% of the window, 31.2 requests in it on average of the 32")
    );
}

#[test]
fn a_full_queue_shows_a_busy_device_when_io_ticks_undercount() {
    // blk-mq devices on recent kernels: io_ticks only advance at completions.
    let mut job = base();
    *vdb(&mut job) = device("vdb", 85.0, 31.8);
    let v = assert_cause(&job, Bottleneck::Device);
    assert!(v.summary.contains("vdb was busy 99%"), "{}", v.summary);
    assert!(
        v.evidence[0].contains("busy 85% of the window by io_ticks, at least 99% by its queue"),
        "{:?}",
        v.evidence
    );
}

#[test]
fn other_io_on_the_device_is_another_load_and_does_not_fill_the_jobs_queue() {
    let mut job = base();
    qd(&mut job, 1);
    *vdb(&mut job) =
        DeviceActivity { reads: 900_000, read_bytes: 900_000 * BLOCK, ..device("vdb", 70.0, 3.0) };
    let v = assert_cause(&job, Bottleneck::OtherLoad);
    assert!(
        v.summary.starts_with(
            "Another load shared vdb: 400000 of the requests it completed (44%, 44% of its bytes)"
        ),
        "{}",
        v.summary
    );
    assert!(
        v.evidence.iter().any(|e| e.contains("it completed 900000 requests, the job's I/Os 500000")),
        "{:?}",
        v.evidence
    );
    // Few but slow foreign requests show in the queue instead.
    *vdb(&mut job) = device("vdb", 70.0, 2.5);
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(
        v.evidence
            .iter()
            .any(|e| e
                .starts_with("vdb held more requests on average (2.5) than the 1 the job kept outstanding")),
        "{:?}",
        v.evidence
    );
}

/// `job` as 1 MiB reads (the same count), on a queue whose requests hold 128 pages (512 KiB):
/// the device completes two requests per I/O, each half of one, busy holding 62 of the 64.
fn split_in_two(job: &mut JobResult) {
    const MIB: u64 = 1 << 20;
    let ios = job.total.ios;
    let target = &mut job.groups[0].targets[0];
    target.read.bytes = ios * MIB;
    target.total.bytes = ios * MIB;
    *vdb(job) = DeviceActivity { reads: 2 * ios, read_bytes: ios * MIB, ..device("vdb", 99.0, 62.0) };
    vdb(job).queue.max_segments = Some(128);
    vdb(job).queue.max_sectors_kb = Some(1280);
}

/// Issue 30: `suite quick`'s SEQ1M on a loop device (max_segments 128) was "Another load
/// shared loop3: 50% of the requests ... 0% of its bytes were not the job's". The block layer
/// split each 1 MiB read in two: those requests are the job's.
#[test]
fn requests_the_block_layer_split_from_the_jobs_ios_are_the_jobs() {
    let mut job = base();
    split_in_two(&mut job);
    let v = assert_cause(&job, Bottleneck::Device);
    assert!(
        v.evidence[0].contains(
            "62.0 requests in it on average of the 64 requests the job's 32 outstanding I/Os became"
        ),
        "{:?}",
        v.evidence
    );
    assert!(v.evidence[0].contains("I/O of the job became up to 2 requests"), "{:?}", v.evidence);
    assert!(v.evidence[0].contains("max_segments 128 of 4"), "{:?}", v.evidence);
    assert!(!v.evidence.iter().any(|e| e.contains("also served other I/O")), "{:?}", v.evidence);

    // Requests over what the limits foretell, but no bytes behind them: still the job's.
    vdb(&mut job).queue.max_segments = Some(256);
    assert_cause(&job, Bottleneck::Device);

    // Another load's requests move bytes: 4 KiB reads as many as the job's split requests.
    split_in_two(&mut job);
    let ios = job.total.ios;
    vdb(&mut job).reads += 2 * ios;
    vdb(&mut job).read_bytes += 2 * ios * BLOCK;
    let v = assert_cause(&job, Bottleneck::OtherLoad);
    assert!(
        v.summary.starts_with("Another load shared vdb: 1000000 of the requests it completed (50%"),
        "{}",
        v.summary
    );
}

#[test]
fn one_io_at_a_time_keeps_a_disk_busy_without_saturating_it() {
    let mut job = base();
    qd(&mut job, 1);
    *vdb(&mut job) = device("vdb", 97.0, 1.02);
    vdb(&mut job).queue.rotational = Some(true);
    assert_cause(&job, Bottleneck::Concurrency);
}

#[test]
fn a_saturated_submitting_thread_with_requests_missing_from_the_device() {
    let mut job = base();
    worker_busy(&mut job, 99.0);
    *vdb(&mut job) = device("vdb", 70.0, 3.0);
    let v = assert_cause(&job, Bottleneck::SubmittingCpu);
    assert!(v.summary.contains("99% busy"), "{}", v.summary);
    assert!(v.summary.contains("75% of it in the kernel"), "{}", v.summary);
    assert!(v.evidence[0].starts_with("busiest submitting thread 99% busy"), "{:?}", v.evidence);
}

#[test]
fn cores_saturated_by_io_wq_threads_are_kernel_cpu() {
    let mut job = base();
    job.cpu.machine_busy_pct = vec![100.0, 98.0];
    job.cpu.user_s = 1.0;
    job.cpu.system_s = 18.0;
    job.cpu.threads = vec![
        thread_class(ThreadClass::Worker, 1, 1.0, 4.0, 50.0),
        thread_class(ThreadClass::IoWq, 12, 0.0, 14.0, 30.0),
    ];
    let v = assert_cause(&job, Bottleneck::KernelCpu);
    assert!(v.summary.contains("io-wq"), "{}", v.summary);
    assert!(
        v.evidence.iter().any(|e| e.contains("12 io-wq kernel thread(s) used 74% of iolab's CPU")),
        "{:?}",
        v.evidence
    );
}

#[test]
fn cores_saturated_by_the_submitting_threads_are_submitting_cpu() {
    let mut job = base();
    job.groups[0].workers = 4;
    job.groups[0].threads = 4;
    job.cpu.machine_busy_pct = vec![97.0, 96.0];
    job.cpu.user_s = 6.0;
    job.cpu.system_s = 12.0;
    job.cpu.threads = vec![thread_class(ThreadClass::Worker, 4, 6.0, 12.0, 60.0)];
    *vdb(&mut job) = device("vdb", 80.0, 20.0);
    assert_cause(&job, Bottleneck::SubmittingCpu);
}

#[test]
fn an_sqpoll_thread_that_cannot_keep_the_device_fed_is_kernel_cpu() {
    let mut job = base();
    job.groups[0].engine_setup.push("sqpoll".into());
    job.cpu.threads.push(thread_class(ThreadClass::Sqpoll, 1, 0.0, 10.0, 100.0));
    *vdb(&mut job) = device("vdb", 60.0, 4.0);
    let v = assert_cause(&job, Bottleneck::KernelCpu);
    assert!(v.summary.contains("SQPOLL"), "{}", v.summary);
    assert!(v.summary.ends_with("Advice, untested: --sqpoll=false."), "{}", v.summary);
}

#[test]
fn an_sqpoll_thread_spinning_beside_a_full_device_is_not_blamed() {
    let mut job = base();
    job.cpu.threads.push(thread_class(ThreadClass::Sqpoll, 1, 0.0, 10.0, 100.0));
    *vdb(&mut job) = device("vdb", 100.0, 31.0);
    assert_cause(&job, Bottleneck::Device);
    // Not busy and holding every request: the QD is the limit, not the spinning thread.
    qd(&mut job, 4);
    *vdb(&mut job) = device("vdb", 70.0, 3.5);
    assert_cause(&job, Bottleneck::Concurrency);
}

#[test]
fn buffered_reads_the_device_never_saw_are_the_page_cache() {
    let mut job = base();
    buffered(&mut job);
    *vdb(&mut job) = DeviceActivity { read_bytes: 4 << 20, reads: 1024, ..device("vdb", 2.0, 0.01) };
    let v = assert_cause(&job, Bottleneck::PageCache);
    assert!(v.summary.contains("vdb saw 0.2% of the bytes the job read"), "{}", v.summary);
    assert!(v.summary.contains("drop --buffered"), "{}", v.summary);
    // Other processes writing to the device do not hide it.
    vdb(&mut job).write_bytes = 10 << 30;
    assert_cause(&job, Bottleneck::PageCache);
}

#[test]
fn buffered_writes_the_device_took_are_not_the_page_cache() {
    let mut job = base();
    buffered(&mut job);
    let half = ops(IOPS / 2.0);
    job.groups[0].targets[0].write = half.clone();
    job.groups[0].targets[0].read = half;
    // The reads hit the cache, but writeback carried the writes to the device.
    *vdb(&mut job) = DeviceActivity { read_bytes: 0, write_bytes: 900 << 20, ..device("vdb", 40.0, 2.0) };
    assert_ne!(verdict(&job).cause, Bottleneck::PageCache);
}

#[test]
fn buffered_reads_that_reached_the_device_are_judged_on_the_device() {
    let mut job = base();
    buffered(&mut job);
    *vdb(&mut job) = device("vdb", 99.0, 3.0);
    // Readahead, not the QD, fills the queue: a busy device is the limit whatever its queue.
    assert_cause(&job, Bottleneck::Device);
}

#[test]
fn a_target_in_memory_is_the_page_cache_even_with_o_direct() {
    let mut job = base();
    job.groups[0].targets = vec![TargetResult { in_memory: true, ..target("/dev/shm/f", None, IOPS) }];
    job.devices.clear();
    worker_busy(&mut job, 100.0);
    let v = assert_cause(&job, Bottleneck::PageCache);
    assert!(v.summary.contains("/dev/shm/f lives in memory"), "{}", v.summary);
}

#[test]
fn a_device_queue_smaller_than_the_qd_is_the_limit() {
    let mut job = base();
    qd(&mut job, 64);
    *vdb(&mut job) = DeviceActivity {
        queue: QueueInfo {
            hw_queue_depth: Some(31),
            nr_requests: Some(64),
            scheduler: Some("mq-deadline".into()),
            ..QueueInfo::default()
        },
        ..device("vdb", 100.0, 62.0)
    };
    // The device also qualifies as busy and full; the queue comes first.
    let v = assert_cause(&job, Bottleneck::Queue);
    assert!(v.summary.contains("64 I/Os outstanding on vdb"), "{}", v.summary);
    assert!(v.summary.contains("the device takes 31 commands at once"), "{}", v.summary);
}

#[test]
fn nr_requests_below_the_qd_is_the_limit() {
    let mut job = base();
    qd(&mut job, 128);
    *vdb(&mut job) = device("vdb", 100.0, 63.0);
    vdb(&mut job).queue = QueueInfo { nr_requests: Some(64), ..QueueInfo::default() };
    let v = assert_cause(&job, Bottleneck::Queue);
    assert!(v.summary.contains("its queue holds 64 requests (nr_requests)"), "{}", v.summary);
}

#[test]
fn several_hardware_queues_take_more_than_one() {
    let mut job = base();
    qd(&mut job, 32);
    job.groups[0].workers = 4;
    job.groups[0].threads = 4;
    *vdb(&mut job) = device("vdb", 100.0, 120.0);
    vdb(&mut job).queue = QueueInfo { nr_requests: Some(32), hw_queues: Some(8), ..QueueInfo::default() };
    // 128 outstanding against 4 reachable queues of 32: no queue limit, the device is full.
    assert_cause(&job, Bottleneck::Device);
}

#[test]
fn one_io_at_a_time_on_an_idle_device_is_concurrency() {
    let mut job = base();
    qd(&mut job, 1);
    *vdb(&mut job) = device("vdb", 55.0, 0.55);
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(v.summary.contains("kept 1 I/O outstanding"), "{}", v.summary);
    // Advice no trial tested is said as a hypothesis.
    assert!(v.summary.ends_with("Advice, untested: --qd 2."), "{}", v.summary);
}

#[test]
fn one_io_at_a_time_keeps_an_ssd_busy_without_saturating_it() {
    let mut job = base();
    qd(&mut job, 1);
    *vdb(&mut job) = device("vdb", 98.0, 0.98);
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(v.summary.contains("one request at a time"), "{}", v.summary);
}

#[test]
fn the_null_engine_measures_iolab_itself() {
    let mut job = base();
    job.groups[0].engine = "null".into();
    job.devices.clear();
    let v = assert_cause(&job, Bottleneck::SubmittingCpu);
    assert!(v.summary.contains("null engine"), "{}", v.summary);
}

#[test]
fn no_completed_io_is_undetermined() {
    let mut job = base();
    job.total = ops(0.0);
    assert_cause(&job, Bottleneck::Undetermined);
}

// --- precedence ---

#[test]
fn a_saturated_worker_and_a_full_busy_device_blame_the_device() {
    let mut job = base();
    worker_busy(&mut job, 100.0);
    *vdb(&mut job) = device("vdb", 100.0, 31.5);
    // Every request the worker could have outstanding was in the device.
    assert_cause(&job, Bottleneck::Device);
}

#[test]
fn a_saturated_worker_and_a_busy_device_holding_one_request_blame_the_worker() {
    // zram: the I/O runs inside the submitting thread, one at a time.
    let mut job = base();
    worker_busy(&mut job, 100.0);
    *vdb(&mut job) = device("zram7", 100.0, 0.9);
    job.groups[0].targets[0].device = Some("zram7".into());
    assert_cause(&job, Bottleneck::SubmittingCpu);
}

#[test]
fn the_page_cache_comes_before_a_saturated_worker() {
    let mut job = base();
    buffered(&mut job);
    worker_busy(&mut job, 100.0);
    *vdb(&mut job) = DeviceActivity { read_bytes: 0, reads: 0, ..device("vdb", 0.0, 0.0) };
    assert_cause(&job, Bottleneck::PageCache);
}

#[test]
fn a_machine_busy_mostly_outside_iolab_is_not_blamed_on_iolab() {
    let mut job = base();
    job.cpu.machine_busy_pct = vec![100.0, 100.0];
    // iolab used 4 of the 20 busy core-seconds.
    let v = assert_cause(&job, Bottleneck::Undetermined);
    assert!(v.summary.contains("mostly outside iolab"), "{}", v.summary);
}

#[test]
fn polling_or_watching_workers_are_busy_by_design() {
    let busy = |feature: Option<&str>| {
        let mut job = base();
        job.groups[0].engine_setup.extend(feature.map(String::from));
        worker_busy(&mut job, 100.0);
        *vdb(&mut job) = device("vdb", 60.0, 6.0);
        verdict(&job).cause
    };
    assert_eq!(busy(None), Bottleneck::SubmittingCpu, "a lane that sleeps for completions is judged");
    assert_ne!(busy(Some("iopoll")), Bottleneck::SubmittingCpu);
    assert_ne!(busy(Some("completion_watch")), Bottleneck::SubmittingCpu);
    let mut job = base();
    job.groups[0].engine_setup.push("completion_watch".into());
    worker_busy(&mut job, 100.0);
    *vdb(&mut job) = device("vdb", 60.0, 6.0);
    let v = verdict(&job);
    assert!(
        v.evidence
            .iter()
            .any(|line| line.ends_with("(busy watching for completions too: --completion-watch)")),
        "{:?}",
        v.evidence
    );
}

#[test]
fn a_striped_group_shares_its_qd_among_its_devices() {
    let mut job = base();
    job.groups[0].targets =
        vec![target("/dev/vdb", Some("vdb"), IOPS / 2.0), target("/dev/vdc", Some("vdc"), IOPS / 2.0)];
    let half = (IOPS * MEASURED_S / 2.0) as u64;
    job.devices = vec![
        DeviceActivity { reads: half, read_bytes: half * BLOCK, ..device("vdb", 60.0, 9.0) },
        DeviceActivity { reads: half, read_bytes: half * BLOCK, ..device("vdc", 97.0, 15.5) },
    ];
    let v = assert_cause(&job, Bottleneck::Device);
    assert!(v.summary.starts_with("vdc was busy 97%"), "{}", v.summary);
    assert!(v.evidence[0].contains("15.5 requests in it on average of the 16"), "{:?}", v.evidence);
}

// --- missing evidence ---

#[test]
fn no_device_behind_the_target_and_no_saturation_is_the_target_with_a_deeper_queue_to_try() {
    let mut job = base();
    job.groups[0].targets = vec![target("/mnt/fuse/f", None, IOPS)];
    job.devices.clear();
    let v = assert_cause(&job, Bottleneck::Target);
    assert!(v.summary.contains("waited at /mnt/fuse/f, which no block device"), "{}", v.summary);
    assert!(v.summary.contains("idle 60% of the window"), "{}", v.summary);
    assert!(v.summary.ends_with("Advice, untested: --qd 64."), "{}", v.summary);
    assert!(v.evidence.iter().any(|e| e == "no block device behind /mnt/fuse/f that iolab can read"));
}

#[test]
fn no_device_behind_the_target_still_finds_a_saturated_worker() {
    let mut job = base();
    job.groups[0].targets = vec![target("/mnt/fuse/f", None, IOPS)];
    job.devices.clear();
    worker_busy(&mut job, 100.0);
    assert_cause(&job, Bottleneck::SubmittingCpu);
}

#[test]
fn no_cpu_figures_cannot_rule_out_the_cpu() {
    let mut job = base();
    job.cpu = CpuReport::default();
    let v = assert_cause(&job, Bottleneck::Undetermined);
    assert!(v.evidence.iter().any(|e| e == "no CPU figures were taken"), "{:?}", v.evidence);
    // The device's own figures still convict it.
    *vdb(&mut job) = device("vdb", 100.0, 31.0);
    assert_cause(&job, Bottleneck::Device);
}

#[test]
fn no_per_thread_cpu_on_a_saturated_machine() {
    let mut job = base();
    job.cpu.threads.clear();
    job.cpu.machine_busy_pct = vec![99.0, 99.0];
    job.cpu.user_s = 4.0;
    job.cpu.system_s = 15.0;
    // io_uring: the submitting threads cannot be told from its kernel threads.
    assert_cause(&job, Bottleneck::Undetermined);
    // psync has no kernel threads in the process: its CPU is the submitting threads'.
    job.groups[0].engine = "psync".into();
    assert_cause(&job, Bottleneck::SubmittingCpu);
}

#[test]
fn a_busy_device_holding_under_half_with_no_cpu_saturated_is_undetermined() {
    let mut job = base();
    *vdb(&mut job) = device("vdb", 95.0, 12.0);
    let v = assert_cause(&job, Bottleneck::Undetermined);
    assert!(v.summary.contains("held 12.0 of the 32"), "{}", v.summary);
    assert!(v.summary.contains("`iolab sweep /data/f --qd 8..256 --workers 1,2`"), "{}", v.summary);
}

#[test]
fn the_cause_serializes_in_snake_case() {
    let names: Vec<String> = [
        Bottleneck::SubmittingCpu,
        Bottleneck::KernelCpu,
        Bottleneck::PageCache,
        Bottleneck::RateLimit,
        Bottleneck::Undetermined,
    ]
    .iter()
    .map(|b| serde_json::to_string(b).expect("serializes"))
    .collect();
    assert_eq!(
        names,
        ["\"submitting_cpu\"", "\"kernel_cpu\"", "\"page_cache\"", "\"rate_limit\"", "\"undetermined\""]
    );
}

fn paced(job: &mut JobResult, sustained: bool) {
    job.groups[0].rate = Some(iolab_stats::result::RateReport {
        target_iops: IOPS,
        arrival: iolab_spec::Arrival::Uniform,
        scheduled_ios: (IOPS * MEASURED_S) as u64,
        completed_ios: (IOPS * MEASURED_S) as u64,
        achieved_iops: if sustained { IOPS } else { IOPS / 2.0 },
        shortfall_pct: if sustained { 0.0 } else { 50.0 },
        sustained,
        max_lag_ns: if sustained { 50_000 } else { 900_000_000 },
        response: None,
    });
}

#[test]
fn a_sustained_rate_is_the_limit_even_with_a_busy_device() {
    let mut job = base();
    *vdb(&mut job) = device("vdb", 99.0, 31.5);
    paced(&mut job, true);
    let v = assert_cause(&job, Bottleneck::RateLimit);
    assert!(v.evidence[0].contains("asked"), "{v:#?}");
}

#[test]
fn a_rate_not_sustained_is_judged_by_what_held_it_back() {
    let mut job = base();
    *vdb(&mut job) = device("vdb", 99.0, 31.5);
    paced(&mut job, false);
    assert_cause(&job, Bottleneck::Device);
}

/// `base()` as a replay at its recorded times that completed `completed` of 1,000 requests,
/// none more than `max_lag_ns` late.
fn replayed(job: &mut JobResult, completed: u64, max_lag_ns: u64) {
    let spec = iolab_spec::ReplaySpec {
        source: "prod.trace".into(),
        speed: Some(1.0),
        fit: None,
        skipped: 0,
        ios: std::sync::Arc::from(vec![
            iolab_spec::ReplayIo { due_ns: 0, write: false, offset: 0, len: 4096 };
            1000
        ]),
    };
    let mut lags = iolab_stats::OpStats::default();
    lags.record(max_lag_ns, 0);
    job.groups[0].replay =
        Some(iolab_stats::replay::ReplayReport::new(&spec, Some(&lags), max_lag_ns, completed, None, &[]));
}

#[test]
fn a_replay_that_kept_its_trace_was_set_by_the_trace_even_with_a_busy_device() {
    let mut job = base();
    *vdb(&mut job) = device("vdb", 99.0, 31.5);
    replayed(&mut job, 1000, 300_000);
    let v = assert_cause(&job, Bottleneck::RateLimit);
    assert!(v.summary.starts_with("The trace set the load: its 1,000 requests were replayed at their recorded times and all completed, every one started within 300us of its time"), "{}", v.summary);
    assert!(v.evidence[0].starts_with("lag behind the recorded times: p99 "), "{v:#?}");
    // Requests lost, or starts far behind their times: what held it back decides.
    replayed(&mut job, 990, 300_000);
    assert_cause(&job, Bottleneck::Device);
    replayed(&mut job, 1000, 50_000_000);
    assert_cause(&job, Bottleneck::Device);
}

#[test]
fn the_docs_list_every_rule_in_the_order_it_is_tried() {
    let docs = include_str!("../../../docs/bottleneck-verdict.md");
    let rules = &docs[docs.find("## The rules, in order").expect("a rules section")..];
    let mut from = 0;
    for name in crate::verdict::rule_names() {
        let at = rules[from..].find(&format!("**{name}**")).unwrap_or_else(|| {
            panic!("docs/bottleneck-verdict.md names rule {name} after the one before it")
        });
        from += at;
    }
}

#[path = "verdict_advice_tests.rs"]
mod advice;
#[path = "verdict_machine_tests.rs"]
mod machine_rules;
