//! A phase with several path operations in flight on one thread's ring.

use iolab_engine::fileops::PathDone;

use super::*;

impl Worker<'_> {
    /// The stat, unlink or create phase with several operations in flight (on a ring, where
    /// the kernel runs each statx, unlinkat and openat(O_CREAT) in a worker thread: one at a
    /// time, each would wait for a hand-off there and a wake-up back, and a create with
    /// `--fsync` for its fsync too). Each is timed on its own, from the submit that sent it to
    /// the reap that saw it done: its latency as the thread lived it, at that depth. A create's
    /// open, write, fsync and close are entries timed apart, and the create is the open's
    /// submit to the close's reap.
    pub(super) fn in_flight(&mut self, side: Side, op: PathOp) {
        let (tree, first, stride) = self.share();
        let (kind, name) = match op {
            PathOp::Stat => (OpKind::Stat, "stat"),
            PathOp::Unlink => (OpKind::Unlink, "unlink"),
            PathOp::Create { .. } => (OpKind::Create, "open"),
        };
        let depth = self.sys.queue_depth(op);
        // Per slot: its file, when its first entry was sent, when its latest was, and what a
        // failure of its entry in flight is called.
        let (mut starts, mut sent, mut index) = (vec![0u64; depth], vec![0u64; depth], vec![0u64; depth]);
        let mut stage = vec![name; depth];
        // Per slot: the directory its entry is named in, held open until the slot is free.
        let mut dirs = vec![0i32; depth];
        let mut free: Vec<usize> = (0..depth).rev().collect();
        let mut unsent: Vec<usize> = Vec::with_capacity(depth);
        // Slots whose next entry the last wait queued: sent with the next.
        let mut advanced: Vec<usize> = Vec::with_capacity(depth);
        let mut finished: Vec<(usize, io::Result<PathDone>)> = Vec::with_capacity(depth);
        let walk = self.walk(tree);
        // The next position of the thread's share; the file there is `walk.at(next)`.
        let mut next = first;
        loop {
            while next < tree.files && !self.ctx.stopping() {
                let file = walk.at(next);
                if !self.ctx.plan.made(tree.index, file) {
                    next += stride as u64;
                    continue;
                }
                let Some(tag) = free.pop() else { break };
                let op = match op {
                    PathOp::Create { flags, sync, .. } => {
                        PathOp::Create { flags, sync, len: self.size_of(tree, file) as u32 }
                    }
                    other => other,
                };
                let queued = self.locate_file(tree, side, file, self.renamed).and_then(|leaf| {
                    self.sys.queue_push(op, leaf, &self.name, tag).map(|()| leaf).map_err(|e| (name, e))
                });
                let leaf = match queued {
                    Ok(leaf) => leaf,
                    Err((what, e)) => {
                        free.push(tag);
                        let path = std::mem::take(&mut self.path);
                        self.fail(what, &path, &e);
                        self.path = path;
                        break;
                    }
                };
                self.parents.hold(leaf);
                dirs[tag] = leaf;
                index[tag] = file;
                stage[tag] = name;
                unsent.push(tag);
                next += stride as u64;
            }
            if self.sys.queued_in_flight() == 0 {
                return;
            }
            let start = self.ctx.now_ns();
            for tag in unsent.drain(..) {
                starts[tag] = start;
                sent[tag] = start;
            }
            // Entries queued by the last wait go out with this one's submit.
            for tag in advanced.drain(..) {
                sent[tag] = start;
            }
            let waited = self.sys.queue_wait(|tag, result| finished.push((tag, result)));
            let end = self.ctx.now_ns();
            if let Err(e) = waited {
                self.fail(name, b"(the ring)", &e);
                return;
            }
            for (tag, result) in finished.drain(..) {
                let i = index[tag];
                let checked = result.and_then(|done| match done {
                    PathDone::Size(size) if size != self.size_of(tree, i) => Err(io::Error::other(format!(
                        "the file holds {size} bytes, not the {} it was made with",
                        self.size_of(tree, i)
                    ))),
                    _ => Ok(done),
                });
                let made = self.size_of(tree, i);
                // What comes after a create's entry: its write when the file has bytes, its
                // fsync with --fsync, its close.
                let after = |wrote: bool| match op {
                    PathOp::Create { sync: true, .. } if !wrote && made == 0 => "fsync",
                    PathOp::Create { .. } if !wrote && made > 0 => "write",
                    PathOp::Create { sync: true, .. } if wrote => "fsync",
                    _ => "close",
                };
                match checked {
                    Ok(PathDone::Opened) => {
                        self.record(OpKind::Open, sent[tag], end, 0);
                        stage[tag] = after(false);
                        advanced.push(tag);
                    }
                    Ok(PathDone::Wrote(bytes)) => {
                        self.record(OpKind::Write, sent[tag], end, bytes);
                        stage[tag] = after(true);
                        advanced.push(tag);
                    }
                    Ok(PathDone::Synced) => {
                        self.record(OpKind::Fsync, sent[tag], end, 0);
                        stage[tag] = "close";
                        advanced.push(tag);
                    }
                    Ok(PathDone::Closed) => {
                        free.push(tag);
                        self.parents.release(dirs[tag]);
                        self.record(OpKind::Close, sent[tag], end, 0);
                        self.record(kind, starts[tag], end, made);
                    }
                    Ok(PathDone::Size(_) | PathDone::Unlinked) => {
                        free.push(tag);
                        self.parents.release(dirs[tag]);
                        self.record(kind, starts[tag], end, 0);
                    }
                    Err(e) => {
                        free.push(tag);
                        self.parents.release(dirs[tag]);
                        let what = stage[tag];
                        tree.file_path(side, i, self.renamed, &mut self.path);
                        let path = std::mem::take(&mut self.path);
                        self.fail(what, &path, &e);
                        self.path = path;
                    }
                }
            }
        }
    }
}
