//! Page-aligned I/O buffers, one per slot, as O_DIRECT requires.
//!
//! The memory is filled with pseudo-random bytes once, so writes never send zeros that a
//! compressing or deduplicating device would make look fast, and each 4 KiB carries iolab's
//! mark (`stamp`), so a file iolab wrote is known as iolab's.

use std::alloc::{alloc, dealloc, Layout};

use crate::error::EngineError;

const ALIGN: usize = 4096;

pub struct AlignedBuffers {
    base: *mut u8,
    layout: Layout,
    stride: usize,
}

// SAFETY: the allocation is owned by this struct and only reached through it; the raw pointer
// is not shared with other threads except through the kernel, which the engines coordinate.
unsafe impl Send for AlignedBuffers {}

impl AlignedBuffers {
    pub fn new(slots: u32, max_len: u32, seed: u64) -> Result<Self, EngineError> {
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
        let mut buffers = AlignedBuffers { base, layout, stride };
        buffers.fill(seed);
        crate::stamp::mark_blocks(buffers.as_mut_slice());
        Ok(buffers)
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

    /// The buffer of `slot`. The pointer stays valid for the life of `self`.
    pub fn slot_ptr(&self, slot: u32) -> *mut u8 {
        assert!((slot as usize + 1) * self.stride <= self.layout.size(), "slot {slot} out of range");
        // SAFETY: the assertion keeps the offset inside the allocation.
        unsafe { self.base.add(slot as usize * self.stride) }
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
