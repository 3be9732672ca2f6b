//! A directory under a tree's root, opened without ever leaving the root or following a link:
//! the fileset's threads resolve each directory they work in this way and then name only single
//! entries relative to its descriptor, so a directory swapped for a symbolic link while a run
//! works (to anywhere, inside or outside the tree) is refused, never followed.
//!
//! openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) does it in one call
//! (Linux 5.6); where the kernel lacks it, each component is opened `O_NOFOLLOW | O_DIRECTORY`
//! from its parent's descriptor, which refuses the same links. Either way ".." and absolute
//! paths are refused before the kernel sees them.

use std::io;

use super::CPath;

const DIR_FLAGS: i32 = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

/// Opens the directory `path` (NUL-terminated, relative, without "." or ".." components)
/// beneath the directory open as `root`. A symbolic link anywhere on the way is ELOOP; a
/// component that is not a directory ENOTDIR.
pub fn open_dir_beneath(root: i32, path: &[u8]) -> io::Result<i32> {
    let path = CPath::new(path)?;
    let name = &path.0[..path.0.len() - 1];
    if name.is_empty()
        || name.first() == Some(&b'/')
        || name.split(|&b| b == b'/').any(|c| matches!(c, b"" | b"." | b".."))
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a plain relative path beneath the tree", String::from_utf8_lossy(name)),
        ));
    }
    match openat2(root, path) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => walk(root, name),
        Err(e) => Err(link_said(root, path.0, e)),
        done => done,
    }
}

/// Closes a descriptor `open_dir_beneath` gave (once: the caller owns it, as every fileops
/// descriptor). Closing a directory loses no data, so its error is not answered.
pub fn close_dir(fd: i32) {
    // SAFETY: a plain system call on a descriptor the caller owns and closes once.
    unsafe { libc::close(fd) };
}

fn openat2(root: i32, path: CPath<'_>) -> io::Result<i32> {
    // SAFETY: open_how is plain old data; all zeroes is a valid value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = DIR_FLAGS as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `path` is NUL-terminated and `how` a valid open_how, both borrowed for the call;
    // the size passed is the struct's own.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root,
            path.ptr(),
            &raw const how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as i32)
    }
}

/// Component by component, each opened from its parent's descriptor without following a link.
fn walk(root: i32, name: &[u8]) -> io::Result<i32> {
    let mut at = root;
    let mut component = Vec::with_capacity(64);
    for part in name.split(|&b| b == b'/') {
        component.clear();
        component.extend_from_slice(part);
        component.push(0);
        // SAFETY: `component` is NUL-terminated and borrowed for the call.
        let fd = unsafe { libc::openat(at, component.as_ptr().cast(), DIR_FLAGS) };
        let opened = if fd < 0 { Err(link_said(at, &component, io::Error::last_os_error())) } else { Ok(fd) };
        if at != root {
            // SAFETY: `at` was opened by this walk and is closed once.
            unsafe { libc::close(at) };
        }
        at = opened?;
    }
    Ok(at)
}

/// `error` of opening `name` (NUL-terminated) in `at`, a link said as ELOOP: O_DIRECTORY with
/// O_NOFOLLOW answers a link as the last component with ENOTDIR.
fn link_said(at: i32, name: &[u8], error: io::Error) -> io::Error {
    if error.raw_os_error() != Some(libc::ENOTDIR) {
        return error;
    }
    let mut out = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated; `out` has room for a stat the kernel fills.
    let found =
        unsafe { libc::fstatat(at, name.as_ptr().cast(), out.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) };
    // SAFETY: fstatat returned 0, so it filled `out`.
    if found == 0 && unsafe { out.assume_init() }.st_mode & libc::S_IFMT == libc::S_IFLNK {
        io::Error::from_raw_os_error(libc::ELOOP)
    } else {
        error
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn a_link_anywhere_on_the_way_is_refused_by_both_ways() {
        let root = tempfile::tempdir().expect("temp dir");
        let outside = tempfile::tempdir().expect("outside");
        fs::create_dir_all(root.path().join("t0/d1")).expect("mkdir");
        std::os::unix::fs::symlink(outside.path(), root.path().join("t1")).expect("symlink");
        fs::create_dir(outside.path().join("d1")).expect("mkdir outside");
        std::os::unix::fs::symlink("d1", root.path().join("t0/d2")).expect("relative symlink");
        let handle = fs::File::open(root.path()).expect("open root");
        let top = handle.as_raw_fd();
        let open = |path: &[u8]| [open_dir_beneath(top, path), walk(top, &path[..path.len() - 1])];
        for opened in open(b"t0/d1\0") {
            close_dir(opened.expect("a real directory beneath"));
        }
        for path in [&b"t1/d1\0"[..], b"t1\0", b"t0/d2\0"] {
            for refused in open(path) {
                let err = refused.expect_err("through a link");
                assert_eq!(err.raw_os_error(), Some(libc::ELOOP), "{}: {err}", String::from_utf8_lossy(path));
            }
        }
        for path in [&b"../x\0"[..], b"/tmp\0", b"t0/../t0\0", b"t0//d1\0", b"\0", b"t0/d1"] {
            let err = open_dir_beneath(top, path).expect_err("not a plain path beneath");
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{}", String::from_utf8_lossy(path));
        }
    }
}
