//! One thread's part of a phase: its tree (or its share of the shared tree's items), every
//! operation timed on its own, recorded in the same mergeable recorder the block lanes use.
//!
//! The clock is read right before and right after each operation (the path is made outside
//! the timed span); a whole-file operation (create, read, copy) is timed from its first
//! operation's start to its last one's end. In the shared tree, directory levels are a
//! barrier apart so no thread makes a directory before its parent exists.

mod in_flight;
mod mixing;
mod outcome;

use outcome::CpuAtStart;
pub use outcome::Outcome;

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use iolab_engine::fileops::{AlignedBuf, FileOps, PathOp};

use crate::gate::Gate;
use crate::order::Walk;
use crate::parents::Parents;
use crate::plan::{FilesPlan, Phase, TreeState};
use crate::population::Population;
use crate::progress::{PhaseProgress, PUBLISH_EVERY};
use crate::report::{Failure, OpKind, RanOutOf};
use crate::sizes::file_hash;
use crate::tree::{Side, Tree};
use iolab_runner::Sampler;

/// The data buffer's size at most: larger files are written and read in pieces this big.
pub const MAX_CHUNK: u64 = 1 << 20;
const DIR_BUF: usize = 32 << 10;
/// The extended attribute the xattr phase sets and reads back.
const XATTR: &[u8] = b"user.iolab\0";

/// What every thread of a phase shares.
pub struct Ctx<'a> {
    pub plan: &'a FilesPlan,
    pub trees: &'a [Tree],
    /// The run's directory, which every path is relative to.
    pub dirfd: i32,
    pub clock: quanta::Clock,
    pub base: u64,
    /// Set by a thread whose operation failed: the others stop too.
    pub failed: AtomicBool,
    pub interrupt: &'a AtomicBool,
    /// When the first thread finished (ns after `base`; 0: none yet).
    pub first_done_ns: AtomicU64,
    /// Between a shared tree's directory levels; broken by a thread that will not come.
    pub barrier: Gate,
    /// What the tree holds as the phase begins: renamed files, a copy, links.
    pub state: TreeState,
    pub phase_start_ns: u64,
    /// Where each thread publishes how far it is, for a live display.
    pub progress: Option<&'a PhaseProgress>,
    /// A mix's files and how it draws them (the mix phase only).
    pub mixing: Option<(&'a Population, &'a Sampler)>,
}

impl Ctx<'_> {
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.clock.delta_as_nanos(self.base, self.clock.raw())
    }

    #[inline]
    fn stopping(&self) -> bool {
        self.failed.load(Relaxed) || self.interrupt.load(Relaxed)
    }
}

/// A failed operation: its name ("open", "write", ...) and the error.
type OpError = (&'static str, io::Error);
/// What a phase does to one file.
type FileOp<'a> = fn(&mut Worker<'a>, &Tree, Side, u64) -> Result<(), OpError>;

pub struct Worker<'a> {
    ctx: &'a Ctx<'a>,
    sys: FileOps,
    thread: u32,
    main: OpKind,
    out: Outcome,
    /// The files it works are named r<N> (a rename phase ran, or the mix's file is renamed).
    renamed: bool,
    /// A mix's log file, held open once the thread first writes to it.
    log_fd: Option<i32>,
    /// When the operation under way opened its file (a mix's whole operation starts there).
    opened_at: u64,
    /// The directories operations name their entries in, opened beneath the run's directory.
    parents: Parents,
    /// The entry an operation names (in its directory) and the whole path, for messages.
    name: Vec<u8>,
    path: Vec<u8>,
    name2: Vec<u8>,
    path2: Vec<u8>,
    data: AlignedBuf,
    dir_buf: Vec<u8>,
}

impl<'a> Worker<'a> {
    pub fn new(ctx: &'a Ctx<'a>, sys: FileOps, thread: u32, phase: Phase) -> Worker<'a> {
        let mix = ctx.plan.mix.as_ref().filter(|_| phase == Phase::Mix);
        let largest = mix.map_or(0, |m| m.append_size.max(m.range_size)).max(ctx.plan.sizes.max());
        let chunk = largest.clamp(4096, MAX_CHUNK) as usize;
        let lists = phase == Phase::Readdir || mix.is_some_and(|m| m.weight(crate::mix::MixOp::Readdir) > 0);
        Worker {
            ctx,
            sys,
            thread,
            main: OpKind::of_phase(phase),
            out: Outcome::empty(),
            renamed: ctx.state.renamed,
            log_fd: None,
            opened_at: 0,
            parents: Parents::new(ctx.dirfd, ctx.plan.threads),
            name: Vec::with_capacity(32),
            path: Vec::with_capacity(256),
            name2: Vec::with_capacity(32),
            path2: Vec::with_capacity(256),
            data: AlignedBuf::new(chunk, ctx.plan.seed ^ u64::from(thread)),
            dir_buf: if lists { vec![0; DIR_BUF] } else { Vec::new() },
        }
    }

    /// Runs the thread's part of `phase` and gives its figures.
    pub fn run(mut self, phase: Phase) -> (Outcome, FileOps) {
        let cpu = CpuAtStart::now();
        self.phase(phase);
        self.publish();
        let end = self.ctx.now_ns().max(1);
        self.out.finished_ns = end;
        let _ = self.ctx.first_done_ns.compare_exchange(0, end, Relaxed, Relaxed);
        if self.out.stonewall.is_none() {
            self.out.stonewall = Some([self.out.done, self.out.bytes]);
        }
        cpu.since(&mut self.out);
        (self.out, self.sys)
    }

    fn phase(&mut self, phase: Phase) {
        let sides: &[Side] =
            if self.ctx.state.copied { &[Side::Source, Side::Copy] } else { &[Side::Source] };
        match phase {
            Phase::Mkdir => self.dirs(Side::Source, false),
            Phase::Create => match self.empty_files_create() {
                Some(create) => self.in_flight(Side::Source, create),
                None => self.files(Side::Source, Self::create),
            },
            Phase::Stat if self.sys.queue_depth(PathOp::Stat) > 1 => {
                self.in_flight(Side::Source, PathOp::Stat)
            }
            Phase::Stat => self.files(Side::Source, Self::stat),
            Phase::Readdir => self.dirs_listed(),
            Phase::StatDir => self.dirs_stated(),
            Phase::Setattr => self.files(Side::Source, Self::setattr),
            Phase::Xattr => self.files(Side::Source, Self::xattr),
            Phase::Link => self.files(Side::Source, |w, tree, side, i| w.link(tree, side, i, false)),
            Phase::Symlink => self.files(Side::Source, |w, tree, side, i| w.link(tree, side, i, true)),
            Phase::Read => self.files(Side::Source, Self::read),
            Phase::Rename => self.files(Side::Source, Self::rename),
            Phase::Copy => {
                self.dirs(Side::Copy, false);
                self.files(Side::Source, Self::copy);
            }
            Phase::Unlink => {
                for &side in sides {
                    if self.sys.queue_depth(PathOp::Unlink) > 1 {
                        self.in_flight(side, PathOp::Unlink);
                    } else {
                        self.files(side, Self::unlink);
                    }
                }
                if self.ctx.state.linked {
                    self.files(Side::Source, |w, tree, side, i| w.unlink_link(tree, side, i, false));
                }
                if self.ctx.state.symlinked {
                    self.files(Side::Source, |w, tree, side, i| w.unlink_link(tree, side, i, true));
                }
            }
            Phase::Rmdir => {
                for &side in sides {
                    self.dirs(side, true);
                }
            }
            Phase::Mix => self.mix(),
        }
    }

    /// The tree this thread works and its share of the items: all of its own tree, or every
    /// `threads`-th item of the shared one.
    fn share(&self) -> (&'a Tree, u64, usize) {
        let ctx = self.ctx;
        if ctx.plan.shared_dir {
            (&ctx.trees[0], u64::from(self.thread), ctx.plan.threads as usize)
        } else {
            (&ctx.trees[self.thread as usize], 0, 1)
        }
    }

    fn record(&mut self, kind: OpKind, start: u64, end: u64, bytes: u64) {
        if start < self.ctx.phase_start_ns {
            // A mix's warm-up: done, not counted.
            return;
        }
        self.out.kinds[kind as usize].record(end.saturating_sub(start), bytes);
        let of_mix = self.main == OpKind::Mix && kind.is_mix_op();
        if of_mix {
            self.out.kinds[OpKind::Mix as usize].record(end.saturating_sub(start), bytes);
        }
        if kind == self.main || of_mix {
            self.out.done += 1;
            if self.out.done % PUBLISH_EVERY == 0 {
                self.publish();
            }
            self.out.bytes += bytes;
            let second = (end.saturating_sub(self.ctx.phase_start_ns) / 1_000_000_000) as usize;
            if self.out.series.len() <= second {
                self.out.series.resize(second + 1, [0, 0]);
            }
            self.out.series[second][0] += 1;
            self.out.series[second][1] += bytes;
            if self.out.stonewall.is_none() && self.ctx.first_done_ns.load(Relaxed) != 0 {
                self.out.stonewall = Some([self.out.done, self.out.bytes]);
            }
        }
    }

    fn publish(&self) {
        if let Some(progress) = self.ctx.progress {
            progress.publish(self.thread, self.out.done);
        }
    }

    fn fail(&mut self, op: &str, path: &[u8], error: &io::Error) {
        if self.out.failure.is_none() {
            let path = String::from_utf8_lossy(path.strip_suffix(b"\0").unwrap_or(path)).into_owned();
            let errno = error.raw_os_error();
            let ran_out_of = (errno == Some(libc::ENOSPC)).then(|| RanOutOf::at(self.ctx.dirfd)).flatten();
            self.out.failure =
                Some(Failure { op: op.to_string(), path, error: error.to_string(), errno, ran_out_of });
        }
        self.ctx.failed.store(true, Relaxed);
    }

    /// Makes (or, `remove`, removes deepest first) the directories of the thread's share.
    fn dirs(&mut self, side: Side, remove: bool) {
        let (tree, first, stride) = self.share();
        let shared = self.ctx.plan.shared_dir;
        let levels: Vec<u32> =
            if remove { (0..=tree.depth).rev().collect() } else { (0..=tree.depth).collect() };
        for level in levels {
            for x in (first..tree.dirs_at(level)).step_by(stride) {
                if self.ctx.stopping() {
                    break;
                }
                let what = if remove { "rmdir" } else { "mkdir" };
                let done = self.locate_dir(tree, side, level, x).map_err(|e| ("open directory", e)).and_then(
                    |parent| {
                        let start = self.ctx.now_ns();
                        let done = if remove {
                            self.sys.unlinkat(parent, &self.name, true)
                        } else {
                            self.sys.mkdirat(parent, &self.name)
                        };
                        let end = self.ctx.now_ns();
                        done.map(|()| (start, end)).map_err(|e| (what, e))
                    },
                );
                match done {
                    Ok((start, end)) => {
                        self.record(if remove { OpKind::Rmdir } else { OpKind::Mkdir }, start, end, 0);
                    }
                    Err((what, e)) => {
                        let path = std::mem::take(&mut self.path);
                        self.fail(what, &path, &e);
                        self.path = path;
                    }
                }
            }
            if shared && !self.ctx.barrier.wait() {
                // A thread will not come (its start failed or it panicked): the run is ending.
                self.ctx.failed.store(true, Relaxed);
                return;
            }
        }
    }

    /// Names directory `index` of `level` (its name in `name`, its whole path in `path`) and
    /// gives the descriptor of the directory that holds it.
    fn locate_dir(&mut self, tree: &Tree, side: Side, level: u32, index: u64) -> io::Result<i32> {
        tree.dir_name(side, level, index, &mut self.name);
        tree.dir_path(side, level, index, &mut self.path);
        self.parents.of_dir(tree, side, level, index)
    }

    /// Names file `index` (its name in `name`, its whole path in `path`) and gives its leaf
    /// directory's descriptor.
    fn locate_file(&mut self, tree: &Tree, side: Side, index: u64, renamed: bool) -> Result<i32, OpError> {
        tree.file_name(index, renamed, &mut self.name);
        tree.file_path(side, index, renamed, &mut self.path);
        self.parents.of_file(tree, side, index).map_err(|e| {
            tree.dir_path(side, tree.depth, tree.leaf_of(index), &mut self.path);
            ("open directory", e)
        })
    }

    /// The order this phase works `tree`'s files in (`--order`): one walk per phase and tree,
    /// the same for every thread sharing the tree, so that their shares stay apart.
    fn walk(&self, tree: &Tree) -> Walk {
        let salt = ((self.main as u64) << 32) | u64::from(tree.index);
        Walk::new(self.ctx.plan.order, tree.files, self.ctx.plan.seed, salt)
    }

    /// Calls `op` on each file of the thread's share until the phase stops.
    fn files(&mut self, side: Side, op: FileOp<'a>) {
        let (tree, first, stride) = self.share();
        let walk = self.walk(tree);
        for position in (first..tree.files).step_by(stride) {
            if self.ctx.stopping() {
                break;
            }
            let file = walk.at(position);
            if !self.ctx.plan.made(tree.index, file) {
                continue;
            }
            if let Err((what, e)) = op(self, tree, side, file) {
                let path = std::mem::take(&mut self.path);
                self.fail(what, &path, &e);
                self.path = path;
                break;
            }
        }
    }

    /// The create phase's queued operation where it can keep several in flight: empty files
    /// without `--fsync` (an open and a close each) on a ring that runs both. Files with data
    /// are made one at a time, as their writes follow the open.
    fn empty_files_create(&self) -> Option<PathOp> {
        let create = PathOp::Create { flags: self.data_flags() };
        let empty = self.ctx.plan.sizes.max() == 0 && !self.ctx.plan.fsync;
        (empty && self.sys.queue_depth(create) > 1).then_some(create)
    }

    fn size_of(&self, tree: &Tree, i: u64) -> u64 {
        let align = if self.ctx.plan.direct { 4096 } else { 1 };
        self.ctx.plan.sizes.size(file_hash(self.ctx.plan.seed, tree.index, i), align)
    }

    fn data_flags(&self) -> i32 {
        if self.ctx.plan.direct {
            libc::O_DIRECT
        } else {
            0
        }
    }

    /// Closes `fd` after a failure, untimed, keeping the failure's error.
    fn close_quietly(&mut self, fd: i32) {
        let _ = self.sys.close(fd);
    }

    /// Writes `size` bytes of the data buffer to `fd`, each write timed.
    fn write_all(&mut self, fd: i32, size: u64) -> Result<(), (&'static str, io::Error)> {
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

    fn create(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), (&'static str, io::Error)> {
        let size = self.size_of(tree, i);
        self.create_sized(tree, side, i, size)
    }

    /// Makes file `i` with `size` bytes (fsync with --fsync).
    fn create_sized(&mut self, tree: &Tree, side: Side, i: u64, size: u64) -> Result<(), OpError> {
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
    fn work_and_close(
        &mut self,
        fd: i32,
        start: u64,
        kind: OpKind,
        work: impl FnOnce(&mut Self) -> Result<u64, (&'static str, io::Error)>,
    ) -> Result<(), (&'static str, io::Error)> {
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

    fn sync(&mut self, fd: i32) -> Result<(), (&'static str, io::Error)> {
        if !self.ctx.plan.fsync {
            return Ok(());
        }
        let start = self.ctx.now_ns();
        self.sys.fsync(fd).map_err(|e| ("fsync", e))?;
        let end = self.ctx.now_ns();
        self.record(OpKind::Fsync, start, end, 0);
        Ok(())
    }

    fn stat(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), (&'static str, io::Error)> {
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
    fn read_all(
        &mut self,
        fd: i32,
        size: u64,
        copy_to: Option<i32>,
    ) -> Result<(), (&'static str, io::Error)> {
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

    fn read(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), (&'static str, io::Error)> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        let size = self.size_of(tree, i);
        let start = self.ctx.now_ns();
        let fd = self
            .sys
            .openat(leaf, &self.name, libc::O_RDONLY | libc::O_NOFOLLOW | self.data_flags(), 0)
            .map_err(|e| ("open", e))?;
        self.work_and_close(fd, start, OpKind::ReadFile, |w| w.read_all(fd, size, None).map(|()| size))
    }

    fn rename(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), (&'static str, io::Error)> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        tree.file_name(i, !self.renamed, &mut self.name2);
        let start = self.ctx.now_ns();
        self.sys.renameat(leaf, &self.name, &self.name2).map_err(|e| ("rename", e))?;
        let end = self.ctx.now_ns();
        self.record(OpKind::Rename, start, end, 0);
        Ok(())
    }

    fn copy(&mut self, tree: &Tree, _side: Side, i: u64) -> Result<(), (&'static str, io::Error)> {
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

    fn unlink(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), (&'static str, io::Error)> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        let start = self.ctx.now_ns();
        self.sys.unlinkat(leaf, &self.name, false).map_err(|e| ("unlink", e))?;
        let end = self.ctx.now_ns();
        self.record(OpKind::Unlink, start, end, 0);
        Ok(())
    }

    /// A hard link `h<N>` to the file, beside it, or (`symbolic`) a symbolic link `l<N>` holding
    /// its name.
    fn link(&mut self, tree: &Tree, side: Side, i: u64, symbolic: bool) -> Result<(), OpError> {
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
    fn unlink_link(&mut self, tree: &Tree, side: Side, i: u64, symbolic: bool) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        tree.link_name(i, symbolic, &mut self.name);
        // The path said in a failure: the link's, beside the file.
        let cut = self.path.iter().rposition(|&b| b == b'/').map_or(0, |p| p + 1);
        self.path.truncate(cut);
        self.path.extend_from_slice(&self.name);
        let start = self.ctx.now_ns();
        self.sys.unlinkat(leaf, &self.name, false).map_err(|e| ("unlink", e))?;
        let end = self.ctx.now_ns();
        self.record(OpKind::Unlink, start, end, 0);
        Ok(())
    }

    fn setattr(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), (&'static str, io::Error)> {
        let leaf = self.locate_file(tree, side, i, self.renamed)?;
        let start = self.ctx.now_ns();
        self.sys.setattr(leaf, &self.name).map_err(|e| ("utimensat", e))?;
        let end = self.ctx.now_ns();
        self.record(OpKind::Setattr, start, end, 0);
        Ok(())
    }

    /// Opens the file (not following a link), sets `user.iolab` to a value of its own, reads it
    /// back and checks it, closes it: each timed, and the whole as one xattr operation.
    fn xattr(&mut self, tree: &Tree, side: Side, i: u64) -> Result<(), (&'static str, io::Error)> {
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

    /// Stats every directory of the thread's share (all levels), as mdtest -D does.
    fn dirs_stated(&mut self) {
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
    fn each_dir(&mut self, mut op: impl FnMut(&mut Self, i32) -> Result<(), OpError>) {
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
    fn dirs_listed(&mut self) {
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

    fn list(&mut self, parent: i32, buf: &mut [u8]) -> Result<u64, (&'static str, io::Error)> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let fd = self.sys.openat(parent, &self.name, flags, 0).map_err(|e| ("open", e))?;
        let listed = self.sys.read_dir(fd, buf);
        let closed = self.sys.close(fd);
        let entries = listed.map_err(|e| ("getdents64", e))?;
        closed.map_err(|e| ("close", e))?;
        Ok(entries)
    }
}
