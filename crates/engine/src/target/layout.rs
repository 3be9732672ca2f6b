//! Laying out a file target: creating it or extending it to the size a run needs, with real
//! data. A sparse or fallocated file would read back zeros without touching the device and
//! make every read test a lie. A file is only ever extended, never truncated.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::opened::{Access, OpenedTarget};
use super::TargetError;
use crate::content::{Content, ContentConfig};

/// What `lay_out_file` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub created: bool,
    /// Bytes written to reach the size (0 when the file was already big enough).
    pub written: u64,
}

const CHUNK: usize = 1 << 20;

/// Makes `path` a regular file of at least `size` bytes of non-zero data, opening it by name:
/// for the scratch file and a user's own runs. Stops early, with `TargetError::Interrupted`,
/// when `cancel` is set.
pub fn lay_out_file(path: &Path, size: u64, cancel: &AtomicBool) -> Result<Layout, TargetError> {
    lay_out_file_with(path, size, &ContentConfig::default(), cancel)
}

/// As `lay_out_file`, the blocks holding what `content` says (`--dedupe-pct`, `--compress-pct`,
/// `--buffer-pattern`), as the group's writes will.
pub fn lay_out_file_with(
    path: &Path,
    size: u64,
    content: &ContentConfig,
    cancel: &AtomicBool,
) -> Result<Layout, TargetError> {
    let existing = std::fs::metadata(path).ok();
    if existing.as_ref().is_some_and(|m| m.len() >= size) {
        // Big enough: not even opened for writing, so a read-only file stays usable.
        return Ok(Layout { created: false, written: 0 });
    }
    let target = create_by_name(path)?;
    lay_out_with(&target, size, content, cancel)
}

/// Makes `path` a regular file of at least `size` bytes that holds no data (a sparse file): for
/// a target nothing reads or writes, as the null engine's, which needs neither the time nor the
/// space of real data. Never shortens a file.
pub fn size_without_data(path: &Path, size: u64) -> Result<Layout, TargetError> {
    let target = create_by_name(path)?;
    let created = target.created();
    let io_error = |context, source| TargetError::Io { path: path.to_path_buf(), context, source };
    let current = target.file.metadata().map_err(|e| io_error("cannot stat", e))?.len();
    if current < size {
        target.file.set_len(size).map_err(|e| io_error("cannot set the file's length", e))?;
    }
    Ok(Layout { created, written: 0 })
}

fn create_by_name(path: &Path) -> Result<OpenedTarget, TargetError> {
    OpenedTarget::open_path(path, Access::Create).map_err(|e| match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => {
            TargetError::Permission { path: path.to_path_buf(), access: "writing" }
        }
        _ => TargetError::Io { path: path.to_path_buf(), context: "cannot create", source: e },
    })
}

/// Extends the open regular file `target` to at least `size` bytes of non-zero data, through
/// its descriptor: what was checked is what is written. A file this open created is removed
/// again when there is no room for it. Stops early, with `TargetError::Interrupted`, when
/// `cancel` is set.
pub fn lay_out(target: &OpenedTarget, size: u64, cancel: &AtomicBool) -> Result<Layout, TargetError> {
    lay_out_with(target, size, &ContentConfig::default(), cancel)
}

/// As `lay_out`, the blocks holding what `content` says, as the group's writes will.
pub fn lay_out_with(
    target: &OpenedTarget,
    size: u64,
    content: &ContentConfig,
    cancel: &AtomicBool,
) -> Result<Layout, TargetError> {
    let path = target.path.as_path();
    let io_error = |context, source| TargetError::Io { path: path.to_path_buf(), context, source };
    let created = target.created();
    let mut file: &File = &target.file;
    let meta = file.metadata().map_err(|e| io_error("cannot stat", e))?;
    if !meta.is_file() {
        return Err(TargetError::Unsupported {
            path: path.to_path_buf(),
            what: "not a regular file, so it is not laid out",
        });
    }
    let current = meta.len();
    if current >= size {
        return Ok(Layout { created, written: 0 });
    }
    if !target.writable {
        return Err(TargetError::ReadOnly { path: path.to_path_buf(), size });
    }
    let available = free_bytes(file).map_err(|e| io_error("cannot read the free space", e))?;
    if size - current > available {
        if created {
            target.remove_created();
        }
        return Err(TargetError::NoSpace { path: path.to_path_buf(), needed: size - current, available });
    }
    let mut chunk = pseudo_random_chunk();
    // The default keeps the cheap unique blocks below; other data is shaped as writes shape it.
    let shaped = (!content.spec.is_default()).then(|| {
        let origin = crate::stamp::origin(usize::MAX);
        (Content::new(content, origin), crate::stamp::WriteStamp::new(origin))
    });
    let mut at = current;
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(at)).map_err(|e| io_error("cannot seek", e))?;
    while at < size {
        if cancel.load(Ordering::Relaxed) {
            return Err(TargetError::Interrupted(path.to_path_buf()));
        }
        let n = (size - at).min(CHUNK as u64) as usize;
        match &shaped {
            None => unique_blocks(&mut chunk[..n], at),
            Some((content, stamp)) => {
                content.fill(&mut chunk[..n]);
                if content.stamps() {
                    stamp.stamp(&mut chunk[..n], at);
                }
                content.finish(&mut chunk[..n]);
            }
        }
        file.write_all(&chunk[..n]).map_err(|e| io_error("cannot write while laying out the file", e))?;
        at += n as u64;
    }
    file.sync_data().map_err(|e| io_error("cannot flush the laid-out file", e))?;
    // Drop the freshly written pages so buffered runs do not start with a warm cache.
    // SAFETY: plain advice on an open fd; no memory is passed.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(Layout { created, written: size - current })
}

/// Each 4 KiB block: iolab's mark, then its offset, so no two blocks are equal.
fn unique_blocks(chunk: &mut [u8], at: u64) {
    crate::stamp::mark_blocks(chunk);
    for (i, block) in chunk.chunks_mut(crate::block::BLOCK).enumerate() {
        let stamp = (at + (i * crate::block::BLOCK) as u64) ^ 0x9e37_79b9_7f4a_7c15;
        let from = crate::block::MAGIC.len().min(block.len());
        let to = (from + 8).min(block.len());
        block[from..to].copy_from_slice(&stamp.to_le_bytes()[..to - from]);
    }
}

/// Bytes an unprivileged writer may still use on the filesystem of `file`.
fn free_bytes(file: &File) -> std::io::Result<u64> {
    // SAFETY: an all-zero statvfs is a valid value of this plain C struct.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: the fd is open and `stats` is writable.
    if unsafe { libc::fstatvfs(file.as_raw_fd(), &mut stats) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stats.f_bavail as u64 * stats.f_frsize as u64)
}

fn pseudo_random_chunk() -> Vec<u8> {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut chunk = Vec::with_capacity(CHUNK);
    while chunk.len() < CHUNK {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.extend_from_slice(&state.to_le_bytes());
    }
    chunk
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("iolab-layout-{name}-{}", std::process::id()))
    }

    #[test]
    fn creates_with_nonzero_data_and_never_truncates() {
        let path = scratch("grow");
        let _ = std::fs::remove_file(&path);
        let layout = lay_out_file(&path, 3 * 4096 + 100, &AtomicBool::new(false)).expect("lay out");
        assert_eq!(layout, Layout { created: true, written: 3 * 4096 + 100 });
        let data = std::fs::read(&path).expect("read back");
        assert_eq!(data.len(), 3 * 4096 + 100);
        assert!(data.chunks(4096).all(|block| block.iter().any(|&b| b != 0)));
        assert_ne!(data[..4096], data[4096..8192]);

        let again = lay_out_file(&path, 4096, &AtomicBool::new(false)).expect("smaller size");
        assert_eq!(again, Layout { created: false, written: 0 });
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), 3 * 4096 + 100);
        std::fs::remove_file(&path).expect("clean up");
    }

    #[test]
    fn stops_when_cancelled() {
        let path = scratch("cancel");
        let _ = std::fs::remove_file(&path);
        let result = lay_out_file(&path, 64 << 20, &AtomicBool::new(true));
        assert!(matches!(result, Err(TargetError::Interrupted(_))));
        std::fs::remove_file(&path).expect("clean up");
    }
}
