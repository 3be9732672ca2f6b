//! The block devices a process's open files are on (/proc/<pid>/fd), so that a verdict of
//! another load on a device names only a process that could have made it: /proc/<pid>/io counts
//! a process's bytes, not where they went (an fio writing the root disk was named as the other
//! load on a loop device).

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// How deep the disks under a dm or md device are followed (dm over md over disks is 2).
const STACK_DEPTH: usize = 4;

/// The devices the open files of `pids` are on: a writer's files open for writing (a script
/// or library it only reads says nothing of where its bytes went), a reader's any, but never
/// the standard descriptors' files, and every block device it holds open (on any descriptor:
/// dd writes its `of=` as its standard output); each with the disks beneath it (a partition's disk, a dm or
/// md device's members). `None` where no pid's descriptors could be read (it ended, or is
/// another user's without root).
pub(crate) fn of(pids: &[u32], writer: bool) -> Option<Vec<String>> {
    let mut names = BTreeSet::new();
    let mut read_any = false;
    for pid in pids {
        let Ok(entries) = fs::read_dir(format!("/proc/{pid}/fd")) else { continue };
        read_any = true;
        for entry in entries.flatten() {
            let Ok(meta) = fs::metadata(entry.path()) else { continue };
            let number = if meta.file_type().is_block_device() {
                meta.rdev()
            } else if meta.is_file()
                && !standard(&entry.file_name())
                && (!writer || opened_for_writing(*pid, &entry.file_name()))
            {
                meta.dev()
            } else {
                continue;
            };
            let devnum = format!("{}:{}", libc::major(number), libc::minor(number));
            if let Some(name) = name_of(&devnum) {
                with_disks_beneath(&name, &mut names, 0);
            }
        }
    }
    read_any.then(|| names.into_iter().collect())
}

/// Descriptors 0, 1 and 2: a shell's output redirected to a log is where it was started, not
/// where its children (whose bytes it counts once reaped) wrote; a file there is no evidence.
fn standard(fd: &std::ffi::OsStr) -> bool {
    ["0", "1", "2"].iter().any(|s| fd == *s)
}

/// Whether descriptor `fd` of `pid` is open for writing (its fdinfo's flags).
fn opened_for_writing(pid: u32, fd: &std::ffi::OsStr) -> bool {
    let info = fs::read_to_string(Path::new(&format!("/proc/{pid}/fdinfo")).join(fd)).unwrap_or_default();
    let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).map(str::trim);
    flags.and_then(|f| i32::from_str_radix(f, 8).ok()).is_some_and(|f| f & libc::O_ACCMODE != libc::O_RDONLY)
}

/// The kernel's name of block device `devnum` ("8:1" is "sda1"); none for a filesystem
/// without a block device (tmpfs, proc).
fn name_of(devnum: &str) -> Option<String> {
    let link = fs::read_link(format!("/sys/dev/block/{devnum}")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// Adds `name`, the disk a partition is on, and the members of a dm or md device, down the stack.
fn with_disks_beneath(name: &str, names: &mut BTreeSet<String>, depth: usize) {
    if depth > STACK_DEPTH || !names.insert(name.to_string()) {
        return;
    }
    let class = Path::new("/sys/class/block").join(name);
    if class.join("partition").exists() {
        // /sys/class/block/vda1 -> .../block/vda/vda1: the disk is the parent directory.
        if let Some(disk) =
            fs::canonicalize(&class).ok().and_then(|p| Some(p.parent()?.file_name()?.to_owned()))
        {
            with_disks_beneath(&disk.to_string_lossy(), names, depth + 1);
        }
    }
    for member in fs::read_dir(class.join("slaves")).into_iter().flatten().flatten() {
        with_disks_beneath(&member.file_name().to_string_lossy(), names, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file this process holds open for writing names the device it is on (and its disk).
    #[test]
    fn a_file_open_for_writing_names_its_device() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let held = fs::File::create(dir.path().join("held")).expect("a file");
        let number = held.metadata().expect("stat").dev();
        let Some(device) = name_of(&format!("{}:{}", libc::major(number), libc::minor(number))) else {
            return iolab_test_support::skip!(
                iolab_test_support::Missing::Other,
                "the temp dir is on no block device (tmpfs, overlay)"
            );
        };
        let names = of(&[std::process::id()], true).expect("its own descriptors read");
        assert!(names.contains(&device), "{device} not among {names:?}");
    }

    /// A writer's read-only files say nothing of where its bytes went.
    #[test]
    fn the_access_mode_is_read_from_fdinfo() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("f");
        let written = fs::File::create(&path).expect("a file");
        let read = fs::File::open(&path).expect("opened to read");
        let pid = std::process::id();
        let fd = |f: &fs::File| std::ffi::OsString::from(f.as_raw_fd().to_string());
        assert!(opened_for_writing(pid, &fd(&written)));
        assert!(!opened_for_writing(pid, &fd(&read)));
    }

    #[test]
    fn a_process_that_is_gone_is_not_read() {
        assert_eq!(of(&[u32::MAX - 1], true), None);
    }
}
