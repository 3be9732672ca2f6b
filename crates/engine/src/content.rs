//! The body of the blocks iolab writes (what follows a block's 32-byte stamp header), shaped by
//! the group's `DataSpec`, and a sample of what was actually sent, to prove it.
//!
//! A write goes through three steps (`AlignedBuffers::io_span`, and the layout writer):
//! `fill` writes each block's body, the stamp (`stamp::WriteStamp`) writes its header, and
//! `finish` turns `--dedupe-pct` of the blocks into whole copies of dedupe-set blocks (header
//! included, so the copies are equal byte for byte) and copies every Nth block into the sample.
//!
//! `--compress-pct P`: each block is its header, then (100 - P)% of the block taken from a
//! random offset of a process-wide pool of random bytes, then zeros. The pool (32 MiB) is far
//! larger than zstd's window (2 MiB at level 3, 8 MiB at 19), so a compressor finds no repeat
//! of the random parts across blocks: the slot buffers cannot be reused as they are, since
//! zstd over the written file would find their bodies repeated. The zeros compress away.
//!
//! A dedupe-set block `k` is a function of the group's seed, `k` and the spec alone: the same
//! on every lane, in the layout, and on every host of a fleet that runs the same job.
//!
//! The dedupe ratio a device can achieve is counted over every block written, not estimated
//! from the sample: stamped blocks are unique by construction, so the distinct blocks are the
//! blocks that are not set copies plus the set blocks copied at least once, which the group's
//! lanes mark in one shared bitmap (`SetSeen`). A set larger than the writes leaves most
//! copies unrepeated, and the ratio says so.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use iolab_spec::{BufferPattern, DataSpec};
use iolab_stats::DataSample;

use crate::block::{BLOCK, MAGIC};

/// Bytes of a block's stamp header; the body follows.
pub const HEADER: usize = 32;

const POOL_BYTES: usize = 32 << 20;

/// The most blocks a lane's sample holds (4 MiB); past that it keeps every other one and
/// samples half as often, so the sample spans the whole run.
const SAMPLE_BLOCKS: usize = 1024;
/// The most blocks a group's samples hold together (64 MiB): a group of many lanes (psync at
/// QD 256 is 256 threads) samples fewer per lane, at least `MIN_SAMPLE_BLOCKS` each.
const GROUP_SAMPLE_BLOCKS: usize = 16 * 1024;
const MIN_SAMPLE_BLOCKS: usize = 64;

/// zstd's level for the achieved compression ratio: its default.
const ZSTD_LEVEL: i32 = 3;

/// Random bytes, made once per process and shared by every lane and the layout writer.
fn pool() -> &'static [u8] {
    static POOL: OnceLock<Box<[u8]>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut state: u64 = 0x853c_49e6_748f_ea9b;
        let mut pool = vec![0u8; POOL_BYTES];
        for word in pool.chunks_exact_mut(8) {
            word.copy_from_slice(&xorshift(&mut state).to_le_bytes());
        }
        pool.into_boxed_slice()
    })
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A well-mixed 64-bit value of `x` (splitmix64's finaliser).
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The largest dedupe set whose copied blocks are counted exactly (a bitmap of 32 MiB per
/// group); beyond it the distinct set blocks are not known and no whole-run ratio is given.
const MAX_COUNTED_SET_BLOCKS: u64 = 1 << 28;

/// Which blocks of a group's dedupe set its lanes have copied: one bit per set block, shared.
#[derive(Debug, Clone, Default)]
pub struct SetSeen(Option<Arc<[AtomicU64]>>);

impl SetSeen {
    /// A bitmap for `spec`'s set when it has copies to count and is not too large to.
    pub fn for_spec(spec: &DataSpec) -> Self {
        let blocks = spec.dedupe_set_blocks();
        let counted =
            spec.dedupe_pct > 0 && spec.pattern == BufferPattern::Random && blocks <= MAX_COUNTED_SET_BLOCKS;
        SetSeen(counted.then(|| (0..blocks.div_ceil(64)).map(|_| AtomicU64::new(0)).collect()))
    }

    fn mark(&self, k: u64) {
        if let Some(words) = &self.0 {
            if let Some(word) = words.get((k / 64) as usize) {
                word.fetch_or(1 << (k % 64), Relaxed);
            }
        }
    }

    /// Set blocks copied at least once; `None` when they were not counted.
    pub fn distinct(&self) -> Option<u64> {
        self.0.as_ref().map(|words| words.iter().map(|w| u64::from(w.load(Relaxed).count_ones())).sum())
    }
}

/// What a writer needs to shape its blocks: the group's data settings and seed (which names
/// its dedupe set), and the group's count of set blocks copied.
#[derive(Debug, Clone, Default)]
pub struct ContentConfig {
    pub spec: DataSpec,
    pub seed: u64,
    pub seen: SetSeen,
    /// The most blocks each lane's sample holds (a power of two).
    pub sample_blocks: usize,
}

impl ContentConfig {
    /// One group's, of `lanes` writers: they share the count of set blocks copied, and their
    /// samples hold at most `GROUP_SAMPLE_BLOCKS` together.
    pub fn new(spec: &DataSpec, seed: u64, lanes: usize) -> Self {
        let share = (GROUP_SAMPLE_BLOCKS / lanes.max(1)).clamp(MIN_SAMPLE_BLOCKS, SAMPLE_BLOCKS);
        ContentConfig {
            spec: spec.clone(),
            seed,
            seen: SetSeen::for_spec(spec),
            // A power of two, so halving the sample keeps its spacing even.
            sample_blocks: 1 << share.ilog2(),
        }
    }
}

/// One writer's content: its random draws and its sample. Not shared between threads.
#[derive(Debug)]
pub struct Content {
    spec: DataSpec,
    /// Body bytes after the header taken from the pool; the rest of the block is zeros.
    random_len: usize,
    /// Names the dedupe set in its blocks' headers (from the group's seed).
    set_tag: u64,
    rng: Cell<u64>,
    /// Blocks to pass before the next one sampled.
    until_sample: Cell<u64>,
    stride: Cell<u64>,
    sample: RefCell<Vec<u8>>,
    sample_blocks: usize,
    seen: SetSeen,
    /// 4 KiB blocks this writer sent, and how many of them were dedupe-set copies.
    written: Cell<u64>,
    copies: Cell<u64>,
}

impl Content {
    /// The content of one writer of a group; `writer` makes its random draws its own.
    pub fn new(config: &ContentConfig, writer: u64) -> Self {
        let spec = config.spec.clone();
        let kept = BLOCK * (100 - spec.compress_pct.min(100) as usize) / 100;
        Content {
            random_len: kept.saturating_sub(HEADER),
            set_tag: mix(config.seed ^ 0x5e7_b10c),
            rng: Cell::new(mix(writer ^ 0x1234_5678_9abc_def1) | 1),
            until_sample: Cell::new(0),
            stride: Cell::new(1),
            sample: RefCell::new(Vec::new()),
            sample_blocks: config.sample_blocks.max(2),
            seen: config.seen.clone(),
            written: Cell::new(0),
            copies: Cell::new(0),
            spec,
        }
    }

    /// Whether the blocks carry the stamp: not with a fixed pattern, which is every byte.
    pub fn stamps(&self) -> bool {
        self.spec.pattern == BufferPattern::Random
    }

    fn draw(&self) -> u64 {
        let mut state = self.rng.get();
        let value = xorshift(&mut state);
        self.rng.set(state);
        value
    }

    /// Writes the body of each block of `data` (a write, or a chunk of the layout): a fixed
    /// pattern fills every byte; `--compress-pct` takes random bytes from the pool and zeros.
    /// The default leaves the buffers' random bytes as they are (the stamp makes each unique).
    pub fn fill(&self, data: &mut [u8]) {
        match &self.spec.pattern {
            BufferPattern::Zero => data.fill(0),
            BufferPattern::Hex(pattern) => {
                for block in data.chunks_mut(BLOCK) {
                    for (byte, &p) in block.iter_mut().zip(pattern.iter().cycle()) {
                        *byte = p;
                    }
                }
            }
            BufferPattern::Random if self.spec.compress_pct > 0 => {
                let pool = pool();
                for block in data.chunks_mut(BLOCK) {
                    let at = (self.draw() % (pool.len() - BLOCK) as u64) as usize;
                    self.compressible_body(block, &pool[at..at + BLOCK]);
                }
            }
            BufferPattern::Random => {}
        }
    }

    /// `block`'s body: `random_len` bytes of `random`, then zeros.
    fn compressible_body(&self, block: &mut [u8], random: &[u8]) {
        if block.len() <= HEADER {
            return;
        }
        let body = &mut block[HEADER..];
        let keep = self.random_len.min(body.len());
        body[..keep].copy_from_slice(&random[..keep]);
        body[keep..].fill(0);
    }

    /// After the stamp: `--dedupe-pct` of the blocks become copies of dedupe-set blocks, and
    /// every Nth block is copied into the sample.
    pub fn finish(&self, data: &mut [u8]) {
        self.written.set(self.written.get() + data.len().div_ceil(BLOCK) as u64);
        if self.spec.dedupe_pct > 0 {
            let set = self.spec.dedupe_set_blocks();
            for block in data.chunks_mut(BLOCK) {
                if self.draw() % 100 < u64::from(self.spec.dedupe_pct) {
                    let k = self.draw() % set;
                    self.set_block(k, block);
                    self.seen.mark(k);
                    self.copies.set(self.copies.get() + 1);
                }
            }
        }
        self.take_sample(data);
    }

    /// Block `k` of the dedupe set (a write shorter than a block gets its start).
    fn set_block(&self, k: u64, block: &mut [u8]) {
        let mut header = [0u8; HEADER];
        header[..8].copy_from_slice(&MAGIC);
        header[8..16].copy_from_slice(&self.set_tag.to_le_bytes());
        header[16..24].copy_from_slice(&k.to_le_bytes());
        header[24..].copy_from_slice(&u64::MAX.to_le_bytes());
        let n = block.len().min(HEADER);
        block[..n].copy_from_slice(&header[..n]);
        let pool = pool();
        let at = (mix(self.set_tag ^ k) % (pool.len() - BLOCK) as u64) as usize;
        if self.spec.compress_pct > 0 {
            self.compressible_body(block, &pool[at..at + BLOCK]);
        } else if block.len() > HEADER {
            let len = block.len();
            block[HEADER..].copy_from_slice(&pool[at + HEADER..at + len]);
        }
    }

    fn take_sample(&self, data: &[u8]) {
        let blocks = data.len().div_ceil(BLOCK) as u64;
        let mut until = self.until_sample.get();
        if until >= blocks {
            self.until_sample.set(until - blocks);
            return;
        }
        let mut sample = self.sample.borrow_mut();
        while until < blocks {
            let start = until as usize * BLOCK;
            let block = &data[start..(start + BLOCK).min(data.len())];
            if block.len() == BLOCK {
                sample.extend_from_slice(block);
            }
            if sample.len() == self.sample_blocks * BLOCK {
                // Keep every other block and sample half as often.
                for i in 1..self.sample_blocks / 2 {
                    sample.copy_within(2 * i * BLOCK..(2 * i + 1) * BLOCK, i * BLOCK);
                }
                sample.truncate(self.sample_blocks / 2 * BLOCK);
                self.stride.set(self.stride.get() * 2);
            }
            until += self.stride.get();
        }
        self.until_sample.set(until - blocks);
    }

    /// The sample, measured: how many blocks repeat another (a dedupe-set block, byte for byte,
    /// or an earlier block of the sample) and what zstd makes of each block on its own, as a
    /// device that compresses per block would. Off the I/O path: called once, at the end.
    pub fn measure(&self) -> DataSample {
        let sample = self.sample.borrow();
        let mut seen = HashSet::new();
        let mut out = DataSample {
            written: self.written.get(),
            set_copies: self.copies.get(),
            ..DataSample::default()
        };
        let mut copy = vec![0u8; BLOCK];
        for block in sample.chunks_exact(BLOCK) {
            out.blocks += 1;
            out.bytes += BLOCK as u64;
            let in_set = block[8..16] == self.set_tag.to_le_bytes() && self.spec.dedupe_pct > 0 && {
                let k = u64::from_le_bytes(block[16..24].try_into().expect("8 bytes"));
                k < self.spec.dedupe_set_blocks() && {
                    self.set_block(k, &mut copy);
                    copy == block
                }
            };
            if !seen.insert(block) || in_set {
                out.repeated += 1;
            }
            out.compressed_bytes += zstd::bulk::compress(block, ZSTD_LEVEL).map_or(BLOCK, |c| c.len()) as u64;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(dedupe_pct: u32, compress_pct: u32, pattern: BufferPattern) -> Content {
        let spec = DataSpec { dedupe_pct, compress_pct, pattern, ..DataSpec::default() };
        Content::new(&ContentConfig::new(&spec, 7, 1), 1)
    }

    /// Writes `blocks` blocks through `content`, stamped as a workload stamps them.
    fn write(content: &Content, blocks: usize) -> Vec<u8> {
        let stamp = crate::stamp::WriteStamp::new(99);
        let mut all = Vec::new();
        let mut buffer = vec![0x5au8; 8 * BLOCK];
        for i in 0..blocks.div_ceil(8) {
            content.fill(&mut buffer);
            if content.stamps() {
                stamp.stamp(&mut buffer, (i * 8 * BLOCK) as u64);
            }
            content.finish(&mut buffer);
            all.extend_from_slice(&buffer);
        }
        all
    }

    #[test]
    fn half_the_blocks_repeat_the_dedupe_set_and_the_sample_says_so() {
        let content = content(50, 0, BufferPattern::Random);
        let data = write(&content, 8192);
        let distinct: HashSet<&[u8]> = data.chunks(BLOCK).collect();
        let share = distinct.len() as f64 / 8192.0;
        assert!((0.48..0.56).contains(&share), "{share}");
        let measured = content.measure();
        assert!(measured.blocks >= 512, "{measured:?}");
        let repeated = measured.repeated as f64 / measured.blocks as f64;
        assert!((0.4..0.6).contains(&repeated), "{measured:?}");
        assert!(measured.compression_ratio() < 1.05, "{measured:?}");
        assert_eq!(measured.written, 8192);
        assert!((0.45..0.55).contains(&(measured.set_copies as f64 / 8192.0)), "{measured:?}");
        // Every one of the 256 set blocks was copied many times: the ratio over all blocks.
        assert_eq!(measured.distinct_blocks(content.seen.distinct()), Some(distinct.len() as u64));
    }

    #[test]
    fn a_group_of_many_lanes_samples_fewer_blocks_in_each() {
        let spec = DataSpec::default();
        assert_eq!(ContentConfig::new(&spec, 7, 1).sample_blocks, SAMPLE_BLOCKS);
        assert_eq!(ContentConfig::new(&spec, 7, 256).sample_blocks, 64);
        assert_eq!(ContentConfig::new(&spec, 7, 24).sample_blocks, 512, "a power of two under 682");
        let content = Content::new(&ContentConfig::new(&spec, 7, 256), 1);
        write(&content, 4096);
        let sampled = content.measure().blocks;
        assert!((32..=64).contains(&sampled), "{sampled}");
    }

    #[test]
    fn a_dedupe_set_larger_than_the_writes_is_seen_to_repeat_little() {
        let spec = DataSpec { dedupe_pct: 50, dedupe_set: iolab_spec::Bytes(1 << 30), ..DataSpec::default() };
        let config = ContentConfig::new(&spec, 7, 1);
        let content = Content::new(&config, 1);
        let data = write(&content, 4096);
        let distinct: HashSet<&[u8]> = data.chunks(BLOCK).collect();
        let counted = content.measure().distinct_blocks(config.seen.distinct()).expect("counted");
        assert_eq!(counted, distinct.len() as u64);
        assert!(
            counted > 4050,
            "2,048 copies of a 262,144-block set barely repeat: {counted} of 4,096 distinct"
        );
    }

    #[test]
    fn compress_pct_sets_what_zstd_makes_of_each_block() {
        let content = content(0, 50, BufferPattern::Random);
        let data = write(&content, 2048);
        let distinct: HashSet<&[u8]> = data.chunks(BLOCK).collect();
        assert_eq!(distinct.len(), 2048, "still unique");
        let ratio = content.measure().compression_ratio();
        assert!((1.8..2.2).contains(&ratio), "{ratio}");
        let whole = data.len() as f64 / zstd::bulk::compress(&data, 3).expect("zstd").len() as f64;
        assert!((1.8..2.2).contains(&whole), "{whole}");
    }

    #[test]
    fn a_pattern_is_every_byte_and_the_sample_sees_it_repeat() {
        let zero = content(0, 0, BufferPattern::Zero);
        assert!(write(&zero, 64).iter().all(|&b| b == 0));
        assert_eq!(zero.measure().repeated, zero.measure().blocks - 1);
        let hex = content(0, 0, BufferPattern::Hex(vec![0xde, 0xad, 0xbe]));
        let data = write(&hex, 16);
        for block in data.chunks(BLOCK) {
            assert!(block.iter().enumerate().all(|(i, &b)| b == [0xde, 0xad, 0xbe][i % 3]));
        }
    }

    #[test]
    fn the_default_leaves_the_body_alone_and_samples_unique_blocks() {
        let content = content(0, 0, BufferPattern::Random);
        let data = write(&content, 4096);
        assert!(data.chunks(BLOCK).all(|b| b[HEADER..].iter().all(|&x| x == 0x5a)));
        let measured = content.measure();
        assert_eq!(measured.repeated, 0);
        assert!(measured.blocks > 100);
    }
}
