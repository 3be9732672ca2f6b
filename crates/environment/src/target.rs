//! Facts about a target path: what it is, the filesystem it lives on, and the block device that
//! serves its I/O (model, firmware, capacity, block sizes, queue settings, write cache, loop
//! backing). The device behind a path is found by the engine's `backing()`, the same answer the
//! collector of device counters uses; everything else is read from sysfs, read-only.

use std::path::{Path, PathBuf};

use iolab_engine::target::{backing, Backing, DeviceNumber};
use iolab_stats::result::QueueInfo;
use serde::{Deserialize, Serialize};

use crate::format::decimal_bytes;
use crate::nvme_ioctl::{is_nvme_name, read_smart_log};
use crate::smart::SmartLog;

/// What a target path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    BlockDevice,
    File,
    /// A directory: iolab makes its scratch file there.
    Directory,
    /// Not created yet (iolab creates it): the facts are those of its directory.
    Absent,
    /// A character device, FIFO or socket.
    Other,
}

/// One target of a run and what serves its I/O.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetFacts {
    /// The path as the run was given it.
    pub path: PathBuf,
    pub kind: TargetKind,
    /// The type of the filesystem holding a file target ("ext4", "xfs", "tmpfs"), from
    /// /proc/self/mountinfo; `None` for a block device.
    pub filesystem: Option<String>,
    /// Where that filesystem is mounted.
    pub mount_point: Option<PathBuf>,
    /// The target lives in memory (tmpfs, ramfs): no block device ever sees its I/O.
    pub in_memory: bool,
    /// The block device that serves the I/O: the target itself, or the device under its
    /// filesystem. `None` in memory, and where sysfs lists no device (btrfs, overlay, FUSE, NFS).
    pub device: Option<DeviceFacts>,
    /// The NVMe SMART / Health log of the device's controller, read when the facts were
    /// captured. Changes with every run: compare two with [`crate::HealthDelta`].
    pub nvme_health: Option<SmartLog>,
    /// Why an NVMe device has no `nvme_health` (no privilege, a drive that refused).
    pub nvme_health_skipped: Option<String>,
}

/// A block device as sysfs describes it. A partition reports its own name, number and capacity,
/// and its disk's model, firmware and queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceFacts {
    /// The kernel's name: "nvme0n1p2", "sda", "vda", "loop3", "dm-0".
    pub name: String,
    /// `major:minor`.
    pub major_minor: String,
    /// The whole disk when `name` is a partition ("nvme0n1" for "nvme0n1p2").
    pub disk: Option<String>,
    /// The driver of the hardware behind the disk ("nvme", "sd", "virtio_blk"); `None` for
    /// devices with no hardware (loop, zram, device-mapper, ram).
    pub driver: Option<String>,
    /// `device/model`: the model number NVMe and SCSI drives report.
    pub model: Option<String>,
    /// `device/vendor`: SCSI's vendor field ("ATA" for SATA drives), virtio's PCI vendor id.
    pub vendor: Option<String>,
    /// Firmware revision: `device/firmware_rev` on NVMe, `device/rev` on SCSI; none on virtio.
    pub firmware_rev: Option<String>,
    /// The serial number where sysfs shows it (NVMe, virtio, SCSI VPD page 80h).
    pub serial: Option<String>,
    /// The device's size (`size` × 512), in bytes.
    pub capacity_bytes: Option<u64>,
    /// `queue/logical_block_size`: the smallest I/O the device addresses, in bytes.
    pub logical_block_bytes: Option<u32>,
    /// `queue/physical_block_size`: the smallest I/O it writes without read-modify-write.
    pub physical_block_bytes: Option<u32>,
    /// The request queue (`nr_requests`, `hw_queue_depth`, `hw_queues`, `scheduler`,
    /// `rotational`), flattened: its fields are the device's in the JSON.
    #[serde(flatten)]
    pub queue: QueueInfo,
    /// `queue/write_cache`: "write back" (a volatile cache the kernel flushes) or "write
    /// through" (writes complete on the media, or the kernel believes so).
    pub write_cache: Option<String>,
    /// Set for a loop device.
    pub loop_device: Option<LoopFacts>,
}

/// What a loop device is made of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopFacts {
    /// `loop/backing_file`: the file it maps.
    pub backing_file: Option<PathBuf>,
    /// `loop/dio`: whether it reads and writes that file with O_DIRECT; without, its I/O goes
    /// through the backing file's page cache.
    pub direct_io: Option<bool>,
}

impl TargetFacts {
    /// The facts of `path`. Never fails: what cannot be read is `None`.
    pub fn capture(path: &Path) -> Self {
        use std::os::unix::fs::FileTypeExt;
        let meta = std::fs::metadata(path);
        let kind = match &meta {
            Ok(m) if m.file_type().is_block_device() => TargetKind::BlockDevice,
            Ok(m) if m.is_file() => TargetKind::File,
            Ok(m) if m.is_dir() => TargetKind::Directory,
            Ok(_) => TargetKind::Other,
            Err(_) => TargetKind::Absent,
        };
        let (device, in_memory) = match backing(path) {
            Backing::Device(device) => (device_facts(device.number, device.queue()), false),
            Backing::Memory => (None, true),
            Backing::Unknown => (None, false),
        };
        let mount = (kind != TargetKind::BlockDevice).then(|| mount_of(path)).flatten();
        let (nvme_health, nvme_health_skipped) = match &device {
            Some(device) if is_nvme_name(device.disk.as_deref().unwrap_or(&device.name)) => {
                match read_smart_log(&device_node(device)) {
                    Ok(log) => (Some(log), None),
                    Err(skip) => (None, Some(skip.to_string())),
                }
            }
            _ => (None, None),
        };
        TargetFacts {
            path: path.to_path_buf(),
            kind,
            filesystem: mount.as_ref().map(|m| m.filesystem.clone()),
            mount_point: mount.map(|m| m.mount_point),
            in_memory,
            device,
            nvme_health,
            nvme_health_skipped,
        }
    }

    /// One line: "/dev/nvme0n1: Samsung SSD 990 PRO 2TB fw 4B2QJXD7, 2.0 TB, 512/512 B
    /// sectors, none, nr_requests 1023, write back".
    pub fn describe(&self) -> String {
        let path = self.path.display();
        let on = self.filesystem.as_deref().map(|fs| format!("on {fs}, ")).unwrap_or_default();
        let Some(device) = &self.device else {
            return if self.in_memory {
                format!("{path}: {on}in memory; no device sees its I/O")
            } else {
                format!("{path}: {on}no block device found behind it")
            };
        };
        let whence = match (self.kind, &self.filesystem) {
            (TargetKind::BlockDevice, _)
                if self.path.file_name().is_some_and(|n| n == device.name.as_str()) =>
            {
                String::new()
            }
            (TargetKind::BlockDevice, _) => format!(" ({})", device.name),
            (_, Some(fs)) => format!(" ({fs} on /dev/{})", device.name),
            (_, None) => format!(" (on /dev/{})", device.name),
        };
        format!("{path}{whence}: {}", device.describe())
    }
}

impl DeviceFacts {
    /// The device's part of a target line: "Samsung SSD 990 PRO 2TB fw 4B2QJXD7, 2.0 TB,
    /// 512/512 B sectors, none, nr_requests 1023, write back".
    pub fn describe(&self) -> String {
        let mut identity = match (&self.vendor, &self.model) {
            (_, Some(model)) if self.driver.as_deref() == Some("nvme") => model.clone(),
            (Some(vendor), Some(model)) => format!("{vendor} {model}"),
            (None, Some(model)) => model.clone(),
            (_, None) => self.driver.clone().unwrap_or_else(|| self.name.clone()),
        };
        if let Some(firmware) = &self.firmware_rev {
            identity.push_str(&format!(" fw {firmware}"));
        }
        let mut parts = vec![identity];
        if let Some(bytes) = self.capacity_bytes {
            parts.push(decimal_bytes(bytes));
        }
        if let (Some(logical), Some(physical)) = (self.logical_block_bytes, self.physical_block_bytes) {
            parts.push(format!("{logical}/{physical} B sectors"));
        }
        parts.extend(self.queue.scheduler.clone());
        parts.extend(self.queue.nr_requests.map(|n| format!("nr_requests {n}")));
        parts.extend(self.write_cache.clone());
        if self.queue.rotational == Some(true) {
            parts.push("rotational".into());
        }
        if let Some(looped) = &self.loop_device {
            let file = looped.backing_file.as_ref().map_or("?".into(), |f| f.display().to_string());
            let dio = match looped.direct_io {
                Some(true) => "dio on",
                Some(false) => "dio off",
                None => "dio unknown",
            };
            parts.push(format!("loop over {file} ({dio})"));
        }
        parts.join(", ")
    }

    /// The disk whose queue and model these are: `disk` for a partition, else `name`.
    pub fn disk_name(&self) -> &str {
        self.disk.as_deref().unwrap_or(&self.name)
    }
}

/// The facts of the block device `number`, from its sysfs directory.
fn device_facts(number: DeviceNumber, queue: QueueInfo) -> Option<DeviceFacts> {
    let dir = std::fs::canonicalize(format!("/sys/dev/block/{number}")).ok()?;
    Some(read_device(&dir, &number.to_string(), queue))
}

/// Reads a device's facts from its sysfs directory `dir` (symlinks resolved). `queue` comes
/// from the engine, which reads the same queue files for its device counters.
pub(crate) fn read_device(dir: &Path, major_minor: &str, queue: QueueInfo) -> DeviceFacts {
    let is_partition = dir.join("partition").exists();
    let disk_dir = match dir.parent() {
        Some(parent) if is_partition => parent.to_path_buf(),
        _ => dir.to_path_buf(),
    };
    let name_of = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let hardware = disk_dir.join("device");
    let text = |path: PathBuf| read_text(&path);
    let number = |path: PathBuf| text(path).and_then(|t| t.parse::<u64>().ok());
    let loop_dir = disk_dir.join("loop");
    DeviceFacts {
        name: name_of(dir),
        major_minor: major_minor.to_string(),
        disk: is_partition.then(|| name_of(&disk_dir)),
        driver: driver(&hardware),
        model: text(hardware.join("model")),
        vendor: text(hardware.join("vendor")),
        firmware_rev: text(hardware.join("firmware_rev")).or_else(|| text(hardware.join("rev"))),
        serial: text(hardware.join("serial"))
            .or_else(|| text(disk_dir.join("serial")))
            .or_else(|| std::fs::read(hardware.join("vpd_pg80")).ok().and_then(|page| vpd_serial(&page))),
        capacity_bytes: number(dir.join("size")).map(|sectors| sectors * 512),
        logical_block_bytes: number(disk_dir.join("queue/logical_block_size")).map(|n| n as u32),
        physical_block_bytes: number(disk_dir.join("queue/physical_block_size")).map(|n| n as u32),
        queue,
        write_cache: text(disk_dir.join("queue/write_cache")),
        loop_device: loop_dir.exists().then(|| LoopFacts {
            backing_file: text(loop_dir.join("backing_file")).map(PathBuf::from),
            direct_io: text(loop_dir.join("dio")).map(|v| v == "1"),
        }),
    }
}

/// The driver bound to the disk's hardware: `device/driver`, or for an NVMe namespace, whose
/// `device` is the controller, the controller's PCI (or fabrics) device's.
fn driver(hardware: &Path) -> Option<String> {
    [hardware.join("driver"), hardware.join("device/driver")].iter().find_map(|link| {
        let target = std::fs::read_link(link).ok()?;
        Some(target.file_name()?.to_string_lossy().into_owned())
    })
}

/// The serial number in a SCSI Unit Serial Number VPD page (80h): a 4-byte header whose bytes
/// 2..4 give the length, then ASCII.
fn vpd_serial(page: &[u8]) -> Option<String> {
    let length = usize::from(u16::from_be_bytes([*page.get(2)?, *page.get(3)?]));
    let serial = page.get(4..4 + length).or_else(|| page.get(4..))?;
    let text =
        String::from_utf8_lossy(serial).trim_matches(|c: char| c.is_whitespace() || c == '\0').to_string();
    (!text.is_empty()).then_some(text)
}

fn read_text(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The /dev node of a device's disk: udev's name from `uevent` (DEVNAME), else /dev/<name>.
pub(crate) fn device_node(device: &DeviceFacts) -> PathBuf {
    let disk = device.disk_name();
    let devname = std::fs::read_to_string(format!("/sys/class/block/{disk}/uevent"))
        .ok()
        .and_then(|uevent| uevent.lines().find_map(|l| l.strip_prefix("DEVNAME=").map(str::to_string)));
    PathBuf::from("/dev").join(devname.unwrap_or_else(|| disk.to_string()))
}

/// A mount: its filesystem type and mount point.
#[derive(Debug, PartialEq, Eq)]
struct Mount {
    filesystem: String,
    mount_point: PathBuf,
}

/// The mount holding `path` (or, if it does not exist yet, its directory): the mountinfo line
/// whose device number is the path's `st_dev`, preferring the longest mount point the path lies
/// under (a device mounted twice, or bind mounts).
fn mount_of(path: &Path) -> Option<Mount> {
    use std::os::unix::fs::MetadataExt;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let existing = if path.exists() { path } else { parent };
    let dev = DeviceNumber::from_dev(std::fs::metadata(existing).ok()?.dev()).to_string();
    let canonical = std::fs::canonicalize(existing).ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    find_mount(&mountinfo, &dev, &canonical)
}

/// mountinfo lines: "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw"
/// (proc(5)): field 3 the device, 5 the mount point (octal escapes), after "-" the type.
fn find_mount(mountinfo: &str, dev: &str, path: &Path) -> Option<Mount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let separator = fields.iter().position(|f| *f == "-")?;
            if fields.get(2) != Some(&dev) {
                return None;
            }
            Some(Mount {
                filesystem: fields.get(separator + 1)?.to_string(),
                mount_point: PathBuf::from(unescape(fields.get(4)?)),
            })
        })
        .max_by_key(|mount| {
            let under = path.starts_with(&mount.mount_point);
            (under, mount.mount_point.as_os_str().len())
        })
}

/// Undoes mountinfo's octal escapes ("\040" for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal =
            bytes.get(i + 1..i + 4).and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[path = "target_tests.rs"]
mod tests;
