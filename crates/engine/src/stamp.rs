//! The mark iolab leaves on the data it writes: every 4 KiB block it lays out, and every 4 KiB
//! of every write buffer, begins with [`MAGIC`]. So any file iolab created, or wrote with a
//! workload since, begins with it too (a write at offset 0 sends the start of a buffer), and a
//! file that does not is someone else's data: writing over it needs `--allow-destroy`
//! (`safety::inspect_file`). It also tells iolab's own leftover scratch files from a user's.

/// The first 8 bytes of every 4 KiB block iolab writes.
pub const MAGIC: [u8; 8] = *b"iolab\0b1";

/// The block size the mark repeats at.
pub const BLOCK: usize = 4096;

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
