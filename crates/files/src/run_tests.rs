//! Whole runs on tmpfs (/dev/shm when there is one), both engines, own trees and shared.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use crate::plan::{parse_phases, FileCount, FileEngine, FilesPlan};
use crate::run::{run, RunOptions};
use crate::sizes::SizeSpec;
use crate::{safety, OpKind, Phase};

/// A temp dir on tmpfs (/dev/shm) where there is one.
pub(crate) fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).expect("temp dir in /dev/shm")
    } else {
        tempfile::tempdir().expect("temp dir")
    }
}

fn plan(engine: FileEngine, shared: bool, phases: &str) -> FilesPlan {
    FilesPlan {
        dirs_per_dir: 3,
        depth: 2,
        files: FileCount::Total(301),
        sizes: "0:1,1k:1,100k:1,3m:1".parse::<SizeSpec>().expect("sizes"),
        phases: parse_phases(phases).expect("phases"),
        threads: 3,
        shared_dir: shared,
        engine,
        fsync: false,
        direct: false,
        drop_caches: false,
        order: crate::order::Order::Sequential,
        seed: 42,
        start: Default::default(),
        mix: None,
    }
}

const ALL: &str = "mkdir,create,stat,readdir,read,rename,stat,copy,read,unlink,rmdir";

#[test]
fn every_phase_counts_its_plan_exactly_and_leaves_nothing() {
    for engine in [FileEngine::Sync, FileEngine::IoUring] {
        for shared in [false, true] {
            let temp = scratch();
            let dir = temp.path().join("tree");
            let interrupt = AtomicBool::new(false);
            let plan = plan(engine, shared, ALL);
            let trees: u64 = if shared { 1 } else { 3 };
            let dirs = 13 * trees;
            // Each phase's live count, read as it ends, is what it did.
            let progress = crate::PhaseProgress::new(plan.threads);
            let options = RunOptions {
                dir: dir.clone(),
                keep: false,
                interrupt: &interrupt,
                progress: Some(&progress),
            };
            let mut live = Vec::new();
            let report = run(&plan, &options, |phase| {
                let seen = progress.snapshot().expect("a phase began");
                live.push((seen.phase, seen.planned, seen.done));
                assert_eq!((seen.phase, seen.planned, seen.done), (phase.phase, phase.planned, phase.done));
            })
            .expect("run");
            assert_eq!(live.len(), report.phases.len(), "{engine:?} shared {shared}");
            let counts: Vec<(Phase, u64, u64)> =
                report.phases.iter().map(|p| (p.phase, p.planned, p.done)).collect();
            let expected = [dirs, 301, 301, dirs, 301, 301, 301, 301, 301, 602, 2 * dirs];
            assert_eq!(counts.len(), expected.len(), "{engine:?} shared {shared}");
            for ((phase, planned, done), want) in counts.iter().zip(expected) {
                assert_eq!((*planned, *done), (want, want), "{phase} {engine:?} shared {shared}");
            }
            let readdir = &report.phases[3];
            assert_eq!(readdir.entries, Some(301 + dirs - trees), "each directory but the roots is an entry");
            let create = &report.phases[1];
            let opens = create.kinds.iter().find(|k| k.kind == OpKind::Open).map(|k| k.summary.ios);
            assert_eq!(opens, Some(301));
            assert!(create.kinds.iter().any(|k| k.kind == OpKind::Write && k.summary.ios >= 225));
            let copy = &report.phases[7];
            assert_eq!(copy.bytes, create.bytes, "the copy moved every byte");
            assert!(!dir.exists(), "the run's own directory is gone");
            assert!(report.failure().is_none());
        }
    }
}

fn files_below(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>, root: &Path) {
    let mut entries: Vec<_> =
        std::fs::read_dir(dir).expect("list").map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_below(&path, out, root);
        } else {
            let rel = path.strip_prefix(root).expect("below").to_path_buf();
            out.push((rel, std::fs::read(&path).expect("read")));
        }
    }
}

#[test]
fn the_copy_is_identical_to_its_source() {
    let temp = scratch();
    let dir = temp.path().join("tree");
    let interrupt = AtomicBool::new(false);
    let mut plan = plan(FileEngine::IoUring, false, "mkdir,create,copy");
    plan.sizes = "lognormal:8k:300k".parse().expect("sizes");
    run(&plan, &RunOptions { dir: dir.clone(), keep: true, interrupt: &interrupt, progress: None }, |_| {})
        .expect("run");
    for t in 0..3 {
        let (mut source, mut copy) = (Vec::new(), Vec::new());
        files_below(&dir.join(format!("t{t}")), &mut source, &dir.join(format!("t{t}")));
        files_below(&dir.join(format!("ct{t}")), &mut copy, &dir.join(format!("ct{t}")));
        assert_eq!(source.len(), plan.files_in_tree(t) as usize);
        assert!(source == copy, "tree t{t} and its copy differ");
    }
    let cleaned = safety::clean(&dir).expect("clean");
    assert!(cleaned.removed_top && cleaned.left.is_empty());
}

#[test]
fn an_interrupted_run_stops_and_keeps_what_it_did() {
    let temp = scratch();
    let dir = temp.path().join("tree");
    let interrupt = AtomicBool::new(true);
    let report = run(
        &plan(FileEngine::Sync, false, "mkdir,create"),
        &RunOptions { dir: dir.clone(), keep: false, interrupt: &interrupt, progress: None },
        |_| {},
    )
    .expect("run");
    assert_eq!(report.phases.len(), 1);
    assert!(report.phases[0].interrupted && report.phases[0].done == 0);
    assert!(!dir.exists());
}

/// Runs a mkdir phase of a shared tree (3 threads, 4 directory levels) whose thread 1 cannot
/// start (`panics`: it panics instead), on its own thread: the phase's answer, or None if it
/// never came (the threads deadlocked).
fn shared_phase_with_a_thread_that_cannot_start(panics: bool) -> Option<(usize, Option<String>)> {
    use std::os::fd::AsRawFd;
    use std::sync::atomic::AtomicU64;

    use iolab_engine::fileops::{FileOps, FileOpsEngine};

    use crate::gate::Gate;
    use crate::phases::run_threads_with;
    use crate::tree::Tree;
    use crate::worker::Ctx;

    let (tx, rx) = std::sync::mpsc::channel();
    // Not scoped: a deadlocked phase must not hold the test up; its thread is left behind.
    std::thread::spawn(move || {
        let temp = scratch();
        let top = std::fs::File::open(temp.path()).expect("open the temp dir");
        let mut plan = plan(FileEngine::Sync, true, "mkdir");
        plan.depth = 3;
        let trees = vec![Tree::new(&plan, 0)];
        let interrupt = AtomicBool::new(false);
        let clock = quanta::Clock::new();
        let ctx = Ctx {
            plan: &plan,
            trees: &trees,
            dirfd: top.as_raw_fd(),
            base: clock.raw(),
            clock,
            failed: AtomicBool::new(false),
            interrupt: &interrupt,
            first_done_ns: AtomicU64::new(0),
            barrier: Gate::new(3),
            state: Default::default(),
            phase_start_ns: 0,
            progress: None,
            mixing: None,
        };
        let make = |thread: u32, _| {
            if thread != 1 {
                FileOps::new(FileOpsEngine::Sync)
            } else if panics {
                panic!("injected: thread 1 panics at its start")
            } else {
                Err(std::io::Error::other("injected: thread 1 has no ring"))
            }
        };
        let ended = run_threads_with(&ctx, Phase::Mkdir, FileOpsEngine::Sync, &mut Vec::new(), &make);
        let failure = ended
            .iter()
            .find_map(|o| o.failure.as_ref())
            .map(|f| format!("{} of {}: {}", f.op, f.path, f.error));
        let _ = tx.send((ended.len(), failure));
    });
    // Generous: only a deadlock takes this long; how fast the phase ran is not asserted.
    rx.recv_timeout(std::time::Duration::from_secs(120)).ok()
}

#[test]
fn a_shared_dir_thread_that_cannot_start_ends_the_phase_instead_of_deadlocking_it() {
    // A thread whose ring could not be made returned before the gate between directory levels
    // and the other threads waited there for it forever.
    let (threads, failure) = shared_phase_with_a_thread_that_cannot_start(false).expect("the phase ended");
    assert_eq!(threads, 3, "every thread's outcome, the one that did not start included");
    let failure = failure.expect("the thread's failure is the phase's");
    assert_eq!(failure, "start of thread 1: injected: thread 1 has no ring");
}

#[test]
fn a_shared_dir_thread_that_panics_at_its_start_ends_the_phase_too() {
    let (_, failure) = shared_phase_with_a_thread_that_cannot_start(true).expect("the phase ended");
    let failure = failure.expect("the panic is the phase's failure");
    assert!(failure.starts_with("start of thread 1") && failure.contains("panicked"), "{failure}");
}

#[test]
fn a_thread_that_cannot_start_in_a_later_phase_stops_the_run_and_the_tree_is_removed() {
    // The phase was an error returned before the clean-up: the tree was left to `--clean`.
    use iolab_engine::fileops::{FileOps, FileOpsEngine};
    use std::sync::atomic::{AtomicU32, Ordering};

    use crate::run::run_with;

    let temp = scratch();
    let dir = temp.path().join("tree");
    let interrupt = AtomicBool::new(false);
    let plan = plan(FileEngine::Sync, false, "mkdir,create,stat,unlink,rmdir");
    // Three threads a phase, a phase's all started before the next's: from the seventh on,
    // they are the stat's.
    let started = AtomicU32::new(0);
    let make = |thread: u32, _| {
        if started.fetch_add(1, Ordering::Relaxed) >= 6 && thread == 2 {
            Err(std::io::Error::from_raw_os_error(libc::ENOMEM))
        } else {
            FileOps::new(FileOpsEngine::Sync)
        }
    };
    let options = RunOptions { dir: dir.clone(), keep: false, interrupt: &interrupt, progress: None };
    let report = run_with(&plan, &options, |_| {}, &make).expect("the run ends with a report");
    let phases: Vec<Phase> = report.phases.iter().map(|p| p.phase).collect();
    assert_eq!(phases, [Phase::Mkdir, Phase::Create, Phase::Stat], "the run stops at the stat");
    assert_eq!(report.phases[1].done, 301, "the create's figures are kept");
    let (phase, failure) = report.failure().expect("the stat failed");
    assert_eq!(phase.phase, Phase::Stat);
    assert_eq!(
        (failure.op.as_str(), failure.path.as_str(), failure.errno),
        ("start", "thread 2", Some(libc::ENOMEM))
    );
    assert!(!dir.exists(), "the tree is removed");
}

/// Every file below `dir` (links not followed) with its bytes, by path relative to it.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    files_below(dir, &mut out, dir);
    out
}

#[test]
fn a_directory_swapped_for_a_link_between_phases_is_refused_and_nothing_outside_is_touched() {
    // `t0` swapped (renameat2 RENAME_EXCHANGE) for a link to a user's directory whose files
    // have iolab's names: the stat and unlink that followed went through the link, and the
    // unlink deleted the user's files.
    use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};

    for engine in [FileEngine::Sync, FileEngine::IoUring] {
        let temp = scratch();
        let dir = temp.path().join("tree");
        let user = scratch();
        for leaf in ["d0/d0", "d0/d1", "d2/d2"] {
            std::fs::create_dir_all(user.path().join(leaf)).expect("mkdir");
            for i in 0..12 {
                std::fs::write(
                    user.path().join(leaf).join(format!("f{i}")),
                    format!("the user's {leaf} {i}"),
                )
                .expect("write");
            }
        }
        let before = snapshot(user.path());
        let interrupt = AtomicBool::new(false);
        let mut plan = plan(engine, false, "mkdir,create,stat,unlink,rmdir");
        plan.sizes = SizeSpec::Fixed(0);
        let options = RunOptions { dir: dir.clone(), keep: false, interrupt: &interrupt, progress: None };
        let report = run(&plan, &options, |phase| {
            if phase.phase == Phase::Create {
                std::os::unix::fs::symlink(user.path(), dir.join("swap")).expect("symlink");
                renameat2(
                    AT_FDCWD,
                    &dir.join("swap"),
                    AT_FDCWD,
                    &dir.join("t0"),
                    RenameFlags::RENAME_EXCHANGE,
                )
                .expect("swap t0 for the link");
            }
        })
        .expect("the run ends with a report");
        let phases: Vec<Phase> = report.phases.iter().map(|p| p.phase).collect();
        assert_eq!(
            phases,
            [Phase::Mkdir, Phase::Create, Phase::Stat],
            "{engine:?}: the run stops at the stat"
        );
        let (_, failure) = report.failure().expect("the stat is refused");
        assert!(failure.path.starts_with("t0/"), "{engine:?}: {failure:?}");
        assert!(failure.error.contains("symbolic link"), "{engine:?}: {failure:?}");
        assert_eq!(snapshot(user.path()), before, "{engine:?}: the user's directory is as it was");
        // The link stays (iolab makes none), and so does iolab's own t0, now named `swap`:
        // neither is removed through a name that is not what it was.
        assert!(dir.join("t0").is_symlink() && dir.join("swap").is_dir(), "{engine:?}");
        assert!(
            report.kept && report.notes.iter().any(|n| n.contains("not made by iolab")),
            "{:?}",
            report.notes
        );
    }
}

#[test]
fn a_file_a_user_put_in_a_kept_tree_is_left_by_the_clean_up() {
    // The clean-up removed every entry of iolab's naming, a user's `t0/d0/d0/f0` rewritten in
    // the kept tree among them.
    let temp = scratch();
    let dir = temp.path().join("tree");
    let interrupt = AtomicBool::new(false);
    let plan = plan(FileEngine::Sync, false, "mkdir,create");
    run(&plan, &RunOptions { dir: dir.clone(), keep: true, interrupt: &interrupt, progress: None }, |_| {})
        .expect("run");
    let top = std::fs::File::open(&dir).expect("open");
    let theirs = dir.join("t0/d0/d0/f0");
    crate::safety_at::tests::write_after_the_mark(
        std::os::fd::AsRawFd::as_raw_fd(&top),
        &theirs,
        b"the user's",
    );
    let cleaned = safety::clean(&dir).expect("clean");
    assert_eq!(cleaned.left, std::slice::from_ref(&theirs));
    assert_eq!(cleaned.files, 301 - 1);
    assert_eq!(std::fs::read(&theirs).expect("kept"), b"the user's");
}
