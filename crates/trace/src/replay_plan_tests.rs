use std::collections::BTreeMap;

use super::*;
use crate::{Request, TraceHeader, TraceSource};

fn trace(requests: &[(u64, TraceOp, u64, u32)], device: Option<u64>, timed: bool) -> Trace {
    Trace {
        header: TraceHeader {
            source: TraceSource::Capture,
            streams: vec!["loop1".into()],
            device_bytes: device,
            timed,
            duration_ns: requests.last().map_or(0, |r| r.0),
            processes: BTreeMap::new(),
            captured_at: None,
            capture_cost: None,
        },
        requests: requests
            .iter()
            .map(|&(at_ns, op, offset, len)| Request {
                at_ns,
                op,
                flags: 0,
                offset,
                len,
                pid: 1,
                stream: 0,
                service_ns: None,
            })
            .collect(),
    }
}

const MIB: u64 = 1 << 20;

#[test]
fn a_trace_that_fits_keeps_its_offsets_and_its_times_scaled_by_the_speed() {
    let t = trace(
        &[(0, TraceOp::Read, 0, 4096), (1_000, TraceOp::Flush, 0, 0), (4_000, TraceOp::Write, MIB, 65536)],
        Some(8 * MIB),
        true,
    );
    let plan = plan(&t, Speed::Times(2.0), None, 8 * MIB, 512).expect("plan");
    assert_eq!(
        plan.ios,
        vec![
            ReplayIo { due_ns: 0, write: false, offset: 0, len: 4096 },
            ReplayIo { due_ns: 2_000, write: true, offset: MIB, len: 65536 },
        ]
    );
    assert_eq!(
        (plan.skipped, plan.speed, plan.fit, plan.read_pct, plan.align),
        (1, Some(2.0), None, 50, 4096)
    );
    assert_eq!(plan.sizes, vec![(4096, 1), (65536, 1)]);
}

#[test]
fn a_larger_trace_is_refused_unless_fitted() {
    let t = trace(
        &[(0, TraceOp::Read, 6 * MIB, 4096), (10, TraceOp::Read, 8 * MIB - 4096, 4096)],
        Some(8 * MIB),
        true,
    );
    let error = plan(&t, Speed::Times(1.0), None, 2 * MIB, 512).expect_err("too large");
    assert_eq!(error, PlanError::TooLarge { reach: 8 * MIB, region: 2 * MIB });
    assert!(error.to_string().contains("--fit scale"));
    let scaled = plan(&t, Speed::Times(1.0), Some(Fit::Scale), 2 * MIB, 512).expect("scale");
    let offsets: Vec<u64> = scaled.ios.iter().map(|io| io.offset).collect();
    assert_eq!(offsets, vec![3 * MIB / 2, 2 * MIB - 4096]);
    let wrapped = plan(&t, Speed::Times(1.0), Some(Fit::Wrap), 2 * MIB, 512).expect("wrap");
    let offsets: Vec<u64> = wrapped.ios.iter().map(|io| io.offset).collect();
    assert_eq!(offsets, vec![0, 2 * MIB - 4096]);
    assert_eq!(wrapped.fit, Some(Fit::Wrap));
}

#[test]
fn direct_io_refuses_an_unaligned_request_and_an_untimed_trace_goes_as_fast_as_it_can() {
    let t = trace(&[(0, TraceOp::Read, 100, 4096)], None, false);
    let error = plan(&t, Speed::Times(1.0), None, MIB, 512).expect_err("unaligned");
    assert!(matches!(error, PlanError::Unaligned { index: 0, offset: 100, .. }), "{error}");
    let buffered = plan(&t, Speed::Times(1.0), None, MIB, 1).expect("buffered");
    assert_eq!((buffered.speed, buffered.align), (None, 4), "100 is a multiple of 4, not of 8");
}

#[test]
fn only_discards_and_flushes_is_nothing_to_replay() {
    let t = trace(&[(0, TraceOp::Discard, 0, 4096), (1, TraceOp::Flush, 0, 0)], None, true);
    assert_eq!(plan(&t, Speed::Max, None, MIB, 512), Err(PlanError::NoData { skipped: 2 }));
}

#[test]
fn speeds_and_fits_read_as_written() {
    assert_eq!("2x".parse::<Speed>(), Ok(Speed::Times(2.0)));
    assert_eq!("0.5".parse::<Speed>(), Ok(Speed::Times(0.5)));
    assert_eq!("max".parse::<Speed>(), Ok(Speed::Max));
    assert!("0x".parse::<Speed>().is_err() && "fast".parse::<Speed>().is_err());
    assert!("1e-300x".parse::<Speed>().is_err(), "a speed that would make every time 'never'");
    assert_eq!("wrap".parse::<Fit>(), Ok(Fit::Wrap));
    assert!("squash".parse::<Fit>().is_err());
}

#[test]
fn a_wrapped_offset_stays_on_the_targets_blocks() {
    // A target of 1 MiB + 1000 bytes: offsets modulo its size would fall between blocks.
    let t = trace(&[(0, TraceOp::Read, 3 * MIB, 4096)], None, true);
    let wrapped = plan(&t, Speed::Max, Some(Fit::Wrap), MIB + 1000, 512).expect("wrap");
    assert_eq!(wrapped.ios[0].offset % 512, 0, "{:?}", wrapped.ios);
}

#[test]
fn fitted_offsets_keep_the_traces_own_block_alignment() {
    // 4 KiB requests on a target of 512-byte sectors: scaled by 3/8, 5 MiB + 4 KiB would land
    // on 1.875 MiB + 1.5 KiB, between the workload's 4 KiB blocks.
    let t = trace(
        &[(0, TraceOp::Read, 5 * MIB + 4096, 4096), (1, TraceOp::Read, 8 * MIB - 4096, 4096)],
        None,
        true,
    );
    let scaled = plan(&t, Speed::Max, Some(Fit::Scale), 3 * MIB, 512).expect("scale");
    assert!(scaled.ios.iter().all(|io| io.offset % 4096 == 0), "{:?}", scaled.ios);
    assert_eq!(scaled.align, 4096);
}

#[test]
fn times_past_a_century_are_refused_not_read_as_never() {
    let t = trace(&[(0, TraceOp::Read, 0, 4096), (u64::MAX / 2, TraceOp::Read, 0, 4096)], None, true);
    assert!(matches!(
        plan(&t, Speed::Times(0.001), None, MIB, 512),
        Err(PlanError::TooLate { index: 1, .. })
    ));
}
