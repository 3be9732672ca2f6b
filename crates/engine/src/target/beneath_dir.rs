//! A directory made and opened beneath another (an agent's `--allow-write`) without following
//! any symbolic link, for work that happens inside it relative to its descriptor (the fileset
//! of `iolab fleet files`): once open, renaming or replacing its name changes nothing.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::opened::{components, open_at, resolve_beneath};

/// An opened directory beneath an allowed one, and where it lives (to remove it if made here).
#[derive(Debug)]
pub struct BeneathDir {
    /// The directory itself, opened for reading (`O_DIRECTORY | O_NOFOLLOW`).
    pub dir: OwnedFd,
    /// Its parent (`O_PATH`) and its name there; none when it is the allowed directory itself.
    parent: Option<(OwnedFd, OsString)>,
    /// This open made it.
    pub created: bool,
}

impl BeneathDir {
    /// Opens `relative` beneath `allowed`, first making it (mode 0755) when it is missing. No
    /// component may be a symbolic link, `..` or absolute (ELOOP, EXDEV or EINVAL); an empty
    /// `relative` opens `allowed` itself.
    pub fn open(allowed: BorrowedFd<'_>, relative: &Path) -> io::Result<BeneathDir> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let names = components(relative)?;
        let Some((last, parents)) = names.split_last() else {
            let dir = resolve_beneath(allowed, &[OsStr::new(".")], flags)?;
            return Ok(BeneathDir { dir, parent: None, created: false });
        };
        let parent = if parents.is_empty() {
            resolve_beneath(allowed, &[OsStr::new(".")], libc::O_PATH | libc::O_DIRECTORY)?
        } else {
            resolve_beneath(allowed, parents, libc::O_PATH | libc::O_DIRECTORY)?
        };
        let created = match mkdir_at(parent.as_fd(), last) {
            Ok(()) => true,
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => false,
            Err(e) => return Err(e),
        };
        let dir = match open_at(parent.as_raw_fd(), last, flags) {
            Ok(dir) => dir,
            Err(e) => {
                if created {
                    let _ = rmdir_at(parent.as_fd(), last);
                }
                return Err(e);
            }
        };
        Ok(BeneathDir { dir, parent: Some((parent, (*last).to_os_string())), created })
    }

    /// Removes the directory by its name in its parent, if this open made it (it must be
    /// empty by then; a non-empty one stays, ENOTEMPTY).
    pub fn remove_created(&self) -> io::Result<()> {
        match (&self.parent, self.created) {
            (Some((parent, name)), true) => rmdir_at(parent.as_fd(), name),
            _ => Ok(()),
        }
    }
}

fn mkdir_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let c_name = CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `c_name` is NUL-terminated and alive for the call; `dir` is an open descriptor.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), c_name.as_ptr(), 0o755) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn rmdir_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let c_name = CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `c_name` is NUL-terminated and alive for the call; `dir` is an open descriptor.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), c_name.as_ptr(), libc::AT_REMOVEDIR) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::open_directory;

    #[test]
    fn makes_opens_and_removes_a_directory_beneath() {
        let temp = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(temp.path().join("a")).expect("mkdir");
        let allowed = open_directory(temp.path()).expect("open");
        let made = BeneathDir::open(allowed.as_fd(), Path::new("a/run")).expect("made");
        assert!(made.created && temp.path().join("a/run").is_dir());
        let again = BeneathDir::open(allowed.as_fd(), Path::new("a/run")).expect("opened");
        assert!(!again.created);
        made.remove_created().expect("removed");
        assert!(!temp.path().join("a/run").exists());
    }

    #[test]
    fn refuses_a_link_and_leaves_nothing() {
        let temp = tempfile::tempdir().expect("temp dir");
        let outside = tempfile::tempdir().expect("outside");
        std::os::unix::fs::symlink(outside.path(), temp.path().join("link")).expect("symlink");
        let allowed = open_directory(temp.path()).expect("open");
        let err = BeneathDir::open(allowed.as_fd(), Path::new("link/run")).expect_err("a link");
        assert!(matches!(err.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)), "{err}");
        let err = BeneathDir::open(allowed.as_fd(), Path::new("link")).expect_err("a link");
        assert!(matches!(err.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)), "{err}");
        assert_eq!(std::fs::read_dir(outside.path()).expect("list").count(), 0, "nothing made outside");
        assert!(BeneathDir::open(allowed.as_fd(), Path::new("../x")).is_err());
    }
}
