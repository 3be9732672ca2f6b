//! A buffer of file data aligned for O_DIRECT, filled with bytes no filesystem compresses or
//! deduplicates away.

/// Memory aligned for O_DIRECT, freed on drop.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    pub fn new(len: usize, fill_seed: u64) -> AlignedBuf {
        let layout =
            std::alloc::Layout::from_size_align(len.max(4096), 4096).expect("4096 is a power of two");
        // SAFETY: the layout's size is above 0.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        let mut buf = AlignedBuf { ptr, layout };
        // Data that no filesystem compresses or deduplicates away.
        let mut state = fill_seed | 1;
        for chunk in buf.as_mut().chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let bytes = state.to_ne_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        buf
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr` holds `layout.size()` initialized bytes owned by this value.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl AsMut<[u8]> for AlignedBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_ref`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this very layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: the buffer is plain memory owned by one value; moving it between threads is sound.
unsafe impl Send for AlignedBuf {}
