//! The access pattern of one thread: which operation, where, and how big, for each next I/O.
//!
//! Iometer semantics: each I/O is a read with probability read %, goes to a random aligned
//! offset with probability random %, and otherwise continues sequentially right after the
//! previous I/O (wrapping at the end of the region). Threads start their sequential cursors at
//! evenly spaced points of the region so they do not all read the same blocks.
//!
//! Random offsets follow `--distribution` (uniform by default, exactly as before: a slot of the
//! region for the I/O's own length). A skewed one draws a slot index among the slots where the
//! largest block fits (`Sampler`), so the hot blocks are the same whatever the size of the
//! I/O. `--working-set` narrows the region every I/O, sequential or random, stays in; with
//! `--working-set-moves` it moves on after each lane's share of the group's I/Os.

use iolab_engine::Op;
use iolab_spec::{AccessSpec, Bytes, Distribution};
use thiserror::Error;

use crate::coverage::Touched;
use crate::distribution::{Sampler, SamplerError};

/// An access pattern that cannot be laid over its region: a working set larger than the region,
/// or a skewed distribution the region is too large or too small for (`SamplerError`).
#[derive(Debug, Error)]
pub enum AccessError {
    #[error("--working-set {set} is larger than the region of {region} bytes; use a smaller working set")]
    WorkingSetTooLarge { set: Bytes, region: u64 },
    #[error(transparent)]
    Sampler(#[from] SamplerError),
}

pub struct AccessGenerator {
    rng: fastrand::Rng,
    read_pct: u32,
    random_pct: u32,
    /// Block sizes and their cumulative weights.
    sizes: Vec<(u32, u32)>,
    total_weight: u32,
    /// The region I/Os go to now: the target's, or the working set inside it.
    start: u64,
    end: u64,
    align: u64,
    cursor: u64,
    /// A skewed distribution's sampler of slot indexes; `None`: uniform.
    /// (Boxed: a generator stays small, and a lane's router holds it in an enum.)
    sampler: Option<Box<Sampler>>,
    moves: Option<Box<Moves>>,
    touched: Touched,
}

/// A moving working set: after every `every` I/Os of this lane it moves `step` slots on; a
/// move that would take it past the end of the target's region takes it back to the start.
struct Moves {
    region_start: u64,
    /// Where the working set may start, in slots from the region's start: 0..positions.
    positions: u64,
    base: u64,
    step: u64,
    every: u64,
    left: u64,
    size: u64,
}

/// One I/O to issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextIo {
    pub op: Op,
    pub offset: u64,
    pub len: u32,
}

impl AccessGenerator {
    /// `start..start + size` is the region; the thread is number `index` of `count`. Refuses a
    /// working set or zones that do not fit the region.
    pub fn new(
        access: &AccessSpec,
        start: u64,
        size: u64,
        seed: u64,
        index: u32,
        count: u32,
    ) -> Result<Self, AccessError> {
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
        let max_bs = access.max_bs().0;
        let touched = Touched::new(start, size, align, count);
        let (window, moves) = match access.working_set {
            None => (size, None),
            Some(set) if set.size.0 > size => {
                return Err(AccessError::WorkingSetTooLarge { set: set.size, region: size })
            }
            Some(set) => {
                let moves = set.moves.map(|m| {
                    let lanes = u64::from(count.max(1));
                    Box::new(Moves {
                        region_start: start,
                        positions: (size - set.size.0) / align + 1,
                        base: 0,
                        step: m.distance.0 / align,
                        every: m.every_ios.div_ceil(lanes),
                        left: m.every_ios.div_ceil(lanes),
                        size: set.size.0,
                    })
                });
                (set.size.0, moves)
            }
        };
        let sampler = match &access.distribution {
            Distribution::Uniform => None,
            skewed => {
                let slots = window.saturating_sub(max_bs) / align + 1;
                // The key is the group's (and target's) seed, not the lane's: every lane of a
                // group has the same hot blocks.
                Some(Box::new(Sampler::new(skewed, slots, seed)?))
            }
        };
        let share = window / u64::from(count.max(1)) * u64::from(index);
        Ok(AccessGenerator {
            rng: fastrand::Rng::with_seed(seed ^ (u64::from(index) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            read_pct: access.read_pct,
            random_pct: access.random_pct,
            sizes,
            total_weight: cumulative,
            start,
            end: start + window,
            align,
            cursor: start + share / align * align,
            sampler,
            moves,
            touched,
        })
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
        if let Some(moves) = &mut self.moves {
            if moves.left == 0 {
                moves.left = moves.every;
                moves.base += moves.step;
                if moves.base >= moves.positions {
                    moves.base = 0;
                }
                self.start = moves.region_start + moves.base * self.align;
                self.end = self.start + moves.size;
            }
            moves.left -= 1;
        }
        let op = if self.chance(self.read_pct) { Op::Read } else { Op::Write };
        let len = self.block_size();
        let len64 = u64::from(len);
        let offset = if self.chance(self.random_pct) {
            match &mut self.sampler {
                None => {
                    let slots = (self.end - self.start - len64) / self.align + 1;
                    self.start + self.rng.u64(0..slots) * self.align
                }
                Some(sampler) => self.start + sampler.draw(&mut self.rng) * self.align,
            }
        } else {
            // Outside the region also when a moving working set has left the cursor behind.
            if self.cursor + len64 > self.end || self.cursor < self.start {
                self.cursor = self.start;
            }
            self.cursor
        };
        self.cursor = offset + len64;
        self.touched.record(offset, len);
        NextIo { op, offset, len }
    }

    /// The blocks this generator's I/Os touched.
    pub fn touched(&self) -> &Touched {
        &self.touched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_spec::{BsWeight, Bytes, WorkingSet, WorkingSetMoves, Zone};

    fn access(read_pct: u32, random_pct: u32, split: &[(u64, u32)], align: u64) -> AccessSpec {
        AccessSpec {
            read_pct,
            random_pct,
            bs_split: split.iter().map(|&(bs, weight)| BsWeight { bs: Bytes(bs), weight }).collect(),
            align: Bytes(align),
            burst: None,
            distribution: Distribution::Uniform,
            working_set: None,
        }
    }

    #[test]
    fn sequential_wraps_inside_the_region() {
        let mut g =
            AccessGenerator::new(&access(100, 0, &[(4096, 1)], 4096), 8192, 3 * 4096, 1, 0, 1).expect("fits");
        let offsets: Vec<u64> = (0..5).map(|_| g.next_io().offset).collect();
        assert_eq!(offsets, [8192, 12288, 16384, 8192, 12288]);
    }

    #[test]
    fn random_offsets_are_aligned_and_in_bounds() {
        let mut g =
            AccessGenerator::new(&access(50, 100, &[(4096, 1), (65536, 1)], 4096), 1 << 20, 8 << 20, 9, 0, 1)
                .expect("fits");
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
            AccessGenerator::new(&access(70, 30, &[(4096, 70), (65536, 30)], 4096), 0, 64 << 20, 3, 0, 1)
                .expect("fits");
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
        let first = AccessGenerator::new(&spec, 0, 1 << 20, 5, 1, 4).expect("fits").next_io();
        assert_eq!(first.offset, 256 << 10);
        let random = access(100, 100, &[(4096, 1)], 4096);
        let a: Vec<_> = {
            let mut g = AccessGenerator::new(&random, 0, 1 << 30, 42, 0, 1).expect("fits");
            (0..100).map(|_| g.next_io()).collect()
        };
        let mut g = AccessGenerator::new(&random, 0, 1 << 30, 42, 0, 1).expect("fits");
        assert!(a.iter().all(|io| *io == g.next_io()));
    }

    fn skewed(distribution: Distribution, working_set: Option<WorkingSet>) -> AccessSpec {
        AccessSpec { distribution, working_set, ..access(100, 100, &[(4096, 1)], 4096) }
    }

    #[test]
    fn the_working_set_bounds_random_and_sequential_io() {
        let set = Some(WorkingSet { size: Bytes(1 << 20), moves: None });
        for spec in [
            skewed(Distribution::Zipf { theta: 1.2 }, set),
            skewed(Distribution::Uniform, set),
            AccessSpec { random_pct: 0, ..skewed(Distribution::Uniform, set) },
            AccessSpec { random_pct: 50, ..skewed(Distribution::Normal { stddev_pct: 50.0 }, set) },
        ] {
            let mut g = AccessGenerator::new(&spec, 1 << 30, 1 << 30, 1, 1, 2).expect("fits");
            for _ in 0..50_000 {
                let io = g.next_io();
                assert!(io.offset >= 1 << 30 && io.offset + 4096 <= (1 << 30) + (1 << 20), "{io:?}");
            }
        }
        let too_big = Some(WorkingSet { size: Bytes(2 << 30), moves: None });
        let err = AccessGenerator::new(&skewed(Distribution::Uniform, too_big), 0, 1 << 30, 1, 0, 1);
        assert!(err.err().expect("refused").to_string().contains("larger than the region"));
    }

    #[test]
    fn a_moving_working_set_moves_by_its_distance_per_share_of_ios_and_wraps() {
        // 4 lanes, moves of 64 KiB every 400 I/Os of the group: every 100 I/Os of a lane.
        let moves = WorkingSetMoves { distance: Bytes(64 << 10), every_ios: 400 };
        let set = Some(WorkingSet { size: Bytes(128 << 10), moves: Some(moves) });
        let mut g =
            AccessGenerator::new(&skewed(Distribution::Uniform, set), 0, 256 << 10, 3, 0, 4).expect("fits");
        let windows: Vec<(u64, u64)> = (0..5)
            .map(|_| {
                let offsets: Vec<u64> = (0..100).map(|_| g.next_io().offset).collect();
                (*offsets.iter().min().expect("some"), *offsets.iter().max().expect("some") + 4096)
            })
            .collect();
        // Three places fit (0, 64k, 128k); the fourth move wraps back to the start.
        let k = 1 << 10;
        assert_eq!(windows[0].0, 0);
        assert!(windows[0].1 <= 128 * k && windows[1].0 >= 64 * k && windows[1].1 <= 192 * k);
        assert!(windows[2].0 >= 128 * k && windows[3].1 <= 128 * k && windows[4].0 >= 64 * k);
    }

    #[test]
    fn zoned_offsets_land_in_their_zones_and_lanes_share_hot_blocks() {
        let zones = vec![Zone { io_pct: 90, size_pct: 10 }, Zone { io_pct: 10, size_pct: 90 }];
        let spec = skewed(Distribution::Zoned(zones), None);
        let mut g = AccessGenerator::new(&spec, 0, 100 << 20, 5, 0, 1).expect("fits");
        let hot = (0..100_000).filter(|_| g.next_io().offset < 10 << 20).count();
        assert!((89_000..91_000).contains(&hot), "{hot}");

        let zipf = skewed(Distribution::Zipf { theta: 1.5 }, None);
        let hottest = |lane| {
            let mut g = AccessGenerator::new(&zipf, 0, 1 << 30, 77, lane, 2).expect("fits");
            let mut counts = std::collections::HashMap::new();
            (0..20_000).for_each(|_| *counts.entry(g.next_io().offset).or_insert(0) += 1);
            counts.into_iter().max_by_key(|&(_, c)| c).map(|(offset, _)| offset)
        };
        assert_eq!(hottest(0), hottest(1));
        assert_ne!(hottest(0), Some(0), "the hottest block is scattered, not at the start");
    }
}
