//! What the kernel says about a block device in sysfs: its directory (`/sys/dev/block/MAJ:MIN`),
//! the partitions below it, and the `holders/` naming whatever is stacked on top of it
//! (device-mapper, md, bcache).
//!
//! sysfs rather than ioctls: reading it needs no open descriptor and no `unsafe`, and only
//! sysfs names the holders. Functions take the sysfs root so tests can build a fake tree.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::with_context;
use crate::target::DeviceNumber;

/// Where a partition lies on its disk, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extent {
    pub(crate) start: u64,
    pub(crate) len: u64,
}

/// The device to be written, or one of its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BlockNode {
    /// The kernel's name, e.g. `sdb1`.
    pub(crate) name: String,
    /// How findings name it: the path the user gave for the device, `/dev/NAME` for a partition.
    pub(crate) display: String,
    pub(crate) dev: DeviceNumber,
    /// Its canonical sysfs directory.
    pub(crate) sysdir: PathBuf,
    /// `None` for the device itself.
    pub(crate) extent: Option<Extent>,
}

/// Something stacked on a block device, from its `holders/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    /// The holder's kernel name, e.g. `dm-0` or `md127`.
    pub(crate) name: String,
    /// The device-mapper name (`vg0-data`), when the holder is a dm device.
    pub(crate) dm_name: Option<String>,
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.dm_name {
            Some(dm) => write!(f, "{} ({dm})", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// The device numbered `dev`, with its sysfs directory resolved under `sys_root`.
pub(crate) fn device_node(sys_root: &Path, dev: DeviceNumber, display: String) -> io::Result<BlockNode> {
    let link = sys_root.join("dev/block").join(dev.to_string());
    let sysdir = fs::canonicalize(&link).map_err(with_context(format!(
        "cannot find block device {dev} ({display}) in sysfs at {}",
        link.display()
    )))?;
    let name =
        sysdir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| dev.to_string());
    Ok(BlockNode { name, display, dev, sysdir, extent: None })
}

/// The partitions of `disk`: subdirectories of its sysfs directory holding a `partition` file,
/// in partition-number order.
pub(crate) fn partitions(disk: &BlockNode) -> io::Result<Vec<BlockNode>> {
    let listing = with_context(format!("cannot list partitions in {}", disk.sysdir.display()));
    let mut found = Vec::new();
    for entry in fs::read_dir(&disk.sysdir).map_err(&listing)? {
        let dir = entry.map_err(&listing)?.path();
        let number_file = dir.join("partition");
        if !number_file.is_file() {
            continue;
        }
        let number = read_u64(&number_file)?;
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let dev_file = dir.join("dev");
        let dev = DeviceNumber::parse(&read_text(&dev_file)?).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} does not hold MAJ:MIN", dev_file.display()),
            )
        })?;
        // sysfs counts in 512-byte sectors whatever the device's logical block size.
        let start = read_u64(&dir.join("start"))?.saturating_mul(512);
        let len = read_u64(&dir.join("size"))?.saturating_mul(512);
        found.push((
            number,
            BlockNode {
                display: format!("/dev/{name}"),
                name,
                dev,
                sysdir: dir,
                extent: Some(Extent { start, len }),
            },
        ));
    }
    found.sort_by_key(|(number, _)| *number);
    Ok(found.into_iter().map(|(_, node)| node).collect())
}

/// What holds `node`; an absent `holders/` directory means nothing does.
pub(crate) fn holders(node: &BlockNode) -> io::Result<Vec<Holder>> {
    let dir = node.sysdir.join("holders");
    let listing = with_context(format!("cannot list {}", dir.display()));
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(listing(e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(&listing)?;
        let dm_name = fs::read_to_string(entry.path().join("dm/name"))
            .ok()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty());
        found.push(Holder { name: entry.file_name().to_string_lossy().into_owned(), dm_name });
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

fn read_text(path: &Path) -> io::Result<String> {
    fs::read_to_string(path).map_err(with_context(format!("cannot read {}", path.display())))
}

fn read_u64(path: &Path) -> io::Result<u64> {
    let text = read_text(path)?;
    text.trim().parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} holds {:?}, not a number", path.display(), text.trim()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A throwaway fake sysfs tree, removed on drop.
    struct FakeSys(PathBuf);

    impl FakeSys {
        fn new(tag: &str) -> Self {
            let root = std::env::temp_dir().join(format!("iolab-fakesys-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&root);
            fs::create_dir_all(&root).expect("create fake sysfs root");
            FakeSys(root)
        }

        fn write(&self, rel: &str, text: &str) {
            let path = self.0.join(rel);
            fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
            fs::write(path, text).expect("write fake sysfs file");
        }

        fn mkdir(&self, rel: &str) {
            fs::create_dir_all(self.0.join(rel)).expect("mkdir");
        }
    }

    impl Drop for FakeSys {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn fake_disk(tag: &str) -> FakeSys {
        let sys = FakeSys::new(tag);
        let disk = "devices/virtual/block/loop7";
        sys.write(&format!("{disk}/dev"), "7:7\n");
        sys.mkdir(&format!("{disk}/holders"));
        for (n, minor, start) in [(2, 258, 4096), (1, 257, 2048), (10, 265, 8192)] {
            let part = format!("{disk}/loop7p{n}");
            sys.write(&format!("{part}/partition"), &format!("{n}\n"));
            sys.write(&format!("{part}/dev"), &format!("259:{minor}\n"));
            sys.write(&format!("{part}/start"), &format!("{start}\n"));
            sys.write(&format!("{part}/size"), "2048\n");
            sys.mkdir(&format!("{part}/holders"));
        }
        sys.mkdir(&format!("{disk}/queue"));
        sys.mkdir("dev/block");
        std::os::unix::fs::symlink(sys.0.join(disk), sys.0.join("dev/block/7:7")).expect("symlink");
        sys
    }

    #[test]
    fn dev_id_parses_and_prints() {
        let dev = DeviceNumber::parse("259:3\n").expect("parses");
        assert_eq!((dev.major, dev.minor), (259, 3));
        assert_eq!(dev.to_string(), "259:3");
        assert_eq!(DeviceNumber::parse("259"), None);
        assert_eq!(DeviceNumber::parse("a:b"), None);
    }

    #[test]
    fn finds_the_device_and_its_partitions_in_number_order() {
        let sys = fake_disk("parts");
        let disk = device_node(&sys.0, DeviceNumber { major: 7, minor: 7 }, "/dev/disk/by-id/x".into())
            .expect("device node");
        assert_eq!(disk.name, "loop7");
        assert_eq!(disk.display, "/dev/disk/by-id/x");
        let parts = partitions(&disk).expect("partitions");
        let names: Vec<_> = parts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["loop7p1", "loop7p2", "loop7p10"]);
        assert_eq!(parts[0].display, "/dev/loop7p1");
        assert_eq!(parts[0].dev, DeviceNumber { major: 259, minor: 257 });
        assert_eq!(parts[0].extent, Some(Extent { start: 2048 * 512, len: 2048 * 512 }));
    }

    #[test]
    fn names_holders_with_their_dm_name() {
        let sys = fake_disk("holders");
        let disk = device_node(&sys.0, DeviceNumber { major: 7, minor: 7 }, "/dev/loop7".into())
            .expect("device node");
        assert_eq!(holders(&disk).expect("holders"), vec![]);
        sys.write("devices/virtual/block/loop7/holders/dm-0/dm/name", "vg0-data\n");
        sys.mkdir("devices/virtual/block/loop7/holders/md127");
        let found = holders(&disk).expect("holders");
        let shown: Vec<_> = found.iter().map(|h| h.to_string()).collect();
        assert_eq!(shown, ["dm-0 (vg0-data)", "md127"]);
    }

    #[test]
    fn unknown_device_number_is_an_error_naming_it() {
        let sys = fake_disk("missing");
        let err = device_node(&sys.0, DeviceNumber { major: 8, minor: 0 }, "/dev/sdz".into())
            .expect_err("no such device");
        assert!(err.to_string().contains("8:0 (/dev/sdz)"), "{err}");
    }
}
