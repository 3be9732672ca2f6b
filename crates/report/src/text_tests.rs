//! Tests of a run's text report: the device line and the verdict with its evidence.

use iolab_stats::result::{Bottleneck, QueueInfo};

use super::*;

fn vda() -> DeviceActivity {
    DeviceActivity {
        device: "vda".into(),
        reads: 123_000,
        writes: 45,
        read_bytes: 123_000 * 4096,
        write_bytes: 45 * 65536,
        iops: 12_304.5,
        util_pct: 97.2,
        avg_queue: 31.64,
        read_await_us: Some(2_512.0),
        write_await_us: Some(880.0),
        queue: QueueInfo {
            nr_requests: Some(256),
            hw_queue_depth: Some(128),
            hw_queues: Some(1),
            scheduler: Some("mq-deadline".into()),
            rotational: Some(true),
            ..QueueInfo::default()
        },
    }
}

#[test]
fn a_device_line_gives_load_queue_and_latency() {
    let mut out = String::new();
    device_text(&mut out, &vda());
    assert_eq!(
        out,
        "  device vda: 97% busy, avg queue 31.6, 12,304 IOPS (123,000 reads and 45 writes completed), await read 2.51ms write 880us; mq-deadline, nr_requests 256, hw queue depth 128, rotational\n"
    );
    let zram = DeviceActivity {
        device: "zram5".into(),
        writes: 0,
        write_await_us: None,
        queue: QueueInfo { rotational: Some(false), ..QueueInfo::default() },
        ..vda()
    };
    let mut out = String::new();
    device_text(&mut out, &zram);
    assert_eq!(
        out,
        "  device zram5: 97% busy, avg queue 31.6, 12,304 IOPS (123,000 reads and 0 writes completed), await read 2.51ms; non-rotational\n"
    );
}

#[test]
fn the_verdict_names_the_cause_and_indents_its_evidence() {
    let verdict = Verdict::of(
        Bottleneck::Device,
        "vda was busy 97% of the window.".into(),
        vec!["vda: busy 97%".into(), "cores busy 20% 10%".into()],
    );
    let mut out = String::new();
    verdict_text(&mut out, &verdict);
    assert_eq!(
        out,
        "Bottleneck: device — vda was busy 97% of the window.\n    vda: busy 97%\n    cores busy 20% 10%\n"
    );
}
