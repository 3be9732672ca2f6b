//! The layout every block iolab writes shares: its size and the mark it opens with. The
//! stamp (`stamp`), the verify check (`blockcheck`) and the content generator (`content`)
//! build on it.

/// The first 8 bytes of every 4 KiB block iolab writes.
pub const MAGIC: [u8; 8] = *b"iolab\0b1";

/// The block size the mark repeats at.
pub const BLOCK: usize = 4096;
