//! Whole mixes on tmpfs (/dev/shm when there is one), both engines: every operation done and
//! counted, the population held, the profiles' proportions as published, the tree removed.
//! Each asserts what the run did, never how fast: a run on a busy machine does fewer
//! operations, and the proportions' tolerance widens with fewer.

use std::sync::atomic::AtomicBool;

use iolab_spec::Nanos;

use crate::job::FilesOptions;
use crate::mix::{parse_mix_ops, MIX_OPS};
use crate::plan::{FileEngine, Phase};
use crate::profiles::Profile;
use crate::report::{FilesReport, OpKind, PhaseResult};
use crate::run::{run, RunOptions};
use crate::run_tests::scratch;

fn run_mix(options: &FilesOptions) -> (FilesReport, tempfile::TempDir) {
    let temp = scratch();
    let dir = temp.path().join("tree");
    let plan = options.plan().expect("plan");
    let interrupt = AtomicBool::new(false);
    let run_options = RunOptions { dir: dir.clone(), keep: false, interrupt: &interrupt, progress: None };
    let report = run(&plan, &run_options, |_| {}).expect("run");
    assert_eq!(std::fs::read_dir(&dir).map(Iterator::count).unwrap_or(0), 0, "the tree is removed");
    (report, temp)
}

fn mix_phase(report: &FilesReport) -> &PhaseResult {
    let mix = report.phases.last().expect("phases");
    assert_eq!(mix.phase, Phase::Mix);
    assert!(mix.failure.is_none() && !mix.interrupted, "{:?}", mix.failure);
    mix
}

fn count(phase: &PhaseResult, kind: OpKind) -> u64 {
    phase.kinds.iter().find(|k| k.kind == kind).map_or(0, |k| k.summary.ios)
}

/// Each operation's share of the mix's count against its weight's share: within five standard
/// errors of a binomial draw, and the swaps that hold the population (which move creates and
/// unlinks), and the draws that found no file.
fn assert_shares(phase: &PhaseResult, expected: &[(OpKind, f64)]) {
    let n = count(phase, OpKind::Mix);
    assert!(n > 0, "the mix did something");
    let figures = phase.mix.as_ref().expect("mix figures");
    let unplaced: u64 = figures.unplaced.iter().map(|(_, k)| k).sum();
    let slack = (figures.swapped + unplaced) as f64 / n as f64;
    for &(kind, p) in expected {
        let share = count(phase, kind) as f64 / n as f64;
        let tolerance = 5.0 * (p * (1.0 - p) / n as f64).sqrt() + slack + 0.002;
        assert!(
            (share - p).abs() <= tolerance,
            "{kind:?}: {share:.4} of {n}, expected {p:.4} +- {tolerance:.4}"
        );
    }
}

#[test]
fn every_operation_of_a_mix_is_done_and_counted_and_the_tree_removed() {
    for engine in [FileEngine::Sync, FileEngine::IoUring] {
        let ops: String = MIX_OPS.iter().map(|op| format!("{op}:1")).collect::<Vec<_>>().join(",");
        let options = FilesOptions {
            files: Some(400),
            dir_width: Some(20),
            sizes: Some("gamma:8k:1.5".parse().expect("sizes")),
            threads: Some(3),
            engine: Some(engine),
            mix: Some(parse_mix_ops(&ops).expect("ops")),
            runtime: Some(Nanos::from_millis(700)),
            warmup: Some(Nanos::from_millis(100)),
            ..FilesOptions::default()
        };
        let (report, _temp) = run_mix(&options);
        let phases: Vec<Phase> = report.phases.iter().map(|p| p.phase).collect();
        assert_eq!(phases, vec![Phase::Mkdir, Phase::Create, Phase::Mix], "{engine:?}");
        let create = &report.phases[1];
        assert!(create.done > 250 && create.done < 400, "about 80% of the names made: {}", create.done);
        let mix = mix_phase(&report);
        let figures = mix.mix.as_ref().expect("figures");
        assert_eq!(figures.files_at_start, create.done);
        assert_eq!(figures.names, 400);
        assert_eq!(figures.warmup_s, 0.1);
        // The band: a twentieth of the names (or the threads) either side of the start, and a
        // create or unlink of each thread under way as it was judged.
        assert!(figures.files_at_end.abs_diff(figures.files_at_start) <= 20 + 3, "{figures:?}");
        let whole: u64 = MIX_OPS.iter().map(|&op| count(mix, OpKind::of_mix_op(op))).sum();
        assert_eq!(whole, count(mix, OpKind::Mix), "{engine:?}: every operation is one of the mix's");
        assert_eq!(mix.done, whole);
        assert_eq!(mix.series.iter().map(|s| s.ops).sum::<u64>(), whole, "the seconds hold them all");
        if whole >= 16 * 50 {
            for op in MIX_OPS {
                assert!(count(mix, OpKind::of_mix_op(op)) > 0, "{engine:?}: {op} never done in {whole}");
            }
        }
        // An open for each whole-file operation, a close for each but the log's writes.
        let opened = count(mix, OpKind::Open);
        let by_file = [
            OpKind::ReadFile,
            OpKind::ReadRange,
            OpKind::Append,
            OpKind::Create,
            OpKind::GetXattr,
            OpKind::SetXattr,
        ];
        assert_eq!(opened, by_file.iter().map(|&k| count(mix, k)).sum::<u64>(), "{engine:?}");
    }
}

#[test]
fn the_profiles_run_their_published_proportions() {
    let short = |profile: Profile| FilesOptions {
        profile: Some(profile),
        files: Some(300),
        sizes: Some("gamma:4k:1.5".parse().expect("sizes")),
        threads: Some(4),
        engine: Some(FileEngine::Sync),
        runtime: Some(Nanos::from_millis(800)),
        ..FilesOptions::default()
    };
    // Fileserver: create (and write), append, read whole, delete, stat: one each per pass.
    let (report, _t) = run_mix(&short(Profile::Fileserver));
    let fifth =
        [OpKind::Create, OpKind::Append, OpKind::ReadFile, OpKind::Unlink, OpKind::Stat].map(|k| (k, 0.2));
    assert_shares(mix_phase(&report), &fifth);
    // Varmail: delete, create (fsynced), append (fsynced), read whole twice; every file in one
    // directory.
    let (report, _t) = run_mix(&short(Profile::Varmail));
    assert_eq!(report.plan.depth, 0, "varmail's files share one directory");
    let mix = mix_phase(&report);
    assert_shares(
        mix,
        &[(OpKind::Unlink, 0.2), (OpKind::Create, 0.2), (OpKind::Append, 0.2), (OpKind::ReadFile, 0.4)],
    );
    assert_eq!(count(mix, OpKind::Fsync), count(mix, OpKind::Create) + count(mix, OpKind::Append));
    // Its creates write an append's 1 to 16 KiB (mean 8 KiB), not the files' 4 KiB mean.
    let created = mix.kinds.iter().find(|k| k.kind == OpKind::Create).map(|k| &k.summary).expect("creates");
    if created.ios >= 100 {
        let mean = created.bytes / created.ios;
        assert!((6000..=16384).contains(&mean), "{mean} bytes per create");
    }
    // Webserver: ten whole reads to one log append; every name made first.
    let (report, _t) = run_mix(&short(Profile::Webserver));
    let mix = mix_phase(&report);
    assert_eq!(report.phases[1].done, 300, "prealloc 100");
    assert_shares(mix, &[(OpKind::ReadFile, 10.0 / 11.0), (OpKind::AppendLog, 1.0 / 11.0)]);
    assert_eq!(count(mix, OpKind::Unlink) + count(mix, OpKind::Create), 0);
}

#[test]
fn a_profile_is_the_layer_under_what_is_given() {
    let plan =
        FilesOptions { profile: Some(Profile::Fileserver), ..FilesOptions::default() }.plan().expect("plan");
    assert_eq!((plan.total_files(), plan.threads, plan.shared_dir), (10_000, 50, true));
    assert_eq!(plan.engine, FileEngine::Auto);
    assert_eq!(
        plan.engine_for(Phase::Mix, true),
        iolab_engine::fileops::FileOpsEngine::Sync,
        "a mix's default: one operation at a time per thread"
    );
    // 500 leaves of 20 files wanted: two levels of 23.
    assert_eq!((plan.dirs_per_dir, plan.depth), (23, 2));
    let mix = plan.mix.as_ref().expect("mix");
    assert_eq!((mix.runtime_s, mix.prealloc_pct, mix.append_size), (60.0, 80, 16 << 10));
    assert_eq!(plan.sizes, crate::SizeSpec::Gamma { mean: 128 << 10, shape: 1.5 });
    let changed = FilesOptions {
        profile: Some(Profile::Fileserver),
        threads: Some(4),
        runtime: Some(Nanos::from_secs(5)),
        ..FilesOptions::default()
    }
    .plan()
    .expect("plan");
    assert_eq!(changed.threads, 4);
    assert_eq!(changed.mix.as_ref().map(|m| m.runtime_s), Some(5.0));
}

#[test]
fn bad_mixes_are_refused_before_anything_is_made() {
    let refused = |options: FilesOptions| options.plan().expect_err("refused").to_string();
    let mix = |text: &str| Some(parse_mix_ops(text).expect("ops"));
    let zero = refused(FilesOptions { mix: mix("read:0,stat:0"), ..FilesOptions::default() });
    assert!(zero.contains("add up to 0"), "{zero}");
    let orphan = refused(FilesOptions { runtime: Some(Nanos::from_secs(5)), ..FilesOptions::default() });
    assert!(orphan.contains("--runtime") && orphan.contains("--mix or --profile"), "{orphan}");
    let own_trees =
        refused(FilesOptions { mix: mix("stat"), shared_dir: Some(false), ..FilesOptions::default() });
    assert!(own_trees.contains("--shared-dir"), "{own_trees}");
    let after = refused(FilesOptions {
        mix: mix("stat"),
        phases: Some(vec![Phase::Mkdir, Phase::Create, Phase::Mix, Phase::Unlink]),
        ..FilesOptions::default()
    });
    assert!(after.contains("put the mix last"), "{after}");
    let unaligned = refused(FilesOptions {
        mix: mix("append"),
        direct: Some(true),
        append_size: Some(iolab_spec::Bytes(1000)),
        ..FilesOptions::default()
    });
    assert!(unaligned.contains("4 KiB"), "{unaligned}");
    let narrow = refused(FilesOptions {
        mix: mix("stat"),
        files: Some(10),
        distribution: Some("zoned:50/1,50/99".parse().expect("zoned")),
        ..FilesOptions::default()
    });
    assert!(narrow.contains("--distribution"), "{narrow}");
}

#[test]
fn a_kept_mix_tree_is_not_worked_again() {
    let temp = scratch();
    let dir = temp.path().join("tree");
    let options = FilesOptions {
        files: Some(50),
        threads: Some(2),
        engine: Some(FileEngine::Sync),
        mix: Some(parse_mix_ops("create,unlink,stat").expect("ops")),
        runtime: Some(Nanos::from_millis(200)),
        ..FilesOptions::default()
    };
    let plan = options.plan().expect("plan");
    let interrupt = AtomicBool::new(false);
    let run_options = RunOptions { dir: dir.clone(), keep: true, interrupt: &interrupt, progress: None };
    let report = run(&plan, &run_options, |_| {}).expect("run");
    assert!(report.kept);
    assert!(report.notes.iter().any(|n| n.contains("a mix ran")), "{:?}", report.notes);
    let again = FilesOptions { phases: Some(vec![Phase::Stat]), ..options };
    let refused = crate::plan_in(&again, &dir).expect_err("refused");
    assert!(refused.to_string().contains("cannot be worked again"), "{refused}");
    crate::safety::clean(&dir).expect("clean");
}

#[test]
fn a_mix_s_cpu_figures_cover_its_measured_time_not_its_warm_up() {
    // The threads' CPU was read when the phase began, before the warm-up, and divided by the
    // measured time only. With one thread more than the cores, the threads can hold at most
    // cores / (cores + 1) of their time: a warm-up counted in passes that (or the cap of 100).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let options = FilesOptions {
        files: Some(200),
        sizes: Some("4k".parse().expect("sizes")),
        threads: Some(cores + 1),
        engine: Some(FileEngine::Sync),
        mix: Some(parse_mix_ops("stat:3,read:1").expect("ops")),
        warmup: Some(Nanos::from_millis(600)),
        runtime: Some(Nanos::from_millis(150)),
        ..FilesOptions::default()
    };
    let (report, _temp) = run_mix(&options);
    let mix = mix_phase(&report);
    let ceiling = 100.0 * f64::from(cores) / f64::from(cores + 1);
    assert!(
        mix.cpu_busy_pct <= ceiling + 1.0,
        "{} threads on {cores} cores were busy {:.1}% of their measured time (at most {ceiling:.1}%)",
        cores + 1,
        mix.cpu_busy_pct
    );
}
