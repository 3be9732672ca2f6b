//! Tests of a device's activity over a window: the growth of its /sys/block stat counters.

use super::*;

#[test]
fn activity_is_the_growth_of_the_counters_over_the_window() {
    // vda over 2 s: 20,000 reads of 4 KiB and 100 writes of 64 KiB, busy 1.9 s, with
    // 63,000 ms of request time (31.5 requests in flight on average).
    let before = DeviceStat::parse("1000 0 8000 500 10 0 80 5 0 1000 2000").expect("stat");
    let after = DeviceStat::parse("21000 0 168000 60500 110 0 12880 505 32 2900 65000").expect("stat");
    let queue = QueueInfo {
        nr_requests: Some(256),
        hw_queue_depth: Some(128),
        hw_queues: Some(1),
        scheduler: Some("mq-deadline".into()),
        rotational: Some(true),
        ..QueueInfo::default()
    };
    let a = activity("vda", &queue, &before, &after, 2.0);
    assert_eq!((a.reads, a.writes, a.read_bytes, a.write_bytes), (20_000, 100, 20_000 * 4096, 100 * 65536));
    assert_eq!(a.iops, 10_050.0);
    assert!((a.util_pct - 95.0).abs() < 1e-9, "{}", a.util_pct);
    assert!((a.avg_queue - 31.5).abs() < 1e-9, "{}", a.avg_queue);
    assert_eq!(a.read_await_us, Some(3_000.0));
    assert_eq!(a.write_await_us, Some(5_000.0));
    assert_eq!(
        (a.queue.nr_requests, a.queue.hw_queue_depth, a.queue.scheduler.as_deref()),
        (Some(256), Some(128), Some("mq-deadline"))
    );
}

#[test]
fn an_idle_device_has_no_await_and_a_zero_window_no_rates() {
    let stat = DeviceStat::parse("5 0 40 1 0 0 0 0 0 1 1").expect("stat");
    let idle = activity("loop0", &QueueInfo::default(), &stat, &stat, 1.0);
    assert_eq!((idle.iops, idle.util_pct, idle.avg_queue), (0.0, 0.0, 0.0));
    assert_eq!((idle.read_await_us, idle.write_await_us), (None, None));
    let later = DeviceStat::parse("9 0 72 2 0 0 0 0 0 3 4").expect("stat");
    let instant = activity("loop0", &QueueInfo::default(), &stat, &later, 0.0);
    assert_eq!((instant.iops, instant.util_pct, instant.avg_queue), (0.0, 0.0, 0.0));
}

#[test]
fn util_never_exceeds_the_window() {
    let before = DeviceStat::parse("0 0 0 0 0 0 0 0 0 0 0").expect("stat");
    let after = DeviceStat::parse("10 0 80 10 0 0 0 0 0 1004 1004").expect("stat");
    assert_eq!(activity("vda", &QueueInfo::default(), &before, &after, 1.0).util_pct, 100.0);
}
