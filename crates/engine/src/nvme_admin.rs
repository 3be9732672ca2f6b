//! NVMe admin commands through the kernel's passthrough ioctl (`NVME_IOCTL_ADMIN_CMD`,
//! include/uapi/linux/nvme_ioctl.h): here, Get Log Page, which the environment fingerprint uses
//! to read a drive's SMART / Health log. The kernel wants CAP_SYS_ADMIN for admin commands even
//! on a descriptor opened read-only.

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;

/// The bytes of one log page as read here (the SMART / Health log's size).
pub const LOG_PAGE_BYTES: usize = 512;

/// `struct nvme_passthru_cmd` (alias `nvme_admin_cmd`) of the kernel's uapi, field for field.
#[repr(C)]
#[derive(Debug, Default)]
struct NvmePassthruCmd {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: u32,
    cdw11: u32,
    cdw12: u32,
    cdw13: u32,
    cdw14: u32,
    cdw15: u32,
    timeout_ms: u32,
    result: u32,
}

// The ioctl number encodes the struct's size: a wrong layout would be a different ioctl.
const _: () = assert!(std::mem::size_of::<NvmePassthruCmd>() == 72);

/// `_IOWR('N', 0x41, struct nvme_admin_cmd)`.
pub const NVME_IOCTL_ADMIN_CMD: u64 = 0xC048_4E41;

/// Get Log Page, the admin opcode.
const GET_LOG_PAGE: u8 = 0x02;
/// The controller-wide log rather than one namespace's.
const ALL_NAMESPACES: u32 = 0xFFFF_FFFF;

/// The buffer the drive writes into. Page-aligned so that no driver's DMA alignment rule can
/// make the kernel bounce or refuse it.
#[repr(C, align(4096))]
struct LogBuffer([u8; LOG_PAGE_BYTES]);

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The kernel refused the ioctl (no privilege, not an NVMe node).
    #[error("{0}")]
    Ioctl(io::Error),
    /// The drive failed the command: its NVMe status field.
    #[error("NVMe status {0:#x}")]
    Status(i32),
}

/// Reads log page `log_id` (controller-wide, `LOG_PAGE_BYTES` long) from the NVMe device open
/// as `file` (a namespace block device or the controller's character device).
pub fn read_log_page(file: &File, log_id: u8) -> Result<[u8; LOG_PAGE_BYTES], AdminError> {
    let mut buffer = LogBuffer([0; LOG_PAGE_BYTES]);
    let dwords = (LOG_PAGE_BYTES / 4) as u32;
    let mut command = NvmePassthruCmd {
        opcode: GET_LOG_PAGE,
        nsid: ALL_NAMESPACES,
        addr: buffer.0.as_mut_ptr() as u64,
        data_len: LOG_PAGE_BYTES as u32,
        // Number of dwords minus one (lower half) in bits 31:16, the log identifier in 7:0.
        cdw10: ((dwords - 1) << 16) | u32::from(log_id),
        ..NvmePassthruCmd::default()
    };
    // SAFETY: `file` is open for the call; `command` is a valid nvme_passthru_cmd whose
    // addr/data_len describe `buffer`, live and writable until the synchronous ioctl returns.
    let status = unsafe { libc::ioctl(file.as_raw_fd(), NVME_IOCTL_ADMIN_CMD as _, &mut command) };
    match status {
        0 => Ok(buffer.0),
        s if s < 0 => Err(AdminError::Ioctl(io::Error::last_os_error())),
        s => Err(AdminError::Status(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The number is _IOWR('N', 0x41, struct nvme_admin_cmd) as the kernel's headers compute it
    /// (direction read|write in bits 31:30, the struct's size in 29:16).
    #[test]
    fn the_ioctl_number_is_the_kernels() {
        let size = std::mem::size_of::<NvmePassthruCmd>() as u64;
        assert_eq!((3 << 30) | (size << 16) | (u64::from(b'N') << 8) | 0x41, NVME_IOCTL_ADMIN_CMD);
    }
}
