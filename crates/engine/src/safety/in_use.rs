//! Who is using a device right now: mounts (`/proc/self/mountinfo`), active swap
//! (`/proc/swaps`) and holders stacked on it (sysfs `holders/`).
//!
//! Mounts are matched by device number (mountinfo's third field), and also by the mount source
//! when it is a `/dev/` node, because btrfs reports an anonymous `0:N` number instead of the
//! disk's. Swap areas are listed by path, so they are matched by the `st_rdev` of that path.

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use super::sysfs::{self, BlockNode};
use super::{with_context, Finding};
use crate::target::DeviceNumber;

/// One line of mountinfo, the fields this check needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    pub(crate) dev: Option<DeviceNumber>,
    pub(crate) mount_point: String,
    pub(crate) source: String,
}

/// Every mount of any of `nodes`, read from `mountinfo`.
pub(crate) fn mounts(mountinfo: &Path, nodes: &[BlockNode]) -> io::Result<Vec<Finding>> {
    let text = fs::read_to_string(mountinfo)
        .map_err(with_context(format!("cannot read {} to check for mounts", mountinfo.display())))?;
    let mut found: Vec<Finding> = Vec::new();
    for mount in parse_mountinfo(&text) {
        let by_number = nodes.iter().find(|n| Some(n.dev) == mount.dev);
        let node = by_number.or_else(|| {
            let dev = block_dev_of(&mount.source)?;
            nodes.iter().find(|n| n.dev == dev)
        });
        if let Some(node) = node {
            let finding = Finding { what: format!("{} is mounted at {}", node.display, mount.mount_point) };
            if !found.contains(&finding) {
                found.push(finding);
            }
        }
    }
    Ok(found)
}

/// Active swap on any of `nodes`, read from `swaps` (`/proc/swaps`, absent without swap support).
pub(crate) fn swaps(swaps: &Path, nodes: &[BlockNode]) -> io::Result<Vec<Finding>> {
    let text = match fs::read_to_string(swaps) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            let context = format!("cannot read {} to check for active swap", swaps.display());
            return Err(with_context(context)(e));
        }
    };
    let mut found = Vec::new();
    for path in parse_swaps(&text) {
        let Some(dev) = block_dev_of(&path) else {
            continue;
        };
        if let Some(node) = nodes.iter().find(|n| n.dev == dev) {
            found.push(Finding { what: format!("{} is in use as active swap space ({path})", node.display) });
        }
    }
    Ok(found)
}

/// Everything stacked on any of `nodes`.
pub(crate) fn holders(nodes: &[BlockNode]) -> io::Result<Vec<Finding>> {
    let mut found = Vec::new();
    for node in nodes {
        for holder in sysfs::holders(node)? {
            let who =
                if node.extent.is_some() { format!("{} is held", node.display) } else { "held".to_string() };
            found.push(Finding {
                what: format!("{who} by {holder} (see /sys/class/block/{}/holders)", node.name),
            });
        }
    }
    Ok(found)
}

/// The device number of `path` if it is a block device node; anything else is no match.
fn block_dev_of(path: &str) -> Option<DeviceNumber> {
    // Only device nodes can be a block device's mount source; statting anything else (a network
    // share's path, a FUSE source) could block or mean nothing.
    if !path.starts_with("/dev/") {
        return None;
    }
    let meta = fs::metadata(path).ok()?;
    meta.file_type().is_block_device().then(|| DeviceNumber::from_dev(meta.rdev()))
}

/// mountinfo lines: `ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE
/// SUPER_OPTIONS`, with spaces and other specials in paths escaped as `\ooo`.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<Mount> {
    let mut mounts = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(dev), Some(mount_point)) = (fields.get(2), fields.get(4)) else {
            continue;
        };
        let source = fields
            .iter()
            .skip(6)
            .position(|f| *f == "-")
            .and_then(|dash| fields.get(6 + dash + 2))
            .map(|s| unescape(s))
            .unwrap_or_default();
        mounts.push(Mount { dev: DeviceNumber::parse(dev), mount_point: unescape(mount_point), source });
    }
    mounts
}

/// `/proc/swaps`: a header line, then `FILENAME TYPE SIZE USED PRIORITY`, paths escaped as in
/// mountinfo.
pub(crate) fn parse_swaps(text: &str) -> Vec<String> {
    text.lines().skip(1).filter_map(|line| line.split_whitespace().next()).map(unescape).collect()
}

/// Undoes the kernel's `\ooo` octal escaping of paths in /proc files.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            let digits = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(digits, 8).ok()
        });
        match octal {
            Some(byte) if bytes[i] == b'\\' => {
                out.push(byte);
                i += 4;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
36 27 7:3 / /mnt/with\\040space rw,relatime shared:12 master:1 - ext4 /dev/loop3 rw
37 27 259:1 / /srv rw,relatime - xfs /dev/loop3p1 rw
38 27 0:45 /@home /home rw,relatime shared:3 - btrfs /dev/loop3p2 rw,space_cache=v2
";

    #[test]
    fn mountinfo_fields_with_optional_fields_and_escapes() {
        let mounts = parse_mountinfo(MOUNTINFO);
        assert_eq!(mounts.len(), 4);
        assert_eq!(
            mounts[1],
            Mount {
                dev: Some(DeviceNumber { major: 7, minor: 3 }),
                mount_point: "/mnt/with space".into(),
                source: "/dev/loop3".into(),
            }
        );
        assert_eq!(mounts[2].source, "/dev/loop3p1");
        assert_eq!(mounts[3].dev, Some(DeviceNumber { major: 0, minor: 45 }));
        assert_eq!(mounts[3].source, "/dev/loop3p2");
    }

    #[test]
    fn garbage_lines_are_skipped() {
        let mounts = parse_mountinfo("\n\nshort line\n1 2 x:y / /m\n");
        assert_eq!(mounts.len(), 1);
        assert_eq!(mounts[0].dev, None);
        assert_eq!(mounts[0].source, "");
    }

    #[test]
    fn swaps_lists_paths_after_the_header() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/vdb2                               partition\t8388604\t\t0\t\t-2\n\
                    /swap\\040file                          file\t\t1048572\t\t0\t\t-3\n";
        assert_eq!(parse_swaps(text), ["/dev/vdb2", "/swap file"]);
        assert_eq!(parse_swaps("Filename\tType\tSize\tUsed\tPriority\n"), Vec::<String>::new());
    }

    #[test]
    fn unescape_handles_octal_and_leaves_the_rest() {
        assert_eq!(unescape(r"/a\040b\011c\134d"), "/a b\tc\\d");
        assert_eq!(unescape(r"/trailing\04"), r"/trailing\04");
        assert_eq!(unescape(r"\999"), r"\999");
    }
}
