//! Opening a device to look at it, and reading its two ends, where on-disk formats keep their
//! magic numbers.
//!
//! Plain buffered `pread`s: a couple of MiB once before a run, so O_DIRECT's alignment rules
//! would buy nothing. The open is tried with `O_EXCL` first, because on Linux an exclusive open
//! of a block device fails with EBUSY while anyone has claimed it (a mounted filesystem, md,
//! device-mapper, swap, a program like mkfs): that catches users this process cannot see, such as
//! a mount in another mount namespace.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use super::with_context;

/// How much of each end is read: covers every offset in the signature table.
pub(crate) const END_BYTES: u64 = 1 << 20;

/// An open device, and whether the kernel refused to let us claim it.
pub(crate) struct Opened {
    pub(crate) file: File,
    pub(crate) claimed_by_someone: bool,
}

/// The first and last bytes of a device or partition of `size` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ends {
    pub(crate) head: Vec<u8>,
    pub(crate) tail: Vec<u8>,
    pub(crate) size: u64,
}

/// Opens `path` read-only, exclusively if nobody else has claimed it.
pub(crate) fn open(path: &Path) -> io::Result<Opened> {
    let context = || with_context(format!("cannot open {} to inspect it", path.display()));
    let exclusive = OpenOptions::new().read(true).custom_flags(libc::O_EXCL).open(path);
    match exclusive {
        Ok(file) => Ok(Opened { file, claimed_by_someone: false }),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            Ok(Opened { file: File::open(path).map_err(context())?, claimed_by_someone: true })
        }
        Err(e) => Err(context()(e)),
    }
}

/// The size of an open device (its `st_size` is 0, so ask where its end is).
pub(crate) fn size(file: &File, path: &Path) -> io::Result<u64> {
    let mut file = file;
    file.seek(SeekFrom::End(0)).map_err(with_context(format!("cannot find the size of {}", path.display())))
}

/// The first and last [`END_BYTES`] of the `len` bytes at `start` in `file`.
pub(crate) fn read_ends(file: &File, path: &Path, start: u64, len: u64) -> io::Result<Ends> {
    let span = len.min(END_BYTES);
    let head = read_at(file, path, start, span)?;
    let tail = if span == len { head.clone() } else { read_at(file, path, start + (len - span), span)? };
    Ok(Ends { head, tail, size: len })
}

fn read_at(file: &File, path: &Path, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    let context = with_context(format!("cannot read {len} bytes of {} at byte {offset}", path.display()));
    let len = usize::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "read too large"))
        .map_err(&context)?;
    let mut buf = vec![0; len];
    file.read_exact_at(&mut buf, offset).map_err(&context)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A regular file stands in for a device: the reads are the same `pread`s.
    struct Scratch(std::path::PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn scratch(tag: &str, bytes: &[u8]) -> Scratch {
        let path = std::env::temp_dir().join(format!("iolab-ends-{tag}-{}", std::process::id()));
        std::fs::write(&path, bytes).expect("write scratch file");
        Scratch(path)
    }

    #[test]
    fn reads_head_and_tail_of_a_large_span() {
        let mut bytes = vec![0u8; 3 << 20];
        bytes[0] = 1;
        bytes[(1 << 20) - 1] = 2;
        bytes[2 << 20] = 3;
        let last = bytes.len() - 1;
        bytes[last] = 4;
        let file = scratch("large", &bytes);
        let opened = open(&file.0).expect("open");
        assert!(!opened.claimed_by_someone);
        let size = size(&opened.file, &file.0).expect("size");
        assert_eq!(size, 3 << 20);
        let ends = read_ends(&opened.file, &file.0, 0, size).expect("read");
        assert_eq!(ends.head.len(), 1 << 20);
        assert_eq!((ends.head[0], ends.head[(1 << 20) - 1]), (1, 2));
        assert_eq!((ends.tail[0], ends.tail[(1 << 20) - 1]), (3, 4));
    }

    #[test]
    fn a_span_inside_the_file_like_a_partition() {
        let mut bytes = vec![0u8; 8192];
        bytes[4096] = 9;
        bytes[6143] = 8;
        let file = scratch("span", &bytes);
        let opened = open(&file.0).expect("open");
        let ends = read_ends(&opened.file, &file.0, 4096, 2048).expect("read");
        assert_eq!(ends.size, 2048);
        assert_eq!(ends.head, ends.tail);
        assert_eq!((ends.head[0], ends.head[2047]), (9, 8));
    }

    #[test]
    fn a_span_past_the_end_is_an_error_naming_the_offset() {
        let file = scratch("short", &[0u8; 4096]);
        let opened = open(&file.0).expect("open");
        let err = read_ends(&opened.file, &file.0, 0, 1 << 21).expect_err("short file");
        assert!(err.to_string().contains("at byte"), "{err}");
    }
}
