//! The kernel's block tracing (blktrace's ioctl interface): set a trace up on a block device,
//! start and stop it, and tear it down. While it runs, the kernel writes one `blk_io_trace`
//! record per event to per-CPU relay files under debugfs
//! (`/sys/kernel/debug/block/NAME/traceN`), which `iolab-trace` reads and parses; this module
//! only holds the four ioctls, because every `unsafe` of the project lives in this crate.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// `struct blk_user_trace_setup` of include/uapi/linux/blktrace_api.h.
#[repr(C)]
struct BlkUserTraceSetup {
    name: [u8; 32],
    act_mask: u16,
    buf_size: u32,
    buf_nr: u32,
    start_lba: u64,
    end_lba: u64,
    pid: u32,
}

/// _IOWR(0x12, 115, struct blk_user_trace_setup): 72 bytes.
const BLKTRACESETUP: libc::c_ulong = 0xC048_1273;
/// _IO(0x12, 116), _IO(0x12, 117), _IO(0x12, 118).
const BLKTRACESTART: libc::c_ulong = 0x1274;
const BLKTRACESTOP: libc::c_ulong = 0x1275;
const BLKTRACETEARDOWN: libc::c_ulong = 0x1276;

/// A block trace set up on one device: stopped and torn down when dropped, so a capture that
/// fails or is interrupted leaves no trace running in the kernel.
pub struct BlockTrace {
    device: File,
    /// The name the kernel gave the trace: its directory under debugfs's `block/`.
    name: String,
    running: bool,
}

impl BlockTrace {
    /// Sets up a trace of the events whose categories are in `act_mask` (`BLK_TC_*`) on the
    /// block device `device`, with `buf_nr` relay buffers of `buf_size` bytes per CPU.
    /// Needs CAP_SYS_ADMIN; EBUSY: a trace is already set up on the device.
    pub fn set_up(device: File, act_mask: u16, buf_size: u32, buf_nr: u32) -> io::Result<Self> {
        let mut setup =
            BlkUserTraceSetup { name: [0; 32], act_mask, buf_size, buf_nr, start_lba: 0, end_lba: 0, pid: 0 };
        // SAFETY: BLKTRACESETUP reads and writes one `blk_user_trace_setup`, which `setup` is
        // (repr(C), the kernel's layout), alive for the call; the descriptor is `device`'s.
        let done =
            unsafe { libc::ioctl(device.as_raw_fd(), BLKTRACESETUP, &mut setup as *mut BlkUserTraceSetup) };
        if done != 0 {
            return Err(io::Error::last_os_error());
        }
        let end = setup.name.iter().position(|&b| b == 0).unwrap_or(setup.name.len());
        let name = String::from_utf8_lossy(&setup.name[..end]).into_owned();
        Ok(BlockTrace { device, name, running: false })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn start(&mut self) -> io::Result<()> {
        self.call(BLKTRACESTART)?;
        self.running = true;
        Ok(())
    }

    /// Stops the trace; what it wrote stays readable until it is torn down (on drop).
    pub fn stop(&mut self) -> io::Result<()> {
        if self.running {
            self.running = false;
            self.call(BLKTRACESTOP)?;
        }
        Ok(())
    }

    fn call(&self, request: libc::c_ulong) -> io::Result<()> {
        // SAFETY: the start, stop and teardown ioctls take no argument; the descriptor is
        // `self.device`'s, open for the call.
        let done = unsafe { libc::ioctl(self.device.as_raw_fd(), request, 0) };
        if done == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

impl Drop for BlockTrace {
    fn drop(&mut self) {
        let _ = self.stop();
        let _ = self.call(BLKTRACETEARDOWN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setup_struct_has_the_kernels_size() {
        // The ioctl number encodes the size: 0x48 = 72 bytes.
        assert_eq!(std::mem::size_of::<BlkUserTraceSetup>(), 72);
        assert_eq!((BLKTRACESETUP >> 16) & 0x3fff, 72);
    }

    #[test]
    fn a_regular_file_cannot_be_traced() {
        let file = tempfile::tempfile().expect("temp file");
        let error = BlockTrace::set_up(file, 0xffff, 1 << 16, 4).err().expect("refused");
        // ENOTTY on a file; EPERM or EACCES without CAP_SYS_ADMIN on some kernels.
        assert!(error.raw_os_error().is_some(), "{error}");
    }
}
