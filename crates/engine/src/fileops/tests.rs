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

/// A ring's queue for `op`, or why a test skips.
fn queue_for(op: PathOp) -> Option<FileOps> {
    let Ok(ops) = FileOps::new(FileOpsEngine::Uring) else {
        iolab_test_support::skip!(iolab_test_support::Missing::Other, "no io_uring here");
        return None;
    };
    if ops.queue_depth(op) == 1 {
        iolab_test_support::skip!(
            iolab_test_support::Missing::Other,
            "this kernel's ring cannot queue {op:?}"
        );
        return None;
    }
    Some(ops)
}

/// What each name's completions said (an error as its errno), by name.
type Heard = Vec<(u64, Vec<Result<PathDone, Option<i32>>>)>;

/// Sends `op` on each of `names` ("f<N>" in `dirfd`) through the queue's slots, each slot
/// reused once its last completion is in (a create's second).
fn through_queue(ops: &mut FileOps, op: PathOp, dirfd: i32, mut names: Vec<u64>) -> Heard {
    let mut in_slot = vec![u64::MAX; ops.queue_depth(op)];
    let mut free: Vec<usize> = (0..in_slot.len()).collect();
    let mut heard: Heard = Vec::new();
    loop {
        while !free.is_empty() && !names.is_empty() {
            let (tag, n) = (free.pop().expect("a free slot"), names.pop().expect("a name"));
            ops.queue_push(op, dirfd, format!("f{n}\0").as_bytes(), tag).expect("push");
            in_slot[tag] = n;
            heard.push((n, Vec::new()));
        }
        ops.queue_wait(|tag, result| {
            let n = in_slot[tag];
            let result = result.map_err(|e| e.raw_os_error());
            let slot_free = !matches!(result, Ok(PathDone::Opened | PathDone::Wrote(_) | PathDone::Synced));
            heard.iter_mut().find(|(m, _)| *m == n).expect("a queued name").1.push(result);
            if slot_free {
                in_slot[tag] = u64::MAX;
                free.push(tag);
            }
        })
        .expect("wait");
        if ops.queued_in_flight() == 0 && names.is_empty() {
            heard.sort_by_key(|h| h.0);
            return heard;
        }
    }
}

#[test]
fn stats_in_flight_each_come_back_with_their_own_size_or_error() {
    let Some(mut ops) = queue_for(PathOp::Stat) else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    for n in 0..40u64 {
        std::fs::write(dir.path().join(format!("f{n}")), vec![7u8; n as usize * 3]).expect("file");
    }
    let handle = std::fs::File::open(dir.path()).expect("open the temp dir");
    let dirfd = handle.as_raw_fd();
    // A slot in flight is not taken again.
    ops.queue_push(PathOp::Stat, dirfd, b"f0\0", 0).expect("push");
    let err = ops.queue_push(PathOp::Stat, dirfd, b"f1\0", 0).expect_err("a busy slot");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    while ops.queued_in_flight() > 0 {
        ops.queue_wait(|_, result| assert_eq!(result.expect("f0"), PathDone::Size(0))).expect("wait");
    }
    // 40 files and one missing name (f40) through the slots.
    let heard = through_queue(&mut ops, PathOp::Stat, dirfd, (0..=40).collect());
    assert_eq!(heard.len(), 41);
    for (n, results) in &heard[..40] {
        assert_eq!(*results, vec![Ok(PathDone::Size(n * 3))], "f{n}");
    }
    assert_eq!(heard[40], (40, vec![Err(Some(libc::ENOENT))]), "the missing name's own error");
    // One-at-a-time operations still work after the queue.
    assert_eq!(ops.stat(dirfd, b"f5\0").expect("stat"), 15);
}

#[test]
fn queued_unlinks_remove_each_file_and_say_which_was_missing() {
    let Some(mut ops) = queue_for(PathOp::Unlink) else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    for n in 0..100u64 {
        std::fs::write(dir.path().join(format!("f{n}")), b"x").expect("file");
    }
    let handle = std::fs::File::open(dir.path()).expect("open the temp dir");
    // 100 files and one missing name (f100).
    let heard = through_queue(&mut ops, PathOp::Unlink, handle.as_raw_fd(), (0..=100).collect());
    assert_eq!(heard.len(), 101);
    assert!(heard[..100].iter().all(|(_, results)| *results == vec![Ok(PathDone::Unlinked)]), "{heard:?}");
    assert_eq!(heard[100], (100, vec![Err(Some(libc::ENOENT))]), "the missing name's own error");
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0, "every file removed");
}

/// None of the process's descriptors points at a file of `dir`.
fn assert_none_open_in(dir: &std::path::Path) {
    let open_here: Vec<_> = std::fs::read_dir("/proc/self/fd")
        .expect("fds")
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.parent() == Some(dir))
        .collect();
    assert!(open_here.is_empty(), "still open: {open_here:?}");
}

/// Queues `create` of f0..f99 in a new directory where f7 already is (O_EXCL: EEXIST, left
/// untouched): the directory, and what the other 99 heard.
fn creates_beside_an_old_f7(ops: &mut FileOps, create: PathOp) -> (tempfile::TempDir, Heard) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("f7"), b"there before").expect("file");
    let handle = std::fs::File::open(dir.path()).expect("open the temp dir");
    let mut heard = through_queue(ops, create, handle.as_raw_fd(), (0..100).collect());
    assert_eq!(heard.len(), 100);
    let f7 = heard.iter().position(|(n, _)| *n == 7).expect("f7 heard");
    assert_eq!(heard.remove(f7).1, vec![Err(Some(libc::EEXIST))], "f7 existed");
    assert_eq!(std::fs::read(dir.path().join("f7")).expect("f7"), b"there before");
    (dir, heard)
}

#[test]
fn queued_creates_open_then_close_each_file_and_say_which_existed() {
    let create = PathOp::Create { flags: 0, len: 0, sync: false };
    let Some(mut ops) = queue_for(create) else { return };
    let (dir, made) = creates_beside_an_old_f7(&mut ops, create);
    for (n, results) in &made {
        assert_eq!(*results, vec![Ok(PathDone::Opened), Ok(PathDone::Closed)], "f{n}");
        let made = std::fs::metadata(dir.path().join(format!("f{n}"))).expect("made");
        assert_eq!(made.len(), 0, "f{n} is empty");
    }
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 100);
    // Every descriptor the creates opened was closed.
    assert_none_open_in(dir.path());
}

#[test]
fn queued_creates_with_data_write_sync_and_close_each_file_in_turn() {
    let create = PathOp::Create { flags: 0, len: 3000, sync: true };
    let Some(mut ops) = queue_for(create) else { return };
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    ops.queue_data(&data).expect("data");
    // 100 names, more than the queue holds: slots are reused once their close is in.
    let (dir, made) = creates_beside_an_old_f7(&mut ops, create);
    for (n, results) in &made {
        assert_eq!(
            *results,
            vec![Ok(PathDone::Opened), Ok(PathDone::Wrote(3000)), Ok(PathDone::Synced), Ok(PathDone::Closed)],
            "f{n}"
        );
        let made = std::fs::read(dir.path().join(format!("f{n}"))).expect("made");
        assert!(made == data[..3000], "f{n} holds the queue's first 3000 bytes");
    }
    // More than the queue's data is refused before anything is sent.
    let too_long = PathOp::Create { flags: 0, len: 8192, sync: false };
    let handle = std::fs::File::open(dir.path()).expect("open the temp dir");
    let refused =
        ops.queue_push(too_long, handle.as_raw_fd(), b"f200\0", 0).expect_err("longer than the data");
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    assert_none_open_in(dir.path());
}

#[test]
fn an_entry_the_kernel_refused_is_never_sent_later() {
    // A submit that failed (not EINTR) left its entry queued while the caller's path was let
    // go; the next operation's submit sent that stale entry too and took its completion as
    // its own. A single-issuer ring refuses a submit from another thread (EEXIST): that is
    // the failure provoked here.
    let Ok(mut ops) = FileOps::new(FileOpsEngine::Uring) else {
        return iolab_test_support::skip!(iolab_test_support::Missing::Other, "no io_uring here");
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let handle = std::fs::File::open(dir.path()).expect("open the temp dir");
    let dirfd = handle.as_raw_fd();
    // The stale path stays valid memory here, so a resend would really make the directory.
    let stale = b"stale\0".to_vec();
    let (ops_back, refused) = std::thread::scope(|s| {
        s.spawn(|| {
            let refused = ops.mkdirat(dirfd, &stale);
            (ops, refused)
        })
        .join()
        .expect("thread")
    });
    ops = ops_back;
    match refused {
        Ok(()) => {
            return iolab_test_support::skip!(
                iolab_test_support::Missing::Other,
                "this kernel's ring is not single-issuer: no submit failure to provoke"
            );
        }
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EEXIST), "{e}"),
    }
    let later = ops.mkdirat(dirfd, b"fresh\0");
    assert!(later.is_err(), "a broken ring answers with its error, not another entry's completion");
    assert!(!dir.path().join("stale").exists(), "the refused entry was sent later");
    assert!(!dir.path().join("fresh").exists());
    let err =
        ops.queue_push(PathOp::Stat, dirfd, b"x\0", 0).expect_err("nothing more is queued on a broken ring");
    assert!(err.to_string().contains("no longer used"), "{err}");
    drop(stale);
}
