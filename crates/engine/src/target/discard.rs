//! Discarding (trimming) a region before preconditioning, so a flash device starts from erased
//! blocks: BLKDISCARD on a block device, a punched hole in a file.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use super::{TargetError, TargetKind};

/// ioctl BLKDISCARD: _IO(0x12, 119), argument: { start, length } in bytes.
const BLKDISCARD: libc::c_ulong = 0x1277;

/// Discards `len` bytes at `start` of `file`. A device that cannot discard says so (EOPNOTSUPP),
/// which the caller reports as a note: preconditioning goes on without it.
pub fn discard(path: &Path, file: &File, kind: TargetKind, start: u64, len: u64) -> Result<(), TargetError> {
    let fd = file.as_raw_fd();
    let done = match kind {
        TargetKind::BlockDevice => {
            let range: [u64; 2] = [start, len];
            // SAFETY: BLKDISCARD reads two u64s from the pointer, which points at `range`,
            // alive for the call; `fd` is an open descriptor owned by `file`.
            unsafe { libc::ioctl(fd, BLKDISCARD, range.as_ptr()) }
        }
        TargetKind::File => {
            let (start, len) = (start as libc::off_t, len as libc::off_t);
            // SAFETY: fallocate takes plain integers; `fd` is an open descriptor owned by `file`.
            unsafe { libc::fallocate(fd, libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, start, len) }
        }
    };
    if done == 0 {
        Ok(())
    } else {
        Err(TargetError::Io {
            path: path.to_path_buf(),
            context: "cannot discard",
            source: io::Error::last_os_error(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_punched_file_keeps_its_size_and_frees_its_blocks() {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(&vec![7u8; 1 << 20]).expect("write");
        file.as_file().sync_all().expect("sync");
        let before = file.as_file().metadata().expect("meta");
        discard(file.path(), file.as_file(), TargetKind::File, 0, 1 << 20).expect("discard");
        let after = file.as_file().metadata().expect("meta");
        assert_eq!(after.len(), 1 << 20);
        assert!(after.blocks() < before.blocks(), "{} -> {} blocks", before.blocks(), after.blocks());
    }
}
