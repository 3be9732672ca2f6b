//! The live read of an NVMe drive's SMART / Health log: one Get Log Page admin command sent
//! through the kernel's passthrough ioctl (`NVME_IOCTL_ADMIN_CMD`, include/uapi/linux/nvme_ioctl.h).
//! The device is opened read-only; the kernel still wants CAP_SYS_ADMIN for admin commands, so
//! an unprivileged run gets a reason rather than a log.
//! The ioctl itself, and its `unsafe`, is the engine's (`iolab_engine::nvme_admin`).

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use iolab_engine::nvme_admin::{read_log_page, AdminError};

use crate::smart::SmartLog;

/// Log identifier of SMART / Health Information.
const SMART_LOG_ID: u8 = 0x02;

/// Why there is no health log for a device. The run goes on without one; the reason is kept
/// so a report can say why the health line is missing.
#[derive(Debug, thiserror::Error)]
pub enum HealthSkip {
    #[error("{0}: no such device node")]
    Missing(PathBuf),
    #[error("{0} is not a device node")]
    NotADevice(PathBuf),
    #[error("{name} is not an NVMe device, so it has no NVMe health log")]
    NotNvme { name: String },
    #[error("cannot open {path} read-only to read its NVMe health log: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error(
        "the NVMe Get Log Page ioctl failed on {path}: {source} (admin commands need root or CAP_SYS_ADMIN)"
    )]
    Ioctl { path: PathBuf, source: io::Error },
    #[error("{path}: the drive refused Get Log Page 02h with NVMe status {status:#x}")]
    Status { path: PathBuf, status: i32 },
}

/// Reads the SMART / Health log of the NVMe controller behind `device`: a namespace block
/// device (/dev/nvme0n1), its partition, or the controller's character device (/dev/nvme0).
/// Anything else, or a read the kernel or drive refuses, is a [`HealthSkip`].
pub fn read_smart_log(device: &Path) -> Result<SmartLog, HealthSkip> {
    nvme_name(device)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(device)
        .map_err(|source| HealthSkip::Open { path: device.to_path_buf(), source })?;
    let page = read_log_page(&file, SMART_LOG_ID).map_err(|e| match e {
        AdminError::Ioctl(source) => HealthSkip::Ioctl { path: device.to_path_buf(), source },
        AdminError::Status(status) => HealthSkip::Status { path: device.to_path_buf(), status },
    })?;
    Ok(SmartLog::from_page(&page))
}

/// The kernel's name of `device` if it is an NVMe node ("nvme0n1", "nvme0", "ng0n1"), found
/// through sysfs from the node's device number, so a renamed /dev entry still counts.
fn nvme_name(device: &Path) -> Result<String, HealthSkip> {
    let meta = std::fs::metadata(device).map_err(|_| HealthSkip::Missing(device.to_path_buf()))?;
    let kind = match meta.file_type() {
        t if t.is_block_device() => "block",
        t if t.is_char_device() => "char",
        _ => return Err(HealthSkip::NotADevice(device.to_path_buf())),
    };
    let number = iolab_engine::target::DeviceNumber::from_dev(meta.rdev());
    let name = std::fs::canonicalize(format!("/sys/dev/{kind}/{number}"))
        .ok()
        .and_then(|dir| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| device.display().to_string());
    if is_nvme_name(&name) {
        Ok(name)
    } else {
        Err(HealthSkip::NotNvme { name })
    }
}

/// Kernel names of NVMe controllers (nvme0), namespaces (nvme0n1, nvme0c0n1), their
/// partitions (nvme0n1p2) and generic namespace nodes (ng0n1).
pub(crate) fn is_nvme_name(name: &str) -> bool {
    let rest = name.strip_prefix("nvme").or_else(|| name.strip_prefix("ng"));
    rest.is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvme_names_are_recognised() {
        for name in ["nvme0", "nvme0n1", "nvme12n3p4", "nvme0c0n1", "ng0n1"] {
            assert!(is_nvme_name(name), "{name}");
        }
        for name in ["vda", "sda", "nvme", "nvme-fabrics", "loop0", "zram1", "ngx"] {
            assert!(!is_nvme_name(name), "{name}");
        }
    }

    #[test]
    fn a_missing_node_is_skipped_with_a_reason() {
        // No NVMe controller here has this many drives.
        let path = Path::new("/dev/nvme999n1");
        let skip = read_smart_log(path).expect_err("no such node");
        assert!(matches!(skip, HealthSkip::Missing(_)), "{skip:?}");
        assert_eq!(skip.to_string(), "/dev/nvme999n1: no such device node");
    }

    #[test]
    fn a_regular_file_is_skipped_with_a_reason() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let skip = read_smart_log(file.path()).expect_err("a file is no device");
        assert!(matches!(skip, HealthSkip::NotADevice(_)), "{skip:?}");
    }

    #[test]
    fn a_device_that_is_not_nvme_is_skipped_before_it_is_opened() {
        // /dev/null: a character device sysfs names "null"; never opened, never ioctl'd.
        let skip = read_smart_log(Path::new("/dev/null")).expect_err("not NVMe");
        match skip {
            HealthSkip::NotNvme { name } => assert_eq!(name, "null"),
            other => panic!("expected NotNvme, got {other:?}"),
        }
    }

    #[test]
    fn the_live_read_works_or_says_why() {
        // The first NVMe namespace, if this machine has one: the read either succeeds with a
        // plausible page or names its reason (no privilege, a drive that refuses).
        let Some(node) = std::fs::read_dir("/sys/class/nvme")
            .ok()
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| PathBuf::from("/dev").join(entry.file_name()))
            .find(|node| node.exists())
        else {
            return iolab_test_support::skip!(
                iolab_test_support::Missing::Other,
                "no NVMe controller on this machine (/sys/class/nvme is empty or absent)"
            );
        };
        match read_smart_log(&node) {
            Ok(log) => assert!(log.temperature_kelvin > 200 || log.temperature_kelvin == 0, "{log:?}"),
            Err(skip) => eprintln!("{}: {skip}", node.display()),
        }
    }
}
