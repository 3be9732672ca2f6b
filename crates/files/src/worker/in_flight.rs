//! A phase with several path operations in flight on one thread's ring.

use iolab_engine::fileops::PathDone;

use super::*;

impl Worker<'_> {
    /// The stat, unlink or (empty files) create phase with several operations in flight (on a
    /// ring, where the kernel runs each statx, unlinkat and openat(O_CREAT) in a worker thread:
    /// one at a time, each would wait for a hand-off there and a wake-up back). Each is timed on
    /// its own, from the submit that sent it to the reap that saw it done: its latency as the
    /// thread lived it, at that depth. A create's open and close are two entries, timed apart,
    /// and the create is the open's submit to the close's reap.
    pub(super) fn in_flight(&mut self, side: Side, op: PathOp) {
        let (tree, first, stride) = self.share();
        let (kind, name) = match op {
            PathOp::Stat => (OpKind::Stat, "stat"),
            PathOp::Unlink => (OpKind::Unlink, "unlink"),
            PathOp::Create { .. } => (OpKind::Create, "open"),
        };
        let depth = self.sys.queue_depth(op);
        // Per slot: its file, when its first entry was sent, when its open came back.
        let (mut starts, mut opened, mut index) = (vec![0u64; depth], vec![0u64; depth], vec![0u64; depth]);
        // Per slot: the directory its entry is named in, held open until the slot is free.
        let mut dirs = vec![0i32; depth];
        let mut free: Vec<usize> = (0..depth).rev().collect();
        let mut unsent: Vec<usize> = Vec::with_capacity(depth);
        let mut closing: Vec<usize> = Vec::with_capacity(depth);
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
                unsent.push(tag);
                next += stride as u64;
            }
            if self.sys.queued_in_flight() == 0 {
                return;
            }
            let start = self.ctx.now_ns();
            for tag in unsent.drain(..) {
                starts[tag] = start;
            }
            // Closes queued by the last wait go out with this one's submit.
            for tag in closing.drain(..) {
                opened[tag] = opened[tag].max(start);
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
                match checked {
                    Ok(PathDone::Opened) => {
                        self.record(OpKind::Open, starts[tag], end, 0);
                        opened[tag] = end;
                        closing.push(tag);
                    }
                    Ok(PathDone::Closed) => {
                        free.push(tag);
                        self.parents.release(dirs[tag]);
                        self.record(OpKind::Close, opened[tag], end, 0);
                        self.record(kind, starts[tag], end, 0);
                    }
                    Ok(PathDone::Size(_) | PathDone::Unlinked) => {
                        free.push(tag);
                        self.parents.release(dirs[tag]);
                        self.record(kind, starts[tag], end, 0);
                    }
                    Err(e) => {
                        free.push(tag);
                        self.parents.release(dirs[tag]);
                        // A close's error comes after its open did (this slot's open time is then
                        // later than its start); an open's, a stat's or an unlink's before.
                        let what = if opened[tag] > starts[tag] { "close" } else { name };
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
