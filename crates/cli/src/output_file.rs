//! Where a command writes its results (`-o/--output`, the job-file key `output`, `report -o`,
//! `results export --output`): checked before anything runs, and written whole or not at all.
//!
//! A results file must never cost the user data: it is never a block device or a character
//! device other than a terminal or /dev/null, never a FIFO or a socket (a FIFO with no reader
//! blocked the write after the run, deaf to SIGTERM), never a directory, never one of the run's
//! targets, its verify state files, the results database or the database's journal files. A
//! regular file is written beside its final place and renamed over it at the end, so a run that
//! fails midway (or a full disk) leaves the old file as it was.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use iolab_spec::JobSpec;

use crate::args::StoreArgs;
use crate::exit;

/// The files an output must not be: the run's targets and the results database.
#[derive(Debug, Default)]
pub struct Protected {
    paths: Vec<(PathBuf, &'static str)>,
}

impl Protected {
    pub fn target(mut self, path: &Path) -> Self {
        self.paths.push((path.to_path_buf(), "a target of this run"));
        self
    }

    /// A verify state file (or its marker): the record of what a target should hold.
    pub fn verify_state(mut self, path: &Path) -> Self {
        self.paths.push((
            path.to_path_buf(),
            "a verify state file of this run (the record of what its target should hold)",
        ));
        self
    }

    /// The database and the files SQLite keeps beside it.
    pub fn database(mut self, path: &Path) -> Self {
        self.paths.push((path.to_path_buf(), "the results database"));
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut name = path.as_os_str().to_os_string();
            name.push(suffix);
            self.paths.push((PathBuf::from(name), "a file of the results database"));
        }
        self
    }
}

/// Whether `path` may receive results: the message says why not and what to do.
pub fn check(path: &Path, protected: &Protected) -> Result<(), String> {
    let shown = path.display();
    match fs::metadata(path) {
        Ok(meta) => {
            let kind = meta.file_type();
            if kind.is_dir() {
                return Err(format!(
                    "--output {shown} is a directory; give a file name, e.g. {}",
                    path.join("results.json").display()
                ));
            }
            if kind.is_block_device() {
                return Err(format!(
                    "--output {shown} is a block device; results go to a regular file or a terminal (nothing was written)"
                ));
            }
            if kind.is_char_device() && !is_sink(meta.rdev()) {
                return Err(format!(
                    "--output {shown} is a character device that is not a terminal or /dev/null; results go to a regular file or a terminal"
                ));
            }
            if kind.is_fifo() || kind.is_socket() {
                let what = if kind.is_fifo() { "a FIFO" } else { "a socket" };
                return Err(format!(
                    "-o {shown} is {what}: give a regular file (or leave -o out and pipe stdout)"
                ));
            }
            if let Some(what) = protected.paths.iter().find(|(p, _)| same_existing(&meta, p)).map(|(_, w)| w)
            {
                return Err(format!("--output {shown} is {what}; writing the results there would destroy it. Choose another file"));
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let wanted = absolute(path).ok_or_else(|| no_directory(path))?;
            if let Some(what) =
                protected.paths.iter().find(|(p, _)| absolute(p).as_ref() == Some(&wanted)).map(|(_, w)| w)
            {
                return Err(format!("--output {shown} is {what}; choose another file"));
            }
            let dir = wanted.parent().ok_or_else(|| no_directory(path))?;
            writable_dir(dir)
                .map_err(|e| format!("--output {shown}: cannot create a file in {}: {e}", dir.display()))
        }
        Err(e) => Err(format!("--output {shown}: {e}")),
    }
}

/// Refuses, before anything runs, an output file that would destroy something: a target of
/// `jobs`, the results database `store` names, a device or a directory (`check`).
pub fn check_output(output: Option<&Path>, jobs: &[JobSpec], store: &StoreArgs) -> Result<(), ExitCode> {
    let Some(path) = output else { return Ok(()) };
    let targets = jobs.iter().flat_map(|job| &job.groups).flat_map(|group| &group.target.paths);
    let mut protected = targets.fold(Protected::default(), |p, target| p.target(target));
    protected =
        iolab_runner::verify::plan_state_files(jobs).iter().fold(protected, |p, state| p.verify_state(state));
    if let Ok(db) = store.path() {
        protected = protected.database(&db);
    }
    check(path, &protected).map_err(exit::usage)
}

/// Writes `bytes` to `path`: a regular file (or a new one) through a temporary file beside it
/// renamed over it, keeping the old file's permissions; a terminal or /dev/null directly.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match fs::metadata(path) {
        Ok(meta) if !meta.is_file() => fs::OpenOptions::new().write(true).open(path)?.write_all(bytes),
        Ok(meta) => replace(&fs::canonicalize(path)?, bytes, Some(meta.permissions())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => replace(path, bytes, None),
        Err(e) => Err(e),
    }
}

fn replace(path: &Path, bytes: &[u8], permissions: Option<fs::Permissions>) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut temporary = path.to_path_buf();
    temporary.set_file_name(format!(".{}.iolab-{}.tmp", name.to_string_lossy(), std::process::id()));
    let written = (|| {
        let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(0o666).open(&temporary)?;
        file.write_all(bytes)?;
        if let Some(permissions) = permissions {
            file.set_permissions(fs::Permissions::from_mode(permissions.mode()))?;
        }
        file.sync_all()?;
        fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}

/// /dev/null (1:3), and terminals: virtual consoles and serial lines (4), /dev/tty and the
/// console (5:0, 5:1), pseudo-terminals (136-143).
fn is_sink(rdev: u64) -> bool {
    let (major, minor) = (nix::sys::stat::major(rdev), nix::sys::stat::minor(rdev));
    matches!((major, minor), (1, 3) | (4, _) | (5, 0) | (5, 1) | (136..=143, _))
}

/// Whether `other` names the file `meta` describes (same device and inode).
fn same_existing(meta: &fs::Metadata, other: &Path) -> bool {
    fs::metadata(other).is_ok_and(|o| o.dev() == meta.dev() && o.ino() == meta.ino())
}

/// `path` made absolute through its directory's real path (the file itself need not exist).
fn absolute(path: &Path) -> Option<PathBuf> {
    if let Ok(real) = fs::canonicalize(path) {
        return Some(real);
    }
    let name = path.file_name()?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    Some(fs::canonicalize(dir).ok()?.join(name))
}

fn no_directory(path: &Path) -> String {
    format!("--output {}: its directory does not exist; create it or choose another place", path.display())
}

fn writable_dir(dir: &Path) -> io::Result<()> {
    if !fs::metadata(dir)?.is_dir() {
        return Err(io::Error::new(io::ErrorKind::NotADirectory, "not a directory"));
    }
    use nix::unistd::{access, AccessFlags};
    access(dir, AccessFlags::W_OK | AccessFlags::X_OK).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_targets_and_the_database_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("data.bin");
        fs::write(&target, b"data").expect("target");
        let db = dir.path().join("results.db");
        fs::write(&db, b"db").expect("db");
        let protected = Protected::default().target(&target).database(&db);
        for (path, says) in [
            (dir.path().to_path_buf(), "is a directory"),
            (target.clone(), "a target"),
            (db.clone(), "the results database"),
            (dir.path().join("results.db-wal"), "a file of the results database"),
            (dir.path().join("missing/out.json"), "does not exist"),
        ] {
            let refused = check(&path, &protected).expect_err(&path.display().to_string());
            assert!(refused.contains(says), "{refused}");
        }
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).expect("link");
        assert!(check(&link, &protected).expect_err("a link to the target").contains("a target"));
        check(&dir.path().join("out.json"), &protected).expect("a new file");
        check(Path::new("/dev/null"), &protected).expect("/dev/null");
        if Path::new("/dev/zero").exists() {
            assert!(check(Path::new("/dev/zero"), &protected)
                .expect_err("zero")
                .contains("character device"));
        }
    }

    #[test]
    fn a_new_file_is_written_whole_and_an_old_one_keeps_its_mode() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out.json");
        write(&out, b"first").expect("new");
        fs::set_permissions(&out, fs::Permissions::from_mode(0o600)).expect("chmod");
        write(&out, b"second").expect("replace");
        assert_eq!(fs::read(&out).expect("read"), b"second");
        assert_eq!(fs::metadata(&out).expect("stat").permissions().mode() & 0o777, 0o600);
        let left: Vec<_> = fs::read_dir(dir.path()).expect("dir").collect();
        assert_eq!(left.len(), 1, "no temporary file is left");
        write(Path::new("/dev/null"), b"gone").expect("/dev/null");
    }
}
