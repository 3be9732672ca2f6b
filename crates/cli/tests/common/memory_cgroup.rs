//! A cgroup v1 memory cgroup with a limit the test sets, and files whose pages its reads must
//! bring in themselves: the page cache a limit allows, known because the test set it.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// A memory cgroup with a limit, removed on drop (its page cache goes to the parent).
pub struct MemoryCgroup {
    pub path: PathBuf,
}

impl MemoryCgroup {
    /// `iolab-test-{purpose}-{pid}` under the v1 memory hierarchy, limited to `limit` bytes; the
    /// error says why it cannot be made (not root, no v1 memory controller).
    pub fn new(purpose: &str, limit: u64) -> Result<MemoryCgroup, String> {
        let root = Path::new("/sys/fs/cgroup/memory");
        let path = root.join(format!("iolab-test-{purpose}-{}", std::process::id()));
        std::fs::create_dir(&path)
            .map_err(|e| format!("cannot create a memory cgroup in {}: {e}", root.display()))?;
        let cgroup = MemoryCgroup { path };
        std::fs::write(cgroup.path.join("memory.limit_in_bytes"), limit.to_string())
            .map_err(|e| format!("cannot set the cgroup's memory limit: {e}"))?;
        Ok(cgroup)
    }

    /// A shell command line that moves the shell into this cgroup, runs `then`, and execs its
    /// arguments there (for `iolab_via("sh", &["-c", &line, "sh"])`).
    pub fn enter_then(&self, then: &str) -> String {
        format!("echo $$ > {} && {then} exec \"$@\"", self.path.join("cgroup.procs").display())
    }

    /// The page cache charged to the cgroup now.
    pub fn cache_bytes(&self) -> u64 {
        let stat = std::fs::read_to_string(self.path.join("memory.stat")).unwrap_or_default();
        let line = stat.lines().find_map(|l| l.strip_prefix("cache "));
        line.and_then(|v| v.trim().parse().ok()).unwrap_or(0)
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// A file of `size` bytes whose pages are not in the page cache: what a cgroup's reads must
/// bring in themselves (pages written here would be charged to this process's cgroup, and
/// reads of them would hit whatever the test's limit).
pub fn cold_file(path: &Path, size: u64) {
    let mut file = std::fs::File::create(path).expect("file");
    let chunk: Vec<u8> = (0..MIB).map(|i| (i * 7 + 3) as u8).collect();
    for _ in 0..size / MIB {
        file.write_all(&chunk).expect("write");
    }
    file.sync_all().expect("fsync");
    // SAFETY: the descriptor is open for the call; the advice only drops clean cached pages.
    let advised = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(advised, 0, "posix_fadvise(DONTNEED)");
}
