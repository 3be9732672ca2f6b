//! `iolab files --fsync` on ext4 (issue 16): a create phase whose every file is fsynced waits
//! for the journal thread's commits, and the verdict says so from what /proc showed of the
//! threads (blocked on `jbd2_log_wait_commit`) and of `jbd2/<dev>-8`; on tmpfs there is no
//! journal to name. With io_uring, where each thread keeps 32 creates in flight, the io-wq workers
//! doing them may crowd a machine of few cores, and then the CPU is named with them.

mod common;

use common::ext4::Ext4;
use common::{json, needs_root_and, run_in, skip, stderr, LoopDevice};

fn create_phase(cwd: &std::path::Path, dir: &std::path::Path, engine: &str) -> serde_json::Value {
    let args = [
        "files",
        dir.to_str().expect("utf-8"),
        "--files",
        "6000",
        "--threads",
        "2",
        "--fsync",
        "--engine",
        engine,
        "--phases",
        "mkdir,create,unlink,rmdir",
        "--json",
        "--no-store",
    ];
    let out = run_in(cwd, &args);
    assert!(out.status.success(), "{engine}: {}", stderr(&out));
    let report = json(&out);
    report["phases"][1].clone()
}

#[test]
fn fsync_heavy_creates_on_ext4_are_limited_by_the_journal_thread() {
    if let Some((missing, why)) = needs_root_and(&["losetup", "mkfs.ext4", "mount"]) {
        return skip!(missing, "{why}");
    }
    // Inode tables and journal written now: no lazy-init thread writing beside the run.
    let fs = Ext4::on(LoopDevice::direct("files-journal", 128), "-E lazy_itable_init=0,lazy_journal_init=0");
    let cwd = tempfile::tempdir().expect("cwd");
    for engine in ["sync", "io_uring"] {
        let create = create_phase(cwd.path(), &fs.mount.path().join("tree"), engine);
        assert_eq!(create["phase"], "create");
        let journal = &create["journal"];
        let thread = journal["thread"].as_str().unwrap_or_default();
        assert!(thread.starts_with("jbd2/loop"), "{engine}: the loop device's journal thread: {journal}");
        assert!(journal["samples"].as_u64().is_some_and(|n| n > 0), "{engine}: {journal}");
        // With io_uring the fsyncs wait in io-wq workers; on cores others hold (two busy loops,
        // an fio writer, a build: runnable 58%, the journal seen 4% of the time) the wait for a
        // CPU hides the journal's, and the verdict must not claim it. Half the time runnable or
        // more: the journal cannot be told apart, and that is said, not asserted. From a quarter
        // (seen beside the suite's load: runnable 40%, the journal's wait 19%) the verdict may
        // say "waiting", which names the journal among what the threads waited on, but no
        // other cause.
        let queued = journal["runnable_pct"]
            .as_f64()
            .unwrap_or(0.0)
            .max(create["runq_wait_pct"].as_f64().unwrap_or(0.0));
        let cause = &create["verdict"]["cause"];
        // io_uring keeps 32 creates in flight per thread, each fsync in an io-wq worker: on few
        // cores the workers crowd the cores (measured on 2: 16 at a time, the threads waiting
        // for a core 59% of their time and a worker 33% of its), and then the CPU is the limit,
        // named with the workers, and no worker's wait is a sum over its fellows'.
        if engine == "io_uring" && *cause == "cpu" {
            let workers = create["io_wq_workers"].as_f64().unwrap_or(0.0);
            assert!(workers >= 1.0, "queued creates run in io-wq workers: {create:#}");
            let worker_wait = create["io_wq_wait_pct"].as_f64().unwrap_or(f64::NAN);
            assert!((0.0..100.0).contains(&worker_wait), "a share of each worker's own time: {create:#}");
            // 2 threads and a worker or more exceed 2 cores, and the summary names the workers.
            let summary = create["verdict"]["summary"].as_str().unwrap_or_default();
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
            if 2.0 + workers > cores {
                assert!(summary.contains("their io_uring workers"), "{summary}");
            } else {
                skip!(
                    common::Missing::Other,
                    "io_uring: the CPU shared with another load on {cores} cores, {workers:.1} workers at a time: {summary}"
                );
            }
            continue;
        }
        let untold = (queued >= 50.0 && cause != "journal") || (queued >= 25.0 && cause == "waiting");
        if engine == "io_uring" && untold {
            skip!(
                common::Missing::Other,
                "io_uring: the phase's tasks were runnable {queued:.0}% of the time (a busy machine): the journal's wait cannot be told from the wait for a CPU"
            );
            continue;
        }
        assert_eq!(create["verdict"]["cause"], "journal", "{engine}: {create:#}");
        let summary = create["verdict"]["summary"].as_str().unwrap_or_default();
        assert!(summary.contains(thread), "{engine}: {summary}");
    }
}

#[test]
fn tmpfs_has_no_journal_thread_to_name() {
    let shm = std::path::Path::new("/dev/shm");
    let temp = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.expect("dir");
    let create = create_phase(temp.path(), &temp.path().join("tree"), "sync");
    assert!(create.get("journal").is_none(), "{create:#}");
    assert_ne!(create["verdict"]["cause"], "journal");
}
