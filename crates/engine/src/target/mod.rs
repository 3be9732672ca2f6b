//! Targets: what a path is (file or block device), how big, which alignment O_DIRECT needs,
//! and opening it with errors that tell the user what to do.

mod beneath_dir;
mod device;
mod discard;
mod layout;
mod opened;

use std::fs::File;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use thiserror::Error;

pub use beneath_dir::BeneathDir;
pub use device::{backing, has_poll_queues_behind, Backing, BlockDevice, DeviceNumber, DeviceStat};
pub use discard::discard;
pub use layout::{lay_out, lay_out_file, lay_out_file_with, lay_out_with, size_without_data, Layout};
pub use opened::{open_directory, set_run_flags, Access, OpenedTarget};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    File,
    BlockDevice,
}

#[derive(Debug, Clone)]
pub struct TargetInfo {
    pub kind: TargetKind,
    /// Current size in bytes (file length or device capacity).
    pub size: u64,
    /// The offset and length granularity O_DIRECT requires.
    pub direct_align: u32,
}

#[derive(Debug, Error)]
pub enum TargetError {
    #[error("target {0} does not exist; check the path, or give --size so iolab creates a file there")]
    NotFound(PathBuf),
    #[error("no permission to open {path} for {access}; run as a user who may, or choose another --target")]
    Permission { path: PathBuf, access: &'static str },
    #[error("{0} does not support O_DIRECT; use --buffered (results will include the page cache)")]
    NoDirect(PathBuf),
    #[error("{path} is {what}; give a regular file or a block device")]
    Unsupported { path: PathBuf, what: &'static str },
    #[error("{path} needs {} more to reach --size, but its filesystem has {} free; use a smaller --size or another place", iolab_spec::Bytes(*needed), iolab_spec::Bytes(*available))]
    NoSpace { path: PathBuf, needed: u64, available: u64 },
    #[error("{path} is shorter than the {} the run needs, and this run may only read it; give a smaller --size or --offset, or a target it may write", iolab_spec::Bytes(*size))]
    ReadOnly { path: PathBuf, size: u64 },
    #[error("interrupted while laying out {0}")]
    Interrupted(PathBuf),
    #[error("{path}: {context}: {source}")]
    Io {
        path: PathBuf,
        context: &'static str,
        #[source]
        source: io::Error,
    },
}

impl TargetError {
    /// An error of opening `path`, in words that say what to do.
    pub fn from_open(path: &Path, write: bool, error: io::Error) -> Self {
        match error.raw_os_error() {
            Some(libc::ENOENT) => TargetError::NotFound(path.to_path_buf()),
            Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => TargetError::Permission {
                path: path.to_path_buf(),
                access: if write { "writing" } else { "reading" },
            },
            Some(libc::EINVAL) => TargetError::NoDirect(path.to_path_buf()),
            _ => TargetError::Io { path: path.to_path_buf(), context: "cannot open", source: error },
        }
    }
}

/// What kind of target `file_type` is; anything but a regular file or block device is refused.
pub fn classify(path: &Path, file_type: std::fs::FileType) -> Result<TargetKind, TargetError> {
    if file_type.is_file() {
        return Ok(TargetKind::File);
    }
    if file_type.is_block_device() {
        return Ok(TargetKind::BlockDevice);
    }
    let what = if file_type.is_dir() {
        "a directory"
    } else if file_type.is_char_device() {
        "a character device"
    } else {
        "neither a file nor a block device"
    };
    Err(TargetError::Unsupported { path: path.to_path_buf(), what })
}

/// What `path` is, without changing it.
pub fn inspect(path: &Path, file: &File) -> Result<TargetInfo, TargetError> {
    let io_error = |context, source| TargetError::Io { path: path.to_path_buf(), context, source };
    let meta = file.metadata().map_err(|e| io_error("cannot stat", e))?;
    let info = match classify(path, meta.file_type())? {
        TargetKind::File => {
            TargetInfo { kind: TargetKind::File, size: meta.len(), direct_align: file_direct_align(file) }
        }
        TargetKind::BlockDevice => {
            let size =
                ioctl_u64(file, BLKGETSIZE64).map_err(|e| io_error("cannot read the device size", e))?;
            let block = ioctl_int(file, libc::BLKSSZGET)
                .map_err(|e| io_error("cannot read the logical block size", e))?;
            TargetInfo { kind: TargetKind::BlockDevice, size, direct_align: block.max(1) as u32 }
        }
    };
    Ok(info)
}

/// `_IOR(0x12, 114, size_t)`: the byte size of a block device (not in the libc crate).
const BLKGETSIZE64: u64 = 0x8008_1272;

fn ioctl_u64(file: &File, request: u64) -> io::Result<u64> {
    use std::os::fd::AsRawFd;
    let mut value: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer, which points at `value`.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), request as _, &mut value as *mut u64) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

fn ioctl_int(file: &File, request: u64) -> io::Result<i32> {
    use std::os::fd::AsRawFd;
    let mut value: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int through the pointer, which points at `value`.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), request as _, &mut value as *mut libc::c_int) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// The O_DIRECT alignment of a regular file: statx's DIOALIGN where the filesystem reports it,
/// else the logical block size of the device under the filesystem, else 512.
fn file_direct_align(file: &File) -> u32 {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero statx is a valid value of this plain C struct.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: the fd is open, the empty path with AT_EMPTY_PATH names it, and `stx` is writable.
    let rc = unsafe {
        libc::statx(file.as_raw_fd(), c"".as_ptr(), libc::AT_EMPTY_PATH, libc::STATX_DIOALIGN, &mut stx)
    };
    if rc == 0 && stx.stx_mask & libc::STATX_DIOALIGN != 0 && stx.stx_dio_offset_align > 0 {
        return stx.stx_dio_offset_align;
    }
    let (major, minor) = (stx.stx_dev_major, stx.stx_dev_minor);
    ["queue/logical_block_size", "../queue/logical_block_size"]
        .iter()
        .find_map(|rel| std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/{rel}")).ok())
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(512)
}
