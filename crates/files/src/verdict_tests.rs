//! Tests of the files verdict on captured phases: the CPU, the journal, the device, the directory lock.

use super::*;

fn facts() -> PhaseFacts {
    PhaseFacts {
        threads: 2,
        cores: 2,
        shared_dir: false,
        modifies_entries: true,
        writes_nothing: false,
        elapsed_s: 2.0,
        ops: 10_000,
        cpu_busy_pct: 95.0,
        cpu_sys_pct: 80.0,
        runq_wait_pct: 0.0,
        io_wq_workers: 0.0,
        io_wq_wait_pct: 0.0,
        device_busy_pct: None,
        device_read_bytes: None,
        device_written_bytes: None,
        fsync_pct: 0.0,
        journal: None,
    }
}

/// Captured on ext4 over a loop device (/dev/shm, direct I/O): `iolab files --fsync
/// --engine sync --threads 2 --files 3000`, its create phase.
fn fsync_on_ext4(wait_pct: f64) -> PhaseFacts {
    PhaseFacts {
        threads: 2,
        cores: 2,
        shared_dir: false,
        modifies_entries: true,
        writes_nothing: false,
        elapsed_s: 1.492,
        ops: 3000,
        cpu_busy_pct: 7.0,
        cpu_sys_pct: 6.0,
        runq_wait_pct: 14.0,
        io_wq_workers: 0.0,
        io_wq_wait_pct: 0.0,
        device_busy_pct: Some(28.0),
        device_read_bytes: Some(0),
        device_written_bytes: Some(12 << 20),
        fsync_pct: 86.0,
        journal: Some(JournalSeen {
            thread: "jbd2/loop0-8".into(),
            wait_pct,
            cpu_pct: 4.0,
            device_wait_pct: 31.0,
            samples: 260,
            runnable_pct: 10.0,
        }),
    }
}

#[test]
fn the_journal_from_the_threads_wait_on_its_commits() {
    let v = judge(&fsync_on_ext4(78.0));
    assert_eq!(v.cause, FilesCause::Journal, "{}", v.summary);
    assert!(v.summary.contains("jbd2/loop0-8") && v.summary.contains("78%"), "{}", v.summary);
    // Before the device: its busy time is the journal's commits.
    let busy = PhaseFacts { device_busy_pct: Some(95.0), ..fsync_on_ext4(78.0) };
    assert_eq!(judge(&busy).cause, FilesCause::Journal);
    // With io_uring (captured likewise): the wait is the workers', 44% beside fsync's 67%.
    let uring = PhaseFacts { fsync_pct: 67.0, ..fsync_on_ext4(44.0) };
    assert_eq!(judge(&uring).cause, FilesCause::Journal);
    // Waiting little on the journal: fsync's own time (flushes, data writeback) is the rule.
    assert_eq!(judge(&fsync_on_ext4(20.0)).cause, FilesCause::Fsync);
    // Both cores busy with other work (captured likewise beside two busy loops): the threads
    // waited for a CPU 44% of their time, inside their fsyncs too; the journal's 23% is
    // most of the rest.
    let crowded = PhaseFacts { fsync_pct: 71.0, runq_wait_pct: 44.0, ..fsync_on_ext4(23.0) };
    assert_eq!(judge(&crowded).cause, FilesCause::Journal, "{}", judge(&crowded).summary);
    let crowded_elsewhere = PhaseFacts { fsync_pct: 71.0, runq_wait_pct: 44.0, ..fsync_on_ext4(8.0) };
    assert_eq!(judge(&crowded_elsewhere).cause, FilesCause::Fsync);
    // With io_uring the waits for a CPU are the workers': seen runnable in the samples.
    let mut crowded_workers = PhaseFacts { fsync_pct: 80.0, runq_wait_pct: 5.0, ..fsync_on_ext4(22.0) };
    assert_eq!(judge(&crowded_workers).cause, FilesCause::Fsync, "22% of 80% is not the journal");
    if let Some(j) = crowded_workers.journal.as_mut() {
        j.runnable_pct = 45.0;
    }
    assert_eq!(judge(&crowded_workers).cause, FilesCause::Journal, "22% of the 35% not runnable is");
    // No journal thread (tmpfs, xfs): as before.
    assert_eq!(judge(&PhaseFacts { journal: None, ..fsync_on_ext4(0.0) }).cause, FilesCause::Fsync);
    let short = PhaseFacts { elapsed_s: 0.01, ..fsync_on_ext4(90.0) };
    assert_eq!(judge(&short).cause, FilesCause::Undetermined);
}

#[test]
fn each_cause_from_its_figure() {
    assert_eq!(judge(&facts()).cause, FilesCause::Cpu);
    let device = PhaseFacts { device_busy_pct: Some(97.0), cpu_busy_pct: 20.0, ..facts() };
    assert_eq!(judge(&device).cause, FilesCause::Device);
    let lock = PhaseFacts { shared_dir: true, cpu_busy_pct: 40.0, ..facts() };
    assert_eq!(judge(&lock).cause, FilesCause::DirectoryLock);
    let fsync = PhaseFacts { fsync_pct: 70.0, cpu_busy_pct: 10.0, ..facts() };
    assert_eq!(judge(&fsync).cause, FilesCause::Fsync);
    let idle = PhaseFacts { cpu_busy_pct: 30.0, device_busy_pct: Some(10.0), ..facts() };
    assert_eq!(judge(&idle).cause, FilesCause::Waiting);
    let crowded = PhaseFacts { cpu_busy_pct: 30.0, runq_wait_pct: 60.0, ..facts() };
    assert_eq!(judge(&crowded).cause, FilesCause::Cpu);
    let short = PhaseFacts { elapsed_s: 0.001, ..facts() };
    assert_eq!(judge(&short).cause, FilesCause::Undetermined);
}

/// 8 threads of a mix on 2 cores ran 25% of their time and waited 93% for a core: their own
/// number, not another load, held them (measured on tmpfs, `--profile fileserver --threads 8`).
#[test]
fn more_threads_than_cores_is_the_cpu_they_share_among_themselves() {
    let own =
        PhaseFacts { threads: 8, cpu_busy_pct: 25.0, cpu_sys_pct: 23.0, runq_wait_pct: 93.0, ..facts() };
    let v = judge(&own);
    assert_eq!(v.cause, FilesCause::Cpu);
    assert!(
        v.summary.contains("8 threads on 2 core(s)") && v.summary.contains("a core's share is 25%"),
        "{}",
        v.summary
    );
    let elsewhere = PhaseFacts { threads: 2, cpu_busy_pct: 30.0, runq_wait_pct: 60.0, ..facts() };
    assert!(judge(&elsewhere).summary.contains("shared with another load"));
    let waiting = PhaseFacts { cpu_busy_pct: 5.0, runq_wait_pct: 10.0, ..own };
    assert_ne!(judge(&waiting).summary, v.summary, "5% of a 25% share: not the CPU");
}

/// Issue 30 item 6: a stat phase's busy device that wrote 300 MiB wrote what the phase did
/// not: the create phase's pages written back, or another process's.
#[test]
fn a_phase_that_writes_nothing_on_a_device_busy_writing_names_those_writes() {
    let stat = PhaseFacts {
        writes_nothing: true,
        modifies_entries: false,
        cpu_busy_pct: 20.0,
        device_busy_pct: Some(96.0),
        device_read_bytes: Some(8 << 20),
        device_written_bytes: Some(300 << 20),
        ..facts()
    };
    let v = judge(&stat);
    assert_eq!(v.cause, FilesCause::OtherWrites, "{}", v.summary);
    assert!(v.summary.contains("busy 96%") && v.summary.contains("wrote 300.0 MiB"), "{}", v.summary);
    // Its own reads were what the device did: the device.
    let reading = PhaseFacts { device_written_bytes: Some(64 << 10), ..stat };
    assert_eq!(judge(&reading).cause, FilesCause::Device);
    // A phase that writes (its own entries, through the journal) is judged on the device.
    let create = PhaseFacts {
        writes_nothing: false,
        modifies_entries: true,
        device_written_bytes: Some(300 << 20),
        ..reading
    };
    assert_eq!(judge(&create).cause, FilesCause::Device);
}

/// Issue 30 item 6: looking entries up takes no directory lock, so a shared directory's
/// stat phase on idle CPUs and device is not held by one.
#[test]
fn the_directory_lock_only_for_phases_that_take_it() {
    let create = PhaseFacts { shared_dir: true, cpu_busy_pct: 40.0, ..facts() };
    assert_eq!(judge(&create).cause, FilesCause::DirectoryLock);
    let stat = PhaseFacts { modifies_entries: false, writes_nothing: true, ..create };
    assert_eq!(judge(&stat).cause, FilesCause::Waiting, "{}", judge(&stat).summary);
}

/// 2 threads' fsynced creates queued on a ring, on ext4 over a loop device on 2 cores
/// (`iolab files --fsync --engine io_uring --files 20000`): 16 io-wq workers at a time, the
/// threads waiting for a core 59% of their time and a worker 32% of its own, the tasks at work
/// runnable 48% and on the journal 6%. The CPU they share among themselves held them; fsync's
/// time, all of it less than the time queued for a core, names no journal.
#[test]
fn queued_creates_crowding_the_cores_are_the_cpu_not_the_journal() {
    let queued = |fsync_pct: f64, io_wq_workers: f64| {
        let mut f = PhaseFacts {
            fsync_pct,
            cpu_busy_pct: 51.0,
            cpu_sys_pct: 43.0,
            runq_wait_pct: 59.0,
            io_wq_workers,
            io_wq_wait_pct: 32.0,
            device_busy_pct: Some(50.0),
            ..fsync_on_ext4(6.0)
        };
        if let Some(j) = f.journal.as_mut() {
            j.runnable_pct = 48.0;
        }
        f
    };
    let v = judge(&queued(45.0, 15.9));
    assert_eq!(v.cause, FilesCause::Cpu, "{}", v.summary);
    assert!(
        v.summary.contains("their io_uring workers (15.9 at a time on average) on 2 core(s)"),
        "{}",
        v.summary
    );
    assert!(v.summary.contains("a worker waited 32% of its time"), "{}", v.summary);
    // Fsync's time above half, all of it queued for a core: still not the journal's.
    let over_half = judge(&queued(55.0, 15.9));
    assert_ne!(over_half.cause, FilesCause::Journal, "{}", over_half.summary);
    // One worker at a time (the ring's one-at-a-time operations) and another load: each wait
    // said as the share of its own time.
    let one_worker = judge(&queued(45.0, 0.9));
    assert!(
        one_worker.summary.contains("shared with another load")
            && one_worker.summary.contains("waited for a core 59%, and their io_uring workers 32% of theirs"),
        "{}",
        one_worker.summary
    );
    // Runnable most of their time at work and on the journal the rest: the CPU held them.
    let mut crowded = queued(45.0, 15.9);
    if let Some(j) = crowded.journal.as_mut() {
        (j.runnable_pct, j.wait_pct) = (90.0, 10.0);
    }
    assert_eq!(judge(&crowded).cause, FilesCause::Cpu, "{}", judge(&crowded).summary);
}
