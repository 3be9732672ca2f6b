//! What a fileset run may touch: a directory that is new, empty, or its own earlier tree (a
//! marker file in it says so, written before anything else), and within it only what its trees
//! made (`safety_at` walks and removes them through descriptors, never through a link; it owns
//! the marker's name and what a clean-up answers). A killed run leaves its marker, so
//! `iolab files --clean DIR` finds and removes what it made, and nothing else. The marker also
//! names the run working the tree while it runs (`owner`): a second run, or a clean-up, is
//! refused while that process lives.

use std::fs;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use iolab_engine::fileops::{FileOps, FileOpsEngine};

use crate::error::FilesError;
use crate::owner::Owner;
use crate::safety_at;
use crate::safety_at::CREATED_LINE;
pub use crate::safety_at::{Cleaned, MARKER};

/// How the run's directory was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// iolab made the directory (and removes it at the end, unless kept).
    pub created: bool,
    /// An earlier run's tree was there and was removed first.
    pub earlier: Option<Cleaned>,
}

fn io<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> FilesError + 'p {
    move |e| FilesError::io(what, path, e)
}

/// Makes `dir` ready for a run: creates it when absent, accepts it empty, or removes an
/// earlier run's tree from it; refuses anything else without touching it. Writes the marker.
pub fn prepare(dir: &Path) -> Result<Prepared, FilesError> {
    let created = match fs::create_dir(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(FilesError::io("cannot create the directory", dir, e)),
    };
    let mut prepared = Prepared { created, earlier: None };
    if !created {
        if !dir.is_dir() {
            return Err(FilesError::Refused(format!(
                "{} is not a directory; give a new or empty directory for the file tree",
                dir.display()
            )));
        }
        let marker = dir.join(MARKER);
        if fs::symlink_metadata(&marker).is_ok() {
            refuse_if_worked(dir, "nothing was touched: wait for it to end, or give another directory")?;
            let was_created = created_by_us(dir)?;
            let cleaned = clean_tree(dir)?;
            if let Some(first) = cleaned.left.first() {
                return Err(FilesError::Refused(format!(
                    "{} holds an earlier iolab tree and {} other entr{} ({}): iolab removed its own files and leaves the rest; move them away or give another directory",
                    dir.display(),
                    cleaned.left.len(),
                    if cleaned.left.len() == 1 { "y" } else { "ies" },
                    first.display()
                )));
            }
            prepared = Prepared { created: was_created, earlier: Some(cleaned) };
            fs::remove_file(&marker).map_err(io("cannot remove the old marker", &marker))?;
        } else {
            let mut entries = fs::read_dir(dir).map_err(io("cannot read", dir))?;
            if let Some(entry) = entries.next() {
                let name = entry.map(|e| e.file_name().to_string_lossy().into_owned()).unwrap_or_default();
                return Err(FilesError::Refused(format!(
                    "{} is not empty (it holds {name}) and holds no iolab tree ({MARKER}); nothing was touched: give a new or empty directory",
                    dir.display()
                )));
            }
        }
    }
    write_marker(dir, prepared.created)?;
    Ok(prepared)
}

fn write_marker(dir: &Path, created: bool) -> Result<(), FilesError> {
    let marker = dir.join(MARKER);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&marker)
        .map_err(io("cannot write the marker", &marker))?;
    let text = format!(
        "iolab files tree: iolab removes what it made here (`iolab files --clean {}`).\n{}\n{UNKNOWN_LINE}\n{}",
        dir.display(),
        if created { CREATED_LINE } else { "created-by-iolab: no" },
        Owner::this_process().map(|o| o.lines()).unwrap_or_default()
    );
    file.write_all(text.as_bytes()).map_err(io("cannot write the marker", &marker))?;
    file.sync_all().map_err(io("cannot write the marker", &marker))
}

/// The marker's line that holds a kept tree (its JSON follows: `kept`).
pub(crate) const KEPT_LINE: &str = "kept-tree:";
/// The marker's line while a run works the tree, or after one stopped part-way.
pub(crate) const UNKNOWN_LINE: &str = "kept-tree: unknown";

/// `dir`'s marker, or `None` where there is none.
pub(crate) fn marker_text(dir: &Path) -> Result<Option<String>, FilesError> {
    let marker = dir.join(MARKER);
    if !fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file()) {
        return Ok(None);
    }
    read_marker(&marker).map(Some)
}

/// Takes `dir`'s tree back for a run that works it where it is: refused while another run
/// works it, or where `accept` refuses its marker's text. The marker then names this process,
/// its line starting `prefix` replaced by `line`.
pub(crate) fn reclaim(
    dir: &Path,
    prefix: &str,
    line: &str,
    accept: impl FnOnce(&str) -> Result<(), FilesError>,
) -> Result<Prepared, FilesError> {
    refuse_if_worked(dir, "nothing was touched: wait for it to end, or give another directory")?;
    let marker = dir.join(MARKER);
    let text = read_marker(&marker)?;
    accept(&text)?;
    let mut text = without(&Owner::strip(&text), prefix);
    text.push_str(&format!("{line}\n"));
    text.push_str(&Owner::this_process().map(|o| o.lines()).unwrap_or_default());
    rewrite_marker(&marker, &text).map_err(io("cannot write the marker", &marker))?;
    Ok(Prepared { created: created_by_us(dir)?, earlier: None })
}

/// Replaces `dir`'s marker's line starting `prefix` with `line`.
pub(crate) fn set_marker_line(dir: &Path, prefix: &str, line: &str) -> Result<(), FilesError> {
    let marker = dir.join(MARKER);
    let mut text = without(&read_marker(&marker)?, prefix);
    text.push_str(&format!("{line}\n"));
    rewrite_marker(&marker, &text).map_err(io("cannot write the marker", &marker))
}

fn without(text: &str, prefix: &str) -> String {
    text.lines().filter(|l| !l.starts_with(prefix)).map(|l| format!("{l}\n")).collect()
}

/// Refused while the run the marker names is still running.
fn refuse_if_worked(dir: &Path, nothing_done: &str) -> Result<(), FilesError> {
    let marker = dir.join(MARKER);
    let text = read_marker(&marker)?;
    match Owner::live_in_marker(&text) {
        Some(pid) => Err(FilesError::Refused(format!(
            "{} is being worked by a running iolab (pid {pid}, its marker {MARKER}); {nothing_done}",
            dir.display()
        ))),
        None => Ok(()),
    }
}

/// The run's claim on its directory: while held, the marker names this process; dropped (the
/// run over, however it ended), a marker still there names no owner, so a later run or
/// `--clean` in this same process takes the tree as an earlier one.
pub(crate) struct Claim<'a>(pub &'a Path);

impl Claim<'_> {
    /// The run's own clean-up (`clean`, less the refusal of a directory a live run works).
    pub(crate) fn clean(&self) -> Result<Cleaned, FilesError> {
        clean_marked(self.0)
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let marker = self.0.join(MARKER);
        let Ok(text) = read_marker(&marker) else { return };
        if Owner::in_marker(&text).is_some_and(|o| Some(o) == Owner::this_process()) {
            // Best effort: a marker left naming this process is only refused while it lives.
            let _ = rewrite_marker(&marker, &Owner::strip(&text));
        }
    }
}

/// The longest marker read: iolab writes a few hundred bytes, a kept tree's line with a long
/// list of sizes a few thousand.
const MARKER_MAX: u64 = 64 << 10;

/// The marker's text, opened without following a link (a link in its place is an error) and
/// read to `MARKER_MAX` at most.
fn read_marker(marker: &Path) -> Result<String, FilesError> {
    use std::io::Read;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(marker)
        .map_err(io("cannot read the marker", marker))?;
    let mut text = String::new();
    file.take(MARKER_MAX).read_to_string(&mut text).map_err(io("cannot read the marker", marker))?;
    Ok(text)
}

/// Writes the marker anew in place, never through a link put where it was.
fn rewrite_marker(marker: &Path, text: &str) -> std::io::Result<()> {
    let mut file =
        fs::OpenOptions::new().write(true).truncate(true).custom_flags(libc::O_NOFOLLOW).open(marker)?;
    file.write_all(text.as_bytes())
}

fn created_by_us(dir: &Path) -> Result<bool, FilesError> {
    let marker = dir.join(MARKER);
    let text = read_marker(&marker)?;
    Ok(text.lines().any(|l| l.trim() == CREATED_LINE))
}

/// Removes every tree iolab made in `dir` (it must hold the marker), then the marker, then
/// the directory when iolab made it. Entries of other names stay, listed in the answer.
/// Refused, with nothing removed, while the run the marker names is still running.
pub fn clean(dir: &Path) -> Result<Cleaned, FilesError> {
    let marker = dir.join(MARKER);
    if !fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file()) {
        return Err(FilesError::Refused(format!(
            "{} holds no iolab tree (no {MARKER} marker); nothing was removed",
            dir.display()
        )));
    }
    refuse_if_worked(dir, "nothing was removed: stop that run first (it removes its own tree)")?;
    clean_marked(dir)
}

/// `clean` of a directory whose marker is there, without asking who works it.
fn clean_marked(dir: &Path) -> Result<Cleaned, FilesError> {
    let marker = dir.join(MARKER);
    let created = created_by_us(dir)?;
    let mut cleaned = clean_tree(dir)?;
    if cleaned.left.is_empty() {
        fs::remove_file(&marker).map_err(io("cannot remove the marker", &marker))?;
        if created {
            fs::remove_dir(dir).map_err(io("cannot remove", dir))?;
            cleaned.removed_top = true;
        }
    }
    Ok(cleaned)
}

/// Removes the trees iolab made below `dir` (`safety_at`: through descriptors, following no
/// link), leaving the marker.
fn clean_tree(dir: &Path) -> Result<Cleaned, FilesError> {
    let top = fs::File::open(dir).map_err(io("cannot open", dir))?;
    let mut sys = FileOps::new(FileOpsEngine::Sync).map_err(io("cannot start the clean-up of", dir))?;
    safety_at::clean_tree_at(&mut sys, top.as_raw_fd(), dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marks the tree in `dir` as its run does: what is there now is iolab's.
    fn mark(dir: &Path) {
        let top = fs::File::open(dir).expect("open");
        safety_at::mark(top.as_raw_fd()).expect("mark");
    }

    #[test]
    fn a_foreign_directory_is_refused_untouched() {
        let temp = tempfile::tempdir().expect("temp dir");
        fs::write(temp.path().join("precious"), b"x").expect("write");
        let err = prepare(temp.path()).expect_err("refused");
        assert!(matches!(err, FilesError::Refused(_)), "{err}");
        let names: Vec<_> =
            fs::read_dir(temp.path()).expect("list").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("precious")]);
        assert!(clean(temp.path()).is_err(), "no marker, no clean-up");
    }

    #[test]
    fn clean_removes_ours_and_leaves_the_rest() {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path().join("run");
        assert!(prepare(&dir).expect("new directory").created);
        drop(Claim(&dir)); // the run that made it is over
        fs::create_dir_all(dir.join("t0/d1")).expect("mkdir");
        fs::write(dir.join("t0/d1/f3"), b"").expect("write");
        fs::write(dir.join("t0/d1/notes.txt"), b"mine").expect("write");
        mark(&dir);
        let cleaned = clean(&dir).expect("clean");
        assert_eq!((cleaned.files, cleaned.left.len()), (1, 1));
        assert!(dir.join("t0/d1/notes.txt").exists());
        assert!(dir.join(MARKER).exists(), "the marker stays while something is left");
        fs::remove_file(dir.join("t0/d1/notes.txt")).expect("rm");
        let cleaned = clean(&dir).expect("clean");
        assert!(cleaned.removed_top && !dir.exists());
    }

    #[test]
    fn a_foreign_file_beside_a_directory_of_ours_ends_the_clean_up() {
        // A pass that removes t0/d1 and keeps t0/d0 (which holds the user's notes) must not
        // count t0/d0 as removed: the clean-up looped forever on this tree.
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path().join("run");
        assert!(prepare(&dir).expect("new directory").created);
        drop(Claim(&dir)); // the run that made it is over
        for leaf in ["t0/d0", "t0/d1"] {
            fs::create_dir_all(dir.join(leaf)).expect("mkdir");
            fs::write(dir.join(leaf).join("f1"), b"").expect("write");
        }
        fs::write(dir.join("t0/d0/notes.txt"), b"mine").expect("write");
        mark(&dir);
        let cleaned = clean(&dir).expect("clean");
        assert_eq!((cleaned.files, cleaned.left.len()), (2, 1), "{:?}", cleaned.left);
        assert!(dir.join("t0/d0/notes.txt").exists() && !dir.join("t0/d1").exists());
    }

    #[test]
    fn a_tree_a_live_run_works_is_refused_and_a_dead_ones_is_taken_back() {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path().join("run");
        prepare(&dir).expect("new directory");
        let Some(me) = Owner::in_marker(&fs::read_to_string(dir.join(MARKER)).expect("marker")) else {
            return iolab_test_support::skip!(iolab_test_support::Missing::Other, "no /proc: no owner");
        };
        fs::create_dir_all(dir.join("t0/d0")).expect("mkdir");
        fs::write(dir.join("t0/d0/f0"), b"").expect("write");
        mark(&dir);
        // This process is the live run: a second run and a clean-up are refused, untouched.
        for refused in [prepare(&dir).map(drop), clean(&dir).map(drop)] {
            let err = refused.expect_err("a live run's tree");
            assert!(err.to_string().contains("being worked by a running iolab"), "{err}");
        }
        assert!(dir.join("t0/d0/f0").exists() && dir.join(MARKER).exists());
        // The same pid started at another time (a recycled pid) is a dead run's tree.
        let text = fs::read_to_string(dir.join(MARKER)).expect("marker");
        let dead = Owner { start_ticks: me.start_ticks + 1, ..me };
        fs::write(dir.join(MARKER), format!("{}{}", Owner::strip(&text), dead.lines())).expect("write");
        let again = prepare(&dir).expect("a dead run's tree is an earlier tree");
        assert_eq!(again.earlier.map(|e| e.files), Some(1));
        // The run over, its claim drops: the marker names no owner and the tree is free.
        drop(Claim(&dir));
        assert_eq!(Owner::in_marker(&fs::read_to_string(dir.join(MARKER)).expect("marker")), None);
        assert!(clean(&dir).expect("free").removed_top);
    }
}
