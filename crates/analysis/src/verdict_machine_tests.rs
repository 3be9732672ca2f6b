//! The rules that read the whole machine, on `base()` with a machine made up for each case:
//! owners as /proc would give them on kernels of today and of old, cores, interrupts.

use iolab_stats::cpu::CpuBreakdown;
use iolab_stats::kernel_threads::{KernelRole, KernelThread};
use iolab_stats::machine::{CpuOwner, InterruptActivity, MachineReport, OwnerKind};

use super::*;

const CORES: u32 = 2;

fn core(cpu: u32, busy: f64, softirq: f64, steal: f64) -> CpuBreakdown {
    CpuBreakdown {
        cpu,
        user_pct: 5.0,
        nice_pct: 0.0,
        system_pct: (busy - 5.0 - softirq - steal).max(0.0),
        irq_pct: 0.0,
        softirq_pct: softirq,
        iowait_pct: 0.0,
        steal_pct: steal,
        idle_pct: 100.0 - busy,
    }
}

/// A kernel thread owner as the machine sampler groups it, from a thread's name.
fn kernel(thread: &str, threads: u32, cpu_s: f64, busiest_pct: f64) -> CpuOwner {
    let kernel = KernelThread::of(thread);
    CpuOwner {
        name: kernel.group.clone(),
        kind: OwnerKind::Kernel,
        role: Some(kernel.role),
        serves: kernel.device().map(str::to_string).or_else(|| match kernel.serves {
            Some(iolab_stats::kernel_threads::Serves::DevNum(n)) if n == "253:0" => Some("dm-0".into()),
            Some(iolab_stats::kernel_threads::Serves::Cpu(c)) => Some(format!("cpu{c}")),
            _ => None,
        }),
        threads,
        cpu_s,
        machine_pct: cpu_s / (f64::from(CORES) * MEASURED_S) * 100.0,
        busiest_thread: thread.into(),
        busiest_thread_pct: busiest_pct,
        pids: Vec::new(),
        read_bytes: None,
        write_bytes: None,
        devices: None,
    }
}

fn process(name: &str, pid: u32, cpu_s: f64, write_bytes: u64) -> CpuOwner {
    CpuOwner {
        name: name.into(),
        kind: OwnerKind::Process,
        role: None,
        serves: None,
        threads: 1,
        cpu_s,
        machine_pct: cpu_s / (f64::from(CORES) * MEASURED_S) * 100.0,
        busiest_thread: name.into(),
        busiest_thread_pct: cpu_s / MEASURED_S * 100.0,
        pids: vec![pid],
        read_bytes: Some(0),
        write_bytes: Some(write_bytes),
        devices: None,
    }
}

fn machine(job: &mut JobResult, owners: Vec<CpuOwner>, cores: Vec<CpuBreakdown>) {
    job.cpu.machine_busy_pct = cores.iter().map(CpuBreakdown::busy_pct).collect();
    job.machine = Some(MachineReport {
        cores: CORES,
        window_s: MEASURED_S,
        owners,
        cpus: cores,
        interrupts: Vec::new(),
        series: Vec::new(),
        page_cache: None,
        limits: Default::default(),
        pressure: Default::default(),
        cpu_idle: None,
        threads_sampled: 300,
        sampler_cpu_s: 0.01,
    });
}

/// The machine's dirty page cache at the window's start and end, and what was written back in it.
fn page_cache(job: &mut JobResult, dirty_start_bytes: u64, dirty_end_bytes: u64, written_back_bytes: u64) {
    if let Some(m) = job.machine.as_mut() {
        m.page_cache = Some(iolab_stats::machine::PageCacheActivity {
            dirty_start_bytes,
            dirty_end_bytes,
            written_back_bytes,
            ..Default::default()
        });
    }
}

fn on_device(job: &mut JobResult, name: &str) {
    job.groups[0].targets[0].device = Some(name.into());
    job.devices[0].device = name.into();
}

#[test]
fn a_loop_workers_thread_at_its_limit_is_named() {
    for thread in ["kworker/u8:3-loop0", "loop0"] {
        // Today's kernels name the loop workqueue's workers; before 5.12 the thread was "loop0".
        let mut job = base();
        on_device(&mut job, "loop0");
        *vdb(&mut job) = DeviceActivity { device: "loop0".into(), ..device("loop0", 99.0, 31.0) };
        machine(
            &mut job,
            vec![kernel(thread, 1, 9.9, 99.0)],
            vec![core(0, 60.0, 5.0, 0.0), core(1, 99.0, 2.0, 0.0)],
        );
        let v = assert_cause(&job, Bottleneck::KernelThread);
        assert!(
            v.summary.starts_with(&format!(
                "loop0's kernel worker {thread} ran at 99% of one core: the loop driver"
            )),
            "{}",
            v.summary
        );
    }
}

#[test]
fn an_md_raid_thread_and_dm_crypt_are_named_by_their_layer() {
    let mut job = base();
    on_device(&mut job, "md0");
    machine(
        &mut job,
        vec![kernel("md0_raid5", 1, 9.8, 98.0)],
        vec![core(0, 99.0, 1.0, 0.0), core(1, 50.0, 1.0, 0.0)],
    );
    let v = assert_cause(&job, Bottleneck::KernelThread);
    assert!(
        v.summary.contains("md0's RAID thread md0_raid5 ran at 98% of one core: the software RAID layer"),
        "{}",
        v.summary
    );

    let mut job = base();
    on_device(&mut job, "dm-0");
    machine(
        &mut job,
        vec![kernel("kcryptd/253:0", 1, 10.0, 100.0)],
        vec![core(0, 99.0, 1.0, 0.0), core(1, 40.0, 1.0, 0.0)],
    );
    let v = assert_cause(&job, Bottleneck::KernelThread);
    assert!(
        v.summary.contains("dm-0's encryption thread kcryptd/253:0 ran at 100% of one core: dm-crypt"),
        "{}",
        v.summary
    );
}

#[test]
fn a_kernel_thread_of_another_device_is_not_blamed() {
    let mut job = base();
    machine(
        &mut job,
        vec![kernel("kworker/u8:3-loop7", 1, 9.9, 99.0)],
        vec![core(0, 60.0, 1.0, 0.0), core(1, 99.0, 1.0, 0.0)],
    );
    assert_ne!(verdict(&job).cause, Bottleneck::KernelThread);
}

#[test]
fn saturated_cores_held_by_the_devices_kernel_work_name_it() {
    // The loop device: lane 78%, ksoftirqd 40%, two loop workers 32% and 26%.
    let mut job = base();
    on_device(&mut job, "loop0");
    *vdb(&mut job) = DeviceActivity { device: "loop0".into(), ..device("loop0", 96.0, 20.0) };
    job.cpu.threads[0] = thread_class(ThreadClass::Worker, 1, 0.5, 7.3, 78.0);
    machine(
        &mut job,
        vec![kernel("kworker/u8:3-loop0", 2, 5.8, 32.0), kernel("ksoftirqd/1", 2, 4.0, 40.0)],
        vec![core(0, 98.0, 10.0, 0.0), core(1, 98.0, 20.0, 0.0)],
    );
    let v = assert_cause(&job, Bottleneck::KernelThread);
    assert!(
        v.summary
            .starts_with("The machine's 2 cores were 98% busy, and the device's own kernel work held more"),
        "{}",
        v.summary
    );
    assert!(
        v.summary.contains(
            "loop0 workers 5.80 core-seconds (2 threads; busiest kworker/u8:3-loop0 at 32% of a core)"
        ),
        "{}",
        v.summary
    );
    assert!(v.summary.contains("interrupts and softirqs 4.00 core-seconds"), "{}", v.summary);
}

#[test]
fn saturated_cores_held_by_another_process_are_another_load() {
    let mut job = base();
    machine(
        &mut job,
        vec![process("stress-ng", 4242, 14.0, 0)],
        vec![core(0, 99.0, 1.0, 0.0), core(1, 99.0, 1.0, 0.0)],
    );
    let v = assert_cause(&job, Bottleneck::OtherLoad);
    assert!(
        v.summary.contains("other processes held more of them than iolab (stress-ng 14.00 core-seconds"),
        "{}",
        v.summary
    );
}

/// Beside a bigger load, the device's own kernel workers are still named in the evidence,
/// however many other owners outweigh them.
#[test]
fn the_devices_kernel_workers_are_named_beside_a_bigger_load() {
    let mut job = base();
    on_device(&mut job, "loop0");
    *vdb(&mut job) = DeviceActivity { device: "loop0".into(), ..device("loop0", 50.0, 13.6) };
    let owners = vec![
        process("yes", 4242, 12.0, 0),
        kernel("kworker/u8:4-events_unbound", 1, 1.8, 18.0),
        kernel("ksoftirqd/1", 2, 1.7, 12.0),
        process("sshd", 77, 1.5, 0),
        kernel("kworker/u8:3-loop0", 1, 0.9, 9.0),
    ];
    machine(&mut job, owners, vec![core(0, 99.0, 1.0, 0.0), core(1, 100.0, 1.0, 0.0)]);
    let v = assert_cause(&job, Bottleneck::OtherLoad);
    let outside = v.evidence.iter().find(|l| l.starts_with("outside iolab: ")).expect("an outside line");
    assert!(outside.contains("yes 12.00 core-seconds"), "{outside}");
    assert!(outside.contains("loop0 workers 0.90 core-seconds"), "{outside}");
    assert!(!outside.contains("sshd"), "the fourth biggest serves nothing here: {outside}");
}

#[test]
fn another_process_writing_to_the_device_is_named() {
    let mut job = base();
    *vdb(&mut job) = DeviceActivity { writes: 300_000, write_bytes: 812 << 20, ..device("vdb", 95.0, 30.0) };
    machine(
        &mut job,
        vec![process("dd", 777, 3.0, 812 << 20)],
        vec![core(0, 60.0, 1.0, 0.0), core(1, 50.0, 1.0, 0.0)],
    );
    let v = assert_cause(&job, Bottleneck::OtherLoad);
    assert!(
        v.summary
            .contains("the busiest other I/O in the window was dd (pid 777), which read 0B and wrote 812MiB"),
        "{}",
        v.summary
    );
}

/// Busy run 31: "Another load shared loop0 ... the busiest other I/O in the window was fio",
/// an fio writing the root disk. A process whose open files were all on other devices is not
/// named; one on the device (or whose files are unknown) is, though it moved less.
#[test]
fn a_process_working_another_device_is_not_named_for_this_one() {
    let mut job = base();
    *vdb(&mut job) = DeviceActivity { writes: 300_000, write_bytes: 812 << 20, ..device("vdb", 95.0, 30.0) };
    let elsewhere =
        CpuOwner { devices: Some(vec!["vda".into(), "vda1".into()]), ..process("fio", 900, 1.0, 4 << 30) };
    let here = CpuOwner { devices: Some(vec!["vdb".into()]), ..process("dd", 777, 3.0, 812 << 20) };
    machine(&mut job, vec![elsewhere.clone(), here], vec![core(0, 60.0, 1.0, 0.0), core(1, 50.0, 1.0, 0.0)]);
    let v = assert_cause(&job, Bottleneck::OtherLoad);
    assert!(v.summary.contains("the busiest other I/O in the window was dd (pid 777)"), "{}", v.summary);
    // Only the one elsewhere: said so, and not named as the load.
    machine(&mut job, vec![elsewhere], vec![core(0, 60.0, 1.0, 0.0), core(1, 50.0, 1.0, 0.0)]);
    let v = assert_cause(&job, Bottleneck::OtherLoad);
    assert!(
        v.summary.contains("no process's open files were on vdb: those with I/O in the window worked other devices (fio on vda, vda1)"),
        "{}",
        v.summary
    );
    assert!(!v.summary.contains("busiest other I/O in the window was fio"), "{}", v.summary);
}

#[test]
fn punting_behind_writeback_names_the_writeback() {
    let mut job = base();
    job.cpu.threads.push(thread_class(ThreadClass::IoWq, 4, 0.0, 12.0, 60.0));
    job.cpu.system_s += 12.0;
    *vdb(&mut job) = DeviceActivity { writes: 91_000, write_bytes: 356 << 20, ..device("vdb", 99.0, 20.0) };
    machine(
        &mut job,
        vec![kernel("kworker/u8:0+flush-254:16", 1, 2.0, 20.0)],
        vec![core(0, 80.0, 1.0, 0.0), core(1, 70.0, 1.0, 0.0)],
    );
    let v = assert_cause(&job, Bottleneck::Writeback);
    assert!(v.summary.contains("io_uring punted the job's I/O to its io-wq kernel threads (75% of iolab's CPU) while vdb wrote 356MiB the job did not (writeback (flush-254:16): kworker/u8:0+flush-254:16)"), "{}", v.summary);
    let words = "writeback (flush-254:16): kworker/u8:0+flush-254:16";
    assert!(!v.evidence.iter().any(|l| l == words), "the summary said it: {:?}", v.evidence);
}

/// Cores held by another process are the verdict; the writeback the job's direct reads waited
/// behind is still in the evidence.
#[test]
fn writeback_beside_a_cpu_load_is_in_the_evidence() {
    let mut job = base();
    *vdb(&mut job) = DeviceActivity { writes: 600, write_bytes: 40 << 20, ..device("vdb", 60.0, 12.0) };
    machine(
        &mut job,
        vec![process("yes", 4242, 14.0, 0)],
        vec![core(0, 99.0, 1.0, 0.0), core(1, 99.0, 1.0, 0.0)],
    );
    page_cache(&mut job, 300 << 20, 260 << 20, 40 << 20);
    let v = assert_cause(&job, Bottleneck::OtherLoad);
    assert!(v.summary.contains("other processes held more of them than iolab (yes"), "{}", v.summary);
    let expected = "the kernel's writeback of dirty page cache: 40MiB written back in the window, 300MiB dirty at its start and 260MiB at its end";
    assert!(v.evidence.iter().any(|l| l == expected), "{:#?}", v.evidence);
}

#[test]
fn a_core_drowned_in_softirqs_is_interrupts() {
    let mut job = base();
    machine(
        &mut job,
        vec![kernel("ksoftirqd/1", 1, 6.0, 60.0)],
        vec![core(0, 50.0, 5.0, 0.0), core(1, 99.0, 70.0, 0.0)],
    );
    if let Some(m) = job.machine.as_mut() {
        m.interrupts.push(InterruptActivity {
            irq: "45".into(),
            name: "PCI-MSIX 1-edge nvme0q1".into(),
            count: 900_000,
            per_cpu: vec![0, 900_000],
        });
    }
    let v = assert_cause(&job, Bottleneck::Interrupts);
    assert!(
        v.summary.starts_with("cpu1 was 99% busy, 70% of it in interrupt handlers and softirqs"),
        "{}",
        v.summary
    );
    assert!(v.summary.contains("most from PCI-MSIX 1-edge nvme0q1 (900000)"), "{}", v.summary);
}

#[test]
fn steal_is_named() {
    let mut job = base();
    machine(&mut job, Vec::new(), vec![core(0, 60.0, 1.0, 15.0), core(1, 50.0, 1.0, 15.0)]);
    let v = assert_cause(&job, Bottleneck::Steal);
    assert!(v.summary.starts_with("The hypervisor took 15% of this VM's CPU time"), "{}", v.summary);
}

#[test]
fn a_cgroup_memory_limit_is_evidence() {
    let mut job = base();
    machine(&mut job, Vec::new(), vec![core(0, 40.0, 1.0, 0.0), core(1, 30.0, 1.0, 0.0)]);
    job.machine.as_mut().expect("machine").limits.memory = Some(iolab_stats::limits::MemoryLimit {
        cgroup: "/ci".into(),
        max_bytes: Some(256 << 20),
        high_bytes: Some(128 << 20),
        ..Default::default()
    });
    let v = verdict(&job);
    assert!(
        v.evidence.iter().any(|e| e
            == "cgroup /ci limits memory, the page cache included, to 256MiB, reclaimed from 128MiB (memory.high)"),
        "{:?}",
        v.evidence
    );
}

/// A buffered reader under a memory cgroup whose device read pages the limit had evicted.
fn limited_reader(refault_bytes: u64, limit_hits: Option<u64>) -> JobResult {
    let mut job = base();
    buffered(&mut job);
    *vdb(&mut job) = device("vdb", 99.0, 3.0);
    machine(&mut job, Vec::new(), vec![core(0, 40.0, 1.0, 0.0), core(1, 30.0, 1.0, 0.0)]);
    job.machine.as_mut().expect("machine").limits.memory = Some(iolab_stats::limits::MemoryLimit {
        cgroup: "/ci".into(),
        max_bytes: Some(64 << 20),
        high_bytes: None,
        refault_bytes: Some(refault_bytes),
        limit_hits,
        machine_bytes: Some(24 << 30),
    });
    job
}

#[test]
fn a_memory_limit_that_evicted_what_a_buffered_reader_read_again_is_named() {
    // The device read 2,000,000 KiB in 10 s; half of it was pages the limit had evicted.
    let job = limited_reader(1_024_000 * 1024, Some(285_657));
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert!(
        v.summary.starts_with("The memory limit of cgroup /ci held the buffered reads back"),
        "{}",
        v.summary
    );
    assert!(v.summary.contains("keeps the page cache to 64MiB at most"), "{}", v.summary);
    assert!(v.summary.contains("vdb read 195.31MiB/s for the job, 100MiB/s of it"), "{}", v.summary);
    assert!(v.summary.contains("the cgroup reached its limit 285,657 times"), "{}", v.summary);
    assert!(v.evidence.iter().any(|e| e.starts_with("vdb: busy 99%")), "{:?}", v.evidence);
    // A kernel that does not count limit hits still has the refaults.
    assert_cause(&limited_reader(1_024_000 * 1024, None), Bottleneck::ConfiguredLimit);
}

#[test]
fn threads_throttled_above_memory_high_are_held_by_it() {
    // cgroup v2 throttles a cgroup's tasks above memory.high in mem_cgroup_handle_over_high.
    let mut job = limited_reader(0, Some(0));
    let memory = job.machine.as_mut().and_then(|m| m.limits.memory.as_mut()).expect("limit");
    memory.high_bytes = Some(32 << 20);
    let mut waits = iolab_stats::lane_waits::LaneWaits::default();
    let stat = |state: &str| format!("1 (iolab-lane0) {state} 0");
    for (state, wchan, n) in
        [("R", None, 5), ("D", Some("mem_cgroup_handle_over_high"), 4), ("S", Some("io_cqring_wait"), 1)]
    {
        for _ in 0..n {
            waits.add(&stat(state), wchan);
        }
    }
    job.cpu.lane_waits = Some(waits.finish());
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert!(
        v.summary.starts_with("The memory.high of cgroup /ci (32MiB) held the job back: its submitting threads slept in mem_cgroup_handle_over_high, where the kernel throttles a cgroup's tasks above it after making them reclaim, 40% of their time;"),
        "{}",
        v.summary
    );
    // A tenth of their time there is not what held them.
    let mut brief = job.cpu.lane_waits.clone().expect("waits");
    brief.watched(1_000, 900);
    job.cpu.lane_waits = Some(brief);
    assert_cause(&job, Bottleneck::Device);
}

#[test]
fn a_memory_limit_is_not_named_where_it_cost_the_reads_nothing() {
    // Few refaults: the device read the working set for the first time.
    assert_cause(&limited_reader(100 << 20, Some(50)), Bottleneck::Device);
    // Refaults without the cgroup reaching its limit: the machine's own memory pressure.
    assert_cause(&limited_reader(1_024_000 * 1024, Some(0)), Bottleneck::Device);
    // A region larger than the machine's memory would miss with no limit too.
    let mut larger = limited_reader(1_024_000 * 1024, Some(285_657));
    larger.groups[0].blocks = Some(iolab_stats::result::BlockCoverage {
        block_bytes: 4096,
        blocks: 8 << 20,
        touched_pct: 100.0,
        sampled: true,
    });
    assert_cause(&larger, Bottleneck::Device);
    larger.groups[0].blocks.as_mut().expect("blocks").blocks = 1 << 20;
    assert_cause(&larger, Bottleneck::ConfiguredLimit);
    // O_DIRECT reads do not go through the page cache.
    let mut direct = limited_reader(1_024_000 * 1024, Some(285_657));
    direct.groups[0].direct = true;
    assert_ne!(verdict(&direct).cause, Bottleneck::ConfiguredLimit);
}

#[test]
fn pressure_stalls_are_evidence_and_a_kernel_without_them_is_said() {
    use iolab_stats::pressure::{PressureReport, Stall};
    let mut job = base();
    machine(&mut job, Vec::new(), vec![core(0, 40.0, 1.0, 0.0), core(1, 30.0, 1.0, 0.0)]);
    let stall = |resource: &str, cgroup: Option<&str>, some_pct, full_pct| Stall {
        resource: resource.into(),
        cgroup: cgroup.map(str::to_string),
        some_pct,
        full_pct,
    };
    job.machine.as_mut().expect("machine").pressure = PressureReport {
        stalls: vec![
            stall("cpu", None, 44.4, Some(0.0)),
            stall("io", None, 6.0, Some(1.2)),
            stall("memory", None, 0.0, Some(0.0)),
            stall("io", Some("/ci/job"), 3.0, Some(0.0)),
        ],
        unread: Vec::new(),
    };
    let v = verdict(&job);
    assert!(
        v.evidence.iter().any(|e| e
            == "pressure stalls over the window (PSI): cpu some 44%; io some 6%, full 1%; memory some 0%; in cgroup /ci/job: io some 3%"),
        "{:?}",
        v.evidence
    );
    job.machine.as_mut().expect("machine").pressure = PressureReport {
        stalls: Vec::new(),
        unread: vec!["/proc/pressure/cpu: No such file or directory (os error 2)".into()],
    };
    let v = verdict(&job);
    assert!(
        v.evidence.iter().any(|e| e
            == "no pressure stall figures (PSI): /proc/pressure/cpu: No such file or directory (os error 2)"),
        "{:?}",
        v.evidence
    );
}

#[test]
fn lanes_asleep_on_a_slow_target_lost_nothing_to_steal_or_busy_cores() {
    // A FUSE file answering in 20 ms beside two busy loops: the lanes slept on it.
    let mut job = base();
    job.groups[0].targets = vec![target("/mnt/fuse/f", None, 50.0)];
    job.devices.clear();
    job.cpu.threads[0].busiest_thread_pct = 2.0;
    job.cpu.threads[0].busiest_demand_pct = 3.0;
    machine(
        &mut job,
        vec![process("yes", 10, 7.5, 0), process("yes", 11, 7.5, 0)],
        vec![core(0, 100.0, 1.0, 25.0), core(1, 100.0, 1.0, 25.0)],
    );
    assert_cause(&job, Bottleneck::Target);
    // Beside the suite's load (issue 32): a lane at QD 1 on a 28 ms target that ran or waited
    // for a CPU 10% of the window still slept on the target most of it.
    job.cpu.threads[0].busiest_demand_pct = 10.5;
    assert_cause(&job, Bottleneck::Target);
    // A lane that wanted its core most of the window and waited for it did lose to them.
    job.cpu.threads[0].busiest_demand_pct = 60.0;
    assert_cause(&job, Bottleneck::Steal);
}

#[test]
fn an_io_wq_thread_at_its_limit_is_not_advice_to_raise_the_qd() {
    // zram at QD 32: io_uring serves it in one io-wq thread near 100%; the device idles.
    let mut job = base();
    on_device(&mut job, "zram0");
    *vdb(&mut job) = DeviceActivity { device: "zram0".into(), ..device("zram0", 40.0, 1.0) };
    job.cpu.threads.push(thread_class(ThreadClass::IoWq, 1, 0.0, 9.8, 98.0));
    job.cpu.system_s += 9.8;
    let v = assert_cause(&job, Bottleneck::KernelCpu);
    assert!(
        v.summary.starts_with("An io-wq kernel thread of iolab's ran at 98% of one core"),
        "{}",
        v.summary
    );
    // Measured on zram (issue 30): the thread at 87% of a core, 29.5 of the 32 I/Os queued
    // outside the device. A thread short of 90% with no queue in front of it is not the limit.
    job.cpu.threads.last_mut().expect("io-wq").busiest_thread_pct = 87.0;
    assert_ne!(verdict(&job).cause, Bottleneck::KernelCpu, "no slot split: no queue is known");
    let slots = |in_flight: f64| iolab_stats::slots::SlotSplit {
        slots: 32.0,
        ios: 900_000,
        in_flight,
        awaiting_resubmission: 32.0 - in_flight,
        ..Default::default()
    };
    vdb(&mut job).avg_queue = 0.6;
    job.slots = Some(slots(30.1));
    let v = assert_cause(&job, Bottleneck::KernelCpu);
    assert!(
        v.summary.starts_with("An io-wq kernel thread of iolab's ran at 87% of one core, while 29.5 of the job's 32 outstanding I/Os waited outside zram0 for it"),
        "{}",
        v.summary
    );
    job.slots = Some(slots(10.6));
    assert_ne!(verdict(&job).cause, Bottleneck::KernelCpu, "10 of 32 outside the device is no queue");
}

#[test]
fn a_lane_that_waited_for_its_core_names_who_held_it() {
    let mut job = base();
    job.cpu.threads[0] = ThreadClassCpu {
        busiest_demand_pct: 97.0,
        runqueue_wait_s: 3.7,
        ..thread_class(ThreadClass::Worker, 1, 1.0, 5.0, 60.0)
    };
    machine(
        &mut job,
        vec![process("make", 99, 9.0, 0)],
        vec![core(0, 85.0, 1.0, 0.0), core(1, 80.0, 1.0, 0.0)],
    );
    let v = assert_cause(&job, Bottleneck::OtherLoad);
    assert!(v.summary.starts_with("The busiest submitting thread wanted a whole core (running or ready to run 97% of the window) but ran only 60%"), "{}", v.summary);
    assert!(v.summary.contains("make 9.00 core-seconds"), "{}", v.summary);
    // Without the wait, the same figures are no wall: nothing says the lane wanted more.
    job.cpu.threads[0].busiest_demand_pct = 61.0;
    assert_eq!(verdict(&job).cause, Bottleneck::Concurrency);
}

#[test]
fn roles_of_the_fixture_owners_are_the_classifiers() {
    // The fixtures above go through the same name classifier as the sampler.
    assert_eq!(kernel("md0_raid5", 1, 1.0, 10.0).role, Some(KernelRole::RaidOrMapper));
    assert_eq!(kernel("ksoftirqd/0", 1, 1.0, 10.0).serves.as_deref(), Some("cpu0"));
}

#[test]
fn page_cache_written_back_in_the_window_names_the_writeback() {
    let mut job = base();
    *vdb(&mut job) = DeviceActivity { writes: 600, write_bytes: 1 << 30, ..device("vdb", 89.0, 12.0) };
    machine(&mut job, Vec::new(), vec![core(0, 30.0, 1.0, 0.0), core(1, 20.0, 1.0, 0.0)]);
    page_cache(&mut job, 1100 << 20, 60 << 20, 1000 << 20);
    let v = assert_cause(&job, Bottleneck::OtherLoad);
    assert!(
        v.summary.contains("it was the kernel's writeback of dirty page cache: 1000MiB written back in the window, 1.07GiB dirty at its start and 60MiB at its end"),
        "{}",
        v.summary
    );
}

#[test]
fn late_starts_while_the_lane_waited_for_a_cpu_are_the_load_generator_not_the_rate() {
    let mut job = base();
    job.groups[0].rate = Some(iolab_stats::result::RateReport {
        target_iops: IOPS,
        arrival: iolab_spec::Arrival::Uniform,
        scheduled_ios: (IOPS * MEASURED_S) as u64,
        completed_ios: (IOPS * MEASURED_S) as u64,
        achieved_iops: IOPS,
        shortfall_pct: 0.0,
        sustained: true,
        max_lag_ns: 20_000_000,
        response: None,
    });
    // Sustained by the count, but 20 ms late while the lane waited 30% of the window for a CPU.
    job.cpu.threads[0].busiest_demand_pct = 70.0;
    machine(
        &mut job,
        vec![process("make", 99, 9.0, 0)],
        vec![core(0, 99.0, 1.0, 0.0), core(1, 98.0, 1.0, 0.0)],
    );
    let v = assert_cause(&job, Bottleneck::OtherLoad);
    assert!(
        v.summary.starts_with("The load generator fell behind its schedule: I/Os started up to 20.0ms late while iolab's submitting thread waited 30% of the window for a CPU (busiest outside iolab: make 9.00 core-seconds"),
        "{}",
        v.summary
    );
    // Late, but the lane never waited: not the generator. The rate was still delivered, so it
    // set the load (issue 30: a kept --rate-iops 2000 on a quiet machine was called
    // "concurrency: raise --qd"); the late starts are said beside it.
    job.cpu.threads[0].busiest_demand_pct = 40.0;
    let v = assert_cause(&job, Bottleneck::RateLimit);
    assert!(v.summary.contains("IOPS were asked (--rate-iops) and delivered"), "{}", v.summary);
    assert!(v.summary.contains("some I/Os started up to 20.0ms behind their schedule"), "{}", v.summary);
}

// --- limits of the machine's configuration (issue 30) ---

/// `base()` on a quiet machine whose cgroup has a quota of half a core.
fn under_quota(throttled_periods: u64) -> JobResult {
    let mut job = base();
    machine(&mut job, Vec::new(), vec![core(0, 30.0, 0.0, 0.0), core(1, 25.0, 0.0, 0.0)]);
    let machine = job.machine.as_mut().expect("machine");
    machine.limits.cpu_quota = Some(iolab_stats::limits::CpuQuota {
        cgroup: "/ci/job-7".into(),
        quota_us: 50_000,
        period_us: 100_000,
        periods: 100,
        throttled_periods,
        throttled_s: throttled_periods as f64 * 0.05,
    });
    job
}

/// A cgroup CPU quota said nothing before: the verdict asked for more QD.
#[test]
fn a_cpu_quota_that_ran_out_is_the_limit_with_its_own_figures() {
    let v = assert_cause(&under_quota(80), Bottleneck::ConfiguredLimit);
    assert!(
        v.summary.starts_with("The CPU quota of cgroup /ci/job-7 held the job back: 0.50 cores (50000 us per 100000 us), which ran out in 80% of the window's 100 periods; its threads waited 4.00 s throttled"),
        "{}",
        v.summary
    );
    // A quota that seldom ran out is not the cause, but it is in the evidence.
    let v = verdict(&under_quota(3));
    assert_ne!(v.cause, Bottleneck::ConfiguredLimit);
    assert!(
        v.evidence.iter().any(|e| e == "cgroup /ci/job-7 has a CPU quota of 0.50 cores; it ran out in 3 of the window's 100 periods (0.15 s throttled)"),
        "{:?}",
        v.evidence
    );
}

/// An affinity mask of one core for two workers said nothing before.
#[test]
fn an_affinity_mask_narrower_than_the_workers_is_the_limit() {
    let mut job = base();
    job.groups[0].workers = 2;
    job.groups[0].threads = 2;
    // Two submitting threads sharing CPU 0: together a whole core, each waiting half the time.
    job.cpu.threads[0] = ThreadClassCpu {
        threads: 2,
        user_s: 2.0,
        system_s: 7.8,
        busiest_thread_pct: 49.0,
        busiest_demand_pct: 99.0,
        runqueue_wait_s: 5.0,
        ..job.cpu.threads[0].clone()
    };
    machine(&mut job, Vec::new(), vec![core(0, 99.0, 0.0, 0.0), core(1, 2.0, 0.0, 0.0)]);
    let limits = &mut job.machine.as_mut().expect("machine").limits;
    limits.affinity =
        Some(iolab_stats::limits::Affinity { allowed: vec![0], online: 2, ..Default::default() });
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert!(
        v.summary.starts_with("iolab may run only on CPU 0 of the machine's 2 (its affinity mask): its 2 submitting threads wanted 1.48 cores and ran 0.98 on the 1 allowed, waiting 5.00 s in all"),
        "{}",
        v.summary
    );
    // A cpuset cgroup set the mask: the verdict says which.
    let cpuset = iolab_stats::limits::Cpuset { cgroup: "/pinned".into(), cpus: vec![0] };
    job.machine.as_mut().expect("machine").limits.affinity =
        Some(iolab_stats::limits::Affinity { allowed: vec![0], online: 2, cpuset: Some(cpuset) });
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert!(
        v.summary.contains("(its affinity mask, set by the cpuset of cgroup /pinned (CPU 0))"),
        "{}",
        v.summary
    );
    // The whole machine allowed: not the mask.
    job.machine.as_mut().expect("machine").limits.affinity =
        Some(iolab_stats::limits::Affinity { allowed: vec![0, 1], online: 2, ..Default::default() });
    assert_ne!(verdict(&job).cause, Bottleneck::ConfiguredLimit);
}

/// A cgroup I/O throttle: the verdict said "raise --qd".
#[test]
fn a_device_at_its_cgroup_throttle_is_the_limit_with_the_cap() {
    let mut job = base();
    machine(&mut job, Vec::new(), vec![core(0, 20.0, 0.0, 0.0), core(1, 15.0, 0.0, 0.0)]);
    let throttle = |limit: u64| iolab_stats::limits::IoThrottle {
        cgroup: "/ci".into(),
        devnum: "254:16".into(),
        device: Some("vdb".into()),
        op: "read".into(),
        unit: "iops".into(),
        limit,
        source: "blkio.throttle.read_iops_device".into(),
        served: None,
    };
    // vdb read 50,000 IOPS; capped at 50,000.
    job.machine.as_mut().expect("machine").limits.io_throttles = vec![throttle(50_000)];
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert_eq!(
        v.summary,
        "The I/O throttle of cgroup /ci held the job back: vdb is capped at 50,000 read IOPS (blkio.throttle.read_iops_device), and it ran at 50,000 read IOPS, so the figures are the throttle's, not the device's."
    );
    // The cgroup's own counters say what the cap held: another load on the device brought it
    // to the cap while the cgroup did a fifth of it.
    let measured_s = job.measured_s;
    let own = |share: f64| iolab_stats::limits::IoThrottle {
        served: Some((50_000.0 * share * measured_s) as u64),
        ..throttle(50_000)
    };
    job.machine.as_mut().expect("machine").limits.io_throttles = vec![own(0.2)];
    assert_ne!(verdict(&job).cause, Bottleneck::ConfiguredLimit);
    job.machine.as_mut().expect("machine").limits.io_throttles = vec![own(1.0)];
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert!(v.summary.contains("and the cgroup's I/O on it ran at 50,000 read IOPS"), "{}", v.summary);
    // A cap the device stayed well under is said, not the cause.
    job.machine.as_mut().expect("machine").limits.io_throttles = vec![throttle(200_000)];
    let v = verdict(&job);
    assert_ne!(v.cause, Bottleneck::ConfiguredLimit);
    assert!(
        v.evidence
            .iter()
            .any(|e| e == "cgroup /ci caps vdb at 200000 read IOPS (blkio.throttle.read_iops_device)"),
        "{:?}",
        v.evidence
    );
}

/// A buffered writer whose writeback a cgroup caps: the cap is the limit, and the dirty page
/// limits that held the writer meanwhile are its evidence (measured: loop0 capped at 20 MiB/s
/// of writes, the page cache past its throttling point in 100% of the samples).
#[test]
fn a_capped_writeback_names_the_cap_and_the_dirty_limits_that_held_the_writer() {
    const MIB: u64 = 1 << 20;
    let mut job = base();
    buffered(&mut job);
    job.groups[0].write = job.groups[0].read.clone();
    machine(&mut job, Vec::new(), vec![core(0, 7.0, 0.0, 0.0), core(1, 7.0, 0.0, 0.0)]);
    let rate = 20 * MIB;
    vdb(&mut job).write_bytes = (rate as f64 * job.measured_s) as u64;
    let m = job.machine.as_mut().expect("machine");
    m.limits.io_throttles = vec![iolab_stats::limits::IoThrottle {
        cgroup: "/".into(),
        devnum: "7:0".into(),
        device: Some("vdb".into()),
        op: "write".into(),
        unit: "bytes".into(),
        limit: rate,
        source: "blkio.throttle.write_bps_device".into(),
        served: None,
    }];
    let mut cache = iolab_stats::machine::PageCacheActivity {
        dirty_threshold_bytes: 16 * MIB,
        dirty_background_threshold_bytes: 8 * MIB,
        ..Default::default()
    };
    cache.dirty_samples(&[13 * MIB, 14 * MIB, 14 * MIB]);
    m.page_cache = Some(cache);
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert!(
        v.summary.starts_with(
            "The I/O throttle of cgroup / held the job back: vdb is capped at 20MiB/s of writes"
        ),
        "{}",
        v.summary
    );
    assert!(
        v.evidence.iter().any(|e| e.starts_with("meanwhile the kernel's dirty page limits held the buffered writer: the page cache dirty or under writeback stood past 12MiB in 100% of the window's samples (at most 14MiB)")),
        "{:?}",
        v.evidence
    );
}

/// Dirty-page throttling of a buffered writer: the verdict said "raise --qd".
#[test]
fn a_buffered_writer_past_the_dirty_limits_is_held_by_them() {
    const MIB: u64 = 1 << 20;
    let mut job = base();
    buffered(&mut job);
    job.groups[0].write = job.groups[0].read.clone();
    machine(&mut job, Vec::new(), vec![core(0, 30.0, 0.0, 0.0), core(1, 20.0, 0.0, 0.0)]);
    let set = |job: &mut JobResult, dirty_end_bytes: u64| {
        job.machine.as_mut().expect("machine").page_cache = Some(iolab_stats::machine::PageCacheActivity {
            dirty_start_bytes: 40 * MIB,
            dirty_end_bytes,
            written_back_bytes: 1000 * MIB,
            dirty_threshold_bytes: 64 * MIB,
            dirty_background_threshold_bytes: 16 * MIB,
            ..Default::default()
        })
    };
    set(&mut job, 50 * MIB);
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert!(
        v.summary.starts_with("The kernel's dirty page limits held the buffered writer: 50MiB was dirty or under writeback when the window closed, past 40MiB; the kernel throttles writers from 40MiB dirty or under writeback, halfway between the background limit, 16MiB, and the hard limit, 64MiB"),
        "{}",
        v.summary
    );
    assert!(v.summary.contains("(100MiB/s written back on the whole machine; vdb wrote "), "{}", v.summary);
    // Under the throttling point: not the limits.
    set(&mut job, 20 * MIB);
    assert_ne!(verdict(&job).cause, Bottleneck::ConfiguredLimit);
    // Sampled through the window: most samples past the point are the limits, whatever the
    // window's last sample saw (the count swings as writeback completes pages).
    fn cache(job: &mut JobResult) -> &mut iolab_stats::machine::PageCacheActivity {
        job.machine.as_mut().and_then(|m| m.page_cache.as_mut()).expect("cache")
    }
    cache(&mut job).dirty_samples(&[45 * MIB, 52 * MIB, 10 * MIB, 41 * MIB, 60 * MIB]);
    assert_eq!(cache(&mut job).past_throttle_pct, Some(80.0));
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert!(
        v.summary.contains("stood past 40MiB in 80% of the window's samples (at most 60MiB)"),
        "{}",
        v.summary
    );
    cache(&mut job).dirty_samples(&[45 * MIB, 12 * MIB, 10 * MIB, 30 * MIB]);
    assert_ne!(verdict(&job).cause, Bottleneck::ConfiguredLimit, "a quarter of the window");
    // The count swings faster than it is sampled; the writer's threads asleep in the throttle
    // say it was held all the same (a writer 40% of its samples there was seen at most 6 MiB
    // dirty against a 12 MiB point).
    let mut waits = iolab_stats::lane_waits::LaneWaits::default();
    let stat = |state: &str| format!("1 (iolab-lane0) {state} 0");
    for _ in 0..6 {
        waits.add(&stat("R"), None);
    }
    for _ in 0..4 {
        waits.add(&stat("D"), Some("balance_dirty_pages"));
    }
    job.cpu.lane_waits = Some(waits.finish());
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert!(
        v.summary.starts_with("The kernel's dirty page limits held the buffered writer: its submitting threads slept in balance_dirty_pages, the kernel's dirty throttling, 40% of their time (as 10 samples found them); the kernel throttles writers from 40MiB"),
        "{}",
        v.summary
    );
    assert!(
        v.evidence.iter().any(|e| e
            == "the submitting threads ran or waited for a CPU 60% of their time (samples) and slept 40%: in balance_dirty_pages 40% (as 10 samples of one thread each, every 20 ms, found them)"),
        "{:?}",
        v.evidence
    );
    // The sampler takes a core to sample: where the threads' schedstat says they ran or waited
    // for a CPU 90% of their time, the samples only split the other 10%.
    let mut sampled = job.cpu.lane_waits.clone().expect("samples");
    sampled.watched(2_000_000_000, 1_800_000_000);
    job.cpu.lane_waits = Some(sampled);
    cache(&mut job).dirty_samples(&[45 * MIB, 12 * MIB, 10 * MIB, 30 * MIB]);
    assert_ne!(verdict(&job).cause, Bottleneck::ConfiguredLimit, "10% of their time");
    // Four writers of one file: three wait for its lock while the fourth is throttled inside.
    let writers = |wchans: &[(&str, usize)]| {
        let mut waits = iolab_stats::lane_waits::LaneWaits::default();
        for &(wchan, n) in wchans {
            for _ in 0..n {
                match wchan {
                    "R" => waits.add(&stat("R"), None),
                    _ => waits.add(&stat("D"), Some(wchan)),
                }
            }
        }
        Some(waits.finish())
    };
    job.cpu.lane_waits = writers(&[("ext4_buffered_write_iter", 65), ("balance_dirty_pages", 15), ("R", 20)]);
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert!(
        v.summary.starts_with("The kernel's dirty page limits held the buffered writer: its submitting threads slept in balance_dirty_pages, the kernel's dirty throttling, 43% of their time outside the wait for the lock of the file they write (as 100 samples found them; they waited for the lock 65% of their time: a buffered write holds it while the throttle holds the writer, so one throttled writer held the others)"),
        "{}",
        v.summary
    );
    // Writers that wait for the lock while the one inside copies into the page cache are not
    // the throttle's, and two throttled samples of a hundred are too few to say so.
    job.cpu.lane_waits = writers(&[("ext4_buffered_write_iter", 95), ("balance_dirty_pages", 2), ("R", 3)]);
    assert_ne!(verdict(&job).cause, Bottleneck::ConfiguredLimit);
    // io_uring punts a throttled buffered write to io-wq: its workers sleep in the throttle
    // while the lane waits for completions; their idle samples do not count against them.
    let mut lane = iolab_stats::lane_waits::LaneWaits::default();
    for _ in 0..10 {
        lane.add(&stat("S"), Some("io_cqring_wait"));
    }
    let mut io_wq = iolab_stats::lane_waits::LaneWaits::default();
    for wchan in ["io_wq_worker", "io_wq_worker", "balance_dirty_pages", "balance_dirty_pages", "0"] {
        io_wq.add(&stat("S"), Some(wchan));
    }
    job.cpu.lane_waits = Some(lane.finish());
    job.cpu.io_wq_waits = Some(io_wq.finish());
    let v = assert_cause(&job, Bottleneck::ConfiguredLimit);
    assert!(
        v.summary.starts_with("The kernel's dirty page limits held the buffered writer: the io-wq threads io_uring handed its writes to slept in balance_dirty_pages, the kernel's dirty throttling, 67% of their time while at work (as 5 samples found them)"),
        "{}",
        v.summary
    );
    // A read job's threads are never in the writers' throttle: nothing to judge.
    let mut reader = job.clone();
    reader.groups[0].write = reader.groups[0].write.clone();
    reader.groups[0].write.ios = 0;
    assert_ne!(verdict(&reader).cause, Bottleneck::ConfiguredLimit);
}
