//! One entry of a directory, by its name relative to the directory's descriptor and without
//! following a link: what kind it is and when it last changed (the fileset's clean-up removes
//! only files unchanged since its run last marked its tree), and the mark itself (the marker's
//! times set to now).

use std::io;

use super::CPath;

/// What an entry is, and its change and modification times (ns since the epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryStat {
    pub kind: EntryKind,
    /// The inode's last change (made, written, renamed, linked, chmod): no call sets it back.
    pub ctime_ns: i128,
    pub mtime_ns: i128,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Link,
    Other,
}

/// The entry `name` (NUL-terminated) of the directory open as `dirfd`, a link itself, never
/// what it points to.
pub fn entry_stat(dirfd: i32, name: &[u8]) -> io::Result<EntryStat> {
    let name = CPath::new(name)?;
    let mut out = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated; `out` has room for a stat the kernel fills.
    if unsafe { libc::fstatat(dirfd, name.ptr(), out.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstatat returned 0, so it filled `out`.
    let st = unsafe { out.assume_init() };
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => EntryKind::File,
        libc::S_IFDIR => EntryKind::Dir,
        libc::S_IFLNK => EntryKind::Link,
        _ => EntryKind::Other,
    };
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    Ok(EntryStat {
        kind,
        ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
        mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
    })
}

/// Sets the access and modification times of the entry `name` (NUL-terminated) of the
/// directory open as `dirfd` to now, the kernel's own clock, which also stamps every change;
/// a link is not followed.
pub fn touch(dirfd: i32, name: &[u8]) -> io::Result<()> {
    let name = CPath::new(name)?;
    let now = [libc::timespec { tv_sec: 0, tv_nsec: libc::UTIME_NOW }; 2];
    // SAFETY: `name` is NUL-terminated and `now` two timespecs, both borrowed for the call.
    if unsafe { libc::utimensat(dirfd, name.ptr(), now.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) } < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn kinds_are_told_apart_and_a_touch_is_after_every_earlier_change() {
        let temp = tempfile::tempdir().expect("temp dir");
        std::fs::write(temp.path().join("f"), b"x").expect("write");
        std::fs::create_dir(temp.path().join("d")).expect("mkdir");
        std::os::unix::fs::symlink("d", temp.path().join("l")).expect("symlink");
        let top = std::fs::File::open(temp.path()).expect("open");
        let at = top.as_raw_fd();
        let kind = |name: &[u8]| entry_stat(at, name).expect("stat").kind;
        assert_eq!(
            [kind(b"f\0"), kind(b"d\0"), kind(b"l\0")],
            [EntryKind::File, EntryKind::Dir, EntryKind::Link]
        );
        let made = entry_stat(at, b"f\0").expect("stat");
        std::fs::write(temp.path().join("marker"), b"").expect("write");
        touch(at, b"marker\0").expect("touch");
        assert!(entry_stat(at, b"marker\0").expect("stat").mtime_ns >= made.ctime_ns);
        assert_eq!(entry_stat(at, b"gone\0").expect_err("absent").raw_os_error(), Some(libc::ENOENT));
    }
}
