//! The mark iolab leaves on the data it writes: every 4 KiB block it lays out, and every 4 KiB
//! of every write buffer, begins with [`MAGIC`]. So any file iolab created, or wrote with a
//! workload since, begins with it too (a write at offset 0 sends the start of a buffer), and a
//! file that does not is someone else's data: writing over it needs `--allow-destroy`
//! (`safety::inspect_file`). It also tells iolab's own leftover scratch files from a user's.
//!
//! Every write of a workload also stamps each 4 KiB block it sends (`WriteStamp`): the mark, the
//! writer's origin (unique to a lane of a run on a host), the write's sequence number and the
//! block's offset. So no two blocks written in a run are equal, on any host of a fleet, and a
//! deduplicating or compressing device cannot make the run look faster than a real workload
//! would: the cheap way fio's scramble_buffers does it, four stores per block. With `--verify`
//! the header grows to 64 bytes: the block's check follows the stamp (`blockcheck`).
//!
//! Per 4 KiB, not per 512-byte sector: a stamp dirties its cache line in the submitting core,
//! and the kernel thread that copies or compresses the block (zram's io-wq worker, the loop
//! device's) fetches each dirty line from that core. Stamping all eight sectors cost zram 25%
//! of its write IOPS (bench/unique_data.py, 6 pairs: 123k against 163k unstamped); one line
//! per block measured 0.992x and 0.968x of the unstamped IOPS in two series (6 and 8 pairs).
//! A device that deduplicates 512-byte sectors sees a block's other seven repeat. The header
//! is written with streaming stores (x86-64), so its line is not left dirty in the submitting
//! core's cache: on the loop device over tmpfs that took the stamp's cost from 1.04-1.07x of
//! the unstamped CPU per I/O (three of four series) to 1.014x and 1.020x (two series of 8
//! pairs), IOPS 1.017x and 1.022x.

use crate::block::{BLOCK, MAGIC};

/// Who writes, and how many writes it has stamped.
#[derive(Debug)]
pub struct WriteStamp {
    origin: u64,
    seq: std::cell::Cell<u64>,
    /// `--verify`: each whole block also gets its check (`blockcheck::seal`).
    sealed: bool,
}

impl WriteStamp {
    /// A writer whose blocks no other writer's equal: `origin` is unique to it.
    pub fn new(origin: u64) -> Self {
        WriteStamp { origin, seq: std::cell::Cell::new(0), sealed: false }
    }

    /// As `new`, and every whole 4 KiB block also carries its check, computed after the
    /// stamp over the block as sent (`blockcheck`), so a read can check it.
    pub fn sealed(origin: u64) -> Self {
        WriteStamp { sealed: true, ..WriteStamp::new(origin) }
    }

    /// Who this writer is.
    pub fn origin(&self) -> u64 {
        self.origin
    }

    /// Stamps `data`, about to be written at `offset`: each 4 KiB block (a shorter write: its
    /// one block) begins with the mark, the origin, this write's sequence number and the block's
    /// own offset (32 bytes, little-endian); the rest of the block is left as it was.
    pub fn stamp(&self, data: &mut [u8], offset: u64) {
        let seq = self.seq.get();
        self.seq.set(seq + 1);
        for (i, block) in data.chunks_mut(BLOCK).enumerate() {
            let at = offset + (i * BLOCK) as u64;
            let mut header = [0u8; 32];
            header[..8].copy_from_slice(&MAGIC);
            header[8..16].copy_from_slice(&self.origin.to_le_bytes());
            header[16..24].copy_from_slice(&seq.to_le_bytes());
            header[24..].copy_from_slice(&at.to_le_bytes());
            let n = block.len().min(header.len());
            if n == header.len() && !self.sealed {
                write_around_cache(block, &header);
            } else {
                block[..n].copy_from_slice(&header[..n]);
            }
            if self.sealed && block.len() == BLOCK {
                crate::blockcheck::seal(block);
            }
        }
        // The streaming stores above are ordered before the submission that hands the buffer
        // to the kernel.
        #[cfg(target_arch = "x86_64")]
        if !self.sealed {
            // SAFETY: sfence has no operands and no precondition.
            unsafe { std::arch::x86_64::_mm_sfence() };
        }
    }
}

/// Writes the 32-byte `header` at the start of `block` (4 KiB aligned) with streaming stores on
/// x86-64, so the line is not left dirty in this core's cache for the kernel thread that copies
/// the block to fetch from it.
fn write_around_cache(block: &mut [u8], header: &[u8; 32]) {
    #[cfg(target_arch = "x86_64")]
    {
        let ptr = block.as_mut_ptr().cast::<i64>();
        if ptr.align_offset(8) == 0 && block.len() >= 32 {
            for (i, word) in header.chunks_exact(8).enumerate() {
                let value = i64::from_le_bytes(word.try_into().unwrap_or_default());
                // Each of the four 8-byte stores is inside `block`, borrowed mutably.
                // SAFETY: `ptr` is 8-byte aligned and `block` holds at least 32 bytes.
                unsafe { std::arch::x86_64::_mm_stream_si64(ptr.add(i), value) };
            }
            return;
        }
    }
    block[..32].copy_from_slice(header);
}

/// An origin no other lane, run or host shares: the host's name, this process, the time and
/// the lane, mixed.
pub fn origin(lane: usize) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().hash(&mut hasher);
    std::process::id().hash(&mut hasher);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_nanos()).hash(&mut hasher);
    lane.hash(&mut hasher);
    hasher.finish()
}

/// Marks the start of every 4 KiB block of `data` (a block shorter than the mark gets what fits).
pub fn mark_blocks(data: &mut [u8]) {
    for block in data.chunks_mut(BLOCK) {
        let len = block.len().min(MAGIC.len());
        block[..len].copy_from_slice(&MAGIC[..len]);
    }
}

/// Whether `head`, the first bytes of a file, carry iolab's mark.
pub fn is_marked(head: &[u8]) -> bool {
    head.starts_with(&MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_of_every_write_differs_and_says_where_it_was_written() {
        let writer = WriteStamp::new(0xfeed);
        let mut first = vec![7u8; 4 * BLOCK];
        let mut second = first.clone();
        writer.stamp(&mut first, 8192);
        writer.stamp(&mut second, 8192);
        let blocks: Vec<&[u8]> = first.chunks(BLOCK).chain(second.chunks(BLOCK)).collect();
        for (i, a) in blocks.iter().enumerate() {
            assert!(is_marked(a));
            assert!(blocks[i + 1..].iter().all(|b| a != b), "block {i} repeats");
        }
        let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
        assert_eq!(
            (word(blocks[3], 8), word(blocks[3], 16), word(blocks[3], 24)),
            (0xfeed, 0, 8192 + 3 * 4096)
        );
        assert_eq!(word(blocks[4], 16), 1, "the second write has the next sequence number");
        assert!(first[32..BLOCK].iter().all(|&b| b == 7), "only the header is written");
        let other = WriteStamp::new(0xbeef);
        let mut third = vec![7u8; BLOCK];
        other.stamp(&mut third, 8192);
        assert_ne!(&third[..], blocks[0], "another writer's block at the same place and sequence differs");
        let mut short = vec![7u8; 512];
        other.stamp(&mut short, 0);
        assert!(is_marked(&short), "a 512-byte write is one block, stamped");
    }

    #[test]
    fn every_block_is_marked_and_the_rest_is_left_alone() {
        let mut data = vec![7u8; 2 * BLOCK + 5];
        mark_blocks(&mut data);
        for block in data.chunks(BLOCK) {
            assert!(is_marked(block) || block.len() < MAGIC.len(), "{block:?}");
        }
        assert_eq!(&data[2 * BLOCK..], &MAGIC[..5]);
        assert!(data[MAGIC.len()..BLOCK].iter().all(|&b| b == 7));
        assert!(!is_marked(&[0u8; 16]));
        assert!(!is_marked(&MAGIC[..4]));
    }
}
