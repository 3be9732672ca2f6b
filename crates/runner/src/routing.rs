//! Where each I/O of a lane goes when its group has several targets (one target is the case
//! of one). Either in turn, each target with offsets of its own, or striped RAID-0 style: one
//! volume of `stripe`-sized chunks, chunk `c` on target `c % n`, row `c / n`.

use std::sync::Arc;

use iolab_engine::Op;
use iolab_spec::{AccessSpec, ReplayIo};

use crate::access::{AccessError, AccessGenerator, NextIo};
use crate::coverage::Touched;

/// A target's region: where it starts and how long it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub size: u64,
}

/// One I/O and the index of the target it goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoutedIo {
    pub target: u16,
    pub io: NextIo,
}

pub enum Router {
    /// The I/Os of a lane go to its targets in turn, each target with its own access pattern
    /// (sequential cursors and random offsets of its own).
    InTurn { generators: Vec<AccessGenerator>, next: usize },
    /// One access pattern over the striped volume, mapped to (target, offset).
    Striped { generator: AccessGenerator, stripe: u64, starts: Vec<u64> },
    /// A trace's requests (`iolab replay`), to the group's one target: lane i of T takes
    /// requests i, i + T, i + 2T, ... (`next` is the lane's next, `step` is T).
    Replay { ios: Arc<[ReplayIo]>, next: usize, step: usize, region_start: u64, touched: Touched },
}

impl Router {
    /// The router of thread `index` of `count` over `regions`.
    pub fn new(
        access: &AccessSpec,
        regions: &[Region],
        stripe: Option<u64>,
        seed: u64,
        index: u32,
        count: u32,
    ) -> Result<Self, AccessError> {
        Ok(match stripe {
            Some(stripe) if regions.len() > 1 => {
                let volume = striped_volume(regions, stripe);
                Router::Striped {
                    generator: AccessGenerator::new(access, 0, volume, seed, index, count)?,
                    stripe,
                    starts: regions.iter().map(|r| r.start).collect(),
                }
            }
            _ => Router::InTurn {
                generators: regions
                    .iter()
                    .enumerate()
                    .map(|(t, r)| {
                        let seed = seed ^ (t as u64).wrapping_mul(0xd6e8_feb8_6659_fd93);
                        AccessGenerator::new(access, r.start, r.size, seed, index, count)
                    })
                    .collect::<Result<_, _>>()?,
                next: 0,
            },
        })
    }

    /// The router of lane `index` of `count` replaying `ios` on `region`, whose blocks are
    /// `block` bytes for the coverage count.
    pub fn replay(ios: Arc<[ReplayIo]>, region: Region, block: u64, index: u32, count: u32) -> Self {
        let touched = Touched::new(region.start, region.size, block, count);
        Router::Replay {
            ios,
            next: index as usize,
            step: count.max(1) as usize,
            region_start: region.start,
            touched,
        }
    }

    /// What the lane's I/Os touched, per target (striped: one for the whole volume).
    pub fn touched(&self) -> Vec<Touched> {
        match self {
            Router::InTurn { generators, .. } => generators.iter().map(|g| g.touched().clone()).collect(),
            Router::Striped { generator, .. } => vec![generator.touched().clone()],
            Router::Replay { touched, .. } => vec![touched.clone()],
        }
    }

    /// Takes back the I/O `next_io` gave last, which the engine could not queue: a replay
    /// issues it next instead of skipping it. (A generated I/O is simply drawn anew.)
    #[inline]
    pub fn put_back(&mut self) {
        if let Router::Replay { next, step, .. } = self {
            *next -= *step;
        }
    }

    #[inline]
    pub fn next_io(&mut self) -> RoutedIo {
        match self {
            Router::InTurn { generators, next } => {
                let target = *next;
                *next = if target + 1 == generators.len() { 0 } else { target + 1 };
                RoutedIo { target: target as u16, io: generators[target].next_io() }
            }
            Router::Striped { generator, stripe, starts } => {
                let io = generator.next_io();
                let (target, offset) = stripe_map(io.offset, u64::from(io.len), *stripe, starts);
                RoutedIo { target, io: NextIo { offset, ..io } }
            }
            Router::Replay { ios, next, step, region_start, touched } => {
                // The lane's schedule stops issuing after the lane's last request; wrapping here
                // only keeps an index in bounds.
                let io = ios[*next % ios.len()];
                *next += *step;
                let offset = *region_start + io.offset;
                touched.record(offset, io.len);
                let op = if io.write { Op::Write } else { Op::Read };
                RoutedIo { target: 0, io: NextIo { op, offset, len: io.len } }
            }
        }
    }
}

/// The size of the striped volume: as many whole rows of chunks as the smallest region holds.
pub fn striped_volume(regions: &[Region], stripe: u64) -> u64 {
    let rows = regions.iter().map(|r| r.size / stripe).min().unwrap_or(0);
    rows * stripe * regions.len() as u64
}

/// Maps a volume offset to (target, offset on it). An I/O never crosses a chunk: one that
/// would is moved back to end at the chunk's end (md would split it in two instead).
fn stripe_map(offset: u64, len: u64, stripe: u64, starts: &[u64]) -> (u16, u64) {
    let chunk = offset / stripe;
    let within = (offset % stripe).min(stripe - len);
    let n = starts.len() as u64;
    let target = (chunk % n) as usize;
    (target as u16, starts[target] + chunk / n * stripe + within)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_engine::Op;
    use iolab_spec::{BsWeight, Bytes};

    fn access(random_pct: u32, bs: u64) -> AccessSpec {
        AccessSpec {
            read_pct: 100,
            random_pct,
            bs_split: vec![BsWeight { bs: Bytes(bs), weight: 1 }],
            align: Bytes(4096),
            burst: None,
            distribution: iolab_spec::Distribution::Uniform,
            working_set: None,
        }
    }

    #[test]
    fn sequential_walks_the_chunks_across_targets() {
        let regions = [Region { start: 0, size: 1 << 20 }, Region { start: 4096, size: 1 << 20 }];
        let mut router = Router::new(&access(0, 64 << 10), &regions, Some(128 << 10), 1, 0, 1).expect("fits");
        let got: Vec<(u16, u64)> = (0..6)
            .map(|_| {
                let r = router.next_io();
                (r.target, r.io.offset)
            })
            .collect();
        let k = 1 << 10;
        assert_eq!(got, [(0, 0), (0, 64 * k), (1, 4096), (1, 4096 + 64 * k), (0, 128 * k), (0, 192 * k)]);
    }

    #[test]
    fn striped_ios_stay_inside_one_chunk_and_region() {
        let regions = [
            Region { start: 0, size: 8 << 20 },
            Region { start: 1 << 20, size: 4 << 20 },
            Region { start: 0, size: 5 << 20 },
        ];
        let stripe = 128 << 10;
        let mut router = Router::new(&access(100, 64 << 10), &regions, Some(stripe), 7, 0, 1).expect("fits");
        let mut per_target = [0u32; 3];
        for _ in 0..30_000 {
            let r = router.next_io();
            let region = regions[r.target as usize];
            let end = r.io.offset + u64::from(r.io.len);
            assert!(r.io.offset >= region.start && end <= region.start + (4 << 20), "{r:?}");
            let rel = r.io.offset - region.start;
            assert_eq!(rel / stripe, (end - 1 - region.start) / stripe, "crosses a chunk: {r:?}");
            assert_eq!(r.io.op, Op::Read);
            per_target[r.target as usize] += 1;
        }
        // The smallest region (4 MiB) bounds every target's share of the volume: equal thirds.
        assert!(per_target.iter().all(|&n| (9_000..11_000).contains(&n)), "{per_target:?}");
    }

    #[test]
    fn in_turn_alternates_with_offsets_of_each_target() {
        let regions = [Region { start: 0, size: 1 << 20 }, Region { start: 8192, size: 1 << 20 }];
        let mut router = Router::new(&access(0, 4096), &regions, None, 1, 0, 1).expect("fits");
        let got: Vec<(u16, u64)> = (0..4)
            .map(|_| {
                let r = router.next_io();
                (r.target, r.io.offset)
            })
            .collect();
        assert_eq!(got, [(0, 0), (1, 8192), (0, 4096), (1, 12288)]);
    }

    #[test]
    fn a_replay_router_deals_the_trace_in_turn_and_takes_back_what_was_not_queued() {
        let ios: Arc<[ReplayIo]> = (0..6u64)
            .map(|i| ReplayIo { due_ns: i, write: i % 2 == 1, offset: i * 4096, len: 4096 })
            .collect();
        let mut router = Router::replay(ios, Region { start: 1 << 20, size: 1 << 20 }, 4096, 1, 3);
        let first = router.next_io();
        assert_eq!(
            (first.target, first.io),
            (0, NextIo { op: Op::Write, offset: (1 << 20) + 4096, len: 4096 })
        );
        let second = router.next_io();
        router.put_back();
        assert_eq!(router.next_io(), second, "the request not queued comes again");
        assert_eq!(second.io.offset, (1 << 20) + 4 * 4096);
    }

    #[test]
    fn a_single_target_is_its_own_generator() {
        let regions = [Region { start: 4096, size: 1 << 20 }];
        let mut router = Router::new(&access(100, 4096), &regions, Some(128 << 10), 3, 0, 1).expect("fits");
        let mut plain = AccessGenerator::new(&access(100, 4096), 4096, 1 << 20, 3, 0, 1).expect("fits");
        for _ in 0..100 {
            assert_eq!(router.next_io(), RoutedIo { target: 0, io: plain.next_io() });
        }
    }
}
