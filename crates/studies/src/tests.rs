//! What each study refuses before any I/O, and how it lays out its jobs; running them is tested
//! on the real binary with the null engine (crates/cli/tests/studies.rs, store.rs).

use std::path::PathBuf;

use iolab_analysis::cliff::CliffRule;
use iolab_analysis::ramp::RampLimits;
use iolab_analysis::rounds::{SteadyRounds, Tracked};
use iolab_analysis::steady::SteadyRule;
use iolab_spec::{Axis, Bytes, EngineKind, Options, Rw};
use iolab_stats::result::{HostInfo, RunReport, SCHEMA};

use crate::cliff::Cliff;
use crate::fill::Precondition;
use crate::ladder::Ladder;
use crate::plan::Input;
use crate::ramp::Ramp;
use crate::suite::Suite;
use crate::sweep::Sweep;

/// Options on a small file that is never opened here: resolving does no I/O.
fn options() -> Options {
    Options {
        target: Some(vec![PathBuf::from("/nonexistent/iolab-studies-test")]),
        size: Some(Bytes(1 << 20)),
        ..Options::default()
    }
}

/// `options` as flags, with no job file or target argument.
fn input_of(options: &Options) -> Input {
    Input::flags(options, Vec::new())
}

#[test]
fn a_sweep_repeats_each_point_in_place_and_resumes_after_the_kept_ones() {
    let flags = Options { qd: Some(Axis(vec![1, 4, 16])), ..options() };
    let sweep = Sweep::over(&input_of(&flags), 2, None).unwrap();
    let names: Vec<&str> = sweep.plan.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names.len(), 6);
    assert_eq!(names[0], names[1], "a point's repeats run one after the other, under its name");
    assert_ne!(names[1], names[2]);
    assert_eq!(sweep.kind(), "sweep");
    let rest = sweep.remaining(3);
    assert_eq!(rest.jobs.len(), 3);
    assert_eq!(rest.jobs[0].name, sweep.plan.jobs[3].name);
    let steady = SteadyRounds::new(Tracked::Iops, SteadyRule::default());
    assert_eq!(Sweep::over(&input_of(&flags), 1, Some(steady)).unwrap().kind(), "sweep-until-steady");
}

#[test]
fn a_ramp_refuses_levels_outside_the_maximum_and_a_rate_of_its_own() {
    let limits = RampLimits { latency: None, max_cpu_pct: None };
    let bad_level = Ramp::over(&input_of(&options()), vec![50, 0], limits);
    assert!(bad_level.err().unwrap().to_string().contains("1..100 (got 0)"));
    let over = Ramp::over(&input_of(&options()), vec![10, 120], limits);
    assert!(over.err().unwrap().to_string().contains("got 120"));
    let cpu = Ramp::over(&input_of(&options()), vec![10], RampLimits { max_cpu_pct: Some(0.0), ..limits });
    assert!(cpu.err().unwrap().to_string().contains("--max-cpu"));
    let rated = Options { rate_iops: Some(100), ..options() };
    assert!(Ramp::over(&input_of(&rated), vec![10], limits)
        .err()
        .unwrap()
        .to_string()
        .contains("--rate-iops"));
    let ramp = Ramp::over(&input_of(&options()), vec![10, 50, 100], limits).unwrap();
    assert!(ramp.planned_s() > 0.0);
    assert_eq!(ramp.plan.jobs.len(), 1, "the run is recorded with its closed-loop job");
}

#[test]
fn fills_refuse_the_options_they_set_themselves() {
    let written = Options { rw: Some(Rw::RandRead), ..options() };
    let rule = CliffRule { drop_pct: 30.0, min_hold_samples: 5 };
    assert!(Cliff::over(&input_of(&written), None, rule).err().unwrap().to_string().contains("--rw"));
    assert!(Cliff::over(&input_of(&options()), None, CliffRule { drop_pct: 0.0, ..rule }).is_err());
    assert!(Precondition::over(&input_of(&written), 2, false).err().unwrap().to_string().contains("--rw"));
    assert!(Precondition::over(&input_of(&options()), 0, false)
        .err()
        .unwrap()
        .to_string()
        .contains("--passes"));
    assert!(Precondition::over(&input_of(&options()), 2, true).is_ok());
}

#[test]
fn a_ladder_chooses_its_engines_itself_and_says_why_a_rung_cannot_run() {
    let engine = Options { engine: Some(EngineKind::Psync), ..options() };
    assert!(Ladder::over(&input_of(&engine)).err().unwrap().to_string().contains("--engine"));
    // Buffered I/O: IOPOLL cannot run, and the other rungs can.
    let buffered = Options { direct: Some(false), ..options() };
    let ladder = Ladder::over(&input_of(&buffered)).unwrap();
    let report = RunReport {
        schema: SCHEMA,
        iolab_version: "test",
        host: HostInfo { hostname: "h".into(), kernel: "k".into(), cpus: 2 },
        started_at_unix_s: 0,
        interrupted: true,
        peak_rss_bytes: 0,
        jobs: Vec::new(),
    };
    let outcomes = ladder.outcomes(&report, &[]);
    assert_eq!(outcomes.len(), ladder.plan.jobs.len() + 1);
    let iopoll: Vec<_> = outcomes.iter().filter_map(|o| o.result.as_ref().err()).collect();
    assert!(iopoll.iter().any(|why| why.contains("O_DIRECT")), "{iopoll:?}");
    assert!(iopoll.iter().any(|why| why.contains("not reached")), "{iopoll:?}");
}

#[test]
fn a_suite_sets_each_test_s_workload_itself() {
    let written = Options { rw: Some(Rw::Write), ..options() };
    let suite = "quick".parse().unwrap();
    assert!(Suite::over(suite, &input_of(&written)).err().unwrap().to_string().contains("--rw"));
    let quick = Suite::over(suite, &input_of(&options())).unwrap();
    assert!(!quick.plan.jobs.is_empty());
    assert!(quick.planned_s() > 0.0);
}
