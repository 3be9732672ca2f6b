//! The check made before any write to a block device: is anything there that the write would
//! destroy?
//!
//! A benchmark that writes to `/dev/sdb` erases whatever `/dev/sdb` held, and a typo in a device
//! name costs someone their data. So before the first write the runner asks
//! [`inspect_block_device`] and refuses (exit 2, naming every [`Finding`]) unless the user passed
//! `--allow-destroy`. The device and each of its partitions are checked for:
//!
//! - being mounted (`/proc/self/mountinfo`) or in use as swap (`/proc/swaps`);
//! - being held by a device stacked on top (sysfs `holders/`: device-mapper, md, bcache);
//! - being claimed by anyone else (an `O_EXCL` open fails with EBUSY), which also catches mounts
//!   in other mount namespaces that this process cannot list;
//! - carrying a filesystem, partition table, LVM, RAID, swap or encryption signature, as libblkid
//!   (the library behind `blkid -p`) finds them on the descriptor opened here (`blkid.rs`); where
//!   libblkid cannot be loaded, as iolab's own list finds them in the first or last MiB
//!   (`signatures.rs`), and the [`Inspection`] says so.
//!
//! Nothing here writes. The answer errs towards refusing: a false alarm costs one flag, a miss
//! costs data.

mod blkid;
mod ends;
mod in_use;
mod probe;
mod signatures;
mod sysfs;

use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

pub use signatures::detect_signatures;

use probe::Prober;
use sysfs::BlockNode;

const SYS: &str = "/sys";
const MOUNTINFO: &str = "/proc/self/mountinfo";
const SWAPS: &str = "/proc/swaps";

/// Something on a block device that a write would destroy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What was found, as a phrase that completes "the target holds ...", e.g.
    /// "an ext4 filesystem signature" or "/dev/sdb1 is mounted at /home".
    pub what: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

/// What the check of a block device found, and how it looked for signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// Everything a write would destroy: none means it is safe to write.
    pub findings: Vec<Finding>,
    /// Set when libblkid could not be loaded and iolab's own, shorter list was checked instead:
    /// what the user should be told, beside a refusal or in the run's notes.
    pub fallback: Option<String>,
}

/// Everything found on `device` (a path to a block device node, possibly a symlink like
/// `/dev/disk/by-id/...`) and its partitions.
///
/// Errors only when the checks themselves cannot be made: `device` is missing or not a block
/// device (`InvalidInput`), it cannot be opened or read, or sysfs and `/proc` cannot be read.
/// The error says which of these failed and on what path.
pub fn inspect_block_device(device: &Path) -> io::Result<Inspection> {
    let meta = fs::metadata(device)
        .map_err(with_context(format!("cannot inspect {} before writing to it", device.display())))?;
    inspect(device, &meta, || ends::open(device))
}

/// As [`inspect_block_device`], for the device behind an open descriptor (`device` names it in
/// the findings): what is checked is what was opened, whatever the name means by now. The
/// exclusive probe reopens the descriptor itself (`/proc/self/fd`), and is refused unless it
/// is the same device; the signatures are read through that second descriptor, which has
/// neither the run's O_DIRECT (libblkid's reads are not aligned) nor its file offset.
pub fn inspect_open_block_device(file: &fs::File, device: &Path) -> io::Result<Inspection> {
    use std::os::fd::AsRawFd;
    let meta = file
        .metadata()
        .map_err(with_context(format!("cannot inspect {} before writing to it", device.display())))?;
    let own = std::path::PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    inspect(device, &meta, || {
        let opened = ends::open(&own)?;
        let same = opened.file.metadata().is_ok_and(|m| m.rdev() == meta.rdev());
        if !same {
            return Err(io::Error::other(format!(
                "{} changed while it was being checked; try again",
                device.display()
            )));
        }
        Ok(opened)
    })
}

fn inspect(
    device: &Path,
    meta: &fs::Metadata,
    open: impl FnOnce() -> io::Result<ends::Opened>,
) -> io::Result<Inspection> {
    if !meta.file_type().is_block_device() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a block device; only block devices are checked before writing",
                device.display()
            ),
        ));
    }
    let disk = sysfs::device_node(
        Path::new(SYS),
        crate::target::DeviceNumber::from_dev(meta.rdev()),
        device.display().to_string(),
    )?;
    let partitions = sysfs::partitions(&disk)?;
    let mut nodes = vec![disk];
    nodes.extend(partitions);

    let mut findings = in_use::mounts(Path::new(MOUNTINFO), &nodes)?;
    findings.extend(in_use::swaps(Path::new(SWAPS), &nodes)?);
    findings.extend(in_use::holders(&nodes)?);

    let opened = open()?;
    // Only worth saying when nothing above already explains who has it.
    if opened.claimed_by_someone && findings.is_empty() {
        findings.push(Finding {
            what: "in use: the kernel refused an exclusive open (EBUSY), so something has \
                   claimed it (a mount in another namespace, a RAID or device-mapper layer, \
                   or a running program)"
                .to_string(),
        });
    }
    let prober = Prober::load();
    findings.extend(signatures_on(&prober, &opened.file, device, &nodes)?);
    Ok(Inspection { findings, fallback: prober.fallback_note() })
}

/// What a write to the open regular file `file` would destroy: nothing when it is empty or
/// iolab's own (it begins with iolab's mark: iolab laid it out or wrote it), else its data.
/// Reads no more than the mark's length, through the descriptor the run will use.
pub fn inspect_open_file(file: &fs::File) -> io::Result<Vec<Finding>> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(Vec::new());
    }
    let mut head = [0u8; crate::block::MAGIC.len()];
    let read = file.read_at(&mut head, 0)?;
    if crate::stamp::is_marked(&head[..read]) {
        return Ok(Vec::new());
    }
    Ok(vec![Finding {
        what: format!(
            "it is an existing file of {} that iolab did not lay out (its first block has no iolab mark), so it may hold someone's data",
            iolab_spec::Bytes(len)
        ),
    }])
}

/// Signatures on the device and on each partition, plus the kernel's partitions when no
/// recognised partition table explains them.
fn signatures_on(
    prober: &Prober,
    file: &fs::File,
    device: &Path,
    nodes: &[BlockNode],
) -> io::Result<Vec<Finding>> {
    let size = ends::size(file, device)?;
    let on_disk = prober.detect(file, device, 0, size)?;
    let table_found = on_disk.iter().any(|s| s.partition_table);
    let mut findings: Vec<Finding> = on_disk.into_iter().map(|s| Finding { what: s.what }).collect();

    let partitions: Vec<&BlockNode> = nodes.iter().filter(|n| n.extent.is_some()).collect();
    if !partitions.is_empty() && !table_found {
        let names: Vec<&str> = partitions.iter().map(|p| p.display.as_str()).collect();
        findings.push(Finding { what: format!("partitions known to the kernel: {}", names.join(", ")) });
    }
    for part in partitions {
        let Some(extent) = part.extent else { continue };
        // A partition table the kernel read may claim more than the device holds now.
        let len = extent.len.min(size.saturating_sub(extent.start));
        for sig in prober.detect(file, device, extent.start, len)? {
            findings.push(Finding { what: format!("{} on partition {}", sig.what, part.display) });
        }
    }
    Ok(findings)
}

/// Wraps an `io::Error` with what was being attempted, keeping its kind.
fn with_context(doing: String) -> impl Fn(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{doing}: {e}"))
}
