//! What `--verify` adds to a block's stamp, and how a block read back is judged.
//!
//! With `--verify` every 4 KiB block written carries, after the 32-byte stamp (`stamp`: mark,
//! origin, sequence, offset), its check (bytes 32..64, so the whole header is one cache line):
//! - bytes 32..40: an XXH3-64 of the block's body (bytes 64..4096) seeded with the stamp, so
//!   it covers the stamp too: what a read computes, one pass over the block;
//! - bytes 40..56: eight 16-bit sector checks (the low half of a CRC-32 of each 512-byte
//!   sector; sector 0's covers its bytes 0..32 and 64..512, the stamp and the body), computed
//!   on every write but read only when the block hash fails, to say how the block is damaged;
//! - bytes 56..64: `FORMAT`, this layout's name (a block written by an older layout fails).
//!
//! One hash per block on the read path rather than a CRC per sector: XXH3 (the twox-hash
//! crate, which picks AVX2 or SSE2 at run time) reads 4 KiB in about 120 ns here, eight
//! CRC-32s take about 300 ns (bench/verify.py measures what it costs a read). A damaged block
//! fails the 64-bit hash but for a chance of 2^-64.
//!
//! The sector checks tell a torn write from corrupted bytes: devices write whole sectors, so a
//! 4 KiB write cut short lands as its first sectors (header intact) over the older tail. A
//! block is judged **torn** when sector 0 checks out and the failing sectors are a run of two
//! or more that ends the block; one failing sector, or failures with good sectors after them,
//! are **corrupted bytes**. (A tear after the seventh sector is therefore reported as
//! corrupted bytes: it cannot be told from a damaged last sector. A damaged sector passes its
//! 16-bit check by a chance of 2^-16; that changes the kind reported, never whether the block
//! is bad.)
//!
//! The persisted record of a block (`record`) is a 64-bit hash of the (origin, sequence) of
//! the write that should be there; 0 means none was recorded and `AMBIGUOUS` that concurrent
//! writes of the block left either one's data possible.

use crate::block::{BLOCK, MAGIC};
use twox_hash::XxHash3_64;

/// The bytes a sector holds.
pub const SECTOR: usize = 512;
/// The stamp and the check.
pub const HEADER: usize = 64;
const SECTORS: usize = BLOCK / SECTOR;
/// Where the check's parts sit in the header.
const BLOCK_HASH: usize = 32;
const SECTOR_CHECKS: usize = 40;
const FORMAT_AT: usize = 56;
/// The name of this check's layout (bytes 56..64).
const FORMAT: [u8; 8] = *b"xxh3s16\0";

/// A block's record when nothing was recorded for it.
pub const UNWRITTEN: u64 = 0;
/// A block's record when overlapping writes were in flight together: either may be there.
pub const AMBIGUOUS: u64 = u64::MAX;

/// The record of the write (`origin`, `seq`): never `UNWRITTEN` or `AMBIGUOUS`.
pub fn record(origin: u64, seq: u64) -> u64 {
    let mixed = splitmix(origin ^ splitmix(seq));
    match mixed {
        UNWRITTEN | AMBIGUOUS => 1,
        other => other,
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The 16-bit check of `sector` of `block`.
fn sector_check(block: &[u8], sector: usize) -> u16 {
    let crc = if sector == 0 {
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&block[..32]);
        hasher.update(&block[HEADER..SECTOR]);
        hasher.finalize()
    } else {
        crc32fast::hash(&block[sector * SECTOR..(sector + 1) * SECTOR])
    };
    crc as u16
}

/// The hash of a whole block: its body, seeded with every other header word (the stamp, the
/// sector checks, the format), so a change anywhere in the block but the hash itself fails it.
fn block_hash(block: &[u8]) -> u64 {
    let word = |at: usize| u64::from_le_bytes(block[at..at + 8].try_into().unwrap_or_default());
    let seed = [0, 8, 16, 24, 40, 48, 56].iter().fold(0, |seed, &at| splitmix(seed ^ word(at)));
    XxHash3_64::oneshot_with_seed(seed, &block[HEADER..])
}

/// Writes the check of a stamped 4 KiB `block` into its header (bytes 32..64).
pub fn seal(block: &mut [u8]) {
    debug_assert_eq!(block.len(), BLOCK);
    for sector in 0..SECTORS {
        let check = sector_check(block, sector);
        block[SECTOR_CHECKS + 2 * sector..SECTOR_CHECKS + 2 * sector + 2]
            .copy_from_slice(&check.to_le_bytes());
    }
    block[FORMAT_AT..HEADER].copy_from_slice(&FORMAT);
    let hash = block_hash(block);
    block[BLOCK_HASH..BLOCK_HASH + 8].copy_from_slice(&hash.to_le_bytes());
}

/// The stamp a block carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub origin: u64,
    pub seq: u64,
    pub offset: u64,
}

impl Found {
    /// The stamp at the start of `block`, if it carries iolab's mark.
    pub fn read(block: &[u8]) -> Option<Found> {
        if block.len() < 32 || block[..8] != MAGIC {
            return None;
        }
        let word = |at: usize| u64::from_le_bytes(block[at..at + 8].try_into().unwrap_or_default());
        Some(Found { origin: word(8), seq: word(16), offset: word(24) })
    }

    pub fn record(&self) -> u64 {
        record(self.origin, self.seq)
    }
}

pub use iolab_stats::verify::DataErrorKind as Kind;

/// The verdict on one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Good,
    /// No write of the block was recorded: nothing to check it against.
    NeverWritten,
    Bad(Kind, Option<Found>),
}

/// Judges the 4 KiB `block` read at `offset` against its record `expected`. The cost on a good
/// block: one XXH3 over 4 KiB and a few compares, no allocation.
pub fn check(block: &[u8], offset: u64, expected: u64) -> Verdict {
    if expected == UNWRITTEN {
        return Verdict::NeverWritten;
    }
    let Some(found) = Found::read(block) else { return Verdict::Bad(Kind::LostWrite, None) };
    if block.len() != BLOCK {
        return Verdict::Bad(Kind::CorruptedBytes, Some(found));
    }
    let stored_hash = u64::from_le_bytes(block[BLOCK_HASH..BLOCK_HASH + 8].try_into().unwrap_or_default());
    if block[FORMAT_AT..HEADER] != FORMAT || block_hash(block) != stored_hash {
        return Verdict::Bad(damage(block), Some(found));
    }
    if found.offset != offset {
        return Verdict::Bad(Kind::MisdirectedWrite, Some(found));
    }
    if expected != AMBIGUOUS && found.record() != expected {
        return Verdict::Bad(Kind::StaleData, Some(found));
    }
    Verdict::Good
}

/// How a block that failed its hash is damaged, from its sector checks: a torn write or
/// corrupted bytes (the module's notes give the rule).
fn damage(block: &[u8]) -> Kind {
    let stored = |sector: usize| {
        let at = SECTOR_CHECKS + 2 * sector;
        u16::from_le_bytes(block[at..at + 2].try_into().unwrap_or_default())
    };
    // Failing sectors as a bit set: bit i for sector i.
    let mut failed = 0u32;
    for sector in 0..SECTORS {
        if sector_check(block, sector) != stored(sector) {
            failed |= 1 << sector;
        }
    }
    let full = (1u32 << SECTORS) - 1;
    // A tail run: bits k..8 set, k >= 1, at least two of them.
    let torn = failed != 0 && failed & 1 == 0 && (failed | (failed - 1)) == full && failed.count_ones() >= 2;
    if torn {
        Kind::TornWrite
    } else {
        Kind::CorruptedBytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stamp::WriteStamp;

    fn written(writer: &WriteStamp, offset: u64) -> Vec<u8> {
        let mut block: Vec<u8> = (0..BLOCK).map(|i| (i * 7 % 251) as u8).collect();
        writer.stamp(&mut block, offset);
        seal(&mut block);
        block
    }

    #[test]
    fn each_kind_of_damage_is_told_apart() {
        let writer = WriteStamp::new(9);
        let good = written(&writer, 8192);
        let expected = record(9, 0);
        assert_eq!(check(&good, 8192, expected), Verdict::Good);
        assert_eq!(check(&good, 8192, AMBIGUOUS), Verdict::Good);
        assert_eq!(check(&good, 8192, UNWRITTEN), Verdict::NeverWritten);
        let kind = |v: Verdict| match v {
            Verdict::Bad(kind, _) => Some(kind),
            _ => None,
        };
        assert_eq!(kind(check(&good, 4096, expected)), Some(Kind::MisdirectedWrite));
        assert_eq!(kind(check(&good, 8192, record(9, 1))), Some(Kind::StaleData));
        assert_eq!(kind(check(&[0u8; BLOCK], 8192, expected)), Some(Kind::LostWrite));
        let mut flipped = good.clone();
        flipped[1000] ^= 1;
        assert_eq!(kind(check(&flipped, 8192, expected)), Some(Kind::CorruptedBytes));
        let mut header = good.clone();
        header[20] ^= 1;
        assert_eq!(kind(check(&header, 8192, expected)), Some(Kind::CorruptedBytes));
        let mut torn = good.clone();
        torn[5 * SECTOR..].fill(0xaa);
        assert_eq!(kind(check(&torn, 8192, expected)), Some(Kind::TornWrite));
        let mut checks = good.clone();
        checks[SECTOR_CHECKS + 3] ^= 1;
        assert_eq!(kind(check(&checks, 8192, expected)), Some(Kind::CorruptedBytes), "a sector check");
        let mut hash = good.clone();
        hash[BLOCK_HASH] ^= 1;
        assert_eq!(kind(check(&hash, 8192, expected)), Some(Kind::CorruptedBytes), "the block hash");
        let mut holed = good.clone();
        holed[2 * SECTOR..4 * SECTOR].fill(0xaa);
        assert_eq!(kind(check(&holed, 8192, expected)), Some(Kind::CorruptedBytes), "good sectors after");
    }

    #[test]
    fn records_are_never_the_reserved_values() {
        for seq in 0..10_000 {
            let r = record(seq * 31, seq);
            assert!(r != UNWRITTEN && r != AMBIGUOUS);
        }
        assert_ne!(record(1, 2), record(2, 1));
    }
}
