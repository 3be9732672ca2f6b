//! `--repeat` (issue 34 item 3): the phases N times, each on a tree of its own or on the kept
//! tree the run began on, each phase's rate over the repeats with its spread.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use crate::job::FilesOptions;
use crate::kept::plan_in;
use crate::plan::{parse_phases, FileEngine, FilesPlan, Phase};
use crate::repeats::{check_repeats, run_repeated};
use crate::report::FilesReport;
use crate::run::RunOptions;
use crate::run_tests::scratch;

fn options(phases: &str) -> FilesOptions {
    FilesOptions {
        files: Some(200),
        threads: Some(2),
        engine: Some(FileEngine::Sync),
        sizes: Some("4k".parse().expect("sizes")),
        phases: Some(parse_phases(phases).expect("phases")),
        ..FilesOptions::default()
    }
}

fn repeated(plan: &FilesPlan, dir: &Path, repeats: u32, keep: bool) -> (FilesReport, Vec<(u32, Phase)>) {
    let interrupt = AtomicBool::new(false);
    let options = RunOptions { dir: dir.to_path_buf(), keep, interrupt: &interrupt, progress: None };
    let mut seen = Vec::new();
    let report = run_repeated(plan, &options, repeats, |p| seen.push((p.repeat, p.phase))).expect("runs");
    assert!(report.failure().is_none(), "{:?}", report.failure());
    (report, seen)
}

#[test]
fn each_repeat_runs_every_phase_on_a_new_tree_and_each_phase_has_its_spread() {
    let temp = scratch();
    let dir = temp.path().join("tree");
    let plan = plan_in(&options("mkdir,create,stat,unlink,rmdir"), &dir).expect("plan");
    let (report, seen) = repeated(&plan, &dir, 3, false);
    let want: Vec<(u32, Phase)> = (1..=3).flat_map(|r| plan.phases.iter().map(move |&p| (r, p))).collect();
    assert_eq!(seen, want, "each phase handed over as it ended, with its repeat");
    let kept: Vec<(u32, Phase, u64)> = report.phases.iter().map(|p| (p.repeat, p.phase, p.done)).collect();
    assert_eq!(kept.len(), 15);
    assert!(kept.iter().all(
        |&(_, phase, done)| done == if phase == Phase::Mkdir || phase == Phase::Rmdir { 22 } else { 200 }
    ));
    assert_eq!(report.repeats.len(), 5);
    for spread in &report.repeats {
        assert_eq!(spread.ops_per_s.len(), 3, "{:?}", spread.phase);
        let (low, high) =
            spread.ops_per_s.iter().fold((f64::MAX, 0.0_f64), |(l, h), &r| (l.min(r), h.max(r)));
        let mean = spread.ops_per_s.iter().sum::<f64>() / 3.0;
        assert!((spread.mean_ops_per_s - mean).abs() < 1e-6);
        assert!((spread.spread_pct - (high - low) / mean * 100.0).abs() < 1e-6);
    }
    assert!(!dir.exists(), "the last repeat removed its tree");
}

#[test]
fn repeats_over_a_kept_tree_read_it_each_time_and_leave_it_as_asked() {
    let temp = scratch();
    let dir = temp.path().join("tree");
    let made = plan_in(&options("mkdir,create"), &dir).expect("plan");
    repeated(&made, &dir, 1, true);
    let reading =
        FilesOptions { phases: Some(parse_phases("stat,read").expect("phases")), ..Default::default() };
    let plan = plan_in(&reading, &dir).expect("a plan over the kept tree");
    let (report, _) = repeated(&plan, &dir, 3, true);
    assert_eq!(report.phases.iter().map(|p| p.done).collect::<Vec<_>>(), vec![200; 6]);
    assert!(dir.exists() && report.kept, "kept, as asked");
    // Phases that change it cannot be repeated over it: refused before anything is touched.
    let removing =
        FilesOptions { phases: Some(parse_phases("stat,unlink").expect("phases")), ..Default::default() };
    let plan = plan_in(&removing, &dir).expect("a plan over the kept tree");
    let why = check_repeats(&plan, 2).expect_err("refused").to_string();
    assert!(
        why.contains("leave it as they found it") && why.contains("these leave the directories, no files"),
        "{why}"
    );
    assert!(check_repeats(&plan, 1).is_ok());
    assert!(check_repeats(&plan, 0).is_err());
    // The last repeat without --keep removes it.
    let (_, _) = repeated(&plan_in(&reading, &dir).expect("plan"), &dir, 2, false);
    assert!(!dir.exists());
}
