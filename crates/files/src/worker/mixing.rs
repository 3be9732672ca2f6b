//! A thread's part of a mix: until the runtime ends, draw an operation by its weight and a
//! file by the distribution, claim the nearest file in the state the operation needs (the
//! population's), do it, and give the file back as it is now. Each operation is recorded whole
//! as its own kind and as the mix's, its parts (open, read, write, fsync, close) apart; the
//! warm-up's operations are done but not recorded (`Worker::record`), nor is its CPU.

use super::{CpuAtStart, OpError, Worker, XATTR};
use crate::mix::{Mix, MixOp};
use crate::population::{Need, Population, LINKED, PRESENT, RENAMED, SYMLINKED};
use crate::report::OpKind;
use crate::tree::{Side, Tree};

/// The name of the directory the mix makes and removes in a leaf directory (`d<N>` is one of
/// iolab's names, and a leaf holds no other directory).
const MIX_DIR: &[u8] = b"d0\0";

impl Worker<'_> {
    /// Runs the mix until its runtime ends (after the warm-up), the run is interrupted or an
    /// operation fails.
    pub(super) fn mix(&mut self) {
        let ctx = self.ctx;
        let (Some(mix), Some((population, sampler))) = (ctx.plan.mix.as_ref(), ctx.mixing) else {
            return;
        };
        let tree = &ctx.trees[0];
        let mut rng = fastrand::Rng::with_seed(
            ctx.plan.seed ^ (u64::from(self.thread) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        );
        let total: u32 = mix.ops.iter().map(|&(_, w)| w).sum();
        let end = ctx.phase_start_ns + (mix.runtime_s * 1e9) as u64;
        let mut warming = ctx.now_ns() < ctx.phase_start_ns;
        while !ctx.stopping() && ctx.now_ns() < end {
            if warming && ctx.now_ns() >= ctx.phase_start_ns {
                // The warm-up's CPU is not the measured time's, as its operations are not.
                warming = false;
                self.cpu_from = Some(CpuAtStart::now());
            }
            let op = drawn_op(&mix.ops, rng.u32(0..total));
            let file = sampler.draw(&mut rng);
            if let Err((what, e)) = self.mix_op(mix, op, tree, population, file, &mut rng) {
                let path = std::mem::take(&mut self.path);
                self.fail(what, &path, &e);
                self.path = path;
                break;
            }
        }
        if let Some(fd) = self.log_fd.take() {
            let _ = self.sys.close(fd);
        }
    }

    fn mix_op(
        &mut self,
        mix: &Mix,
        drawn_as: MixOp,
        tree: &Tree,
        population: &Population,
        drawn: u64,
        rng: &mut fastrand::Rng,
    ) -> Result<(), OpError> {
        let measured = self.ctx.now_ns() >= self.ctx.phase_start_ns;
        // A create replaces a delete: the population stays in its band.
        let op = match drawn_as {
            MixOp::Create if population.full() => MixOp::Unlink,
            MixOp::Unlink if population.short() => MixOp::Create,
            op => op,
        };
        if op != drawn_as && measured {
            self.out.swapped += 1;
        }
        match op {
            MixOp::Readdir => return self.mix_readdir(tree, drawn),
            MixOp::Mkdir | MixOp::Rmdir => {
                return self.mix_dir(tree, population, drawn, op == MixOp::Mkdir, measured)
            }
            MixOp::AppendLog => return self.append_log(tree, append_size(mix, self.ctx.plan.direct, rng)),
            _ => {}
        }
        let need = match op {
            MixOp::Create => Need::Absent,
            MixOp::Link => Need::Without(LINKED),
            MixOp::Symlink => Need::Without(SYMLINKED),
            _ => Need::Present,
        };
        let Some((index, flags)) = population.claim(drawn, need) else {
            if measured {
                self.out.unplaced[op.index()] += 1;
            }
            return Ok(());
        };
        self.renamed = flags & RENAMED != 0;
        let done = match op {
            MixOp::Read => self.read_whole(tree, index).map(|()| flags),
            MixOp::ReadRange => self.read_range(mix, tree, index, rng).map(|()| flags),
            MixOp::Append => {
                let size = append_size(mix, self.ctx.plan.direct, rng);
                self.append(tree, index, size).map(|()| flags)
            }
            MixOp::Create => {
                self.renamed = false;
                let size = if mix.create_appends {
                    append_size(mix, self.ctx.plan.direct, rng)
                } else {
                    self.size_of(tree, index)
                };
                self.create_sized(tree, Side::Source, index, size).map(|()| PRESENT)
            }
            MixOp::Stat => self.stat_as_is(tree, index).map(|()| flags),
            MixOp::Rename => self.rename(tree, Side::Source, index).map(|()| flags ^ RENAMED),
            MixOp::Unlink => self.unlink_with_links(tree, index, flags).map(|()| 0),
            MixOp::Setattr => self.setattr(tree, Side::Source, index).map(|()| flags),
            MixOp::Getxattr => self.one_xattr(tree, index, false).map(|()| flags),
            MixOp::Setxattr => self.one_xattr(tree, index, true).map(|()| flags),
            MixOp::Link => self.link(tree, Side::Source, index, false).map(|()| flags | LINKED),
            MixOp::Symlink => self.link(tree, Side::Source, index, true).map(|()| flags | SYMLINKED),
            MixOp::Readdir | MixOp::Mkdir | MixOp::Rmdir | MixOp::AppendLog => Ok(flags),
        };
        // A failed operation ends the run; its file keeps what it had, as far as is known.
        population.release(index, flags, *done.as_ref().unwrap_or(&flags));
        done.map(|_| ())
    }

    /// Opens the file, reads it to its end as it is now (appends grow it), closes it.
    fn read_whole(&mut self, tree: &Tree, index: u64) -> Result<(), OpError> {
        let fd = self.open_file(tree, index, libc::O_RDONLY)?;
        let start = self.opened_at;
        self.work_and_close(fd, start, OpKind::ReadFile, |w| {
            let mut offset = 0u64;
            loop {
                let len = w.data.as_ref().len();
                let before = w.ctx.now_ns();
                let n = w.sys.read(fd, &mut w.data.as_mut()[..len], offset).map_err(|e| ("read", e))?;
                let after = w.ctx.now_ns();
                if n == 0 {
                    return Ok(offset);
                }
                w.record(OpKind::Read, before, after, n as u64);
                offset += n as u64;
            }
        })
    }

    /// Opens the file, reads `range_size` bytes at a place drawn in the size it was made with,
    /// closes it.
    fn read_range(
        &mut self,
        mix: &Mix,
        tree: &Tree,
        index: u64,
        rng: &mut fastrand::Rng,
    ) -> Result<(), OpError> {
        let size = self.size_of(tree, index);
        let align = if self.ctx.plan.direct { 4096 } else { 1 };
        let places = size.saturating_sub(mix.range_size) / align + 1;
        let offset = rng.u64(0..places) * align;
        let len = (mix.range_size as usize).min(self.data.as_ref().len());
        let fd = self.open_file(tree, index, libc::O_RDONLY)?;
        let start = self.opened_at;
        self.work_and_close(fd, start, OpKind::ReadRange, |w| {
            let before = w.ctx.now_ns();
            let n = w.sys.read(fd, &mut w.data.as_mut()[..len], offset).map_err(|e| ("read", e))?;
            let after = w.ctx.now_ns();
            w.record(OpKind::Read, before, after, n as u64);
            Ok(n as u64)
        })
    }

    /// Opens the file for appending, writes `size` bytes at its end (fsync with --fsync),
    /// closes it.
    fn append(&mut self, tree: &Tree, index: u64, size: u64) -> Result<(), OpError> {
        let fd = self.open_file(tree, index, libc::O_WRONLY | libc::O_APPEND)?;
        let start = self.opened_at;
        self.work_and_close(fd, start, OpKind::Append, |w| {
            w.write_all(fd, size)?;
            w.sync(fd)?;
            Ok(size)
        })
    }

    /// Writes `size` bytes at the end of the run's log file, which the thread opens (making it
    /// if no thread has yet) the first time and holds until the mix ends.
    fn append_log(&mut self, tree: &Tree, size: u64) -> Result<(), OpError> {
        let fd = match self.log_fd {
            Some(fd) => fd,
            None => {
                // A name one past the set's, in the first leaf: iolab's, and no file of the set.
                let dir =
                    self.parents.dir(tree, Side::Source, tree.depth, 0).map_err(|e| ("open directory", e))?;
                tree.file_name(tree.files, false, &mut self.name);
                tree.dir_path(Side::Source, tree.depth, 0, &mut self.path);
                let flags =
                    libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NOFOLLOW | self.data_flags();
                let fd = self.sys.openat(dir, &self.name, flags, 0o644).map_err(|e| ("open", e))?;
                self.log_fd = Some(fd);
                fd
            }
        };
        let start = self.ctx.now_ns();
        let len = (size as usize).min(self.data.as_ref().len());
        let n = self.sys.write(fd, &self.data.as_ref()[..len], 0).map_err(|e| ("write", e))?;
        self.sync(fd)?;
        let end = self.ctx.now_ns();
        self.record(OpKind::AppendLog, start, end, n as u64);
        Ok(())
    }

    /// Stats the file, whatever its size is now.
    fn stat_as_is(&mut self, tree: &Tree, index: u64) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, Side::Source, index, self.renamed)?;
        let start = self.ctx.now_ns();
        self.sys.stat(leaf, &self.name).map_err(|e| ("stat", e))?;
        let end = self.ctx.now_ns();
        self.record(OpKind::Stat, start, end, 0);
        Ok(())
    }

    /// Removes the file and the links made to it, timed as one unlink.
    fn unlink_with_links(&mut self, tree: &Tree, index: u64, flags: u8) -> Result<(), OpError> {
        let leaf = self.locate_file(tree, Side::Source, index, self.renamed)?;
        let start = self.ctx.now_ns();
        self.sys.unlinkat(leaf, &self.name, false).map_err(|e| ("unlink", e))?;
        for (link, symbolic) in [(LINKED, false), (SYMLINKED, true)] {
            if flags & link != 0 {
                tree.link_name(index, symbolic, &mut self.name);
                self.sys.unlinkat(leaf, &self.name, false).map_err(|e| ("unlink", e))?;
            }
        }
        let end = self.ctx.now_ns();
        self.record(OpKind::Unlink, start, end, 0);
        Ok(())
    }

    /// Opens the file, sets `user.iolab` (`set`) or reads it (none set yet is an answer),
    /// closes it.
    fn one_xattr(&mut self, tree: &Tree, index: u64, set: bool) -> Result<(), OpError> {
        let fd = self.open_file(tree, index, libc::O_RDONLY)?;
        let start = self.opened_at;
        let kind = if set { OpKind::SetXattr } else { OpKind::GetXattr };
        self.work_and_close(fd, start, kind, |w| {
            if set {
                let value = format!("iolab {index}");
                w.sys.set_xattr(fd, XATTR, value.as_bytes()).map_err(|e| ("setxattr", e))?;
            } else {
                let mut back = [0u8; 64];
                match w.sys.get_xattr(fd, XATTR, &mut back) {
                    Ok(_) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ENODATA) => {}
                    Err(e) => return Err(("getxattr", e)),
                }
            }
            Ok(0)
        })
    }

    /// Lists the directory of the drawn file.
    fn mix_readdir(&mut self, tree: &Tree, drawn: u64) -> Result<(), OpError> {
        let leaf = tree.leaf_of(drawn);
        let parent =
            self.locate_dir(tree, Side::Source, tree.depth, leaf).map_err(|e| ("open directory", e))?;
        let start = self.ctx.now_ns();
        let mut buf = std::mem::take(&mut self.dir_buf);
        let listed = self.list(parent, &mut buf);
        self.dir_buf = buf;
        let end = self.ctx.now_ns();
        let entries = listed?;
        if start >= self.ctx.phase_start_ns {
            self.out.entries += entries;
        }
        self.record(OpKind::Readdir, start, end, 0);
        Ok(())
    }

    /// Makes (`make`) the mix's directory in the drawn file's directory, or removes it, in the
    /// nearest directory where it is absent (present).
    fn mix_dir(
        &mut self,
        tree: &Tree,
        population: &Population,
        drawn: u64,
        make: bool,
        measured: bool,
    ) -> Result<(), OpError> {
        let op = if make { MixOp::Mkdir } else { MixOp::Rmdir };
        let Some((leaf, flags)) = population.claim_dir(tree.leaf_of(drawn), !make) else {
            if measured {
                self.out.unplaced[op.index()] += 1;
            }
            return Ok(());
        };
        let done = self.dir_in_leaf(tree, leaf, make);
        population.release_dir(leaf, if done.is_ok() { u8::from(make) * PRESENT } else { flags });
        done
    }

    fn dir_in_leaf(&mut self, tree: &Tree, leaf: u64, make: bool) -> Result<(), OpError> {
        tree.dir_path(Side::Source, tree.depth, leaf, &mut self.path);
        self.path.pop();
        self.path.extend_from_slice(b"/");
        self.path.extend_from_slice(MIX_DIR);
        let dir =
            self.parents.dir(tree, Side::Source, tree.depth, leaf).map_err(|e| ("open directory", e))?;
        let start = self.ctx.now_ns();
        let done = if make { self.sys.mkdirat(dir, MIX_DIR) } else { self.sys.unlinkat(dir, MIX_DIR, true) };
        let end = self.ctx.now_ns();
        done.map_err(|e| (if make { "mkdir" } else { "rmdir" }, e))?;
        self.record(if make { OpKind::Mkdir } else { OpKind::Rmdir }, start, end, 0);
        Ok(())
    }

    /// Opens file `index` with `flags` (never following a link; O_DIRECT with --direct), its
    /// open recorded and its start kept in `opened_at` for the whole operation's record.
    fn open_file(&mut self, tree: &Tree, index: u64, flags: i32) -> Result<i32, OpError> {
        let leaf = self.locate_file(tree, Side::Source, index, self.renamed)?;
        self.opened_at = self.ctx.now_ns();
        let flags = flags | libc::O_NOFOLLOW | self.data_flags();
        self.sys.openat(leaf, &self.name, flags, 0).map_err(|e| ("open", e))
    }
}

/// The operation a draw of `pick` in 0..total weight lands on.
fn drawn_op(ops: &[(MixOp, u32)], mut pick: u32) -> MixOp {
    for &(op, weight) in ops {
        if pick < weight {
            return op;
        }
        pick -= weight;
    }
    ops.last().map_or(MixOp::Stat, |&(op, _)| op)
}

/// An append's size: 1 to `append_size` bytes, evenly (whole 4 KiB blocks under --direct).
fn append_size(mix: &Mix, direct: bool, rng: &mut fastrand::Rng) -> u64 {
    if direct {
        rng.u64(1..=(mix.append_size / 4096).max(1)) * 4096
    } else {
        rng.u64(1..=mix.append_size.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_land_on_each_operation_by_its_weight() {
        let ops = [(MixOp::Read, 3), (MixOp::Stat, 0), (MixOp::Create, 1)];
        let landed: Vec<MixOp> = (0..4).map(|pick| drawn_op(&ops, pick)).collect();
        assert_eq!(landed, vec![MixOp::Read, MixOp::Read, MixOp::Read, MixOp::Create]);
    }

    #[test]
    fn appends_are_one_to_the_size_and_whole_blocks_under_direct() {
        let mut mix = Mix::of(vec![(MixOp::Append, 1)]);
        mix.append_size = 16 << 10;
        let mut rng = fastrand::Rng::with_seed(1);
        let sizes: Vec<u64> = (0..10_000).map(|_| append_size(&mix, false, &mut rng)).collect();
        assert!(sizes.iter().all(|&s| (1..=16 << 10).contains(&s)));
        let mean = sizes.iter().sum::<u64>() as f64 / sizes.len() as f64;
        assert!((mean / 8192.0 - 1.0).abs() < 0.05, "{mean}");
        assert!((0..1000).all(|_| append_size(&mix, true, &mut rng) % 4096 == 0));
    }
}
