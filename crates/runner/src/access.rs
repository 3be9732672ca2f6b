//! The access pattern of one thread: which operation, where, and how big, for each next I/O.
//!
//! Iometer semantics: each I/O is a read with probability read %, goes to a random aligned
//! offset with probability random %, and otherwise continues sequentially right after the
//! previous I/O (wrapping at the end of the region). Threads start their sequential cursors at
//! evenly spaced points of the region so they do not all read the same blocks.

use iolab_engine::Op;
use iolab_spec::AccessSpec;

pub struct AccessGenerator {
    rng: fastrand::Rng,
    read_pct: u32,
    random_pct: u32,
    /// Block sizes and their cumulative weights.
    sizes: Vec<(u32, u32)>,
    total_weight: u32,
    start: u64,
    end: u64,
    align: u64,
    cursor: u64,
}

/// One I/O to issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextIo {
    pub op: Op,
    pub offset: u64,
    pub len: u32,
}

impl AccessGenerator {
    /// `start..start + size` is the region; the thread is number `index` of `count`.
    pub fn new(access: &AccessSpec, start: u64, size: u64, seed: u64, index: u32, count: u32) -> Self {
        let mut cumulative = 0;
        let sizes = access
            .bs_split
            .iter()
            .map(|w| {
                cumulative += w.weight;
                (w.bs.0 as u32, cumulative)
            })
            .collect();
        let align = access.align.0.max(1);
        let share = size / u64::from(count.max(1)) * u64::from(index);
        AccessGenerator {
            rng: fastrand::Rng::with_seed(seed ^ (u64::from(index) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            read_pct: access.read_pct,
            random_pct: access.random_pct,
            sizes,
            total_weight: cumulative,
            start,
            end: start + size,
            align,
            cursor: start + share / align * align,
        }
    }

    fn chance(&mut self, pct: u32) -> bool {
        match pct {
            0 => false,
            100.. => true,
            _ => self.rng.u32(0..100) < pct,
        }
    }

    fn block_size(&mut self) -> u32 {
        if self.sizes.len() == 1 {
            return self.sizes[0].0;
        }
        let pick = self.rng.u32(0..self.total_weight);
        self.sizes.iter().find(|&&(_, upto)| pick < upto).map_or(self.sizes[0].0, |&(bs, _)| bs)
    }

    #[inline]
    pub fn next_io(&mut self) -> NextIo {
        let op = if self.chance(self.read_pct) { Op::Read } else { Op::Write };
        let len = self.block_size();
        let len64 = u64::from(len);
        let offset = if self.chance(self.random_pct) {
            let slots = (self.end - self.start - len64) / self.align + 1;
            self.start + self.rng.u64(0..slots) * self.align
        } else {
            if self.cursor + len64 > self.end {
                self.cursor = self.start;
            }
            self.cursor
        };
        self.cursor = offset + len64;
        NextIo { op, offset, len }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::{BsWeight, Bytes};

    fn access(read_pct: u32, random_pct: u32, split: &[(u64, u32)], align: u64) -> AccessSpec {
        AccessSpec {
            read_pct,
            random_pct,
            bs_split: split.iter().map(|&(bs, weight)| BsWeight { bs: Bytes(bs), weight }).collect(),
            align: Bytes(align),
            burst: None,
        }
    }

    #[test]
    fn sequential_wraps_inside_the_region() {
        let mut g = AccessGenerator::new(&access(100, 0, &[(4096, 1)], 4096), 8192, 3 * 4096, 1, 0, 1);
        let offsets: Vec<u64> = (0..5).map(|_| g.next_io().offset).collect();
        assert_eq!(offsets, [8192, 12288, 16384, 8192, 12288]);
    }

    #[test]
    fn random_offsets_are_aligned_and_in_bounds() {
        let mut g =
            AccessGenerator::new(&access(50, 100, &[(4096, 1), (65536, 1)], 4096), 1 << 20, 8 << 20, 9, 0, 1);
        let mut reads = 0;
        for _ in 0..20_000 {
            let io = g.next_io();
            assert_eq!(io.offset % 4096, 0);
            assert!(io.offset >= 1 << 20 && io.offset + u64::from(io.len) <= 9 << 20);
            reads += usize::from(io.op == Op::Read);
        }
        assert!((9_000..11_000).contains(&reads), "{reads}");
    }

    #[test]
    fn shares_follow_the_spec() {
        let mut g =
            AccessGenerator::new(&access(70, 30, &[(4096, 70), (65536, 30)], 4096), 0, 64 << 20, 3, 0, 1);
        let (mut reads, mut small, mut sequential) = (0, 0, 0);
        let mut last_end = 0;
        let n = 100_000;
        for _ in 0..n {
            let io = g.next_io();
            reads += usize::from(io.op == Op::Read);
            small += usize::from(io.len == 4096);
            sequential += usize::from(io.offset == last_end);
            last_end = io.offset + u64::from(io.len);
        }
        let pct = |x: usize| x * 100 / n;
        assert!((69..=71).contains(&pct(reads)), "reads {}", pct(reads));
        assert!((69..=71).contains(&pct(small)), "small {}", pct(small));
        assert!((69..=71).contains(&pct(sequential)), "sequential {}", pct(sequential));
    }

    #[test]
    fn threads_start_apart_and_same_seed_repeats() {
        let spec = access(100, 0, &[(4096, 1)], 4096);
        let first = AccessGenerator::new(&spec, 0, 1 << 20, 5, 1, 4).next_io();
        assert_eq!(first.offset, 256 << 10);
        let random = access(100, 100, &[(4096, 1)], 4096);
        let a: Vec<_> = {
            let mut g = AccessGenerator::new(&random, 0, 1 << 30, 42, 0, 1);
            (0..100).map(|_| g.next_io()).collect()
        };
        let mut g = AccessGenerator::new(&random, 0, 1 << 30, 42, 0, 1);
        assert!(a.iter().all(|io| *io == g.next_io()));
    }
}
