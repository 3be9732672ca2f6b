//! The directory phases' own walks: statdir stats and readdir lists every directory of the
//! thread's share, each directory's operation timed on its own.

use std::io;

use super::{OpError, Worker};
use crate::report::OpKind;
use crate::tree::Side;

impl Worker<'_> {
    /// Stats every directory of the thread's share (all levels), as mdtest -D does.
    pub(super) fn dirs_stated(&mut self) {
        self.each_dir(|w, parent| {
            let start = w.ctx.now_ns();
            w.sys.stat(parent, &w.name).map_err(|e| ("stat", e))?;
            let end = w.ctx.now_ns();
            w.record(OpKind::StatDir, start, end, 0);
            Ok(())
        });
    }

    /// Calls `op` with each directory of the thread's share (all levels, named in `name`) and
    /// the descriptor of the directory that holds it, until the phase stops or `op` fails.
    pub(super) fn each_dir(&mut self, mut op: impl FnMut(&mut Self, i32) -> Result<(), OpError>) {
        let (tree, first, stride) = self.share();
        for level in 0..=tree.depth {
            for x in (first..tree.dirs_at(level)).step_by(stride) {
                if self.ctx.stopping() {
                    return;
                }
                let done = self
                    .locate_dir(tree, Side::Source, level, x)
                    .map_err(|e| ("open directory", e))
                    .and_then(|parent| op(self, parent));
                if let Err((what, e)) = done {
                    let path = std::mem::take(&mut self.path);
                    self.fail(what, &path, &e);
                    return;
                }
            }
        }
    }

    /// Lists every directory of the thread's share (all levels), each open, getdents64 to the
    /// end and close timed as one operation.
    pub(super) fn dirs_listed(&mut self) {
        self.each_dir(|w, parent| {
            let start = w.ctx.now_ns();
            let mut buf = std::mem::take(&mut w.dir_buf);
            let listed = w.list(parent, &mut buf);
            w.dir_buf = buf;
            let end = w.ctx.now_ns();
            w.out.entries += listed?;
            w.record(OpKind::Readdir, start, end, 0);
            Ok(())
        });
    }

    pub(super) fn list(&mut self, parent: i32, buf: &mut [u8]) -> Result<u64, (&'static str, io::Error)> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let fd = self.sys.openat(parent, &self.name, flags, 0).map_err(|e| ("open", e))?;
        let listed = self.sys.read_dir(fd, buf);
        let closed = self.sys.close(fd);
        let entries = listed.map_err(|e| ("getdents64", e))?;
        closed.map_err(|e| ("close", e))?;
        Ok(entries)
    }
}
