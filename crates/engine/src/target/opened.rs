//! A target opened once: whoever checks a path opens it, and the layout and every I/O of the
//! run use that descriptor, never the name again. Opening a name twice (once to check, once to
//! use) lets anyone who can rename entries in between swap in a symbolic link to another file.
//!
//! Beneath a directory (an agent's `--allow-write`), the open resolves no symbolic link at all
//! and cannot leave the directory: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, or,
//! on kernels before 5.6, a walk of `O_PATH | O_NOFOLLOW` descriptors one component at a time.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// How a target is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    /// Read and write (writing workloads, and laying out a file).
    Write,
    /// A new regular file, read and write; fails with `EEXIST` when something is there.
    Create,
}

/// A target's descriptor and the path it was opened by (for messages only).
#[derive(Debug)]
pub struct OpenedTarget {
    pub path: PathBuf,
    pub file: File,
    /// Opened for writing: only then may the file be laid out.
    pub writable: bool,
    created: Option<Created>,
}

/// Where a file this open created lives, so that a layout that fails can remove it again.
#[derive(Debug)]
struct Created {
    dir: OwnedFd,
    name: OsString,
}

impl OpenedTarget {
    /// Whether this open created the file.
    pub fn created(&self) -> bool {
        self.created.is_some()
    }

    /// Removes the file this open created, if its name still names it: a name now used by
    /// another file (renamed over it) is left alone.
    pub fn remove_created(&self) {
        let Some(created) = &self.created else { return };
        let Ok(name) = CString::new(created.name.as_bytes()) else { return };
        let Ok(ours) = self.file.metadata() else { return };
        // SAFETY: an all-zero stat is a valid value of this plain C struct.
        let mut there: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: the directory descriptor is open, `name` is a NUL-terminated single
        // component, and `there` is writable.
        let rc = unsafe {
            libc::fstatat(created.dir.as_raw_fd(), name.as_ptr(), &mut there, libc::AT_SYMLINK_NOFOLLOW)
        };
        if rc == 0 && there.st_dev == ours.dev() && there.st_ino == ours.ino() {
            // SAFETY: the directory descriptor is open and `name` is a NUL-terminated single
            // component; unlinkat removes that one entry of that directory, nothing else.
            unsafe { libc::unlinkat(created.dir.as_raw_fd(), name.as_ptr(), 0) };
        }
    }

    /// Opens `path` by name, following symbolic links: for a user's own runs, where nobody
    /// else decides what the name means. `Create` makes the file when nothing is there and
    /// opens the existing one otherwise.
    pub fn open_path(path: &Path, access: Access) -> io::Result<OpenedTarget> {
        // Opening a character device can act on it (a watchdog, a tape): never, not even to
        // refuse it afterwards. (A FIFO cannot make the open wait: see `flags`.)
        if let Ok(meta) = std::fs::metadata(path) {
            use std::os::unix::fs::FileTypeExt;
            let kind = meta.file_type();
            if kind.is_char_device() || kind.is_socket() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a character device or socket; give a regular file or a block device",
                ));
            }
        }
        if access != Access::Create {
            let file = open_at(libc::AT_FDCWD, path.as_os_str(), flags(access))?;
            return OpenedTarget::new(path, file, access, None);
        }
        let (parent, name) = split(path)?;
        let dir = File::from(open_at(libc::AT_FDCWD, parent.as_os_str(), libc::O_PATH | libc::O_DIRECTORY)?);
        match open_at(dir.as_raw_fd(), name, flags(Access::Create)) {
            Ok(file) => {
                OpenedTarget::new(path, file, access, Some(Created { dir: dir.into(), name: name.into() }))
            }
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => OpenedTarget::open_path(path, Access::Write),
            Err(e) => Err(e),
        }
    }

    /// Opens `relative` beneath the directory `dir` without following any symbolic link and
    /// without leaving `dir` (no `..`, no absolute path, no link, no magic link, at any
    /// component). `path` is what messages call it. `Create` refuses an existing entry.
    pub fn open_beneath(
        dir: BorrowedFd<'_>,
        relative: &Path,
        path: &Path,
        access: Access,
    ) -> io::Result<OpenedTarget> {
        let names = components(relative)?;
        let Some((last, parents)) = names.split_last() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no file name beneath the directory"));
        };
        if access != Access::Create {
            let file = resolve_beneath(dir, &names, flags(access))?;
            return OpenedTarget::new(path, file, access, None);
        }
        // The file is created in its directory, itself opened beneath `dir`.
        let parent = if parents.is_empty() {
            dir.try_clone_to_owned()?
        } else {
            resolve_beneath(dir, parents, libc::O_PATH | libc::O_DIRECTORY)?
        };
        let file = open_at(parent.as_raw_fd(), last, flags(Access::Create))?;
        OpenedTarget::new(path, file, access, Some(Created { dir: parent, name: (*last).into() }))
    }

    fn new(path: &Path, file: OwnedFd, access: Access, created: Option<Created>) -> io::Result<OpenedTarget> {
        let file = File::from(file);
        // Opened O_NONBLOCK (a FIFO put there must not hang the open); the run's I/O blocks.
        // SAFETY: F_GETFL and F_SETFL take and return plain flags; no memory is passed.
        let cleared = unsafe {
            let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            flags >= 0 && libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
        };
        if !cleared {
            return Err(io::Error::last_os_error());
        }
        Ok(OpenedTarget { path: path.to_path_buf(), file, writable: access != Access::Read, created })
    }
}

/// Opens a directory to open targets beneath it later (`O_PATH`: it grants nothing by itself).
pub fn open_directory(path: &Path) -> io::Result<OwnedFd> {
    open_at(libc::AT_FDCWD, path.as_os_str(), libc::O_PATH | libc::O_DIRECTORY)
}

/// The open flags of `access`. Never `O_DIRECT` or `O_NOATIME` here: the layout writes through
/// the page cache from an unaligned buffer; the run sets them later (`set_run_flags`).
/// `O_NONBLOCK` so that opening a FIFO does not wait for a writer (cleared once open).
fn flags(access: Access) -> libc::c_int {
    let access = match access {
        Access::Read => libc::O_RDONLY,
        Access::Write => libc::O_RDWR,
        Access::Create => libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
    };
    access | libc::O_NONBLOCK
}

/// The normal components of `relative`; anything else (root, `.`, `..`) is refused.
pub(super) fn components(relative: &Path) -> io::Result<Vec<&OsStr>> {
    relative
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a path beneath a directory takes plain names only (no '/', '.' or '..' at its start)",
            )),
        })
        .collect()
}

fn split(path: &Path) -> io::Result<(&Path, &OsStr)> {
    let name = path.file_name().ok_or_else(|| io::Error::from_raw_os_error(libc::EISDIR))?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Ok((parent, name))
}

/// Opens `names` beneath `dir` with `flags`: `openat2` where the kernel has it, else a walk.
pub(super) fn resolve_beneath(
    dir: BorrowedFd<'_>,
    names: &[&OsStr],
    flags: libc::c_int,
) -> io::Result<OwnedFd> {
    let joined: PathBuf = names.iter().collect();
    match openat2_beneath(dir, joined.as_os_str(), flags) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => walk_beneath(dir, names, flags),
        opened => opened,
    }
}

/// How often a lookup raced by renames is tried again before giving up (`EAGAIN`).
const MAX_RACED_LOOKUPS: usize = 64;

fn openat2_beneath(dir: BorrowedFd<'_>, relative: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c_path = CString::new(relative.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: an all-zero open_how is a valid value of this plain C struct.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC | libc::O_NOFOLLOW) as u64;
    how.mode = if flags & libc::O_CREAT != 0 { 0o666 } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    let mut attempts = 0;
    loop {
        // SAFETY: the directory descriptor is open, `c_path` is NUL-terminated, and `how`
        // outlives the call, whose size argument is its size.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                c_path.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            // SAFETY: the kernel just returned this descriptor, owned by nobody else.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) });
        }
        let error = io::Error::last_os_error();
        // EAGAIN: a rename elsewhere raced the lookup, so the kernel could not prove the
        // result is beneath; asking again is safe.
        attempts += 1;
        if error.raw_os_error() != Some(libc::EAGAIN) || attempts >= MAX_RACED_LOOKUPS {
            return Err(error);
        }
    }
}

/// One component at a time, each directory opened `O_PATH | O_NOFOLLOW | O_DIRECTORY` (a
/// symbolic link there fails to open), the last with `O_NOFOLLOW`.
fn walk_beneath(dir: BorrowedFd<'_>, names: &[&OsStr], flags: libc::c_int) -> io::Result<OwnedFd> {
    let mut at = dir.try_clone_to_owned()?;
    let Some((last, parents)) = names.split_last() else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    for name in parents {
        at = open_at(at.as_fd().as_raw_fd(), name, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)?;
    }
    open_at(at.as_raw_fd(), last, flags | libc::O_NOFOLLOW)
}

/// `openat(2)` of one name relative to `dir`, close-on-exec.
pub(super) fn open_at(dir: libc::c_int, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c_name = CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let mode: libc::c_uint = 0o666;
    // SAFETY: `c_name` is NUL-terminated and alive for the call; `dir` is AT_FDCWD or open.
    let fd = unsafe { libc::openat(dir, c_name.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sets what the run needs on an open target: `O_DIRECT` when asked (`EINVAL`: the target
/// cannot), and `O_NOATIME` where the kernel lets this process (the file's owner or
/// CAP_FOWNER): the run's reads are not uses of the data.
pub fn set_run_flags(file: &File, direct: bool) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL reads the flags of an open descriptor; no memory is passed.
    let current = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if current < 0 {
        return Err(io::Error::last_os_error());
    }
    let wanted = current | if direct { libc::O_DIRECT } else { 0 };
    let set = |flags: libc::c_int| {
        // SAFETY: F_SETFL takes plain flags; no memory is passed.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    match set(wanted | libc::O_NOATIME) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => set(wanted),
        done => done,
    }
}

#[cfg(test)]
#[path = "opened_tests.rs"]
mod tests;
