//! Advice as a tested hypothesis: each advising rule names the change, the job's trial at it
//! confirms or refutes the finding, and advice no trial tested is said as untested.

use iolab_stats::advice::{Change, Outcome, Trial};
use iolab_stats::result::LatencySummary;

use super::*;

/// The job's mean latency, so a trial's can be compared with it.
const MEAN_NS: f64 = 100_000.0;

fn with_latency(job: &mut JobResult) {
    job.total.latency = Some(LatencySummary {
        min_ns: 10_000,
        mean_ns: MEAN_NS,
        stdev_ns: 1.0,
        max_ns: 1_000_000,
        percentiles: Vec::new(),
        within: Vec::new(),
        tail: None,
    });
}

fn trial(change: Change, gain: f64, latency: f64) -> Option<Trial> {
    Some(Trial {
        change,
        measured_s: 1.0,
        iops: IOPS * gain,
        mean_latency_ns: MEAN_NS * latency,
        failed: None,
    })
}

/// QD 1 on a device half idle: the concurrency rule, advising QD 2.
fn one_at_a_time() -> JobResult {
    let mut job = base();
    qd(&mut job, 1);
    *vdb(&mut job) = device("vdb", 55.0, 0.55);
    with_latency(&mut job);
    job
}

const QD_2: Change = Change::QueueDepth { qd: 2 };

#[test]
fn a_trial_that_gains_confirms_the_advice_with_its_figures() {
    let mut job = one_at_a_time();
    job.trial = trial(QD_2, 1.38, 1.1);
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(
        v.summary
            .ends_with("Confirmed: --qd 2 gave +38% IOPS (69,000 against 50,000) at 1.1x the mean latency."),
        "{}",
        v.summary
    );
    let advice = v.advice.expect("advice");
    assert_eq!(advice.change, QD_2);
    assert!(
        matches!(advice.outcome, Outcome::Confirmed { iops_gain_pct, .. } if (iops_gain_pct - 38.0).abs() < 0.01)
    );
}

#[test]
fn a_trial_that_gains_too_little_leaves_the_cause_undetermined_with_what_was_ruled_out() {
    let mut job = one_at_a_time();
    // Under the 10% bar: run-to-run noise, not the limit lifted.
    job.trial = trial(QD_2, 1.05, 1.9);
    let v = assert_cause(&job, Bottleneck::Undetermined);
    assert!(
        v.summary.starts_with("Not confirmed: --qd 2 gave +5% IOPS (52,500 against 50,000) at 1.9x the mean latency, so the limit the figures pointed to (concurrency) was not it; ruled out: a saturated core (the busiest was 45% busy)"),
        "{}",
        v.summary
    );
    assert!(
        v.summary.contains("vdb (busy 55%, holding 0.6 of the job's 1 outstanding I/Os)"),
        "{}",
        v.summary
    );
    assert!(v.evidence[0].starts_with("the hypothesis tested: Nothing was saturated"), "{:?}", v.evidence);
    assert!(matches!(v.advice.expect("advice").outcome, Outcome::NotConfirmed { .. }));
}

#[test]
fn a_trial_of_another_setting_or_one_that_failed_leaves_the_advice_untested() {
    let mut job = one_at_a_time();
    job.trial = trial(Change::QueueDepth { qd: 8 }, 3.0, 1.0);
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(v.summary.ends_with("Advice, untested: --qd 2."), "{}", v.summary);
    assert_eq!(v.advice.expect("advice").outcome, Outcome::Untested);

    job.trial = Some(Trial {
        failed: Some("its trial met 3 I/O errors".into()),
        ..trial(QD_2, 3.0, 1.0).expect("trial")
    });
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(v.summary.ends_with("Advice, untested (its trial met 3 I/O errors): --qd 2."), "{}", v.summary);
}

#[test]
fn a_target_without_a_device_is_decided_by_its_trial() {
    let mut job = base();
    job.groups[0].targets = vec![target("/mnt/fuse/f", None, IOPS)];
    job.devices.clear();
    with_latency(&mut job);
    let deeper = Change::QueueDepth { qd: 64 };
    job.trial = trial(deeper, 1.9, 1.05);
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(
        v.summary.ends_with("Confirmed: --qd 64 gave +90% IOPS (95,000 against 50,000) at 1.1x the mean latency: /mnt/fuse/f serves more requests at once, so the job's own outstanding I/Os were the limit."),
        "{}",
        v.summary
    );
    job.trial = trial(deeper, 1.0, 2.0);
    let v = assert_cause(&job, Bottleneck::Target);
    assert!(v.summary.ends_with("Tested: --qd 64 gave +0% IOPS (50,000 against 50,000) at 2.0x the mean latency: /mnt/fuse/f serves no more at once: it was saturated."), "{}", v.summary);
}

/// A slow target serves 10 reads a second: a trial of 11 is +10%, but by one I/O, inside the
/// spread of the two counts (busy run 25 confirmed it so); 20 is beyond it.
#[test]
fn a_gain_of_a_few_ios_is_inside_the_counting_noise_and_confirms_nothing() {
    let mut job = base();
    job.groups[0].targets = vec![target("/mnt/fuse/f", None, 10.0)];
    job.devices.clear();
    with_latency(&mut job);
    job.total.iops = 10.0;
    job.measured_s = 2.0;
    let deeper = Change::QueueDepth { qd: 64 };
    let at = |iops: f64| {
        Some(Trial { change: deeper, measured_s: 1.0, iops, mean_latency_ns: MEAN_NS, failed: None })
    };
    job.trial = at(11.0);
    let v = assert_cause(&job, Bottleneck::Target);
    assert!(v.summary.contains("Tested: --qd 64 gave +10% IOPS (11 against 10)"), "{}", v.summary);
    job.trial = at(20.0);
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(v.summary.contains("Confirmed: --qd 64 gave +100% IOPS (20 against 10)"), "{}", v.summary);
}

/// The default run on a virtio disk: 91% busy with 24.9 of the 32 in it, the lane not busy.
#[test]
fn a_busy_device_holding_most_of_the_job_sets_the_pace_and_a_trial_says_whether_it_was_saturated() {
    let mut job = base();
    *vdb(&mut job) = device("vdb", 91.0, 24.9);
    with_latency(&mut job);
    job.slots = Some(iolab_stats::slots::SlotSplit {
        slots: 32.0,
        ios: 500_000,
        mean_cycle_ns: 640_000.0,
        in_flight: 27.9,
        awaiting_resubmission: 4.1,
        mean_gap_ns: 50_000.0,
        littles_law_slots: 32.0,
        ..Default::default()
    });
    let v = assert_cause(&job, Bottleneck::Device);
    assert!(
        v.summary.starts_with("vdb was busy 91% of the window and held 24.9 of the 32 outstanding I/Os on average; of the rest, 4.1 were reaped and waiting in iolab to be handed over again (a slot's mean gap 50.0us) and 3.0 were in the kernel outside the device"),
        "{}",
        v.summary
    );
    assert!(v.summary.ends_with("so the device set the pace. Advice, untested: --qd 64."), "{}", v.summary);
    job.trial = trial(Change::QueueDepth { qd: 64 }, 1.02, 2.0);
    let v = assert_cause(&job, Bottleneck::Device);
    assert!(v.summary.ends_with(": vdb serves no more at once: it was saturated."), "{}", v.summary);
    job.trial = trial(Change::QueueDepth { qd: 64 }, 1.3, 1.5);
    assert_cause(&job, Bottleneck::Concurrency);
}

/// The same run measured just under busy (the default job here: 89% busy, 25.3 of 32 in vda):
/// the trial at twice the queue depth still decides between the device and the job's queue,
/// where a trial that gained nothing had left the verdict "undetermined".
#[test]
fn a_nearly_busy_device_holding_most_of_the_job_is_tested_with_a_deeper_queue() {
    let mut job = base();
    *vdb(&mut job) = device("vdb", 89.0, 25.3);
    with_latency(&mut job);
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(
        v.summary.starts_with("No CPU or thread was saturated: the job kept 32 I/Os outstanding, and vdb was busy 89% of the window with 25.3 of them in it on average."),
        "{}",
        v.summary
    );
    assert!(v.summary.ends_with("Advice, untested: --qd 64."), "{}", v.summary);
    job.trial = trial(Change::QueueDepth { qd: 64 }, 0.999, 2.1);
    let v = assert_cause(&job, Bottleneck::Device);
    assert!(v.summary.ends_with(": vdb serves no more at once: it was saturated."), "{}", v.summary);
    job.trial = trial(Change::QueueDepth { qd: 64 }, 1.3, 1.5);
    assert_cause(&job, Bottleneck::Concurrency);
    // Holding few of the job's requests, the device is not the hypothesis: what was not it is.
    *vdb(&mut job) = device("vdb", 89.0, 6.0);
    job.trial = trial(Change::QueueDepth { qd: 64 }, 0.999, 2.1);
    assert_cause(&job, Bottleneck::Undetermined);
}

#[test]
fn a_busy_lane_is_advised_a_second_lane_only_where_a_core_is_free() {
    let mut job = base();
    worker_busy(&mut job, 99.0);
    *vdb(&mut job) = device("vdb", 70.0, 3.0);
    let v = assert_cause(&job, Bottleneck::SubmittingCpu);
    assert_eq!(v.advice.expect("advice").change, Change::Lanes { workers: 2, qd: 16 });
    assert!(v.summary.ends_with("Advice, untested: --workers 2 --qd 16."), "{}", v.summary);
    // One core: a second lane would only take turns with the first.
    job.cpu.machine_busy_pct = vec![45.0];
    let v = assert_cause(&job, Bottleneck::SubmittingCpu);
    assert!(v.advice.is_none() && !v.summary.contains("Advice"), "{}", v.summary);
}

/// zram at QD 32 (issue 30): one io-wq thread near a core. A second lane (and so a second io-wq
/// thread) that gains confirms the thread was the limit; one that gains nothing leaves the
/// kernel's CPU as the cause, with the trial's figure, not an undetermined verdict.
#[test]
fn an_io_wq_thread_is_tested_with_a_second_one() {
    let mut job = base();
    with_latency(&mut job);
    *vdb(&mut job) = device("vdb", 40.0, 0.6);
    job.cpu.threads.push(thread_class(ThreadClass::IoWq, 1, 0.0, 9.8, 98.0));
    let lanes = Change::Lanes { workers: 2, qd: 16 };
    let v = assert_cause(&job, Bottleneck::KernelCpu);
    assert!(v.summary.ends_with("Advice, untested: --workers 2 --qd 16."), "{}", v.summary);
    job.trial = trial(lanes, 1.29, 0.8);
    let v = assert_cause(&job, Bottleneck::KernelCpu);
    assert!(v.summary.contains("Confirmed: --workers 2 --qd 16 gave +29% IOPS"), "{}", v.summary);
    job.trial = trial(lanes, 1.01, 1.0);
    let v = assert_cause(&job, Bottleneck::KernelCpu);
    assert!(
        v.summary.starts_with("An io-wq kernel thread of iolab's ran at 98% of one core"),
        "{}",
        v.summary
    );
    assert!(
        v.summary.contains("Tested: --workers 2 --qd 16 gave +1% IOPS (50,500 against 50,000) at 1.0x the mean latency: more io-wq threads went no faster"),
        "{}",
        v.summary
    );
    assert!(matches!(v.advice.expect("advice").outcome, Outcome::NotConfirmed { .. }));
}

#[test]
fn a_job_of_several_groups_gets_no_advice_a_single_flag_cannot_give() {
    let mut job = one_at_a_time();
    let second = job.groups[0].clone();
    job.groups.push(second);
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(v.advice.is_none() && !v.summary.contains("Advice"), "{}", v.summary);
}

/// `one_at_a_time`, with its cores woken from a halt `per_io` times per completed I/O.
fn waking(per_io: f64) -> JobResult {
    let mut job = one_at_a_time();
    let wakeups = (per_io * job.total.ios as f64) as u64;
    job.machine = Some(iolab_stats::machine::MachineReport {
        cores: 2,
        window_s: 2.0,
        cpu_idle: Some(iolab_stats::cpu_idle::IdleActivity {
            wakeups,
            halted_pct: 45.0,
            deepest: "haltpoll idle".into(),
            deepest_exit_latency_us: 1,
        }),
        ..Default::default()
    });
    job
}

#[test]
fn cores_woken_for_their_completions_are_a_hypothesis_their_trial_decides() {
    let job = waking(0.9);
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(
        v.summary.contains("The cores were woken from haltpoll idle 0.90 times per I/O (450,000 wake-ups; 45% of their time there)"),
        "{}",
        v.summary
    );
    assert!(v.summary.ends_with("Advice, untested: --cpu-idle poll."), "{}", v.summary);

    let mut confirmed = waking(0.9);
    confirmed.trial = trial(Change::CpusPolling, 2.27, 0.44);
    let v = assert_cause(&confirmed, Bottleneck::ConfiguredLimit);
    assert!(v.summary.contains("the cores' idle policy"), "{}", v.summary);
    assert!(v.summary.contains("Confirmed: --cpu-idle poll gave +127% IOPS"), "{}", v.summary);

    let mut refuted = waking(0.9);
    refuted.trial = trial(Change::CpusPolling, 1.02, 1.0);
    let v = assert_cause(&refuted, Bottleneck::Concurrency);
    assert!(v.summary.contains("the cores' wake-ups cost little"), "{}", v.summary);
}

/// A lane that watches for its completions (`--completion-watch`) wants its core all the window
/// by design: that is no sign of a lane-limited job, so the cores' wake-ups are still judged.
#[test]
fn a_watching_lane_busy_all_the_window_still_leaves_the_cores_wake_ups_to_judge() {
    let mut job = waking(0.9);
    job.cpu.threads[0].busiest_thread_pct = 90.0;
    job.cpu.threads[0].busiest_demand_pct = 99.0;
    let v = verdict(&job);
    assert_ne!(
        v.cause,
        Bottleneck::Concurrency,
        "a lane wanting its core all the window is judged: {}",
        v.summary
    );
    job.groups[0].engine_setup.push("completion_watch".into());
    let v = assert_cause(&job, Bottleneck::Concurrency);
    assert!(v.summary.contains("times per I/O"), "{}", v.summary);
}

#[test]
fn cores_that_seldom_idle_leave_the_advice_to_the_queue_depth() {
    let v = assert_cause(&waking(0.01), Bottleneck::Concurrency);
    assert!(v.summary.ends_with("Advice, untested: --qd 2."), "{}", v.summary);
    assert_eq!(v.advice.expect("advice").change, QD_2);
}
