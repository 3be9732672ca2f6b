//! The share of a region's blocks that a run's I/Os touched: a bitmap per lane and target,
//! merged (OR) per group when the lanes are done.
//!
//! A block is `--align` bytes (by default the smallest block size); an I/O touches every block
//! it covers. Up to the capacity (2^16 blocks, 256 MiB of 4 KiB blocks) every block has its bit
//! and the count is exact. Beyond, a fixed sample of that many blocks is tracked, chosen by a
//! multiplicative bijection (block b is in it when b x A mod 2^k falls below the capacity, A
//! odd), so the share is an unbiased estimate with a standard error under 0.2 percentage
//! points. The bitmap is at most 8 KiB, a quarter of a core's L1 data cache, and an I/O costs
//! one multiply and one compare (plus one bit write when its block is tracked): a 128 KiB bitmap
//! was measured to cost the null engine about a fifth of its time per I/O. A group of many
//! threads (psync runs one per outstanding I/O) gives each a smaller capacity, 2^16 / threads
//! but at least 2^12 (512 bytes), so 4,096 threads hold 2 MiB.

/// Blocks tracked at most: 2^16 bits, 8 KiB per lane and target, and with many lanes at least
/// 2^12.
const MOST_BITS: u32 = 16;
const LEAST_BITS: u32 = 12;
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Debug, Clone)]
pub struct Touched {
    start: u64,
    /// Blocks that have a bit: every one, or the sample's size.
    capacity: u64,
    block: u64,
    /// log2 of `block` when it is a power of two: a shift instead of a division.
    block_shift: Option<u32>,
    blocks: u64,
    /// Sampled: blocks are tracked through b x MULTIPLIER mod 2^bits. `None`: every block.
    sample_mask: Option<u64>,
    bitmap: Vec<u64>,
}

/// What a group's merged bitmaps say.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coverage {
    pub block_bytes: u64,
    pub blocks: u64,
    /// Blocks touched: counted, or estimated from the sample.
    pub touched: f64,
    pub sampled: bool,
}

impl Touched {
    /// Tracks `start..start + size` in blocks of `block` bytes, for one of `lanes` lanes that
    /// share the region (every lane of a group tracks the same sample).
    pub fn new(start: u64, size: u64, block: u64, lanes: u32) -> Touched {
        let block = block.max(1);
        let blocks = size.div_ceil(block).max(1);
        let shrink = (32 - lanes.max(1).saturating_sub(1).leading_zeros()).min(MOST_BITS - LEAST_BITS);
        let capacity = 1u64 << (MOST_BITS - shrink);
        let sample_mask = (blocks > capacity).then(|| {
            let bits = 64 - (blocks - 1).leading_zeros();
            if bits == 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            }
        });
        let tracked = if sample_mask.is_some() { capacity } else { blocks };
        Touched {
            start,
            capacity,
            block,
            block_shift: block.is_power_of_two().then(|| block.trailing_zeros()),
            blocks,
            sample_mask,
            bitmap: vec![0; tracked.div_ceil(64) as usize],
        }
    }

    #[inline]
    pub fn record(&mut self, offset: u64, len: u32) {
        let from = offset - self.start;
        let to = from + u64::from(len.max(1)) - 1;
        let (first, last) = match self.block_shift {
            Some(shift) => (from >> shift, to >> shift),
            None => (from / self.block, to / self.block),
        };
        if first == last {
            self.mark(first);
        } else {
            for block in first..=last.min(self.blocks - 1) {
                self.mark(block);
            }
        }
    }

    #[inline(always)]
    fn mark(&mut self, block: u64) {
        let bit = match self.sample_mask {
            None => block,
            Some(mask) => block.wrapping_mul(MULTIPLIER) & mask,
        };
        if let Some(word) = self.bitmap.get_mut((bit >> 6) as usize) {
            *word |= 1 << (bit & 63);
        }
    }

    /// Adds what `other` saw of the same region.
    pub fn merge(&mut self, other: &Touched) {
        if other.capacity == self.capacity && other.sample_mask == self.sample_mask {
            self.bitmap.iter_mut().zip(&other.bitmap).for_each(|(a, b)| *a |= b);
        }
    }

    pub fn coverage(&self) -> Coverage {
        let set: u64 = self.bitmap.iter().map(|w| u64::from(w.count_ones())).sum();
        let touched = match self.sample_mask {
            None => set as f64,
            Some(mask) => {
                // The blocks of the region in the sample: those whose image is below capacity.
                let inverse = odd_inverse(MULTIPLIER);
                let tracked =
                    (0..self.capacity).filter(|&h| h.wrapping_mul(inverse) & mask < self.blocks).count();
                set as f64 / tracked.max(1) as f64 * self.blocks as f64
            }
        };
        Coverage {
            block_bytes: self.block,
            blocks: self.blocks,
            touched,
            sampled: self.sample_mask.is_some(),
        }
    }
}

/// The inverse of an odd number modulo 2^64 (Newton's iteration doubles the good bits).
fn odd_inverse(a: u64) -> u64 {
    let mut x = a;
    for _ in 0..6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
    }
    x
}

impl Coverage {
    /// The coverage of several regions (targets) together.
    pub fn sum(parts: &[Coverage]) -> Option<Coverage> {
        let first = parts.first()?;
        Some(Coverage {
            block_bytes: first.block_bytes,
            blocks: parts.iter().map(|c| c.blocks).sum(),
            touched: parts.iter().map(|c| c.touched).sum(),
            sampled: parts.iter().any(|c| c.sampled),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_regions_count_exactly_and_ios_cover_their_blocks() {
        let mut touched = Touched::new(4096, 100 * 4096, 4096, 1);
        touched.record(4096, 4096);
        touched.record(4096 + 10 * 4096, 3 * 4096);
        let mut other = Touched::new(4096, 100 * 4096, 4096, 1);
        other.record(4096 + 11 * 4096, 4096);
        other.record(4096 + 99 * 4096, 4096);
        touched.merge(&other);
        let coverage = touched.coverage();
        assert_eq!((coverage.blocks, coverage.touched, coverage.sampled), (100, 5.0, false));
        let mut odd = Touched::new(0, 3000, 1000, 1);
        odd.record(1500, 1000);
        assert_eq!(odd.coverage().touched, 2.0);
    }

    #[test]
    fn large_regions_estimate_from_a_sample() {
        // 2^24 + 5 blocks, a quarter of them touched (every fourth in the first half, and the
        // next eighth whole).
        let blocks = (1u64 << 24) + 5;
        let truth = (blocks / 8 + blocks / 8) as f64;
        for (lanes, tolerance) in [(1, 0.02), (4096, 0.08)] {
            let mut touched = Touched::new(0, blocks * 512, 512, lanes);
            for block in (0..blocks / 2).step_by(4) {
                touched.record(block * 512, 512);
            }
            for block in blocks / 2..blocks / 2 + blocks / 8 {
                touched.record(block * 512, 512);
            }
            let coverage = touched.coverage();
            assert!(coverage.sampled);
            assert!(
                (coverage.touched / truth - 1.0).abs() < tolerance,
                "{lanes}: {} vs {truth}",
                coverage.touched
            );
            assert_eq!(touched.bitmap.len() as u64 * 64, touched.capacity);
        }
        assert_eq!(Touched::new(0, 1 << 40, 512, 64).capacity, 1 << 12);
        assert_eq!(Touched::new(0, 1 << 40, 512, 2).capacity, 1 << 15);
        assert_eq!(odd_inverse(MULTIPLIER).wrapping_mul(MULTIPLIER), 1);
    }
}
