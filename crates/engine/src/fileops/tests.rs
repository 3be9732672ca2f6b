//! Every operation on both engines in a temporary directory, and the unterminated path refused.

use std::os::fd::AsRawFd;

use super::*;

fn engines() -> Vec<(FileOpsEngine, FileOps)> {
    let mut out = vec![(FileOpsEngine::Sync, FileOps::new(FileOpsEngine::Sync).expect("sync needs no ring"))];
    match FileOps::new(FileOpsEngine::Uring) {
        Ok(ops) => out.push((FileOpsEngine::Uring, ops)),
        Err(e) => iolab_test_support::skip!(iolab_test_support::Missing::Other, "no io_uring here ({e})"),
    }
    out
}

#[test]
fn a_file_goes_through_every_operation_on_each_engine() {
    for (engine, mut ops) in engines() {
        let dir = tempfile::tempdir().expect("temp dir");
        let handle = std::fs::File::open(dir.path()).expect("open the temp dir");
        let dirfd = handle.as_raw_fd();
        ops.mkdirat(dirfd, b"d\0").unwrap_or_else(|e| panic!("{engine:?} mkdirat: {e}"));
        let fd =
            ops.openat(dirfd, b"d/f\0", libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o644).expect("openat");
        let data = AlignedBuf::new(8192, 7);
        assert_eq!(ops.write(fd, &data.as_ref()[..5000], 0).expect("write"), 5000, "{engine:?}");
        ops.fsync(fd).expect("fsync");
        let mut back = AlignedBuf::new(8192, 8);
        assert_eq!(ops.read(fd, &mut back.as_mut()[..5000], 0).expect("read"), 5000, "{engine:?}");
        assert_eq!(back.as_ref()[..5000], data.as_ref()[..5000], "{engine:?} read what was written");
        ops.close(fd).expect("close");
        assert_eq!(ops.stat(dirfd, b"d/f\0").expect("stat"), 5000, "{engine:?}");
        ops.renameat(dirfd, b"d/f\0", b"d/g\0").expect("renameat");
        assert!(dir.path().join("d/g").exists() && !dir.path().join("d/f").exists(), "{engine:?}");
        let sub = ops.openat(dirfd, b"d\0", libc::O_RDONLY | libc::O_DIRECTORY, 0).expect("open dir");
        let mut entries = vec![0u8; 4096];
        assert_eq!(
            ops.read_dir(sub, &mut entries).expect("getdents64"),
            1,
            "{engine:?}: only g, not . or .."
        );
        ops.close(sub).expect("close dir");
        ops.unlinkat(dirfd, b"d/g\0", false).expect("unlink");
        ops.unlinkat(dirfd, b"d\0", true).expect("rmdir");
        assert!(!dir.path().join("d").exists(), "{engine:?}");
        let missing = ops.stat(dirfd, b"d\0").expect_err("stat of a removed dir");
        assert_eq!(missing.raw_os_error(), Some(libc::ENOENT), "{engine:?}");
    }
}

#[test]
fn a_path_without_its_nul_is_refused_before_the_kernel_reads_past_it() {
    for (engine, mut ops) in engines() {
        let dir = tempfile::tempdir().expect("temp dir");
        let handle = std::fs::File::open(dir.path()).expect("open the temp dir");
        let dirfd = handle.as_raw_fd();
        let err = ops.mkdirat(dirfd, b"unterminated").expect_err("no NUL");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{engine:?}");
        let err = ops.renameat(dirfd, b"a\0", b"b").expect_err("no NUL in the new name");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{engine:?}");
        assert!(!dir.path().join("unterminated").exists(), "{engine:?}");
    }
}
