//! The block device behind a target, read from sysfs: which device serves a path (the device
//! itself, or the one under a file's filesystem), its I/O counters (`stat`) and its request
//! queue (`nr_requests`, scheduler, hardware queue depth, poll queues).
//!
//! The collector reads these files at the edges of the measured window; the threads that do
//! the I/O never touch them. A target with no
//! block device behind it (tmpfs, FUSE, network filesystems, btrfs, whose `st_dev` is an
//! anonymous number sysfs does not list) has no counters: the report says so rather than guess.

use std::io;
use std::path::{Path, PathBuf};

use iolab_stats::result::QueueInfo;

/// A block device's major and minor numbers, written `major:minor` by sysfs and mountinfo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceNumber {
    pub major: u32,
    pub minor: u32,
}

impl DeviceNumber {
    /// From a `dev_t`: `st_rdev` of a device node, or `st_dev` of a file.
    pub fn from_dev(dev: u64) -> Self {
        DeviceNumber { major: libc::major(dev), minor: libc::minor(dev) }
    }

    /// From the `MAJ:MIN` text of sysfs `dev` files and mountinfo's third field.
    pub fn parse(text: &str) -> Option<Self> {
        let (major, minor) = text.trim().split_once(':')?;
        Some(DeviceNumber { major: major.parse().ok()?, minor: minor.parse().ok()? })
    }

    /// The device of a `dev_t`, if it is a block device sysfs knows (tmpfs and other
    /// filesystems without a device have anonymous numbers that sysfs does not list).
    fn of_block(dev: u64) -> Option<Self> {
        let number = DeviceNumber::from_dev(dev);
        number.sysfs_dir().exists().then_some(number)
    }

    fn sysfs_dir(&self) -> PathBuf {
        PathBuf::from(format!("/sys/dev/block/{self}"))
    }
}

impl std::fmt::Display for DeviceNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

/// What serves the I/O of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backing {
    /// A block device: the path itself, or the device under its filesystem.
    Device(BlockDevice),
    /// A filesystem that lives in memory (tmpfs, ramfs): no device ever sees the I/O.
    Memory,
    /// No block device sysfs knows: FUSE, network or stacked filesystems, btrfs.
    Unknown,
}

/// `statfs` magic numbers of the filesystems that keep their files in RAM.
const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// What serves I/O to `path`: the device itself, the one under a file's filesystem, or, for a
/// path not created yet, the one under its directory.
pub fn backing(path: &Path) -> Backing {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let parent = || path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let (existing, meta) = match std::fs::metadata(path) {
        Ok(meta) => (path, meta),
        Err(_) => match std::fs::metadata(parent()) {
            Ok(meta) => (parent(), meta),
            Err(_) => return Backing::Unknown,
        },
    };
    let is_device = meta.file_type().is_block_device();
    let dev = if is_device { meta.rdev() } else { meta.dev() };
    if let Some(device) = DeviceNumber::of_block(dev).and_then(BlockDevice::open) {
        return Backing::Device(device);
    }
    match filesystem_magic(existing) {
        Some(TMPFS_MAGIC | RAMFS_MAGIC) if !is_device => Backing::Memory,
        _ => Backing::Unknown,
    }
}

/// The `f_type` of the filesystem holding `path`.
fn filesystem_magic(path: &Path) -> Option<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: an all-zero statfs is a valid value of this plain C struct.
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c_path` is a NUL-terminated string that outlives the call; `buf` is writable.
    let rc = unsafe { libc::statfs(c_path.as_ptr(), &mut buf) };
    #[allow(clippy::unnecessary_cast)] // f_type is i64 on some targets, i32 or u32 on others
    let magic = buf.f_type as i64;
    (rc == 0).then_some(magic)
}

/// Whether the block device that would serve I/O to `path` has poll queues (IOPOLL needs
/// them).
pub fn has_poll_queues_behind(path: &Path) -> bool {
    match backing(path) {
        Backing::Device(device) => device.queue_attribute("io_poll").is_some_and(|v| v == "1"),
        Backing::Memory | Backing::Unknown => false,
    }
}

/// A block device (whole disk or partition) that sysfs lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDevice {
    pub number: DeviceNumber,
    /// The kernel's name: "vda", "nvme0n1p2", "dm-0", "zram1".
    pub name: String,
    /// Its sysfs directory, symlinks resolved (/sys/devices/.../block/vda).
    dir: PathBuf,
    /// The directory that holds its `queue/`: its own, or its disk's for a partition.
    disk_dir: PathBuf,
}

impl BlockDevice {
    fn open(number: DeviceNumber) -> Option<Self> {
        let dir = std::fs::canonicalize(number.sysfs_dir()).ok()?;
        let name = dir.file_name()?.to_str()?.to_string();
        let disk_dir = if dir.join("partition").exists() { dir.parent()?.to_path_buf() } else { dir.clone() };
        Some(BlockDevice { number, name, dir, disk_dir })
    }

    /// The device's I/O counters now.
    pub fn stat(&self) -> io::Result<DeviceStat> {
        let path = self.dir.join("stat");
        let text = std::fs::read_to_string(&path)?;
        DeviceStat::parse(&text).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, format!("{}: unexpected format", path.display()))
        })
    }

    /// A queue attribute such as `nr_requests`, `scheduler` or `io_poll`, trimmed; a partition
    /// answers with its disk's.
    fn queue_attribute(&self, name: &str) -> Option<String> {
        read_trimmed(&self.disk_dir.join("queue").join(name))
    }

    /// The request queue's limits and settings; what sysfs does not have is `None`.
    pub fn queue(&self) -> QueueInfo {
        let number = |name: &str| self.queue_attribute(name).and_then(|v| v.parse().ok());
        let mq = self.disk_dir.join("mq");
        let hw_queues = std::fs::read_dir(&mq).ok().map(|entries| entries.count() as u32).filter(|&n| n > 0);
        // SCSI (SATA, SAS) says how many commands the device itself takes (NCQ: 31 or 32);
        // otherwise blk-mq's tags per hardware queue are the most the driver accepts.
        let hw_queue_depth = read_trimmed(&self.disk_dir.join("device").join("queue_depth"))
            .or_else(|| read_trimmed(&mq.join("0").join("nr_tags")))
            .and_then(|v| v.parse().ok());
        QueueInfo {
            nr_requests: number("nr_requests"),
            hw_queue_depth,
            hw_queues,
            scheduler: self.queue_attribute("scheduler").and_then(|text| active_scheduler(&text)),
            rotational: self.queue_attribute("rotational").map(|v| v == "1"),
            max_sectors_kb: number("max_sectors_kb"),
            max_segments: number("max_segments"),
            max_segment_size: number("max_segment_size"),
        }
    }
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|text| text.trim().to_string())
}

/// The bracketed entry of `queue/scheduler` ("none [mq-deadline] kyber bfq" -> "mq-deadline").
/// A device without a choice of scheduler (bio-based: zram, device-mapper) has no such file, and
/// one with a single entry may print it without brackets.
fn active_scheduler(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let active = match words.as_slice() {
        [only] => only.trim_matches(['[', ']']),
        _ => words.iter().find(|w| w.starts_with('['))?.trim_matches(['[', ']']),
    };
    (!active.is_empty()).then(|| active.to_string())
}

/// A block device's I/O counters (/sys/block/X/stat, Documentation/block/stat.rst), cumulative
/// since the device appeared. Kernels before 4.18 print the first 11 fields, 4.18 to 5.4 add the
/// four discard fields, 5.5 and later the two flush fields; what a kernel lacks is zero.
///
/// The `_ms` fields are printed as 32-bit numbers and wrap; subtract them with
/// [`DeviceStat::ms_delta`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceStat {
    pub reads: u64,
    pub read_merges: u64,
    /// 512-byte sectors, whatever the device's block size.
    pub read_sectors: u64,
    /// Milliseconds reads spent from issue to completion, summed over reads.
    pub read_ms: u64,
    pub writes: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    pub write_ms: u64,
    /// Requests in flight at the time of reading (not cumulative).
    pub in_flight: u64,
    /// Milliseconds during which at least one request was in flight.
    pub io_ticks_ms: u64,
    /// Milliseconds requests spent in flight, summed over requests (weighted by how many were in
    /// flight): its growth over a window divided by the window is the mean queue.
    pub time_in_queue_ms: u64,
    pub discards: u64,
    pub discard_merges: u64,
    pub discard_sectors: u64,
    pub discard_ms: u64,
    pub flushes: u64,
    pub flush_ms: u64,
}

impl DeviceStat {
    /// Parses the one line of a `stat` file; `None` unless it holds at least the 11 fields
    /// every kernel prints. Fields past the 17 known ones are ignored.
    pub fn parse(text: &str) -> Option<Self> {
        let fields: Vec<u64> = text.split_whitespace().map(str::parse).collect::<Result<_, _>>().ok()?;
        if fields.len() < 11 {
            return None;
        }
        let at = |i: usize| fields.get(i).copied().unwrap_or(0);
        Some(DeviceStat {
            reads: at(0),
            read_merges: at(1),
            read_sectors: at(2),
            read_ms: at(3),
            writes: at(4),
            write_merges: at(5),
            write_sectors: at(6),
            write_ms: at(7),
            in_flight: at(8),
            io_ticks_ms: at(9),
            time_in_queue_ms: at(10),
            discards: at(11),
            discard_merges: at(12),
            discard_sectors: at(13),
            discard_ms: at(14),
            flushes: at(15),
            flush_ms: at(16),
        })
    }

    /// `later - earlier` of a millisecond field, which the kernel prints as an unsigned 32-bit
    /// number that wraps (time_in_queue of a busy device wraps within weeks).
    pub fn ms_delta(earlier: u64, later: u64) -> u64 {
        u64::from((later as u32).wrapping_sub(earlier as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk's sysfs directory as a loop device over tmpfs shows it on this kernel, and its
    /// partition, which answers with the disk's queue.
    fn sysfs_disk() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let queue = dir.path().join("queue");
        std::fs::create_dir_all(&queue).expect("queue");
        for (name, value) in [
            ("nr_requests", "128\n"),
            ("scheduler", "[none] mq-deadline\n"),
            ("rotational", "0\n"),
            ("max_sectors_kb", "1280\n"),
            ("max_segments", "128\n"),
            ("max_segment_size", "65536\n"),
        ] {
            std::fs::write(queue.join(name), value).expect("queue attribute");
        }
        std::fs::create_dir_all(dir.path().join("mq/0")).expect("mq");
        std::fs::write(dir.path().join("mq/0/nr_tags"), "128\n").expect("tags");
        std::fs::create_dir_all(dir.path().join("loop3p1")).expect("partition");
        std::fs::write(dir.path().join("loop3p1/partition"), "1\n").expect("partition");
        dir
    }

    /// The limits the verdict turns into requests per I/O: a 1 MiB I/O on 128 segments of
    /// 4 KiB pages is two requests (issue 30's split reads).
    #[test]
    fn queue_limits_read_from_sysfs_and_a_partition_answers_with_its_disk() {
        let sysfs = sysfs_disk();
        let number = DeviceNumber { major: 7, minor: 3 };
        let disk = BlockDevice {
            number,
            name: "loop3".into(),
            dir: sysfs.path().into(),
            disk_dir: sysfs.path().into(),
        };
        let expected = QueueInfo {
            nr_requests: Some(128),
            hw_queue_depth: Some(128),
            hw_queues: Some(1),
            scheduler: Some("none".into()),
            rotational: Some(false),
            max_sectors_kb: Some(1280),
            max_segments: Some(128),
            max_segment_size: Some(65536),
        };
        assert_eq!(disk.queue(), expected);
        let partition = BlockDevice {
            number: DeviceNumber { major: 259, minor: 0 },
            name: "loop3p1".into(),
            dir: sysfs.path().join("loop3p1"),
            disk_dir: sysfs.path().into(),
        };
        assert_eq!(partition.queue(), expected);
        // A bio-based device (zram) has no queue to speak of: every figure is absent.
        let empty = tempfile::tempdir().expect("temp dir");
        let zram = BlockDevice {
            number,
            name: "zram1".into(),
            dir: empty.path().into(),
            disk_dir: empty.path().into(),
        };
        assert_eq!(zram.queue().max_segments, None);
        assert_eq!(zram.queue().scheduler, None);
    }

    // Captured from this project's test machine (Linux 6.18): a virtio disk, a zram device, a
    // loop device.
    const VDA: &str = "148800673    87191 1274104114 38328661  1819683    71013 121911680   532270        0  1747236 38877200    45765       77 87579624    16069     1133      199\n";
    const ZRAM: &str = "  992986        0  7943888     1576      256        0   524288      100        0     1500     1676        0        0        0        0        0        0\n";
    const LOOP: &str = "169317309    18700 1356701738 14551915   814601    27267  6891740    96122        0   591888 14648045       38        0  2490406        1      264        6\n";

    #[test]
    fn parses_the_17_fields_of_a_current_kernel() {
        let vda = DeviceStat::parse(VDA).expect("vda");
        assert_eq!(
            vda,
            DeviceStat {
                reads: 148_800_673,
                read_merges: 87_191,
                read_sectors: 1_274_104_114,
                read_ms: 38_328_661,
                writes: 1_819_683,
                write_merges: 71_013,
                write_sectors: 121_911_680,
                write_ms: 532_270,
                in_flight: 0,
                io_ticks_ms: 1_747_236,
                time_in_queue_ms: 38_877_200,
                discards: 45_765,
                discard_merges: 77,
                discard_sectors: 87_579_624,
                discard_ms: 16_069,
                flushes: 1_133,
                flush_ms: 199,
            }
        );
        let zram = DeviceStat::parse(ZRAM).expect("zram");
        assert_eq!(
            (zram.reads, zram.read_sectors, zram.writes, zram.io_ticks_ms),
            (992_986, 7_943_888, 256, 1500)
        );
        let looped = DeviceStat::parse(LOOP).expect("loop");
        assert_eq!((looped.reads, looped.time_in_queue_ms, looped.flushes), (169_317_309, 14_648_045, 264));
    }

    #[test]
    fn older_kernels_print_11_or_15_fields() {
        let fields: Vec<&str> = VDA.split_whitespace().collect();
        let eleven = DeviceStat::parse(&fields[..11].join(" ")).expect("11 fields (before 4.18)");
        assert_eq!((eleven.time_in_queue_ms, eleven.discards, eleven.flushes), (38_877_200, 0, 0));
        let fifteen = DeviceStat::parse(&fields[..15].join(" ")).expect("15 fields (4.18 to 5.4)");
        assert_eq!((fifteen.discard_ms, fifteen.flushes), (16_069, 0));
        let more =
            DeviceStat::parse(&format!("{} 7 8", fields.join(" "))).expect("fields a later kernel adds");
        assert_eq!(more.flush_ms, 199);
    }

    #[test]
    fn refuses_what_is_not_a_stat_line() {
        assert_eq!(DeviceStat::parse(""), None);
        assert_eq!(DeviceStat::parse("1 2 3 4 5 6 7 8 9 10"), None);
        assert_eq!(DeviceStat::parse("1 2 3 4 5 six 7 8 9 10 11"), None);
    }

    #[test]
    fn millisecond_fields_wrap_at_32_bits() {
        assert_eq!(DeviceStat::ms_delta(100, 250), 150);
        assert_eq!(DeviceStat::ms_delta(u64::from(u32::MAX) - 9, 20), 30);
    }

    #[test]
    fn the_active_scheduler_is_the_bracketed_one() {
        assert_eq!(active_scheduler("none [mq-deadline] kyber bfq").as_deref(), Some("mq-deadline"));
        assert_eq!(active_scheduler("[none] mq-deadline kyber bfq\n").as_deref(), Some("none"));
        assert_eq!(active_scheduler("none").as_deref(), Some("none"));
        assert_eq!(active_scheduler(""), None);
    }

    #[test]
    fn a_file_is_served_by_the_device_under_its_filesystem() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").expect("file");
        match backing(&file) {
            Backing::Device(device) => {
                assert!(!device.name.is_empty());
                device.stat().expect("its counters");
            }
            // tmpfs /tmp, or btrfs: nothing sysfs lists.
            Backing::Memory | Backing::Unknown => {}
        }
    }

    #[test]
    fn tmpfs_is_memory() {
        let shm = Path::new("/dev/shm");
        if filesystem_magic(shm) != Some(TMPFS_MAGIC) {
            return iolab_test_support::skip!(
                iolab_test_support::Missing::Other,
                "/dev/shm is not a tmpfs here"
            );
        }
        assert_eq!(backing(&shm.join("not-created-yet")), Backing::Memory);
    }
}
