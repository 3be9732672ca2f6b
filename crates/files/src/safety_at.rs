//! The rules of `safety.rs` (a marker first; a directory that is new, empty or its own earlier
//! tree; removal of what iolab made only), worked through an opened directory's descriptor
//! rather than its path: for a directory opened beneath an agent's `--allow-write` without
//! following links (`iolab fleet files`), so that nothing here resolves its name again, and for
//! every clean-up of a local run. Below it, every directory is opened `O_NOFOLLOW` from its
//! parent's descriptor: a symbolic link in the tree is never followed, nor removed (iolab
//! makes none).
//!
//! What iolab made is told by name and by time: a run marks its tree (the marker's
//! modification time set to now) as it works and when each phase ends, and a file is its own
//! only if it has iolab's name and has not changed since the last mark (its ctime, which the
//! kernel stamps on every change and no call sets back, is no later). A file a user put in a
//! kept tree, or wrote to, is left where it is. A run killed outright marks nothing at its
//! end: its marker still names it, dead, and its files count as made up to `KILLED_GRACE`
//! after its last mark (it marks every `MARK_EVERY` while it works).

use std::ffi::OsString;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use iolab_engine::fileops::{entry_stat, touch, EntryKind, FileOps, FileOpsEngine};

use crate::error::FilesError;
use crate::owner::Owner;
use crate::tree::is_our_name;

/// The marker's name in the run's directory.
pub const MARKER: &str = ".iolab-files";
pub(crate) const CREATED_LINE: &str = "created-by-iolab: yes";

/// What a clean-up removed and what it left.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cleaned {
    pub files: u64,
    pub dirs: u64,
    /// Entries iolab did not make (other names, links, files changed since the run's last
    /// mark), left where they were.
    pub left: Vec<PathBuf>,
    /// The directory itself was removed (iolab had made it).
    pub removed_top: bool,
}

impl Cleaned {
    /// The run's note for an earlier tree in `dir` removed before it began.
    pub(crate) fn earlier_note(&self, dir: &Path) -> String {
        format!(
            "an earlier iolab tree in {} was removed first ({} files, {} directories)",
            dir.display(),
            self.files,
            self.dirs
        )
    }
}

/// Makes the opened directory `top` ready for a run as `safety::prepare` does a path: empty,
/// or holding an earlier iolab tree (removed first, and answered), else refused untouched.
/// Writes the marker; `created` says whether the caller made the directory.
pub fn prepare_at(top: BorrowedFd<'_>, shown: &Path, created: bool) -> Result<Option<Cleaned>, FilesError> {
    let mut sys = sync_ops()?;
    let names = names(top.as_raw_fd(), shown)?;
    let mut earlier = None;
    if names.iter().any(|n| n.as_bytes() == MARKER.as_bytes()) {
        if let Some(owner) = live_owner(&read_marker(&mut sys, top.as_raw_fd(), shown)?) {
            return Err(FilesError::Refused(format!(
                "{} holds the iolab tree of {owner}, not an earlier one of this host's: nothing was touched; on a filesystem several hosts share, give each its own directory (`{{n}}` in DIR is the host's place in the list)",
                shown.display()
            )));
        }
        let cleaned = clean_tree_at(&mut sys, top.as_raw_fd(), shown)?;
        if let Some(first) = cleaned.left.first() {
            return Err(FilesError::Refused(format!(
                "{} holds an earlier iolab tree and {} other entries ({}): iolab removed its own files and leaves the rest; move them away or give another directory",
                shown.display(),
                cleaned.left.len(),
                first.display()
            )));
        }
        unlink(&mut sys, top.as_raw_fd(), MARKER.as_bytes(), false, &shown.join(MARKER))?;
        earlier = Some(cleaned);
    } else if let Some(name) = names.first() {
        return Err(FilesError::Refused(format!(
            "{} is not empty (it holds {}) and holds no iolab tree ({MARKER}); nothing was touched: give a new or empty directory",
            shown.display(),
            name.to_string_lossy()
        )));
    }
    let text = format!(
        "iolab files tree: iolab removes what it made here (`iolab files --clean {}`).\n{}\npid: {}\nhost: {}\n",
        shown.display(),
        if created { CREATED_LINE } else { "created-by-iolab: no" },
        std::process::id(),
        hostname()
    );
    let marker = shown.join(MARKER);
    let fd = sys
        .openat(
            top.as_raw_fd(),
            &c_name(MARKER.as_bytes()),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
            0o644,
        )
        .map_err(|e| FilesError::io("cannot write the marker", &marker, e))?;
    let written = sys.write(fd, text.as_bytes(), 0).and_then(|n| {
        if n == text.len() {
            sys.fsync(fd)
        } else {
            Err(std::io::Error::other("a short write"))
        }
    });
    let closed = sys.close(fd);
    written.and(closed).map_err(|e| FilesError::io("cannot write the marker", &marker, e))?;
    Ok(earlier)
}

/// Removes the trees iolab made in the opened directory `top` (it must hold the marker), then
/// the marker when nothing else is left. The directory itself stays: its opener removes it.
pub fn clean_at(top: BorrowedFd<'_>, shown: &Path) -> Result<Cleaned, FilesError> {
    let mut sys = sync_ops()?;
    let names = names(top.as_raw_fd(), shown)?;
    if !names.iter().any(|n| n.as_bytes() == MARKER.as_bytes()) {
        return Err(FilesError::Refused(format!(
            "{} holds no iolab tree (no {MARKER} marker); nothing was removed",
            shown.display()
        )));
    }
    let cleaned = clean_tree_at(&mut sys, top.as_raw_fd(), shown)?;
    if cleaned.left.is_empty() {
        unlink(&mut sys, top.as_raw_fd(), MARKER.as_bytes(), false, &shown.join(MARKER))?;
    }
    Ok(cleaned)
}

/// How often a running phase marks its tree.
pub(crate) const MARK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// How long after its last mark a run that was killed (its marker names it, and it is dead) may
/// have made files: several marks it missed, for a marking thread a busy machine held up.
const KILLED_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Marks the tree in the opened directory `top` (its marker's times set to now): everything
/// iolab made there so far changed no later.
pub fn mark(top: i32) -> std::io::Result<()> {
    touch(top, &c_name(MARKER.as_bytes()))
}

/// When the tree in `top` was last marked (ns since the epoch).
fn marked_at(top: i32, shown: &Path) -> Result<i128, FilesError> {
    entry_stat(top, &c_name(MARKER.as_bytes()))
        .map(|marker| marker.mtime_ns)
        .map_err(|e| FilesError::io("cannot read the marker", shown.join(MARKER), e))
}

/// Until when the tree in `top` holds what iolab made: its last mark, or a little after it
/// when the run that marked it was killed before it could mark its end.
fn made_until(sys: &mut FileOps, top: i32, shown: &Path) -> Result<i128, FilesError> {
    let marked = marked_at(top, shown)?;
    let killed = Owner::in_marker(&read_marker(sys, top, shown)?).is_some_and(|owner| !owner.alive());
    Ok(if killed { marked + KILLED_GRACE.as_nanos() as i128 } else { marked })
}

/// Who else may be working the tree a marker describes: another host (its `host:` line, on a
/// filesystem the hosts share), or a live process of this host other than this one (its `pid:`).
fn live_owner(marker: &str) -> Option<String> {
    let field = |name: &str| marker.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
    match field("host:") {
        Some(host) if host != hostname() => return Some(format!("host {host}")),
        _ => {}
    }
    let pid: u32 = field("pid:")?.parse().ok()?;
    let alive = Path::new(&format!("/proc/{pid}")).exists();
    (pid != std::process::id() && alive).then(|| format!("process {pid}, still running"))
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// The marker's text (its first 4 KiB), opened without following a link.
fn read_marker(sys: &mut FileOps, top: i32, shown: &Path) -> Result<String, FilesError> {
    let marker = shown.join(MARKER);
    let fd = sys
        .openat(top, &c_name(MARKER.as_bytes()), libc::O_RDONLY | libc::O_NOFOLLOW, 0)
        .map_err(|e| FilesError::io("cannot read the marker", &marker, e))?;
    let mut buf = vec![0u8; 4096];
    let read = sys.read(fd, &mut buf, 0);
    let _ = sys.close(fd);
    let n = read.map_err(|e| FilesError::io("cannot read the marker", &marker, e))?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

fn sync_ops() -> Result<FileOps, FilesError> {
    FileOps::new(FileOpsEngine::Sync).map_err(|e| FilesError::io("cannot start", "the clean-up", e))
}

/// `name` NUL-terminated, as the file operations take paths.
fn c_name(name: &[u8]) -> Vec<u8> {
    let mut c = Vec::with_capacity(name.len() + 1);
    c.extend_from_slice(name);
    c.push(0);
    c
}

/// The names in the directory open as `fd` (through its /proc entry: that directory itself,
/// whatever its path now leads to).
fn names(fd: i32, shown: &Path) -> Result<Vec<OsString>, FilesError> {
    let proc = PathBuf::from(format!("/proc/self/fd/{fd}"));
    let listing = std::fs::read_dir(&proc).map_err(|e| FilesError::io("cannot read", shown, e))?;
    listing
        .map(|entry| entry.map(|e| e.file_name()).map_err(|e| FilesError::io("cannot read", shown, e)))
        .collect()
}

/// The entries of the directory open as `fd`, each with whether the listing says it is a
/// directory (its d_type: no system call per entry).
fn entries(fd: i32, shown: &Path) -> Result<Vec<(OsString, bool)>, FilesError> {
    let proc = PathBuf::from(format!("/proc/self/fd/{fd}"));
    let listing = std::fs::read_dir(&proc).map_err(|e| FilesError::io("cannot read", shown, e))?;
    listing
        .map(|entry| {
            let entry = entry.map_err(|e| FilesError::io("cannot read", shown, e))?;
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            Ok((entry.file_name(), is_dir))
        })
        .collect()
}

fn unlink(sys: &mut FileOps, dir: i32, name: &[u8], is_dir: bool, shown: &Path) -> Result<(), FilesError> {
    sys.unlinkat(dir, &c_name(name), is_dir).map_err(|e| FilesError::io("cannot remove", shown, e))
}

/// The directory `name` in `parent`, opened without following a link; `None` when the name
/// is not a directory (a file, or a symbolic link to anything, swapped in since it was seen).
fn open_dir(sys: &mut FileOps, parent: i32, name: &[u8], shown: &Path) -> Result<Option<i32>, FilesError> {
    match sys.openat(parent, &c_name(name), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0) {
        Ok(fd) => Ok(Some(fd)),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => Ok(None),
        Err(e) => Err(FilesError::io("cannot open", shown, e)),
    }
}

/// What the walk needs: the operations, and the tree's last mark.
struct Walk<'s> {
    sys: &'s mut FileOps,
    marked_ns: i128,
}

/// Removes the trees (directories of iolab's top-level names) in `top`, leaving the marker:
/// what iolab made, by name and not changed since the tree's last mark.
pub(crate) fn clean_tree_at(sys: &mut FileOps, top: i32, shown: &Path) -> Result<Cleaned, FilesError> {
    let mut cleaned = Cleaned::default();
    let marked_ns = made_until(sys, top, shown)?;
    let mut walk = Walk { sys, marked_ns };
    for name in names(top, shown)? {
        let bytes = name.as_bytes();
        let path = shown.join(&name);
        if bytes == MARKER.as_bytes() {
            continue;
        }
        if !is_our_name(bytes, true) {
            cleaned.left.push(path);
            continue;
        }
        match open_dir(walk.sys, top, bytes, &path)? {
            Some(fd) => {
                let emptied = empty_dir(&mut walk, fd, &path, &mut cleaned);
                let _ = walk.sys.close(fd);
                if emptied? {
                    unlink(walk.sys, top, bytes, true, &path)?;
                    cleaned.dirs += 1;
                }
            }
            None => cleaned.left.push(path),
        }
    }
    Ok(cleaned)
}

/// Whether the entry `name` of `dir` is a file iolab made: a regular file, or a symbolic link
/// of the symlink phase's name (`l<N>`: removed as the link itself, never followed), unchanged
/// since the tree's last mark.
fn made_by_us(walk: &Walk<'_>, dir: i32, name: &[u8], shown: &Path) -> Result<bool, FilesError> {
    match entry_stat(dir, &c_name(name)) {
        Ok(entry) => Ok(match entry.kind {
            EntryKind::File => entry.ctime_ns <= walk.marked_ns,
            EntryKind::Link => name.first() == Some(&b'l') && entry.ctime_ns <= walk.marked_ns,
            _ => false,
        }),
        Err(e) => Err(FilesError::io("cannot read", shown, e)),
    }
}

/// Removes what iolab made in the open directory `dir`; whether it is empty now.
fn empty_dir(walk: &mut Walk<'_>, dir: i32, shown: &Path, cleaned: &mut Cleaned) -> Result<bool, FilesError> {
    // Entries are removed while the directory is read; another pass finds any a listing missed.
    loop {
        let (mut removed, mut kept_here) = (0u64, 0usize);
        let listed = entries(dir, shown)?;
        // Every file is judged before any is removed: removing a hard link (h<N>) changes its
        // file's inode, which would then look changed since the mark.
        let mut judged = Vec::with_capacity(listed.len());
        for (name, listed_dir) in listed {
            let bytes = name.as_bytes();
            let file_ours =
                !listed_dir && is_our_name(bytes, false) && made_by_us(walk, dir, bytes, &shown.join(&name))?;
            judged.push((name, listed_dir, file_ours));
        }
        for (name, listed_dir, file_ours) in judged {
            let bytes = name.as_bytes();
            let path = shown.join(&name);
            // A file is not opened as a directory first (a failed call per file): the listing
            // says which it is, and a swap since is caught by O_NOFOLLOW or the file's stat.
            let named_ours = is_our_name(bytes, false);
            let as_dir = if named_ours && listed_dir { open_dir(walk.sys, dir, bytes, &path)? } else { None };
            let ours = named_ours
                && match as_dir {
                    Some(fd) => {
                        let emptied = empty_dir(walk, fd, &path, cleaned);
                        let _ = walk.sys.close(fd);
                        if emptied? {
                            unlink(walk.sys, dir, bytes, true, &path)?;
                            cleaned.dirs += 1;
                            true
                        } else {
                            // Kept: it holds what iolab did not make (listed in `left`).
                            kept_here += 1;
                            continue;
                        }
                    }
                    None if file_ours || (listed_dir && made_by_us(walk, dir, bytes, &path)?) => {
                        unlink(walk.sys, dir, bytes, false, &path)?;
                        cleaned.files += 1;
                        true
                    }
                    None => false,
                };
            if !ours {
                if !cleaned.left.contains(&path) {
                    cleaned.left.push(path);
                }
                kept_here += 1;
                continue;
            }
            removed += 1;
        }
        if removed == 0 {
            return Ok(kept_here == 0);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::fs;
    use std::os::fd::{AsFd, AsRawFd};

    use super::*;

    fn open(dir: &Path) -> fs::File {
        fs::File::open(dir).expect("open the directory")
    }

    #[test]
    fn a_foreign_directory_is_refused_untouched() {
        let temp = tempfile::tempdir().expect("temp dir");
        fs::write(temp.path().join("precious"), b"x").expect("write");
        let top = open(temp.path());
        let err = prepare_at(top.as_fd(), temp.path(), false).expect_err("refused");
        assert!(matches!(err, FilesError::Refused(_)), "{err}");
        assert_eq!(fs::read_dir(temp.path()).expect("list").count(), 1);
        assert!(clean_at(top.as_fd(), temp.path()).is_err(), "no marker, no clean-up");
    }

    /// Writes `text` to `path` until its change time is after the tree's last mark: a user's
    /// write after the run (the kernel's clock may stamp both in one tick).
    pub(crate) fn write_after_the_mark(top: i32, path: &Path, text: &[u8]) {
        let marked = marked_at(top, path).expect("the marker");
        for _ in 0..1000 {
            fs::write(path, text).expect("write");
            let name = c_name(path.file_name().expect("a name").as_bytes());
            let dir = open(path.parent().expect("a parent"));
            if entry_stat(dir.as_raw_fd(), &name).expect("stat").ctime_ns > marked {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        panic!("the clock never moved past the mark");
    }

    #[test]
    fn clean_removes_ours_follows_no_link_and_leaves_the_rest() {
        let temp = tempfile::tempdir().expect("temp dir");
        let outside = tempfile::tempdir().expect("outside");
        fs::write(outside.path().join("f1"), b"keep me").expect("write");
        let top = open(temp.path());
        assert!(prepare_at(top.as_fd(), temp.path(), false).expect("empty").is_none());
        fs::create_dir_all(temp.path().join("t0/d1")).expect("mkdir");
        fs::write(temp.path().join("t0/d1/f3"), b"").expect("write");
        fs::write(temp.path().join("t0/d1/f4"), b"").expect("write");
        fs::write(temp.path().join("t0/d1/notes.txt"), b"mine").expect("write");
        // A link of iolab's name to a directory elsewhere: iolab makes none, so it stays, and
        // it is never followed.
        std::os::unix::fs::symlink(outside.path(), temp.path().join("t0/d2")).expect("symlink");
        mark(top.as_raw_fd()).expect("mark");
        // A file of iolab's name written after the run's last mark is the user's.
        write_after_the_mark(top.as_raw_fd(), &temp.path().join("t0/d1/f4"), b"mine too");
        let cleaned = clean_at(top.as_fd(), temp.path()).expect("clean");
        let mut left: Vec<_> =
            cleaned.left.iter().map(|p| p.strip_prefix(temp.path()).expect("below")).collect();
        left.sort();
        assert_eq!(left, [Path::new("t0/d1/f4"), Path::new("t0/d1/notes.txt"), Path::new("t0/d2")]);
        assert_eq!(cleaned.files, 1, "{cleaned:?}");
        assert!(outside.path().join("f1").exists(), "nothing followed out of the tree");
        assert_eq!(fs::read(temp.path().join("t0/d1/f4")).expect("kept"), b"mine too");
        assert!(temp.path().join(MARKER).exists(), "the marker stays while something is left");
        for theirs in ["t0/d1/notes.txt", "t0/d1/f4", "t0/d2"] {
            fs::remove_file(temp.path().join(theirs)).expect("rm");
        }
        let cleaned = clean_at(top.as_fd(), temp.path()).expect("clean");
        assert!(cleaned.left.is_empty() && cleaned.dirs == 2, "{cleaned:?}");
        assert_eq!(fs::read_dir(temp.path()).expect("list").count(), 0);
        // Its own earlier tree is accepted (and removed) by the next prepare.
        assert!(prepare_at(top.as_fd(), temp.path(), false).expect("empty").is_none());
        fs::create_dir_all(temp.path().join("t1/d0")).expect("mkdir");
        let earlier = prepare_at(top.as_fd(), temp.path(), false).expect("its own tree").expect("earlier");
        assert_eq!(earlier.dirs, 2);
    }

    #[test]
    fn a_tree_another_host_or_a_live_process_works_is_refused_untouched() {
        let temp = tempfile::tempdir().expect("temp dir");
        let top = open(temp.path());
        fs::create_dir_all(temp.path().join("t0/d0")).expect("mkdir");
        let marker = temp.path().join(MARKER);
        let ours = format!("iolab files tree\npid: {}\nhost: {}\n", std::process::id(), hostname());
        for (text, refused) in [
            (
                "iolab files tree\npid: 1\nhost: another-host-of-the-fleet\n".to_string(),
                Some("host another-host"),
            ),
            // pid 1 lives on every Linux host: a local run still going.
            ("iolab files tree\ncreated-by-iolab: no\npid: 1\n".to_string(), Some("process 1")),
            (ours, None),
        ] {
            fs::write(&marker, &text).expect("marker");
            match (prepare_at(top.as_fd(), temp.path(), false), refused) {
                (Err(FilesError::Refused(message)), Some(owner)) => {
                    assert!(message.contains(owner), "{message}");
                    assert!(temp.path().join("t0/d0").is_dir(), "nothing was touched");
                }
                (Ok(earlier), None) => assert_eq!(earlier.map(|e| e.dirs), Some(2), "its own earlier tree"),
                (other, _) => panic!("{text}: {:?}", other.map(|_| ())),
            }
        }
    }
}
