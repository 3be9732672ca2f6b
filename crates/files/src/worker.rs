//! One thread's part of a phase: its tree (or its share of the shared tree's items), every
//! operation timed on its own, recorded in the same mergeable recorder the block lanes use.
//!
//! The clock is read right before and right after each operation (the path is made outside
//! the timed span); a whole-file operation (create, read, copy) is timed from its first
//! operation's start to its last one's end. In the shared tree, directory levels are a
//! barrier apart so no thread makes a directory before its parent exists.

mod dir_ops;
mod file_ops;
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
use crate::tree::{Side, Tree};
use iolab_runner::Sampler;

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
    pub(crate) fn stopping(&self) -> bool {
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
    /// The thread's CPU readings where its measured time began: the phase's start, or the end
    /// of a mix's warm-up.
    cpu_from: Option<CpuAtStart>,
}

impl<'a> Worker<'a> {
    pub fn new(ctx: &'a Ctx<'a>, sys: FileOps, thread: u32, phase: Phase) -> Worker<'a> {
        let mix = ctx.plan.mix.as_ref().filter(|_| phase == Phase::Mix);
        let largest = mix.map_or(0, |m| m.append_size.max(m.range_size)).max(ctx.plan.sizes.max());
        let chunk = largest.clamp(4096, crate::plan::MAX_CHUNK) as usize;
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
            cpu_from: None,
        }
    }

    /// Runs the thread's part of `phase` and gives its figures.
    pub fn run(mut self, phase: Phase) -> (Outcome, FileOps) {
        self.cpu_from = Some(CpuAtStart::now());
        self.phase(phase);
        self.publish();
        let end = self.ctx.now_ns().max(1);
        self.out.finished_ns = end;
        let _ = self.ctx.first_done_ns.compare_exchange(0, end, Relaxed, Relaxed);
        if self.out.stonewall.is_none() {
            self.out.stonewall = Some([self.out.done, self.out.bytes]);
        }
        if let Some(cpu) = self.cpu_from.take() {
            cpu.since(&mut self.out);
        }
        (self.out, self.sys)
    }

    fn phase(&mut self, phase: Phase) {
        let sides: &[Side] =
            if self.ctx.state.copied { &[Side::Source, Side::Copy] } else { &[Side::Source] };
        match phase {
            Phase::Mkdir => self.dirs(Side::Source, false),
            Phase::Create => match self.queued_create() {
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

    /// The create phase's queued operation where it can keep several in flight on a ring that
    /// runs each step: empty files (open, close), and with --fsync files whose bytes are one
    /// write of the thread's data (open, write, fsync, close, each entry queued as the one
    /// before comes back; the data handed to the queue). One at a time, each fsync through the
    /// ring waited for its hand-off to io-wq and its own journal commit, and the ring made 0.92x
    /// the creates of system calls on ext4; queued, the fsyncs in flight share commits: ext4
    /// over a loop device, 2 threads x 25,000 files, 38,266 creates/s against 6,505/s.
    /// Files with data and no fsync are made one at a time, as their writes follow the open
    /// inline, and so are larger files, their writes in turn.
    fn queued_create(&mut self) -> Option<PathOp> {
        let plan = &self.ctx.plan;
        let create = PathOp::Create { flags: self.data_flags(), len: 0, sync: plan.fsync };
        let empty = plan.sizes.max() == 0;
        let synced_in_one_write = plan.fsync && plan.sizes.max() <= self.data.as_ref().len() as u64;
        let queued = (empty || synced_in_one_write)
            && self.sys.queue_depth(create) > 1
            && self.sys.queue_data(self.data.as_ref()).is_ok();
        queued.then_some(create)
    }
}
