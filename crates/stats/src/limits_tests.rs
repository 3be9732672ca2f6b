use super::*;

#[test]
fn cpu_stat_of_cgroup_v1_and_v2() {
    let v1 = "nr_periods 120\nnr_throttled 80\nthrottled_time 4000000000\n";
    assert_eq!(
        CpuStat::parse(v1),
        Some(CpuStat { periods: 120, throttled_periods: 80, throttled_ns: 4_000_000_000 })
    );
    let v2 =
        "usage_usec 9000\nuser_usec 1\nsystem_usec 2\nnr_periods 10\nnr_throttled 3\nthrottled_usec 2500\n";
    assert_eq!(
        CpuStat::parse(v2),
        Some(CpuStat { periods: 10, throttled_periods: 3, throttled_ns: 2_500_000 })
    );
    // A v2 cgroup without the cpu controller enabled writes only usage.
    assert_eq!(CpuStat::parse("usage_usec 9000\nuser_usec 1\nsystem_usec 2\n"), None);
    let grown = CpuStat { periods: 130, throttled_periods: 85, throttled_ns: 4_500_000_000 }
        .since(&CpuStat::parse(v1).expect("v1"));
    assert_eq!(grown, CpuStat { periods: 10, throttled_periods: 5, throttled_ns: 500_000_000 });
}

#[test]
fn quotas_of_v1_and_v2_and_none() {
    assert_eq!(parse_cpu_max("50000 100000\n"), Some((50_000, 100_000)));
    assert_eq!(parse_cpu_max("max 100000\n"), None);
    assert_eq!(parse_cpu_max("garbage"), None);
    assert_eq!(parse_cfs_quota("25000\n", "100000\n"), Some((25_000, 100_000)));
    assert_eq!(parse_cfs_quota("-1\n", "100000\n"), None);
    let quota = CpuQuota {
        quota_us: 50_000,
        period_us: 100_000,
        periods: 20,
        throttled_periods: 15,
        ..CpuQuota::default()
    };
    assert_eq!((quota.cores(), quota.throttled_pct()), (0.5, 75.0));
}

#[test]
fn the_cgroup_of_a_controller_and_where_it_is_mounted() {
    let cgroup = "9:name=systemd:/\n4:memory:/process_api/61\n2:cpu,cpuacct:/ci/job 7\n0::/user.slice\n";
    assert_eq!(cgroup_path(cgroup, Some("cpu")).as_deref(), Some("/ci/job 7"));
    assert_eq!(cgroup_path(cgroup, Some("cpuacct")).as_deref(), Some("/ci/job 7"));
    assert_eq!(cgroup_path(cgroup, Some("blkio")), None);
    assert_eq!(cgroup_path(cgroup, None).as_deref(), Some("/user.slice"));
    let mountinfo = "\
30 24 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
34 30 0:30 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:14 - cgroup cgroup rw,cpu,cpuacct
35 30 0:31 / /sys/fs/cgroup/my\\040cpuset rw - cgroup cgroup rw,cpuset
40 24 0:35 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate
";
    assert_eq!(cgroup_mount(mountinfo, Some("cpu")).as_deref(), Some("/sys/fs/cgroup/cpu,cpuacct"));
    assert_eq!(cgroup_mount(mountinfo, Some("cpuset")).as_deref(), Some("/sys/fs/cgroup/my cpuset"));
    assert_eq!(cgroup_mount(mountinfo, Some("blkio")), None);
    assert_eq!(cgroup_mount(mountinfo, None).as_deref(), Some("/sys/fs/cgroup/unified"));
}

#[test]
fn cpu_lists() {
    assert_eq!(parse_cpu_list("0-3,6,8-9\n"), Some(vec![0, 1, 2, 3, 6, 8, 9]));
    assert_eq!(parse_cpu_list("0"), Some(vec![0]));
    assert_eq!(parse_cpu_list("0-x"), None);
    let affinity = Affinity { allowed: vec![0], online: 2, ..Default::default() };
    assert!(affinity.narrowed());
    assert!(!Affinity { allowed: vec![0, 1], online: 2, ..Default::default() }.narrowed());
}

#[test]
fn io_throttles_of_v1_and_v2() {
    assert_eq!(
        parse_blkio_throttle("7:3 2000\n254:0 500\n", "read", "iops"),
        [
            ("7:3".to_string(), "read", "iops", 2000, "blkio.throttle.read_iops_device".to_string()),
            ("254:0".to_string(), "read", "iops", 500, "blkio.throttle.read_iops_device".to_string()),
        ]
    );
    assert!(parse_blkio_throttle("", "write", "bps").is_empty());
    assert_eq!(
        parse_io_max("7:3 rbps=max wbps=1048576 riops=2000 wiops=max\n"),
        [
            ("7:3".to_string(), "write", "bps", 1_048_576, "io.max wbps".to_string()),
            ("7:3".to_string(), "read", "iops", 2000, "io.max riops".to_string()),
        ]
    );
}

#[test]
fn memory_limits_of_v1_and_v2_and_none() {
    assert_eq!(parse_memory_limit("134217728\n"), Some(128 << 20));
    assert_eq!(parse_memory_limit("max\n"), None);
    // v1's "no limit" is a number near 2^63.
    assert_eq!(parse_memory_limit("9223372036854771712\n"), None);
    assert_eq!(parse_memory_limit("lots"), None);
    let limit = MemoryLimit {
        cgroup: "/ci".into(),
        max_bytes: Some(512 << 20),
        high_bytes: Some(256 << 20),
        ..MemoryLimit::default()
    };
    assert_eq!(limit.tightest_bytes(), Some(256 << 20));
    assert_eq!(MemoryLimit { high_bytes: None, ..limit }.tightest_bytes(), Some(512 << 20));
}

/// A cgroup's own I/O per device: v2's io.stat and v1's two counter files, as this kernel
/// prints them (the v1 lines from the root blkio cgroup here).
#[test]
fn served_counters_of_v1_and_v2() {
    let v2 = "7:3 rbytes=409600 wbytes=8192 rios=100 wios=2 dbytes=0 dios=0\n254:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n";
    let served = parse_io_stat(v2);
    assert_eq!(
        served[0],
        ("7:3".to_string(), Served { read_ios: 100, write_ios: 2, read_bytes: 409_600, write_bytes: 8192 })
    );
    assert_eq!(served[1].1.of("write", "iops"), 4);
    let ios = "7:2 Read 628018\n7:2 Write 187885\n7:2 Sync 814473\n7:2 Async 1444\n7:2 Discard 14\n7:2 Total 815917\nTotal 815917\n";
    let bytes = "7:2 Read 2572357632\n7:2 Write 769576960\n7:2 Sync 3336167424\n7:2 Async 5767168\n7:2 Discard 0\n7:2 Total 3341934592\nTotal 3341934592\n";
    let served = parse_blkio_served(ios, bytes);
    assert_eq!(served.len(), 1, "the last Total line is no device: {served:?}");
    let loop2 = served[0].1;
    assert_eq!((loop2.of("read", "iops"), loop2.of("write", "iops")), (628_018, 187_885));
    assert_eq!((loop2.of("read", "bps"), loop2.of("write", "bps")), (2_572_357_632, 769_576_960));
    assert!(parse_blkio_served("", "").is_empty() && parse_io_stat("").is_empty());
}

#[test]
fn memory_counters_of_v1_v2_and_older_kernels() {
    let v1 = "cache 80773120\nworkingset_refault_file 3\ntotal_cache 80773120\ntotal_workingset_refault_anon 0\ntotal_workingset_refault_file 1073\n";
    assert_eq!(
        MemoryCounters::parse(v1, Some("285657\n"), false),
        MemoryCounters { refault_pages: Some(1073), limit_hits: Some(285_657) }
    );
    let v2 = "anon 1822720\nfile 80773120\nworkingset_refault_anon 2\nworkingset_refault_file 180828\n";
    let events = "low 0\nhigh 12\nmax 30\noom 0\noom_kill 0\n";
    assert_eq!(
        MemoryCounters::parse(v2, Some(events), true),
        MemoryCounters { refault_pages: Some(180_828), limit_hits: Some(42) }
    );
    // Before 5.9 one line counts file and anonymous refaults together; unread files are None.
    assert_eq!(
        MemoryCounters::parse("total_workingset_refault 77\n", None, false),
        MemoryCounters { refault_pages: Some(77), limit_hits: None }
    );
    assert_eq!(MemoryCounters::parse("garbage", Some("lots"), true), MemoryCounters::default());
}
