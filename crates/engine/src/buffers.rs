//! Page-aligned I/O buffers, one per slot, as O_DIRECT requires.
//!
//! The memory is filled with pseudo-random bytes once, so writes never send zeros that a
//! compressing or deduplicating device would make look fast, and each 4 KiB carries iolab's
//! mark (`stamp`), so a file iolab wrote is known as iolab's.

use std::alloc::{alloc, dealloc, Layout};

use crate::content::Content;
use crate::engine::{IoRequest, Op};
use crate::error::EngineError;
use crate::stamp::WriteStamp;

const ALIGN: usize = 4096;

pub struct AlignedBuffers {
    base: *mut u8,
    layout: Layout,
    stride: usize,
    /// Stamps every write (`stamp::WriteStamp`); `None` sends the buffers as filled, the same
    /// bytes from a slot on every write (for the benchmark that measures what stamping costs).
    writes: Option<WriteStamp>,
    /// What the writes' block bodies hold (`content`); `None`: the buffers as filled.
    content: Option<Content>,
}

// SAFETY: the allocation is owned by this struct and only reached through it; the raw pointer
// is not shared with other threads except through the kernel, which the engines coordinate.
unsafe impl Send for AlignedBuffers {}

impl AlignedBuffers {
    /// `origin` names the writer in every write's stamp (`stamp::origin`); `None` stamps nothing.
    pub fn new(slots: u32, max_len: u32, seed: u64, origin: Option<u64>) -> Result<Self, EngineError> {
        let stride = (max_len as usize).div_ceil(ALIGN).max(1) * ALIGN;
        let size = stride * slots.max(1) as usize;
        let layout = Layout::from_size_align(size, ALIGN).map_err(|_| EngineError::Syscall {
            call: "buffer layout",
            source: std::io::Error::from_raw_os_error(libc::EINVAL),
        })?;
        // SAFETY: `layout` has a non-zero size (at least one page).
        let base = unsafe { alloc(layout) };
        if base.is_null() {
            return Err(EngineError::Syscall {
                call: "allocating I/O buffers",
                source: std::io::Error::from_raw_os_error(libc::ENOMEM),
            });
        }
        let mut buffers =
            AlignedBuffers { base, layout, stride, writes: origin.map(WriteStamp::new), content: None };
        buffers.fill(seed);
        crate::stamp::mark_blocks(buffers.as_mut_slice());
        Ok(buffers)
    }

    /// `--verify`: writes also carry their blocks' checksums (`stamp::WriteStamp::sealed`).
    pub fn sealed(mut self, on: bool) -> Self {
        if let (true, Some(writes)) = (on, &self.writes) {
            self.writes = Some(crate::stamp::WriteStamp::sealed(writes.origin()));
        }
        self
    }

    /// The first `len` bytes of `slot`'s buffer, as the last request of the slot left them: for
    /// the caller to check what a read brought in, once the request is reaped.
    pub fn data(&self, slot: u32, len: u32) -> &[u8] {
        let ptr = self.span(slot, len);
        // SAFETY: `span` kept `len` bytes from `ptr` inside the allocation; the caller asks
        // only about a reaped slot, which neither the kernel nor a request touches until it is
        // queued again, and queueing needs `&mut` of the engine that owns `self`.
        unsafe { std::slice::from_raw_parts(ptr, len as usize) }
    }

    /// Shapes every write's block bodies with `content` (`--dedupe-pct`, `--compress-pct`,
    /// `--buffer-pattern`) and samples what is sent.
    pub fn with_content(mut self, content: Content) -> Self {
        self.content = Some(content);
        self
    }

    /// The writes' sample, measured (`Content::measure`); `None` without content.
    pub fn data_sample(&self) -> Option<iolab_stats::DataSample> {
        self.content.as_ref().map(Content::measure)
    }

    fn fill(&self, seed: u64) {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        for word in 0..self.layout.size() / 8 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // SAFETY: `word * 8 + 8 <= size`, inside the allocation; u8 pointer writes need no
            // alignment beyond the page alignment the allocation has.
            unsafe {
                std::ptr::copy_nonoverlapping(state.to_ne_bytes().as_ptr(), self.base.add(word * 8), 8)
            };
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `base` points at `layout.size()` bytes this struct owns, and `&mut self` keeps
        // every other use of them away while the slice lives (no I/O is in flight yet).
        unsafe { std::slice::from_raw_parts_mut(self.base, self.layout.size()) }
    }

    /// The buffer of `slot` for a transfer of `len` bytes: the pointer is where the kernel may
    /// read or write `len` bytes, and stays valid for the life of `self`. Every pointer handed
    /// to the kernel is made here, so the check that `len` fits the slot is made once for all
    /// engines: a request longer than the slots were made for is a bug, never memory the
    /// kernel may overwrite.
    pub fn span(&self, slot: u32, len: u32) -> *mut u8 {
        assert!(
            len as usize <= self.stride,
            "a {len}-byte transfer does not fit a {}-byte slot",
            self.stride
        );
        assert!((slot as usize + 1) * self.stride <= self.layout.size(), "slot {slot} out of range");
        // SAFETY: the assertions keep the offset, and `len` bytes after it, inside the allocation.
        unsafe { self.base.add(slot as usize * self.stride) }
    }

    /// The buffer of `slot` for `request`: as `span`, and a write's bytes stamped first (each
    /// 4 KiB block with the writer, the write's number and its offset). Reads cost nothing more.
    pub fn io_span(&self, slot: u32, request: &IoRequest) -> *mut u8 {
        let ptr = self.span(slot, request.len);
        if let (Op::Write, Some(writes)) = (request.op, &self.writes) {
            // An engine is handed a slot only after its last request was reaped, so neither the
            // kernel nor another request reads or writes these bytes now.
            // SAFETY: `span` kept `len` bytes from `ptr` inside the allocation; the slot is free.
            let bytes = unsafe { std::slice::from_raw_parts_mut(ptr, request.len as usize) };
            match &self.content {
                None => writes.stamp(bytes, request.offset),
                Some(content) => {
                    content.fill(bytes);
                    if content.stamps() {
                        writes.stamp(bytes, request.offset);
                    }
                    content.finish(bytes);
                }
            }
        }
        ptr
    }

    /// Gives up the memory without freeing it: for when the kernel may still write into it.
    pub fn leak(self) {
        std::mem::forget(self);
    }
}

impl Drop for AlignedBuffers {
    fn drop(&mut self) {
        // SAFETY: `base` came from `alloc` with this same layout and is freed once.
        unsafe { dealloc(self.base, self.layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_that_fits_its_slot_is_inside_the_allocation() {
        let buffers = AlignedBuffers::new(4, 8192, 1, None).expect("buffers");
        let (first, last) = (buffers.span(0, 8192), buffers.span(3, 4096));
        assert_eq!(last as usize - first as usize, 3 * 8192);
        assert_eq!(first as usize % ALIGN, 0);
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn a_transfer_longer_than_the_slot_is_refused_before_any_pointer_is_made() {
        let buffers = AlignedBuffers::new(2, 4096, 1, None).expect("buffers");
        let _ = buffers.span(0, 8192);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn a_slot_beyond_the_buffers_is_refused() {
        let buffers = AlignedBuffers::new(2, 4096, 1, None).expect("buffers");
        let _ = buffers.span(2, 4096);
    }
}
