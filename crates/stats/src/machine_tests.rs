use super::*;

const MS: u64 = 1_000_000;

fn kernel(tid: u32, starttime: u64, comm: &str, cpu_ms: u64) -> MachineThread {
    MachineThread {
        pid: tid,
        tid,
        starttime,
        comm: comm.into(),
        process: comm.into(),
        kthread: true,
        cpu_ns: cpu_ms * MS,
    }
}

fn user(pid: u32, tid: u32, starttime: u64, process: &str, comm: &str, cpu_ms: u64) -> MachineThread {
    MachineThread {
        pid,
        tid,
        starttime,
        comm: comm.into(),
        process: process.into(),
        kthread: false,
        cpu_ns: cpu_ms * MS,
    }
}

/// A process of init's.
fn io(pid: u32, starttime: u64, read: u64, write: u64) -> ProcessIoSample {
    child_io(pid, starttime, 1, read, write)
}

fn child_io(pid: u32, starttime: u64, ppid: u32, read: u64, write: u64) -> ProcessIoSample {
    ProcessIoSample { pid, starttime, ppid, read_bytes: read, write_bytes: write }
}

fn no_devices(_: &str) -> Option<String> {
    None
}

fn owner<'a>(owners: &'a [CpuOwner], name: &str) -> &'a CpuOwner {
    owners.iter().find(|o| o.name == name).unwrap_or_else(|| panic!("no owner {name} in {owners:?}"))
}

#[test]
fn a_loop_devices_workers_softirq_and_a_process_in_one_window() {
    let mut accounting = MachineAccounting::new(
        &[
            kernel(10, 1, "kworker/u8:3-loop0", 1000),
            kernel(11, 1, "ksoftirqd/1", 50),
            user(500, 500, 7, "dd", "dd", 300),
            kernel(12, 1, "rcu_preempt", 5),
        ],
        &[io(500, 7, 0, 1 << 20)],
    );
    let slice = accounting.observe(
        &[
            kernel(10, 1, "kworker/u8:3-loop0", 1320),
            // Born in the window: all its time counts.
            kernel(13, 40, "kworker/u8:5-loop0", 260),
            kernel(11, 1, "ksoftirqd/1", 450),
            user(500, 500, 7, "dd", "dd", 500),
            kernel(12, 1, "rcu_preempt", 5),
        ],
        &[io(500, 7, 4096, 9 << 20)],
    );
    assert_eq!(slice[0], ("loop0 workers".to_string(), 580 * MS));
    assert_eq!(slice[1], ("ksoftirqd".to_string(), 400 * MS));
    assert_eq!(slice[2], ("dd".to_string(), 200 * MS));
    assert_eq!(slice.len(), 3, "rcu_preempt used nothing: {slice:?}");

    let owners = accounting.finish(2, 1.0, &no_devices);
    let names: Vec<&str> = owners.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["loop0 workers", "ksoftirqd", "dd"]);
    let loop0 = owner(&owners, "loop0 workers");
    assert_eq!((loop0.kind, loop0.role), (OwnerKind::Kernel, Some(KernelRole::BlockWorker)));
    assert_eq!(loop0.serves.as_deref(), Some("loop0"));
    assert_eq!(loop0.threads, 2);
    assert!((loop0.cpu_s - 0.58).abs() < 1e-9);
    assert!((loop0.machine_pct - 29.0).abs() < 1e-9, "0.58 of 2 core-seconds");
    assert_eq!(loop0.busiest_thread, "kworker/u8:3-loop0");
    assert!((loop0.busiest_thread_pct - 32.0).abs() < 1e-9);
    assert!(loop0.pids.is_empty(), "kernel threads list no pids");
    let softirq = owner(&owners, "ksoftirqd");
    assert_eq!(softirq.serves.as_deref(), Some("cpu1"));
    let dd = owner(&owners, "dd");
    assert_eq!((dd.kind, dd.pids.as_slice()), (OwnerKind::Process, &[500u32][..]));
    assert_eq!((dd.read_bytes, dd.write_bytes), (Some(4096), Some(8 << 20)));
}

#[test]
fn exits_reused_tids_and_processes_that_come_and_go() {
    let mut accounting = MachineAccounting::new(
        &[user(100, 100, 5, "cp", "cp", 100), user(100, 101, 5, "cp", "cp-helper", 0)],
        &[io(100, 5, 0, 0)],
    );
    accounting.observe(
        &[user(100, 100, 5, "cp", "cp", 400), user(100, 101, 5, "cp", "cp-helper", 50)],
        &[io(100, 5, 1000, 2000)],
    );
    // cp exited; its pid was reused by another command started later, and a second cp ran.
    accounting.observe(
        &[user(100, 100, 90, "tar", "tar", 70), user(200, 200, 95, "cp", "cp", 30)],
        &[io(100, 90, 500, 0), io(200, 95, 0, 10)],
    );
    let owners = accounting.finish(1, 2.0, &no_devices);
    let cp = owner(&owners, "cp");
    // 300 + 50 of the first cp up to its last sample, 30 of the second.
    assert!((cp.cpu_s - 0.38).abs() < 1e-9, "{cp:?}");
    assert_eq!(cp.threads, 3);
    assert_eq!(cp.pids, [100, 200]);
    assert_eq!(cp.busiest_thread, "cp");
    assert!((cp.busiest_thread_pct - 15.0).abs() < 1e-9, "300 ms of a 2 s window");
    assert_eq!((cp.read_bytes, cp.write_bytes), (Some(1000), Some(2010)));
    let tar = owner(&owners, "tar");
    assert!((tar.cpu_s - 0.07).abs() < 1e-9, "a reused pid is a new process: {tar:?}");
    assert_eq!((tar.read_bytes, tar.write_bytes), (Some(500), Some(0)));
}

#[test]
fn a_kworker_counts_for_the_workqueue_of_its_latest_name_and_devices_are_resolved() {
    let mut accounting = MachineAccounting::new(&[kernel(30, 1, "kworker/u8:0-events_unbound", 0)], &[]);
    accounting.observe(&[kernel(30, 1, "kworker/u8:0+flush-254:0", 120)], &[]);
    let resolve = |devnum: &str| (devnum == "254:0").then(|| "vda".to_string());
    let owners = accounting.finish(2, 1.0, &resolve);
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0].name, "writeback (flush-254:0)");
    assert_eq!(owners[0].role, Some(KernelRole::Writeback));
    assert_eq!(owners[0].serves.as_deref(), Some("vda"));
}

#[test]
fn an_empty_window_has_no_owners() {
    let accounting = MachineAccounting::new(&[kernel(1, 1, "kthreadd", 10)], &[]);
    assert!(accounting.finish(2, 0.0, &no_devices).is_empty());
}

#[test]
fn a_process_that_only_moved_data_is_an_owner() {
    // A shell loop: it uses no measurable CPU, but its io counts the dd children it reaped.
    let mut accounting = MachineAccounting::new(&[user(300, 300, 3, "sh", "sh", 10)], &[io(300, 3, 0, 0)]);
    accounting.observe(&[user(300, 300, 3, "sh", "sh", 10)], &[io(300, 3, 0, 512 << 20)]);
    let owners = accounting.finish(2, 1.0, &no_devices);
    let sh = owner(&owners, "sh");
    assert_eq!((sh.cpu_s, sh.write_bytes, sh.pids.as_slice()), (0.0, Some(512 << 20), &[300u32][..]));
}

/// Issue 30: "the busiest other I/O in the window was bash (pid 4914), which read 82.61GiB"
/// in a 1 s window: bash reaped a child that had read for hours, and a process's io takes in
/// its reaped children's lifetime. The child's part in the window is the child's; the parent
/// keeps only its own.
#[test]
fn a_child_reaped_in_the_window_does_not_bring_its_life_into_its_parent() {
    const GIB: u64 = 1 << 30;
    let shell = || user(4914, 4914, 5, "bash", "bash", 10);
    let dd = |cpu| user(5000, 5000, 6, "dd", "dd", cpu);
    let mut accounting = MachineAccounting::new(
        &[shell(), dd(100)],
        &[io(4914, 5, 1 << 20, 0), child_io(5000, 6, 4914, 80 * GIB, 0)],
    );
    // The dd reads 1 GiB more in the window, then ends; bash reaps it: bash's io takes in the
    // dd's 81 GiB (and 4 KiB of its own).
    accounting.observe(&[shell(), dd(200)], &[io(4914, 5, 1 << 20, 0), child_io(5000, 6, 4914, 81 * GIB, 0)]);
    accounting.observe(&[shell()], &[io(4914, 5, (1 << 20) + 81 * GIB + 4096, 0)]);
    let owners = accounting.finish(2, 1.0, &no_devices);
    assert_eq!(owner(&owners, "dd").read_bytes, Some(GIB), "the child's part in the window");
    assert_eq!(owner(&owners, "bash").read_bytes, Some(4096), "the parent's own");
}

/// A child that ended in the window but is not reaped by its end: its parent's figures have
/// not taken it in, and keep all they grew by.
#[test]
fn a_child_not_yet_reaped_takes_nothing_from_its_parent() {
    let shell = || user(4914, 4914, 5, "bash", "bash", 10);
    let mut accounting = MachineAccounting::new(
        &[shell(), user(5000, 5000, 6, "dd", "dd", 100)],
        &[io(4914, 5, 0, 0), child_io(5000, 6, 4914, 1 << 30, 0)],
    );
    accounting.observe(&[shell()], &[io(4914, 5, 8192, 0)]);
    let owners = accounting.finish(2, 1.0, &no_devices);
    assert_eq!(owner(&owners, "bash").read_bytes, Some(8192));
}

/// The verdict leaves a parent's devices unknown when its bytes may be its children's: the
/// processes seen in the window are known by their parents, those seen at its start too.
#[test]
fn the_processes_seen_are_known_by_their_parents() {
    let mut accounting = MachineAccounting::new(&[], &[io(10, 1, 0, 0)]);
    accounting.observe(&[], &[io(10, 1, 0, 0), child_io(11, 2, 10, 0, 4096), child_io(12, 3, 10, 0, 0)]);
    accounting.observe(&[], &[io(10, 1, 0, 0)]);
    let children = accounting.children();
    assert_eq!(children.get(&10).map(|k| k.iter().copied().collect::<Vec<_>>()), Some(vec![11, 12]));
    assert_eq!(children.get(&1).map(|k| k.contains(&10)), Some(true));
    assert!(!children.contains_key(&11));
}
