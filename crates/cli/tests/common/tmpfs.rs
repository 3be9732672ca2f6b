//! A tmpfs the test mounts (root only), unmounted on drop: a small filesystem to fill, or one
//! to remount read-only.

use std::path::{Path, PathBuf};

use super::sh;

/// A temporary directory on the tmpfs every Linux has (/dev/shm), else in the temp dir: fast
/// creates for the file-tree tests.
pub fn shm_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).expect("temp dir in /dev/shm")
    } else {
        tempfile::tempdir().expect("temp dir")
    }
}

pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// A tmpfs with mount `options` (`size=1m`, `size=4m,nr_inodes=300`) on the existing
    /// directory `at`.
    pub fn mount(at: &Path, options: &str) -> Tmpfs {
        sh(&format!("mount -t tmpfs -o {options} iolab-test {}", at.display()));
        Tmpfs(at.to_path_buf())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}
