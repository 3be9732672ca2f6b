//! A kept tree worked again (issue 34 item 3): its shape and state from the marker, the
//! user's conflicting options refused, a run stopped part-way never worked again.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use crate::job::FilesOptions;
use crate::kept::plan_in;
use crate::plan::TreeState;
use crate::plan::{parse_phases, FileEngine, FilesPlan, Phase};
use crate::run::{run, RunOptions};
use crate::run_tests::scratch;
use crate::safety::MARKER;
use crate::FilesError;

/// Options of a small tree of files with data, two threads, `phases`.
fn options(phases: &str) -> FilesOptions {
    FilesOptions {
        files: Some(300),
        dirs_per_dir: Some(3),
        depth: Some(2),
        sizes: Some("4k:50,16k:50".parse().expect("sizes")),
        threads: Some(2),
        engine: Some(FileEngine::Sync),
        seed: Some(9),
        phases: Some(parse_phases(phases).expect("phases")),
        ..FilesOptions::default()
    }
}

/// Runs `plan` in `dir`; the phases' (phase, done) counts.
fn ran(plan: &FilesPlan, dir: &Path, keep: bool) -> Vec<(Phase, u64)> {
    let interrupt = AtomicBool::new(false);
    let options = RunOptions { dir: dir.to_path_buf(), keep, interrupt: &interrupt, progress: None };
    let report = run(plan, &options, |_| {}).expect("run");
    assert!(report.failure().is_none(), "{:?}", report.failure());
    report.phases.iter().map(|p| (p.phase, p.done)).collect()
}

fn refusal(result: Result<FilesPlan, FilesError>) -> String {
    match result {
        Err(e) => e.to_string(),
        Ok(plan) => panic!("planned: {plan:?}"),
    }
}

#[test]
fn a_kept_tree_is_worked_again_with_its_own_shape_and_state() {
    let temp = scratch();
    let dir = temp.path().join("tree");
    let made = plan_in(&options("mkdir,create,rename"), &dir).expect("a plan from nothing");
    assert!(made.start.is_empty());
    ran(&made, &dir, true);
    // Only the phases are given: the shape and the state (renamed files) come from the marker.
    let again = FilesOptions {
        phases: Some(parse_phases("stat,read,readdir").expect("phases")),
        ..Default::default()
    };
    let plan = plan_in(&again, &dir).expect("a plan over the kept tree");
    assert_eq!(plan.start, TreeState { dirs: true, files: true, renamed: true, ..Default::default() });
    assert_eq!((plan.threads, plan.seed, plan.total_files()), (2, 9, 300));
    // stat checks each file's size against the plan: the sizes are the kept tree's own.
    assert_eq!(ran(&plan, &dir, true), vec![(Phase::Stat, 300), (Phase::Read, 300), (Phase::Readdir, 26)]);
    // Then removed by phases and the run's end, as any run's tree.
    let last = FilesOptions {
        phases: Some(parse_phases("rename,unlink,rmdir").expect("phases")),
        ..Default::default()
    };
    let plan = plan_in(&last, &dir).expect("a plan over the kept tree");
    assert_eq!(ran(&plan, &dir, false), vec![(Phase::Rename, 300), (Phase::Unlink, 300), (Phase::Rmdir, 26)]);
    assert!(!dir.exists(), "the run removed what it made");
}

#[test]
fn options_that_disagree_with_the_kept_tree_are_refused_naming_them() {
    let temp = scratch();
    let dir = temp.path().join("tree");
    ran(&plan_in(&options("mkdir,create"), &dir).expect("plan"), &dir, true);
    let marker_before = std::fs::read_to_string(dir.join(MARKER)).expect("marker");
    let asked = FilesOptions { files: Some(500), seed: Some(9), ..options("stat") };
    let why = refusal(plan_in(&asked, &dir));
    assert!(why.contains("another shape: files 300 in all (asked 500 in all)"), "{why}");
    // A phase that needs what the kept tree lacks is refused as from nothing.
    let why = refusal(plan_in(&options("rmdir"), &dir));
    assert!(why.contains("the files are still there"), "{why}");
    assert_eq!(std::fs::read_to_string(dir.join(MARKER)).expect("marker"), marker_before, "nothing touched");
    // Phases that begin with mkdir start afresh: the kept tree is removed first.
    let fresh = plan_in(&options("mkdir,create,unlink,rmdir"), &dir).expect("plan");
    assert!(fresh.start.is_empty());
    ran(&fresh, &dir, false);
    assert!(!dir.exists());
}

#[test]
fn a_tree_whose_run_stopped_part_way_is_never_worked_again() {
    let temp = scratch();
    let dir = temp.path().join("tree");
    ran(&plan_in(&options("mkdir,create"), &dir).expect("plan"), &dir, true);
    // A run over it that is stopped before its first phase ends leaves its state unknown.
    let interrupt = AtomicBool::new(true);
    let plan = plan_in(&options("unlink"), &dir).expect("plan");
    let stopped = RunOptions { dir: dir.clone(), keep: true, interrupt: &interrupt, progress: None };
    let report = run(&plan, &stopped, |_| {}).expect("run");
    assert!(report.phases.iter().all(|p| p.interrupted) || report.phases.is_empty());
    let why = refusal(plan_in(&options("stat"), &dir));
    assert!(why.contains("stopped part-way") && why.contains("--clean"), "{why}");
    crate::safety::clean(&dir).expect("cleaned");
    assert!(!dir.exists());
}

/// Issue 34 item 4: setattr sets each file's times to now, xattr leaves `user.iolab` set to the
/// file's own value, statdir stats every directory: seen on the files themselves.
#[test]
fn setattr_and_xattr_change_what_they_say() {
    let temp = scratch();
    let dir = temp.path().join("tree");
    let made = FilesOptions { threads: Some(1), ..options("mkdir,create") };
    ran(&plan_in(&made, &dir).expect("plan"), &dir, true);
    let file = dir.join("t0/d0/d0/f0");
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000);
    std::fs::File::options().write(true).open(&file).expect("f0").set_modified(old).expect("set mtime");
    let work = FilesOptions {
        phases: Some(parse_phases("statdir,setattr,xattr").expect("phases")),
        ..Default::default()
    };
    let plan = plan_in(&work, &dir).expect("a plan over the kept tree");
    assert_eq!(
        ran(&plan, &dir, true),
        vec![(Phase::StatDir, 13), (Phase::Setattr, 300), (Phase::Xattr, 300)]
    );
    let modified = std::fs::metadata(&file).expect("stat").modified().expect("mtime");
    assert!(modified > old + std::time::Duration::from_secs(86_400), "setattr set the time to now");
    let mut value = [0u8; 64];
    let path = std::ffi::CString::new(file.to_str().expect("utf-8")).expect("a C path");
    // SAFETY: both strings are NUL-terminated; `value` is writable for its length.
    let n = unsafe {
        libc::getxattr(path.as_ptr(), c"user.iolab".as_ptr(), value.as_mut_ptr().cast(), value.len())
    };
    assert_eq!(value.get(..n.max(0) as usize), Some(&b"iolab 0 0"[..]));
    crate::safety::clean(&dir).expect("cleaned");
}

/// Issue 34 item 4: hard and symbolic links beside each file are unlinked with the files, and a
/// kept tree that holds them is cleaned: each link removed as itself, never followed; a link of
/// iolab's name made after the tree's last mark (by someone else) is left, its target untouched.
#[test]
fn links_are_removed_as_themselves_and_a_foreign_one_is_left() {
    let temp = scratch();
    let dir = temp.path().join("tree");
    let plan = plan_in(&options("mkdir,create,link,symlink,stat,unlink,rmdir"), &dir).expect("plan");
    let counts = ran(&plan, &dir, false);
    assert_eq!(
        counts[1..5],
        [(Phase::Create, 300), (Phase::Link, 300), (Phase::Symlink, 300), (Phase::Stat, 300)]
    );
    assert_eq!(counts[5], (Phase::Unlink, 900), "each file and its two links");
    assert!(!dir.exists());

    ran(&plan_in(&options("mkdir,create,link,symlink"), &dir).expect("plan"), &dir, true);
    let victim = temp.path().join("victim");
    std::fs::write(&victim, b"not iolab's").expect("a file outside the tree");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let foreign = dir.join("t0/d0/d0/l99999");
    std::os::unix::fs::symlink(&victim, &foreign).expect("a foreign link of iolab's name");
    let cleaned = crate::safety::clean(&dir).expect("cleaned");
    assert_eq!(cleaned.left, vec![foreign.clone()], "only the foreign link is left");
    assert_eq!(std::fs::read(&victim).expect("the victim"), b"not iolab's");
    assert!(std::fs::symlink_metadata(&foreign).is_ok());
    assert!(!dir.join("t0/d0/d0/l0").exists() && !dir.join("t0/d0/d0/h0").exists());
}
