//! The per-file operations of a phase (create, stat, read, rename, copy, unlink, link, setattr,
//! xattr), each located beneath the tree's own directory descriptors and timed on its own.

use std::io;

use iolab_engine::fileops::FileOps;

use super::{OpError, Worker, XATTR};
use crate::report::OpKind;
use crate::sizes::file_hash;
use crate::tree::{Side, Tree};

impl Worker<'_> {
    pub(super) fn size_of(&self, tree: &Tree, i: u64) -> u64 {
        let align = if self.ctx.plan.direct { 4096 } else { 1 };
        self.ctx.plan.sizes.size(file_hash(self.ctx.plan.seed, tree.index, i), align)
    }

    pub(super) fn data_flags(&self) -> i32 {
        if self.ctx.plan.direct {
            libc::O_DIRECT
        } else {
            0
        }
    }

    /// Closes `fd` after a failure, untimed, keeping the failure's error.
    pub(super) fn close_quietly(&mut self, fd: i32) {
        let _ = self.sys.close(fd);
    }

    /// Writes `size` bytes of the data buffer to `fd`, each write timed.
    pub(super) fn write_all(&mut self, fd: i32, size: u64) -> Result<(), OpError> {
        let mut offset = 0;
        while offset < size {
            let len = (size - offset).min(self.data.as_ref().len() as u64) as usize;
            let start = self.ctx.now_ns();
            let n = self.sys.write(fd, &self.data.as_ref()[..len], offset);
            let end = self.ctx.now_ns();
            match n {
                Ok(0) => return Err(("write", io::Error::from_raw_os_error(libc::ENOSPC))),
                Ok(n) => {
                    self.record(OpKind::Write, start, end, n as u64);
                    offset += n as u64;
                }
                Err(e) => return Err(("write", e)),
            }
        }
        Ok(())
    }

    pub(super) fn create(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), OpError> {
        let size = self.size_of(tree, i);
        self.create_sized(tree, side, i, size)
    }

    /// Makes file `i` with `size` bytes (fsync with --fsync).
    pub(super) fn create_sized(&mut self, tree: &Tree, side: Side, i: u64, size: u64) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        let flags = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_WRONLY | self.data_flags();
        let start = self.ctx.now_ns();
        let fd = self.sys.openat(leaf, &self.name, flags, 0o644).map_err(|e| ("open", e))?;
        self.work_and_close(fd, start, OpKind::Create, |w| {
            w.write_all(fd, size).and_then(|()| w.sync(fd)).map(|()| size)
        })
    }

    /// The rest of a file operation that opened `fd` at `start`: the open is recorded, `work`
    /// runs, the close is timed apart, and the whole is recorded as `kind` of the bytes `work`
    /// says it moved. A failed `work` closes the file quietly and is the error.
    pub(super) fn work_and_close(
        &mut self,
        fd: i32,
        start: u64,
        kind: OpKind,
        work: impl FnOnce(&mut Self) -> Result<u64, (&'static str, io::Error)>,
    ) -> Result<(), OpError> {
        let opened = self.ctx.now_ns();
        self.record(OpKind::Open, start, opened, 0);
        let size = match work(self) {
            Ok(size) => size,
            Err(e) => {
                self.close_quietly(fd);
                return Err(e);
            }
        };
        let before_close = self.ctx.now_ns();
        self.sys.close(fd).map_err(|e| ("close", e))?;
        let end = self.ctx.now_ns();
        self.record(OpKind::Close, before_close, end, 0);
        self.record(kind, start, end, size);
        Ok(())
    }

    pub(super) fn sync(&mut self, fd: i32) -> Result<(), OpError> {
        if !self.ctx.plan.fsync {
            return Ok(());
        }
        let start = self.ctx.now_ns();
        self.sys.fsync(fd).map_err(|e| ("fsync", e))?;
        let end = self.ctx.now_ns();
        self.record(OpKind::Fsync, start, end, 0);
        Ok(())
    }

    pub(super) fn stat(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        let start = self.ctx.now_ns();
        let size = self.sys.stat(leaf, &self.name).map_err(|e| ("stat", e))?;
        let end = self.ctx.now_ns();
        let expected = self.size_of(tree, i);
        if size != expected {
            let message = format!("the file holds {size} bytes, not the {expected} it was made with");
            return Err(("stat", io::Error::other(message)));
        }
        self.record(OpKind::Stat, start, end, 0);
        Ok(())
    }

    /// Reads `size` bytes of `fd` into the data buffer, each read timed; when `copy_to` is
    /// given, writes each piece there too.
    pub(super) fn read_all(&mut self, fd: i32, size: u64, copy_to: Option<i32>) -> Result<(), OpError> {
        let mut offset = 0;
        while offset < size {
            let len = (size - offset).min(self.data.as_ref().len() as u64) as usize;
            let start = self.ctx.now_ns();
            let n = self.sys.read(fd, &mut self.data.as_mut()[..len], offset);
            let end = self.ctx.now_ns();
            let n = match n {
                Ok(0) => {
                    return Err((
                        "read",
                        io::Error::other(format!("the file ends at {offset} of {size} bytes")),
                    ))
                }
                Ok(n) => n,
                Err(e) => return Err(("read", e)),
            };
            self.record(OpKind::Read, start, end, n as u64);
            if let Some(out) = copy_to {
                let mut written = 0;
                while written < n {
                    let start = self.ctx.now_ns();
                    let w = self.sys.write(out, &self.data.as_ref()[written..n], offset + written as u64);
                    let end = self.ctx.now_ns();
                    match w {
                        Ok(0) => return Err(("write", io::Error::from_raw_os_error(libc::ENOSPC))),
                        Ok(w) => {
                            self.record(OpKind::Write, start, end, w as u64);
                            written += w;
                        }
                        Err(e) => return Err(("write", e)),
                    }
                }
            }
            offset += n as u64;
        }
        Ok(())
    }

    pub(super) fn read(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        let size = self.size_of(tree, i);
        let start = self.ctx.now_ns();
        let fd = self
            .sys
            .openat(leaf, &self.name, libc::O_RDONLY | libc::O_NOFOLLOW | self.data_flags(), 0)
            .map_err(|e| ("open", e))?;
        self.work_and_close(fd, start, OpKind::ReadFile, |w| w.read_all(fd, size, None).map(|()| size))
    }

    pub(super) fn rename(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        tree.file_name(i, !self.renamed, &mut self.name2);
        let start = self.ctx.now_ns();
        self.sys.renameat(leaf, &self.name, &self.name2).map_err(|e| ("rename", e))?;
        let end = self.ctx.now_ns();
        self.record(OpKind::Rename, start, end, 0);
        Ok(())
    }

    pub(super) fn copy(&mut self, tree: &Tree, _side: Side, i: u64) -> Result<(), OpError> {
        let renamed = self.renamed;
        let copy_leaf = self.locate_file(tree, Side::Copy, i, renamed)?;
        std::mem::swap(&mut self.name, &mut self.name2);
        std::mem::swap(&mut self.path, &mut self.path2);
        let leaf = self.locate_file(tree, Side::Source, i, renamed)?;
        let size = self.size_of(tree, i);
        let flags = self.data_flags() | libc::O_NOFOLLOW;
        let start = self.ctx.now_ns();
        let src = self.sys.openat(leaf, &self.name, libc::O_RDONLY | flags, 0).map_err(|e| ("open", e))?;
        let opened = self.ctx.now_ns();
        self.record(OpKind::Open, start, opened, 0);
        let create = libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | flags;
        let dst = match self.sys.openat(copy_leaf, &self.name2, create, 0o644) {
            Ok(fd) => fd,
            Err(e) => {
                self.close_quietly(src);
                std::mem::swap(&mut self.path, &mut self.path2);
                return Err(("open", e));
            }
        };
        let opened2 = self.ctx.now_ns();
        self.record(OpKind::Open, opened, opened2, 0);
        if let Err(e) = self.read_all(src, size, Some(dst)).and_then(|()| self.sync(dst)) {
            self.close_quietly(src);
            self.close_quietly(dst);
            std::mem::swap(&mut self.path, &mut self.path2);
            return Err(e);
        }
        for fd in [src, dst] {
            let before = self.ctx.now_ns();
            self.sys.close(fd).map_err(|e| ("close", e))?;
            let after = self.ctx.now_ns();
            self.record(OpKind::Close, before, after, 0);
        }
        let end = self.ctx.now_ns();
        self.record(OpKind::Copy, start, end, size);
        Ok(())
    }

    pub(super) fn unlink(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        self.timed_on_name(OpKind::Unlink, "unlink", |sys, name| sys.unlinkat(leaf, name, false))
    }

    /// A hard link `h<N>` to the file, beside it, or (`symbolic`) a symbolic link `l<N>` holding
    /// its name.
    pub(super) fn link(&mut self, tree: &Tree, side: Side, i: u64, symbolic: bool) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        tree.link_name(i, symbolic, &mut self.name2);
        let start = self.ctx.now_ns();
        let made = if symbolic {
            self.sys.symlinkat(&self.name, leaf, &self.name2).map_err(|e| ("symlink", e))
        } else {
            self.sys.linkat(leaf, &self.name, &self.name2).map_err(|e| ("link", e))
        };
        made?;
        let end = self.ctx.now_ns();
        self.record(if symbolic { OpKind::Symlink } else { OpKind::Link }, start, end, 0);
        Ok(())
    }

    /// Removes the file's hard link (`symbolic`: its symbolic link), counted as an unlink.
    pub(super) fn unlink_link(
        &mut self,
        tree: &Tree,
        side: Side,
        i: u64,
        symbolic: bool,
    ) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        tree.link_name(i, symbolic, &mut self.name);
        // The path said in a failure: the link's, beside the file.
        let cut = self.path.iter().rposition(|&b| b == b'/').map_or(0, |p| p + 1);
        self.path.truncate(cut);
        self.path.extend_from_slice(&self.name);
        self.timed_on_name(OpKind::Unlink, "unlink", |sys, name| sys.unlinkat(leaf, name, false))
    }

    pub(super) fn setattr(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        self.timed_on_name(OpKind::Setattr, "utimensat", |sys, name| sys.setattr(leaf, name))
    }

    /// One system call on the name in `self.name`, timed and recorded as `kind` (no bytes); a
    /// failure is said as `what`.
    fn timed_on_name(
        &mut self,
        kind: OpKind,
        what: &'static str,
        call: impl FnOnce(&mut FileOps, &[u8]) -> io::Result<()>,
    ) -> Result<(), OpError> {
        let start = self.ctx.now_ns();
        call(&mut self.sys, &self.name).map_err(|e| (what, e))?;
        let end = self.ctx.now_ns();
        self.record(kind, start, end, 0);
        Ok(())
    }

    /// Opens the file (not following a link), sets `user.iolab` to a value of its own, reads it
    /// back and checks it, closes it: each timed, and the whole as one xattr operation.
    pub(super) fn xattr(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        let value = format!("iolab {} {i}", tree.index);
        let start = self.ctx.now_ns();
        let fd = self
            .sys
            .openat(leaf, &self.name, libc::O_RDONLY | libc::O_NOFOLLOW, 0)
            .map_err(|e| ("open", e))?;
        self.work_and_close(fd, start, OpKind::Xattr, |w| {
            let before = w.ctx.now_ns();
            w.sys.set_xattr(fd, XATTR, value.as_bytes()).map_err(|e| ("setxattr", e))?;
            let set = w.ctx.now_ns();
            w.record(OpKind::SetXattr, before, set, 0);
            let mut back = [0u8; 64];
            let n = w.sys.get_xattr(fd, XATTR, &mut back).map_err(|e| ("getxattr", e))?;
            let got = w.ctx.now_ns();
            w.record(OpKind::GetXattr, set, got, 0);
            if back.get(..n) != Some(value.as_bytes()) {
                let message = format!(
                    "user.iolab read back {:?}, not the {value:?} set",
                    String::from_utf8_lossy(&back[..n])
                );
                return Err(("getxattr", io::Error::other(message)));
            }
            Ok(0)
        })
    }
}
