//! Limits the machine's configuration sets, on this kernel (issue 30): an affinity mask
//! narrower than the workers, and a cgroup CPU quota. Each is set on purpose here, so the truth
//! is known, and the verdict must name it with its own figure.

mod common;

use common::memory_cgroup::{cold_file, MemoryCgroup};
use common::{have, iolab_via, is_root, json, stderr};

/// One at a time: each judges the whole machine, and another iolab beside it would be a load.
static MACHINE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Two null-engine workers: each lane wants a whole core.
const TWO_WORKERS: [&str; 12] = [
    "run",
    "--engine",
    "null",
    "--workers",
    "2",
    "--runtime",
    "1s",
    "--ramp",
    "200ms",
    "--json",
    "-q",
    "--no-store",
];

#[test]
fn an_affinity_mask_of_one_cpu_for_two_workers_is_named() {
    let _machine = alone();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        return common::skip!(common::Missing::Other, "one CPU: no mask can be narrower than the machine");
    }
    if !have("taskset") {
        return common::skip!(common::Missing::Other, "needs taskset");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out =
        iolab_via("taskset", &["-c", "0"]).args(TWO_WORKERS).current_dir(dir.path()).output().expect("runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    assert_eq!(
        job["machine"]["limits"]["affinity"]["allowed"],
        serde_json::json!([0]),
        "{}",
        job["machine"]["limits"]
    );
    let verdict = &job["verdict"];
    assert_eq!(verdict["cause"], "configured_limit", "{verdict:#}");
    let summary = verdict["summary"].as_str().expect("summary");
    assert!(
        summary.starts_with(&format!("iolab may run only on CPU 0 of the machine's {cores}")),
        "{summary}"
    );
}

/// Issue 30: a cpuset cgroup of one CPU for two workers is the limit, and the verdict says the
/// cgroup set it (sched_getaffinity alone cannot tell a cpuset from taskset).
#[test]
fn a_cpuset_cgroup_of_one_cpu_for_two_workers_is_named_with_the_cgroup() {
    let _machine = alone();
    if !is_root() {
        return common::skip!(common::Missing::Root, "making a cgroup needs root");
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let Some(hierarchy) = iolab_stats::limits::cgroup_mount(&mountinfo, Some("cpuset")) else {
        return common::skip!(common::Missing::Other, "no cgroup v1 cpuset hierarchy mounted");
    };
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return common::skip!(common::Missing::Other, "one CPU: a cpuset of one narrows nothing");
    }
    let name = format!("iolab-test-cpuset-{}", std::process::id());
    let cgroup = Cgroup(std::path::Path::new(&hierarchy).join(&name));
    std::fs::create_dir(&cgroup.0).expect("the cgroup");
    let mems = std::fs::read_to_string(std::path::Path::new(&hierarchy).join("cpuset.mems")).expect("mems");
    std::fs::write(cgroup.0.join("cpuset.cpus"), "0").expect("cpuset.cpus");
    std::fs::write(cgroup.0.join("cpuset.mems"), mems.trim()).expect("cpuset.mems");
    let out = cgroup.run(&TWO_WORKERS);
    assert!(out.status.success(), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    let affinity = &job["machine"]["limits"]["affinity"];
    assert_eq!(affinity["cpuset"]["cgroup"], format!("/{name}"), "{affinity}");
    assert_eq!(job["verdict"]["cause"], "configured_limit", "{:#}", job["verdict"]);
    let summary = job["verdict"]["summary"].as_str().expect("summary");
    assert!(summary.contains(&format!("set by the cpuset of cgroup /{name} (CPU 0)")), "{summary}");
}

/// The cpu controller's directory for a new cgroup: v1's `cpu` hierarchy, else v2's root.
fn cpu_hierarchy() -> Option<(std::path::PathBuf, bool)> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    if let Some(v1) = iolab_stats::limits::cgroup_mount(&mountinfo, Some("cpu")) {
        return Some((v1.into(), false));
    }
    let v2 = iolab_stats::limits::cgroup_mount(&mountinfo, None)?;
    let controllers = std::fs::read_to_string(format!("{v2}/cgroup.subtree_control")).ok()?;
    controllers.split_whitespace().any(|c| c == "cpu").then(|| (v2.into(), true))
}

/// A cgroup made for the test, removed on drop (its processes have exited by then).
struct Cgroup(std::path::PathBuf);

impl Cgroup {
    /// iolab run with `args` inside the cgroup, in a temporary directory.
    fn run(&self, args: &[&str]) -> std::process::Output {
        let dir = tempfile::tempdir().expect("temp dir");
        let enter = format!("echo $$ > {}/cgroup.procs && exec \"$0\" \"$@\"", self.0.display());
        iolab_via("sh", &["-c", &enter]).args(args).current_dir(dir.path()).output().expect("runs")
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn a_cgroup_cpu_quota_that_runs_out_is_named_with_its_figures() {
    let _machine = alone();
    if !is_root() {
        return common::skip!(common::Missing::Root, "making a cgroup needs root");
    }
    let Some((hierarchy, v2)) = cpu_hierarchy() else {
        return common::skip!(
            common::Missing::Other,
            "no cgroup cpu controller (v1 or v2) to set a quota in"
        );
    };
    let name = format!("iolab-test-quota-{}", std::process::id());
    let cgroup = Cgroup(hierarchy.join(&name));
    std::fs::create_dir(&cgroup.0).expect("the cgroup");
    // A fifth of a core for two lanes that each want a whole one.
    if v2 {
        std::fs::write(cgroup.0.join("cpu.max"), "20000 100000").expect("cpu.max");
    } else {
        std::fs::write(cgroup.0.join("cpu.cfs_period_us"), "100000").expect("period");
        std::fs::write(cgroup.0.join("cpu.cfs_quota_us"), "20000").expect("quota");
    }
    let out = cgroup.run(&TWO_WORKERS);
    assert!(out.status.success(), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    let quota = &job["machine"]["limits"]["cpu_quota"];
    assert_eq!(quota["cgroup"], format!("/{name}"), "{}", job["machine"]["limits"]);
    assert_eq!((quota["quota_us"].as_u64(), quota["period_us"].as_u64()), (Some(20_000), Some(100_000)));
    let verdict = &job["verdict"];
    assert_eq!(verdict["cause"], "configured_limit", "{verdict:#}");
    let summary = verdict["summary"].as_str().expect("summary");
    assert!(
        summary.starts_with(&format!(
            "The CPU quota of cgroup /{name} held the job back: 0.20 cores (20000 us per 100000 us)"
        )),
        "{summary}"
    );
}

/// A cgroup that caps a loop device's reads at 500 IOPS: the device runs at the cap.
#[test]
fn a_cgroup_io_throttle_is_named_with_its_cap() {
    let _machine = alone();
    if let Some((missing, why)) = common::needs_root_and(&["losetup", "dd"]) {
        return common::skip!(missing, "{why}");
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let Some(blkio) = iolab_stats::limits::cgroup_mount(&mountinfo, Some("blkio")) else {
        // io.max needs the io controller in a v2 subtree; this test writes v1's file only.
        return common::skip!(common::Missing::Other, "no cgroup v1 blkio hierarchy to set a throttle in");
    };
    let device = common::LoopDevice::direct_random("throttle", 64);
    let devnum = common::sh(&format!("cat /sys/block/{}/dev", device.name()));
    let name = format!("iolab-test-throttle-{}", std::process::id());
    let cgroup = Cgroup(std::path::Path::new(&blkio).join(&name));
    std::fs::create_dir(&cgroup.0).expect("the cgroup");
    std::fs::write(cgroup.0.join("blkio.throttle.read_iops_device"), format!("{devnum} 500"))
        .expect("the throttle");
    let run = [
        "run",
        "--target",
        device.path(),
        "--qd",
        "8",
        "--runtime",
        "2s",
        "--ramp",
        "300ms",
        "--json",
        "-q",
        "--no-store",
    ];
    let out = cgroup.run(&run);
    assert!(out.status.success(), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    let verdict = &job["verdict"];
    assert_eq!(verdict["cause"], "configured_limit", "{verdict:#}");
    let summary = verdict["summary"].as_str().expect("summary");
    assert!(
        summary.starts_with(&format!("The I/O throttle of cgroup /{name} held the job back: {} is capped at 500 read IOPS (blkio.throttle.read_iops_device)", device.name())),
        "{summary}"
    );
    // Judged on the cgroup's own reads (its blkio counters over the window), which are the
    // job's here: at most what the device did.
    let throttle = &job["machine"]["limits"]["io_throttles"][0];
    let served = throttle["served"].as_u64().unwrap_or_else(|| panic!("the cgroup's reads: {throttle}"));
    let device_reads = job["devices"][0]["reads"].as_u64().expect("device reads");
    assert!(served > 0 && served <= device_reads, "{served} of {device_reads}");
    assert!(summary.contains("and the cgroup's I/O on it ran at"), "{summary}");
}

/// One read at a time on a loop device: the cores idle between completions. Where the window
/// saw them woken from halting or sleeping states at least once per ten I/Os, the verdict's
/// hypothesis is their idle policy and its trial keeps them polling (root: this test runs as
/// root only); where they seldom idled (a machine busy with other work), it is not.
#[test]
fn cores_woken_for_each_completion_are_tried_with_the_cores_polling() {
    let _machine = alone();
    if let Some((missing, why)) = common::needs_root_and(&["losetup", "dd"]) {
        return common::skip!(missing, "{why}");
    }
    let device = common::LoopDevice::direct_random("wake", 64);
    let run = [
        "run",
        "--target",
        device.path(),
        "--qd",
        "1",
        "--runtime",
        "1s",
        "--ramp",
        "200ms",
        "--json",
        "-q",
        "--no-store",
    ];
    let out = common::iolab().args(run).output().expect("iolab runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    let verdict = &job["verdict"];
    let Some(idle) = job["machine"]["cpu_idle"].as_object() else {
        return common::skip!(common::Missing::Other, "this kernel has no cpuidle counters");
    };
    let ios = job["total"]["ios"].as_f64().expect("ios");
    let per_io = idle["wakeups"].as_f64().expect("wakeups") / ios;
    if per_io >= 0.1 {
        assert_eq!(verdict["advice"]["change"], "cpus_polling", "{per_io:.2} wake-ups per I/O: {verdict:#}");
        let outcome = verdict["advice"]["outcome"].as_str().expect("an outcome");
        assert_ne!(outcome, "untested", "the trial runs as root: {verdict:#}");
        let cause = verdict["cause"].as_str().expect("a cause");
        let expected = if outcome == "confirmed" { "configured_limit" } else { "concurrency" };
        assert_eq!(cause, expected, "{verdict:#}");
        assert!(verdict["summary"].as_str().expect("summary").contains("times per I/O"), "{verdict:#}");
    } else {
        assert_ne!(verdict["advice"]["change"], "cpus_polling", "{per_io:.2} wake-ups per I/O: {verdict:#}");
    }
}

/// The kernel's dirty page limits, lowered for one test and put back however it ends.
struct DirtyLimits {
    old: Vec<(&'static str, String)>,
}

impl DirtyLimits {
    const FILES: [&'static str; 4] =
        ["dirty_bytes", "dirty_ratio", "dirty_background_bytes", "dirty_background_ratio"];

    fn set(bytes: u64, background_bytes: u64) -> DirtyLimits {
        let read = |f: &str| std::fs::read_to_string(format!("/proc/sys/vm/{f}")).expect("vm sysctl");
        let old = Self::FILES.iter().map(|&f| (f, read(f).trim().to_string())).collect();
        let limits = DirtyLimits { old };
        std::fs::write("/proc/sys/vm/dirty_bytes", bytes.to_string()).expect("vm.dirty_bytes");
        std::fs::write("/proc/sys/vm/dirty_background_bytes", background_bytes.to_string())
            .expect("vm.dirty_background_bytes");
        limits
    }
}

impl Drop for DirtyLimits {
    /// Each limit is set by its bytes or its ratio, whichever was in force (the other reads 0).
    fn drop(&mut self) {
        for pair in self.old.chunks(2) {
            let [(bytes_file, bytes), (ratio_file, ratio)] = pair else { continue };
            let (file, value) = if bytes != "0" { (bytes_file, bytes) } else { (ratio_file, ratio) };
            let _ = std::fs::write(format!("/proc/sys/vm/{file}"), value);
        }
    }
}

/// A rule in the root blkio cgroup, where the flusher threads write back: removed on drop.
struct RootThrottle {
    file: std::path::PathBuf,
    devnum: String,
}

impl Drop for RootThrottle {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.file, format!("{} 0", self.devnum));
    }
}

/// A buffered writer on a loop device whose writeback the root cgroup caps at 20 MiB/s, under
/// dirty limits of 16 MiB: the writer waits in the kernel's dirty throttling, at the pace the
/// cap lets the pages drain. The verdict said "raise --qd"; it names the cap with its figure,
/// and the dirty limits that held the writer meanwhile with theirs.
#[test]
fn a_buffered_writer_held_by_the_dirty_limits_over_a_capped_writeback_names_both() {
    let _machine = alone();
    if let Some((missing, why)) = common::needs_root_and(&["losetup", "dd"]) {
        return common::skip!(missing, "{why}");
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let Some(blkio) = iolab_stats::limits::cgroup_mount(&mountinfo, Some("blkio")) else {
        return common::skip!(common::Missing::Other, "no cgroup v1 blkio hierarchy to cap the writeback in");
    };
    const MIB: u64 = 1 << 20;
    let device = common::LoopDevice::direct_random("dirty", 256);
    let devnum = common::sh(&format!("cat /sys/block/{}/dev", device.name())).trim().to_string();
    let file = std::path::Path::new(&blkio).join("blkio.throttle.write_bps_device");
    std::fs::write(&file, format!("{devnum} {}", 20 * MIB)).expect("the root throttle");
    let _throttle = RootThrottle { file, devnum };
    let _limits = DirtyLimits::set(16 * MIB, 8 * MIB);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = common::run_in(
        dir.path(),
        &[
            "run",
            "--target",
            device.path(),
            "--buffered",
            "--rw",
            "write",
            "--bs",
            "1m",
            "--qd",
            "1",
            "--engine",
            "psync",
            "--runtime",
            "3s",
            "--ramp",
            "0",
            "--allow-destroy",
            "--json",
            "-q",
            "--no-store",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let job = &json(&out)["jobs"][0];
    let verdict = &job["verdict"];
    assert_eq!(verdict["cause"], "configured_limit", "{verdict:#}");
    let summary = verdict["summary"].as_str().expect("summary");
    let evidence: Vec<&str> =
        verdict["evidence"].as_array().expect("evidence").iter().filter_map(|e| e.as_str()).collect();
    // Either limit may be the one the device ran at: the cap, when the writeback drained at
    // it, or the dirty limits, when the writer's pauses (and other writers' dirty pages, which
    // count against the same limits) left the device under the cap.
    let cap = format!(
        "The I/O throttle of cgroup / held the job back: {} is capped at 20MiB/s of writes (blkio.throttle.write_bps_device)",
        device.name()
    );
    let cache = &job["machine"]["page_cache"];
    if summary.starts_with(&cap) {
        // The dirty limits are evidence when the window's samples saw the page cache reach
        // their throttling point (a sampler starved by busy cores may miss the peaks).
        let reached = cache["dirty_peak_bytes"]
            .as_u64()
            .unwrap_or(0)
            .max(cache["dirty_end_bytes"].as_u64().unwrap_or(0))
            >= 12 * MIB;
        let said = evidence.iter().any(|e| {
            e.starts_with("meanwhile the kernel's dirty page limits held the buffered writer: the page cache dirty or under writeback stood past 12MiB")
        });
        assert_eq!(said, reached, "{cache} {evidence:?}");
    } else {
        assert!(
            summary.starts_with("The kernel's dirty page limits held the buffered writer: the page cache dirty or under writeback stood past 12MiB")
                && summary.contains("the hard limit, 16MiB")
                && summary.contains(&format!("{} wrote", device.name())),
            "{summary}"
        );
    }
    assert_eq!(cache["dirty_threshold_bytes"].as_u64(), Some(16 * MIB), "{cache}");
}

/// A buffered reader in a memory cgroup of 24 MiB, over a 96 MiB file it has read once already:
/// the limit evicted those pages, so its reads go to the disk where the machine's page cache
/// would have served them. Measured beside it: 29,798-33,128 IOPS from the disk under a 64 MiB
/// limit, 499,448 from the page cache with none, and the verdict named the cores' idle policy.
#[test]
fn a_memory_limit_that_evicts_a_buffered_readers_pages_is_named_with_its_refaults() {
    let _machine = alone();
    if !is_root() {
        return common::skip!(common::Missing::Root, "needs root to create a memory cgroup");
    }
    // Room for iolab's own memory (4-6 MiB of a debug build, charged to the cgroup too) and a
    // page cache four times smaller than the file.
    let cgroup = match MemoryCgroup::new("memory-limit", 24 << 20) {
        Ok(cgroup) => cgroup,
        Err(why) => {
            return common::skip!(
                common::Missing::Other,
                "{why} (cgroup v1 memory controller not writable here)"
            )
        }
    };
    // On the root disk: tmpfs pages are not reclaimed to a device, and refault nowhere.
    let dir = tempfile::tempdir_in("/var/tmp").expect("dir");
    let file = dir.path().join("f");
    cold_file(&file, 96 << 20);
    // The whole file read once inside the cgroup first, so every page the job reads has been
    // evicted by the limit already, however few I/Os a busy disk completes.
    let enter = cgroup.enter_then(&format!("cat {} > /dev/null &&", file.display()));
    let out = iolab_via("sh", &["-c", &enter, "sh"])
        .args(["run", "--target", "f", "--buffered", "--rw", "randread", "--qd", "4"])
        .args(["--runtime", "1s", "--ramp", "200ms", "--no-confirm", "--no-store", "--json", "-q"])
        .current_dir(dir.path())
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let verdict = &json(&out)["jobs"][0]["verdict"];
    let summary = verdict["summary"].as_str().expect("summary");
    assert_eq!(verdict["cause"], "configured_limit", "{summary}\n{}", verdict["evidence"]);
    let name = cgroup.path.file_name().expect("name").to_string_lossy().to_string();
    assert!(
        summary.starts_with(&format!("The memory limit of cgroup /{name} held the buffered reads back")),
        "{summary}"
    );
    assert!(summary.contains("keeps the page cache to 24MiB at most"), "{summary}");
    assert!(
        summary.contains("pages the limit had evicted and the job read again (workingset refaults"),
        "{summary}"
    );
}

/// A buffered writer under dirty limits of 16 MiB, to a file on the root disk with no cap: the
/// disk drains the pages fast enough that the page cache's count, sampled, rarely shows the
/// throttling point (at most 6 MiB of a 12 MiB point in one run), while the writer's threads
/// slept in `balance_dirty_pages` 40-80% of their samples. The verdict named the cores' idle
/// policy; it names the dirty limits with the threads' figure.
#[test]
fn a_buffered_writer_asleep_in_the_dirty_throttle_is_held_by_the_dirty_limits() {
    let _machine = alone();
    if !is_root() {
        return common::skip!(common::Missing::Root, "needs root to set the kernel's dirty limits");
    }
    const MIB: u64 = 1 << 20;
    let _limits = DirtyLimits::set(16 * MIB, 8 * MIB);
    // On the root disk: tmpfs pages are never dirty for the kernel's throttle.
    let dir = tempfile::tempdir_in("/var/tmp").expect("dir");
    // psync writes in the lane; io_uring, the default, punts a throttled buffered write to an
    // io-wq worker, which sleeps in the throttle while the lane waits for its completion. Four
    // psync lanes write one file: three wait for its lock while the throttle holds the fourth.
    for (engine, qd, threads) in
        [("psync", "1", "lane_waits"), ("psync", "4", "lane_waits"), ("uring", "1", "io_wq_waits")]
    {
        let out = common::run_in(
            dir.path(),
            &[
                "run",
                "--target",
                "f",
                "--size",
                "256m",
                "--buffered",
                "--rw",
                "write",
                "--bs",
                "1m",
                "--qd",
                qd,
                "--engine",
                engine,
                "--runtime",
                "1s",
                "--ramp",
                "200ms",
                "--no-confirm",
                "--no-store",
                "--json",
                "-q",
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let job = &json(&out)["jobs"][0];
        let verdict = &job["verdict"];
        let summary = verdict["summary"].as_str().expect("summary");
        let asleep = job["cpu"][threads]["sleeping"]
            .as_array()
            .and_then(|waits| waits.iter().find(|w| w["function"] == "balance_dirty_pages"))
            .and_then(|w| w["samples"].as_u64())
            .unwrap_or(0);
        if asleep == 0 {
            common::skip!(
                common::Missing::Other,
                "the {engine} QD {qd} step: the disk took the writer's pages as fast as it wrote them (never throttled: {}): {summary}",
                job["cpu"][threads]
            );
            continue;
        }
        if verdict["cause"] == "other_load" {
            // Busy cores kept the writer runnable more than throttled: that load is the answer.
            eprintln!("{engine} QD {qd}: another load held the machine (the true answer here): {summary}");
            continue;
        }
        assert_eq!(verdict["cause"], "configured_limit", "{engine} QD {qd}: {verdict:#}");
        assert!(summary.starts_with("The kernel's dirty page limits held the buffered writer"), "{summary}");
        assert!(summary.contains("the hard limit, 16MiB"), "{summary}");
        if qd == "4" {
            // Before, the lanes' throttled share was of all their samples, the lock's waits in
            // it (19% beside 67% waiting for the lock), and the verdict was "concurrency".
            assert!(summary.contains("outside the wait for the lock of the file they write"), "{summary}");
        }
    }
}
