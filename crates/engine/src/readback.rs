//! Reading a region's blocks back, as `iolab verify` does after a run.

use crate::block::BLOCK;
use crate::buffers::AlignedBuffers;

/// Reads `len` bytes of `path` from `start` once, 1 MiB at a time (O_DIRECT where the file
/// takes it, else through the page cache), handing each whole 4 KiB block to `each` with its
/// offset: `iolab verify`'s pass over a region. A short read ends the pass early.
pub fn read_blocks(
    path: &std::path::Path,
    start: u64,
    len: u64,
    mut each: impl FnMut(u64, &[u8]),
) -> std::io::Result<u64> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    const CHUNK: u32 = 1 << 20;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .or_else(|_| std::fs::File::open(path))?;
    let buffers = AlignedBuffers::new(1, CHUNK, 1, None).map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut done = 0u64;
    while done < len {
        let want = (len - done).min(u64::from(CHUNK)) as u32;
        let ptr = buffers.span(0, want);
        // SAFETY: `span` checked that `want` bytes from `ptr` are inside the buffer, which
        // nothing else uses: this function owns it.
        let chunk = unsafe { std::slice::from_raw_parts_mut(ptr, want as usize) };
        let n = loop {
            match file.read_at(chunk, start + done) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        for (i, block) in chunk[..n - n % BLOCK].chunks_exact(BLOCK).enumerate() {
            each(start + done + (i * BLOCK) as u64, block);
        }
        done += (n - n % BLOCK) as u64;
        if n < want as usize {
            break;
        }
    }
    Ok(done)
}
