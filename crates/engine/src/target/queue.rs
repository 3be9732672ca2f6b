//! The request queue of the block device behind a target, read from sysfs
//! (/sys/dev/block/MAJOR:MINOR/queue, or the parent disk's queue for a partition).

use std::path::PathBuf;

/// A block device's major and minor numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DeviceNumber {
    major: u32,
    minor: u32,
}

impl DeviceNumber {
    /// The device of a `dev_t`, if it is a block device sysfs knows (tmpfs and other
    /// filesystems without a device have anonymous numbers that sysfs does not list).
    fn of_block(dev: u64) -> Option<Self> {
        let number = DeviceNumber { major: libc::major(dev), minor: libc::minor(dev) };
        number.sysfs_dir().exists().then_some(number)
    }

    fn sysfs_dir(&self) -> PathBuf {
        PathBuf::from(format!("/sys/dev/block/{}:{}", self.major, self.minor))
    }
}

/// A queue attribute such as `nr_requests`, `scheduler` or `io_poll`, trimmed; a partition
/// answers with its disk's.
fn queue_attribute(device: DeviceNumber, name: &str) -> Option<String> {
    let dir = device.sysfs_dir();
    [dir.join("queue").join(name), dir.join("..").join("queue").join(name)]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .map(|text| text.trim().to_string())
}

/// Whether the block device that would serve I/O to `path` has poll queues (IOPOLL needs
/// them): the device itself, the one under a file's filesystem, or, for a path not created
/// yet, the one under its directory.
pub fn has_poll_queues_behind(path: &std::path::Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = std::fs::metadata(path).or_else(|_| {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        std::fs::metadata(parent)
    });
    let Ok(meta) = meta else { return false };
    let dev = if meta.file_type().is_block_device() { meta.rdev() } else { meta.dev() };
    DeviceNumber::of_block(dev).and_then(|d| queue_attribute(d, "io_poll")).is_some_and(|v| v == "1")
}
