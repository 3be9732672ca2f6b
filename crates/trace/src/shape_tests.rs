use std::collections::BTreeMap;

use super::*;
use crate::{TraceHeader, TraceSource};

const DEVICE: u64 = 1 << 30;

fn header(timed: bool) -> TraceHeader {
    TraceHeader {
        source: TraceSource::Capture,
        streams: vec!["loop9".into()],
        device_bytes: Some(DEVICE),
        timed,
        duration_ns: 0,
        processes: BTreeMap::new(),
        captured_at: None,
        capture_cost: None,
    }
}

/// `n` requests: `read_pct` reads, 4 KiB or (`big_pct`) 64 KiB, placed by zones
/// (io %, size %), one every `gap_ns`, each served in `service_ns`.
fn mixed(n: usize, read_pct: u32, big_pct: u32, zones: &[(u32, u32)], gap_ns: u64, service_ns: u64) -> Trace {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut requests = Vec::with_capacity(n);
    for i in 0..n {
        let len: u32 = if rng.u32(0..100) < big_pct { 65536 } else { 4096 };
        let mut pick = rng.u32(0..100);
        let mut zone_start = 0u64;
        let mut zone = (0, 100);
        for &(io, size) in zones {
            if pick < io {
                zone = (zone_start, size);
                break;
            }
            pick -= io;
            zone_start += u64::from(size);
        }
        let (from, to) = (DEVICE * zone.0 / 100, DEVICE * (zone.0 + u64::from(zone.1)) / 100);
        let slots = (to - from) / 65536;
        let offset = from + rng.u64(0..slots) * 65536;
        let op = if rng.u32(0..100) < read_pct { TraceOp::Read } else { TraceOp::Write };
        requests.push(Request {
            at_ns: i as u64 * gap_ns,
            op,
            flags: 0,
            offset,
            len,
            pid: 1,
            stream: 0,
            service_ns: Some(service_ns),
        });
    }
    let mut header = header(true);
    header.duration_ns = (n as u64 - 1) * gap_ns;
    Trace { header, requests }
}

#[test]
fn the_mix_sizes_and_zones_are_recovered() {
    let trace = mixed(100_000, 70, 40, &[(60, 10), (30, 20), (10, 70)], 10_000, 30_000);
    let shape = shape(&trace);
    assert!((shape.read_pct - 70.0).abs() < 1.0, "{}", shape.read_pct);
    let share = |bytes| shape.sizes.iter().find(|s| s.bytes == bytes).map_or(0.0, |s| s.pct);
    assert!((share(4096) - 60.0).abs() < 1.0 && (share(65536) - 40.0).abs() < 1.0, "{:?}", shape.sizes);
    let fit = &shape.placement.zoned_fit;
    assert_eq!(fit.len(), 3, "{fit:?}");
    for (got, want) in fit.iter().zip([(60, 10), (30, 20), (10, 70)]) {
        assert!(got.0.abs_diff(want.0) <= 2 && got.1.abs_diff(want.1) <= 1, "{fit:?}");
    }
    assert!(shape.placement.zoned_error_pct < 5.0, "{}", shape.placement.zoned_error_pct);
    assert!((shape.iops - 100_000.0).abs() < 10.0, "{}", shape.iops);
    let out = shape.outstanding.expect("outstanding");
    assert_eq!(out.max, 3, "a request every 10 us served in 30 us: three at a time");
    assert!((out.mean - 3.0).abs() < 0.1, "{}", out.mean);
    assert!(shape.sequential_pct < 1.0);
}

#[test]
fn uniform_offsets_fit_one_zone() {
    let trace = mixed(50_000, 100, 0, &[(100, 100)], 1_000, 500);
    let fit = shape(&trace).placement.zoned_fit;
    assert_eq!(fit, vec![(100, 100)]);
}

#[test]
fn sequential_streams_interleaved_are_sequential() {
    let mut requests = Vec::new();
    for i in 0..1000u64 {
        for stream_start in [0u64, 1 << 28] {
            requests.push(Request {
                at_ns: i * 100,
                op: TraceOp::Read,
                flags: 0,
                offset: stream_start + i * 131072,
                len: 131072,
                pid: 1,
                stream: 0,
                service_ns: None,
            });
        }
    }
    let trace = Trace { header: header(true), requests };
    let shape = shape(&trace);
    assert!(shape.sequential_pct > 99.0, "{}", shape.sequential_pct);
    assert!(shape.outstanding.is_none(), "no service times, no outstanding");
}

#[test]
fn a_request_without_its_completion_is_outstanding_to_the_end() {
    let mut trace = mixed(10, 100, 0, &[(100, 100)], 1_000, 500);
    trace.requests[9].service_ns = None;
    trace.header.duration_ns = 10_000;
    let out = outstanding(&trace).expect("some completions");
    // Nine of 500 ns each, and the last from 9,000 to 10,000 ns, over 10,000 ns.
    assert!((out.mean - 0.55).abs() < 1e-9, "{}", out.mean);
}

#[test]
fn gaps_say_whether_arrivals_are_even_or_bursty() {
    let even = mixed(10_000, 100, 0, &[(100, 100)], 1_000, 10);
    let arrivals = shape(&even).arrivals.expect("timed");
    assert!(arrivals.gap_cv < 0.01 && (arrivals.p50_gap_us - 1.0).abs() < 1e-9, "{arrivals:?}");
    let mut bursty = even.clone();
    for (i, r) in bursty.requests.iter_mut().enumerate() {
        // 100 at once every 100 ms.
        r.at_ns = (i as u64 / 100) * 100_000_000;
    }
    bursty.header.duration_ns = bursty.requests.last().expect("one").at_ns;
    let arrivals = shape(&bursty).arrivals.expect("timed");
    assert!(arrivals.gap_cv > 5.0, "{arrivals:?}");
    assert_eq!(arrivals.peak_10ms_iops, 10_000.0);
}

#[test]
fn a_zipf_trace_fits_its_exponent() {
    // Ranks drawn from zipf 1.2 over 16384 blocks, by inverse transform of the cumulative.
    let blocks = 16_384usize;
    let weights: Vec<f64> = (1..=blocks).map(|k| (k as f64).powf(-1.2)).collect();
    let total: f64 = weights.iter().sum();
    let mut cdf = Vec::with_capacity(blocks);
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cdf.push(acc);
    }
    let mut rng = fastrand::Rng::with_seed(3);
    let requests = (0..200_000u64)
        .map(|i| {
            let u = rng.f64();
            let rank = cdf.partition_point(|&c| c < u).min(blocks - 1) as u64;
            Request {
                at_ns: i,
                op: TraceOp::Read,
                flags: 0,
                offset: rank * 4096,
                len: 4096,
                pid: 1,
                stream: 0,
                service_ns: None,
            }
        })
        .collect();
    let mut header = header(true);
    header.device_bytes = Some(blocks as u64 * 4096);
    let (theta, error) = shape(&Trace { header, requests }).placement.zipf_fit.expect("fit");
    assert!((theta - 1.2).abs() < 0.1 && error < 5.0, "theta {theta}, error {error}");
}

#[test]
fn whole_percents_still_add_up_to_100() {
    assert_eq!(whole_percents(&[33.4, 33.3, 33.3]), vec![34, 33, 33]);
    assert_eq!(whole_percents(&[99.6, 0.4]), vec![100, 0]);
}

#[test]
fn a_trace_spanning_centuries_is_counted_without_an_array_of_its_seconds() {
    let mut trace = mixed(3, 100, 0, &[(100, 100)], 1, 1);
    trace.requests[2].at_ns = 1 << 62;
    trace.header.duration_ns = 1 << 62;
    let arrivals = shape(&trace).arrivals.expect("timed");
    assert_eq!((arrivals.busiest_second_iops, arrivals.quietest_second_iops), (2.0, 0.0));
}

#[test]
fn the_busiest_and_quietest_windows_count_the_empty_ones() {
    let at = |ns: &[u64]| -> Vec<Request> {
        ns.iter()
            .map(|&at_ns| Request {
                at_ns,
                op: TraceOp::Read,
                flags: 0,
                offset: 0,
                len: 4096,
                pid: 0,
                stream: 0,
                service_ns: None,
            })
            .collect()
    };
    // Windows of 10: 3 in the first, none in the second, 1 in the third; the fourth is partial.
    assert_eq!(busiest_and_quietest(&at(&[0, 1, 2, 25, 31]), 10, 31), (3, 0));
    assert_eq!(busiest_and_quietest(&at(&[0, 11, 12, 25]), 10, 25), (2, 1));
    assert_eq!(busiest_and_quietest(&at(&[0, 5]), 10, 5), (2, 2), "shorter than a window: its one window");
}
