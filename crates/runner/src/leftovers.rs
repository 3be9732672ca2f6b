//! Scratch files that earlier runs left behind (killed with SIGKILL, or on a machine that lost
//! power) are removed by the next run in the same directory, but only when they are certainly
//! iolab's and abandoned: the name iolab gives them, a regular file that is empty or carries
//! iolab's mark, and no running iolab with the process id in the name.
//!
//! A scratch file the user asked to keep (`--keep`) is named apart from the start
//! (`iolab-kept-<pid>.dat`), so no sweep ever matches it: its run's process is gone by the next
//! run too, and only the name can say it was kept.

use std::io::Read;
use std::path::{Path, PathBuf};

const PREFIX: &str = "iolab-scratch-";
const SUFFIX: &str = ".dat";
const KEPT_PREFIX: &str = "iolab-kept-";

/// What a kept scratch file's name looks like, for messages.
pub const KEPT_PATTERN: &str = "iolab-kept-<pid>.dat";

/// The scratch file name of process `pid`.
pub fn scratch_name(pid: u32) -> String {
    format!("{PREFIX}{pid}{SUFFIX}")
}

/// Where process `pid` lays out a scratch file to keep: `iolab-kept-<pid>.dat`, or with `-2`,
/// `-3`, ... after the pid when a run of an earlier process with the same pid kept one there.
pub fn free_kept_path(dir: &Path, pid: u32) -> PathBuf {
    let first = dir.join(format!("{KEPT_PREFIX}{pid}{SUFFIX}"));
    let taken = |path: &PathBuf| std::fs::symlink_metadata(path).is_ok();
    if !taken(&first) {
        return first;
    }
    (2u64..)
        .map(|n| dir.join(format!("{KEPT_PREFIX}{pid}-{n}{SUFFIX}")))
        .find(|path| !taken(path))
        .unwrap_or(first)
}

/// Removes the abandoned scratch files in `dir` and returns their paths. Anything that cannot
/// be read or removed is left alone: this is tidying, never a reason to stop a run.
pub fn remove_abandoned_scratch_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let own = std::process::id();
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid = scratch_pid(entry.file_name().to_str()?)?;
            let path = entry.path();
            let abandoned = pid != own && !iolab_is_running(pid) && carries_mark_or_is_empty(&path);
            (abandoned && std::fs::remove_file(&path).is_ok()).then_some(path)
        })
        .collect()
}

fn scratch_pid(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A process `pid` exists and is an iolab (a reused pid of another program does not count).
fn iolab_is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim() == "iolab")
}

fn carries_mark_or_is_empty(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return false };
    if !meta.is_file() {
        return false;
    }
    if meta.len() == 0 {
        return true;
    }
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(iolab_engine::block::MAGIC.len() as u64).read_to_end(&mut head))
        .is_ok_and(|_| iolab_engine::stamp::is_marked(&head))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_abandoned_marked_scratch_files_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        // No process has pid u32::MAX - 1 (above pid_max), so these are abandoned.
        let dead = u32::MAX - 1;
        let marked = dir.path().join(scratch_name(dead));
        let mut data = iolab_engine::block::MAGIC.to_vec();
        data.extend_from_slice(&[5u8; 100]);
        std::fs::write(&marked, &data).expect("marked");
        let empty = dir.path().join(scratch_name(dead - 1));
        std::fs::write(&empty, b"").expect("empty");
        let foreign = dir.path().join(scratch_name(dead - 2));
        std::fs::write(&foreign, b"a user's own data").expect("foreign");
        let own = dir.path().join(scratch_name(std::process::id()));
        std::fs::write(&own, &data).expect("own");
        let other_name = dir.path().join("iolab-scratch-12x.dat");
        std::fs::write(&other_name, &data).expect("other");

        let mut removed = remove_abandoned_scratch_files(dir.path());
        removed.sort();
        let mut expected = vec![marked, empty];
        expected.sort();
        assert_eq!(removed, expected);
        assert!(foreign.exists() && own.exists() && other_name.exists());
    }

    #[test]
    fn a_kept_file_is_never_swept_and_never_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dead = u32::MAX - 1;
        let kept = free_kept_path(dir.path(), dead);
        assert_eq!(kept, dir.path().join(KEPT_PATTERN.replace("<pid>", &dead.to_string())));
        let mut data = iolab_engine::block::MAGIC.to_vec();
        data.extend_from_slice(&[5u8; 100]);
        std::fs::write(&kept, &data).expect("kept");
        assert!(remove_abandoned_scratch_files(dir.path()).is_empty());
        assert_eq!(std::fs::read(&kept).expect("still there"), data);
        // A later process with the same pid keeps its file beside, not over, this one.
        let next = free_kept_path(dir.path(), dead);
        assert_eq!(next, dir.path().join(format!("iolab-kept-{dead}-2.dat")));
    }

    #[test]
    fn a_running_iolab_keeps_its_scratch_file() {
        // This test binary is not called iolab, so its own pid counts as another program's.
        assert!(!iolab_is_running(std::process::id()));
        assert_eq!(scratch_pid("iolab-scratch-42.dat"), Some(42));
        assert_eq!(scratch_pid("iolab-scratch-.dat"), None);
        assert_eq!(scratch_pid("iolab-scratch-4 2.dat"), None);
    }
}
