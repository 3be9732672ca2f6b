//! The write-safety check against a real block device: a loop device over a file in /dev/shm,
//! given a filesystem, mounted, turned into swap, partitioned, and (where device-mapper exists)
//! held by a dm device.
//!
//! Needs root and util-linux/e2fsprogs tools; skips with a reason otherwise. Only ever touches
//! the loop device it created itself, by the exact path `losetup` printed, and cleans up in a
//! `Drop` guard so a failed assertion leaves nothing behind.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::Duration;

use iolab_engine::safety::{inspect_block_device, Finding};

const IMAGE_BYTES: u64 = 64 << 20;
const MIB: usize = 1 << 20;

#[test]
fn non_block_devices_are_an_error_not_a_verdict() {
    let file = std::env::temp_dir().join(format!("iolab-safety-regular-{}", std::process::id()));
    fs::write(&file, [0u8; 4096]).expect("write a regular file");
    let err = inspect_block_device(&file).expect_err("a regular file is not a block device");
    let _ = fs::remove_file(&file);
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("not a block device"), "{err}");

    let missing = Path::new("/dev/iolab-no-such-device");
    let err = inspect_block_device(missing).expect_err("missing device");
    assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    assert!(err.to_string().contains("/dev/iolab-no-such-device"), "{err}");
}

#[test]
fn loop_device_blank_ext4_mounted_swap_partitioned_held() {
    let Some(tools) = Tools::find() else { return };
    let Some(mut lo) = LoopDevice::create(tools) else {
        return;
    };
    let dev = lo.device.clone();

    // (a) A fresh device is all zeroes: nothing to protect.
    let found = inspect(&dev);
    assert!(found.is_empty(), "blank device: {found:#?}");

    // (b) A filesystem.
    lo.run(&lo.tools.mkfs_ext4, ["-q", "-F"], &[&dev]);
    let found = inspect(&dev);
    assert_has(&found, "an ext4 filesystem signature");

    // (c) Mounted; and once unmounted, only the signature is left.
    let dir = lo.mount(&dev);
    let found = inspect(&dev);
    assert_has(&found, &format!("{} is mounted at {}", dev.display(), dir.display()));
    assert_has(&found, "an ext4 filesystem signature");
    lo.umount(&dir);
    let found = inspect(&dev);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_has(&found, "an ext4 filesystem signature");

    // Swap space (made, never activated: swapon would change the machine).
    lo.zero_ends();
    if let Some(mkswap) = lo.tools.mkswap.clone() {
        lo.run(&mkswap, ["-q"], &[&dev]);
        let found = inspect(&dev);
        assert_eq!(found.len(), 1, "{found:#?}");
        // libblkid's name for it, or iolab's own list's.
        assert!(found[0].what.starts_with("a swap "), "{found:#?}");
        lo.zero_ends();
    } else {
        iolab_test_support::skip!(iolab_test_support::Missing::Other, "the swap step: mkswap not found");
    }
    assert!(inspect(&dev).is_empty(), "after wiping");

    // (d) A partition table, then a filesystem on a partition and that partition mounted.
    lo.partition();
    let found = inspect(&dev);
    assert_has(&found, "partition table");
    match lo.first_partition() {
        Some(part) => {
            lo.run(&lo.tools.mkfs_ext4, ["-q", "-F"], &[&part]);
            let found = inspect(&dev);
            let on_part = format!("on partition {}", part.display());
            assert!(
                found
                    .iter()
                    .any(|f| f.what.contains("an ext4 filesystem signature") && f.what.ends_with(&on_part)),
                "{found:#?}"
            );
            let dir = lo.mount(&part);
            let found = inspect(&dev);
            assert_has(&found, &format!("{} is mounted at {}", part.display(), dir.display()));
            lo.umount(&dir);
        }
        None => iolab_test_support::skip!(
            iolab_test_support::Missing::Other,
            "the partition mount step: the kernel made no partition node"
        ),
    }

    // Held by a device stacked on top, where device-mapper is available.
    lo.zero_ends();
    lo.reread_partitions();
    match lo.dm_linear() {
        Some(holder) => {
            let found = inspect(&dev);
            assert_has(&found, &format!("held by {holder}"));
            lo.dm_remove();
        }
        None => iolab_test_support::skip!(
            iolab_test_support::Missing::Other,
            "the holder step: device-mapper unavailable here"
        ),
    }
}

fn inspect(dev: &Path) -> Vec<Finding> {
    inspect_block_device(dev).unwrap_or_else(|e| panic!("inspect {}: {e}", dev.display())).findings
}

fn assert_has(found: &[Finding], needle: &str) {
    assert!(
        found.iter().any(|f| f.what.contains(needle)),
        "expected a finding containing {needle:?}, got {found:#?}"
    );
}

/// The programs the test drives; the required ones must exist or the test skips.
#[derive(Clone)]
struct Tools {
    losetup: PathBuf,
    mkfs_ext4: PathBuf,
    mount: PathBuf,
    umount: PathBuf,
    mkswap: Option<PathBuf>,
    sfdisk: Option<PathBuf>,
    blockdev: Option<PathBuf>,
    dmsetup: Option<PathBuf>,
}

impl Tools {
    fn find() -> Option<Tools> {
        if !is_root() {
            iolab_test_support::skip!(
                iolab_test_support::Missing::Root,
                "needs root to create and mount loop devices"
            );
            return None;
        }
        let required = |name: &str| {
            let found = which(name);
            if found.is_none() {
                let missing = if name == "losetup" {
                    iolab_test_support::Missing::Loop
                } else {
                    iolab_test_support::Missing::Other
                };
                iolab_test_support::skip!(missing, "{name} not found in PATH, /usr/sbin or /sbin");
            }
            found
        };
        Some(Tools {
            losetup: required("losetup")?,
            mkfs_ext4: required("mkfs.ext4")?,
            mount: required("mount")?,
            umount: required("umount")?,
            mkswap: which("mkswap"),
            sfdisk: which("sfdisk"),
            blockdev: which("blockdev"),
            dmsetup: which("dmsetup"),
        })
    }
}

fn is_root() -> bool {
    // The effective uid is the second number of the `Uid:` line.
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Uid:"))?.to_string();
            line.split_whitespace().nth(2).map(|uid| uid == "0")
        })
        .unwrap_or(false)
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A loop device this test created, and everything made on it; all undone on drop.
struct LoopDevice {
    tools: Tools,
    image: PathBuf,
    /// Exactly what `losetup --show` printed.
    device: PathBuf,
    mounted: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
    dm_name: Option<String>,
}

impl LoopDevice {
    fn create(tools: Tools) -> Option<LoopDevice> {
        let image = PathBuf::from(format!("/dev/shm/iolab-safety-{}.img", std::process::id()));
        let file = fs::File::create(&image).expect("create the backing file in /dev/shm");
        file.set_len(IMAGE_BYTES).expect("size the backing file");
        drop(file);
        let out = Command::new(&tools.losetup)
            .args(["-f", "--show", "-P"])
            .arg(&image)
            .output()
            .expect("run losetup");
        let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || !is_loop_path(&printed) {
            let _ = fs::remove_file(&image);
            iolab_test_support::skip!(
                iolab_test_support::Missing::Loop,
                "losetup could not attach a loop device ({}{})",
                printed,
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(LoopDevice {
            tools,
            image,
            device: PathBuf::from(printed),
            mounted: Vec::new(),
            dirs: Vec::new(),
            dm_name: None,
        })
    }

    /// Runs `program ARGS... TARGETS...`, panicking with its stderr if it fails.
    fn run<'a>(&self, program: &Path, args: impl IntoIterator<Item = &'a str>, targets: &[&Path]) {
        let out = Command::new(program)
            .args(args)
            .args(targets)
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", program.display()));
        assert!(
            out.status.success(),
            "{} {targets:?} failed: {}",
            program.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn mount(&mut self, what: &Path) -> PathBuf {
        let dir = unique_dir();
        self.dirs.push(dir.clone());
        self.run(&self.tools.mount, [], &[what, &dir]);
        self.mounted.push(dir.clone());
        dir
    }

    fn umount(&mut self, dir: &Path) {
        self.run(&self.tools.umount, [], &[dir]);
        self.mounted.retain(|d| d != dir);
    }

    /// Zeroes the first and last MiB through the loop device (so its page cache stays coherent).
    fn zero_ends(&self) {
        let dev =
            OpenOptions::new().write(true).open(&self.device).expect("open the loop device for writing");
        let zeros = vec![0u8; MIB];
        dev.write_all_at(&zeros, 0).expect("zero the head");
        dev.write_all_at(&zeros, IMAGE_BYTES - MIB as u64).expect("zero the tail");
        dev.sync_all().expect("sync the loop device");
    }

    /// One Linux partition from sector 2048 to the end: with sfdisk if present, else by hand.
    fn partition(&self) {
        if let Some(sfdisk) = &self.tools.sfdisk {
            let mut child = Command::new(sfdisk)
                .args(["-q", "--no-reread"])
                .arg(&self.device)
                .stdin(std::process::Stdio::piped())
                .spawn()
                .expect("run sfdisk");
            if let Some(mut stdin) = child.stdin.take() {
                io::Write::write_all(&mut stdin, b"label: dos\nstart=2048, type=83\n").expect("feed sfdisk");
            }
            assert!(child.wait().expect("wait for sfdisk").success(), "sfdisk failed");
        } else {
            let mut mbr = [0u8; 512];
            let sectors = u32::try_from(IMAGE_BYTES / 512 - 2048).expect("fits");
            mbr[446 + 4] = 0x83;
            mbr[446 + 8..446 + 12].copy_from_slice(&2048u32.to_le_bytes());
            mbr[446 + 12..446 + 16].copy_from_slice(&sectors.to_le_bytes());
            mbr[510..].copy_from_slice(&[0x55, 0xAA]);
            let dev =
                OpenOptions::new().write(true).open(&self.device).expect("open the loop device for writing");
            dev.write_all_at(&mbr, 0).expect("write the MBR");
            dev.sync_all().expect("sync the loop device");
        }
        self.reread_partitions();
    }

    fn reread_partitions(&self) {
        match &self.tools.blockdev {
            Some(blockdev) => self.run(blockdev, ["--rereadpt"], &[&self.device]),
            None => eprintln!("blockdev not found: the kernel keeps its old partition list"),
        }
    }

    /// The first partition's node, once the kernel has made it.
    fn first_partition(&self) -> Option<PathBuf> {
        let part = PathBuf::from(format!("{}p1", self.device.display()));
        for _ in 0..50 {
            if part.exists() {
                return Some(part);
            }
            thread::sleep(Duration::from_millis(100));
        }
        None
    }

    /// Stacks a linear dm device on the loop device; its kernel name (`dm-N`) if that worked.
    fn dm_linear(&mut self) -> Option<String> {
        let dmsetup = self.tools.dmsetup.clone()?;
        let name = format!("iolab-safety-{}", std::process::id());
        let table = format!("0 {} linear {} 0", IMAGE_BYTES / 512, self.device.display());
        let out = Command::new(&dmsetup).args(["create", &name, "--table", &table]).output().ok()?;
        if !out.status.success() {
            return None;
        }
        self.dm_name = Some(name);
        let loop_name = self.device.file_name()?.to_string_lossy().into_owned();
        let holders = fs::read_dir(format!("/sys/class/block/{loop_name}/holders")).ok()?;
        holders.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).next()
    }

    fn dm_remove(&mut self) {
        if let (Some(dmsetup), Some(name)) = (self.tools.dmsetup.clone(), self.dm_name.take()) {
            self.run(&dmsetup, ["remove"], &[Path::new(&name)]);
        }
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        for dir in self.mounted.iter().rev() {
            let ok = Command::new(&self.tools.umount).arg(dir).status().is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new(&self.tools.umount).arg("-l").arg(dir).status();
            }
        }
        if let (Some(dmsetup), Some(name)) = (&self.tools.dmsetup, &self.dm_name) {
            let _ = Command::new(dmsetup).args(["remove", name]).status();
        }
        let _ = Command::new(&self.tools.losetup).arg("-d").arg(&self.device).status();
        let _ = fs::remove_file(&self.image);
        for dir in &self.dirs {
            let _ = fs::remove_dir(dir);
        }
    }
}

/// `/dev/loopN` and nothing else: the only kind of device this test may write to.
fn is_loop_path(path: &str) -> bool {
    path.strip_prefix("/dev/loop").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A new empty directory under /tmp (what mkdtemp does, without a dependency).
fn unique_dir() -> PathBuf {
    for n in 0u32.. {
        let dir = std::env::temp_dir().join(format!("iolab-safety-mnt-{}-{n}", std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("create a mount point under {}: {e}", dir.display()),
        }
    }
    unreachable!("u32 ran out of directory names")
}
