use super::*;
use crate::shape::shape;
use crate::{Request, Trace, TraceOp, TraceSource};

fn zoned_trace() -> Trace {
    let mut rng = fastrand::Rng::with_seed(11);
    let device = 1u64 << 30;
    let requests = (0..40_000u64)
        .map(|i| {
            let hot = rng.u32(0..100) < 80;
            let (from, span) = if hot { (0, device / 5) } else { (device / 5, device * 4 / 5) };
            let offset = from + rng.u64(0..span / 4096) * 4096;
            let len = if rng.u32(0..100) < 25 { 65536.min((device - offset) as u32) } else { 4096 };
            let op = if rng.u32(0..100) < 60 { TraceOp::Read } else { TraceOp::Write };
            Request {
                at_ns: i * 50_000,
                op,
                flags: 0,
                offset,
                len,
                pid: 1,
                stream: 0,
                service_ns: Some(120_000),
            }
        })
        .collect();
    Trace {
        header: TraceHeader {
            source: TraceSource::Capture,
            streams: vec!["loop2".into()],
            device_bytes: Some(device),
            timed: true,
            duration_ns: 40_000 * 50_000,
            processes: Default::default(),
            captured_at: None,
            capture_cost: None,
        },
        requests,
    }
}

#[test]
fn the_job_says_the_traces_mix_placement_rate_and_room() {
    let trace = zoned_trace();
    let job = synthesize(&trace.header, &shape(&trace), "t.trace").expect("a job");
    assert_eq!(job.distribution, "zoned:80/20,20/80");
    assert_eq!(job.rate_iops, Some(20_000));
    assert_eq!(job.qd, 6, "three outstanding at most (120 us every 50 us), twice that");
    let options = iolab_spec::jobfile::parse(&job.text).expect("a job file iolab reads");
    assert_eq!(options.read_pct.and_then(|a| a.single()), Some(60));
    assert_eq!(options.rate_iops, Some(20_000));
    assert!(job.text.contains("bs_split = \"4096/75"), "{}", job.text);
    assert!(job.text.contains("arrival = \"uniform\""), "evenly spaced: {}", job.text);
    assert!(job.text.contains("runtime = \"2000ms\""), "{}", job.text);
}

#[test]
fn a_run_is_compared_figure_by_figure() {
    let trace = zoned_trace();
    let traced = shape(&trace);
    let run =
        RunFigures { iops: 19_000.0, read_pct: 61.0, mean_size: 19_456.0, captured: Some(traced.clone()) };
    let figures = compare(&traced, &run);
    let named =
        |name: &str| figures.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("{name}: {figures:?}"));
    assert!((named("requests/s").difference + 5.0).abs() < 1e-9);
    assert!((named("read share").difference - (61.0 - traced.read_pct)).abs() < 1e-9);
    assert_eq!(named("requests in 0%..20% of the region").difference, 0.0);
    assert!(figures.iter().any(|f| f.name == "4096 B share"));
    let bare = compare(&traced, &RunFigures { captured: None, ..run });
    assert_eq!(bare.len(), 3, "without a capture: rate, read share, mean size");
}
