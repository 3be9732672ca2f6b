//! A directory of a running `iolab files` tree swapped for a symbolic link to a user's
//! directory (renameat2 RENAME_EXCHANGE, as a hostile user would), locally on both engines and
//! through a fleet agent: nothing outside the tree is made, read or removed, the run says what
//! it refused, and no one is told a tree was removed that was not. Before, the run followed the
//! link: it created hundreds of thousands of files in the user's directory and deleted the
//! user's files that had iolab's names.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::fleet::{hosts, token_file, Agent};
use common::tmpfs::shm_dir;
use common::{spawn_in, stderr};
use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};

/// A user's directory laid out as a tree's root is (`d0` .. `d9`), its files named as iolab
/// names its own: what following the link would reach, and delete.
fn users_directory(path: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    for leaf in 0..10 {
        let leaf = path.join(format!("d{leaf}"));
        std::fs::create_dir_all(&leaf).expect("mkdir");
        for i in 0..10 {
            std::fs::write(leaf.join(format!("f{i}")), format!("the user's {}", leaf.display()))
                .expect("write");
        }
    }
    snapshot(path)
}

/// Every entry below `dir` (links not followed), with a file's bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).expect("list") {
            let path = entry.expect("entry").path();
            let meta = std::fs::symlink_metadata(&path).expect("stat");
            let bytes = if meta.is_file() { std::fs::read(&path).expect("read") } else { Vec::new() };
            if meta.is_dir() {
                todo.push(path.clone());
            }
            out.push((path.strip_prefix(dir).expect("below").to_path_buf(), bytes));
        }
    }
    out.sort();
    out
}

/// Once `made` exists, swaps `tree/t0` with a link to `user`: the swap's answer.
fn swap_when_made(tree: PathBuf, made: PathBuf, user: PathBuf) -> JoinHandle<Result<(), String>> {
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !made.exists() {
            if Instant::now() > deadline {
                return Err(format!("{} never appeared", made.display()));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let link = tree.join("swap");
        std::os::unix::fs::symlink(&user, &link).map_err(|e| format!("symlink: {e}"))?;
        renameat2(AT_FDCWD, &link, AT_FDCWD, &tree.join("t0"), RenameFlags::RENAME_EXCHANGE)
            .map_err(|e| format!("the swap of t0 for the link: {e}"))
    })
}

const RUN: [&str; 6] = ["--files", "200000", "--phases", "mkdir,create,unlink,rmdir", "--no-store", "-q"];

fn finished(child: std::process::Child) -> Output {
    child.wait_with_output().expect("iolab ends")
}

#[test]
fn a_local_run_follows_no_link_swapped_into_its_tree() {
    for engine in ["sync", "uring"] {
        let temp = shm_dir();
        let (tree, user) = (temp.path().join("race"), temp.path().join("user"));
        let before = users_directory(&user);
        let swapped = swap_when_made(tree.clone(), tree.join("t0/d0/f100"), user.clone());
        let args = [&["files", tree.to_str().expect("utf-8"), "--engine", engine][..], &RUN[..]].concat();
        let out = finished(spawn_in(temp.path(), &args));
        swapped.join().expect("the swapper").expect("t0 was swapped while the run worked");
        assert_eq!(out.status.code(), Some(3), "{engine}: the run stops on the refusal: {}", stderr(&out));
        assert!(
            stderr(&out).contains("symbolic link"),
            "{engine}: it says what it refused: {}",
            stderr(&out)
        );
        assert!(snapshot(&user) == before, "{engine}: the user's directory is as it was");
        assert!(tree.join("t0").is_symlink(), "{engine}: the link is not iolab's to remove");
    }
}

#[test]
fn an_agents_run_follows_no_link_swapped_into_its_tree_and_says_what_it_left() {
    let temp = shm_dir();
    let allowed = temp.path().join("allowed");
    std::fs::create_dir(&allowed).expect("mkdir");
    let user = temp.path().join("user");
    let before = users_directory(&user);
    let agent =
        Agent::start(temp.path(), "127.0.0.1:0", &["--allow-write", allowed.to_str().expect("utf-8")]);
    let tree = allowed.join("race");
    let swapped = swap_when_made(tree.clone(), tree.join("t0/d0/f100"), user.clone());
    let token = token_file(temp.path());
    let agents = [agent];
    let hosts = hosts(&agents);
    let args = [
        &["fleet", "--hosts", &hosts, "--token-file", token.to_str().expect("utf-8"), "files"][..],
        &[tree.to_str().expect("utf-8"), "--engine", "sync"],
        &RUN[..],
    ]
    .concat();
    let out = finished(spawn_in(temp.path(), &args));
    swapped.join().expect("the swapper").expect("t0 was swapped while the run worked");
    assert_eq!(out.status.code(), Some(3), "the fleet stops on the refusal: {}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("every host's tree was removed"), "{}", stderr(&out));
    assert!(stderr(&out).contains("entries iolab did not make"), "{}", stderr(&out));
    assert!(snapshot(&user) == before, "the user's directory is as it was");
    assert!(tree.join("t0").is_symlink(), "the link is not iolab's to remove");
}
