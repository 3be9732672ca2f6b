//! Opening one checked target, once: the descriptor opened here is the one the runner lays out
//! and runs on. Under `--allow-write` a file is opened beneath its allowed directory without
//! following any symbolic link (the engine's `open_beneath`), so renaming entries there while
//! a job is prepared can never send a write elsewhere; a file or device allowed by name must
//! still be the one the agent found at startup. Outside the list a target is opened read-only.

use std::fs::Metadata;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use axum::http::StatusCode;
use iolab_engine::target::{self, Access, OpenedTarget, TargetError, TargetKind};
use iolab_spec::GroupSpec;

use super::error::Failure;

/// An `--allow-write` path as the agent found it at startup.
#[derive(Debug)]
pub enum Allowed {
    /// A directory, held open (`O_PATH`): targets are opened beneath this descriptor, whatever
    /// its name means later.
    Directory(OwnedFd),
    /// One file or block device: a target is it only while it is the same file (device and
    /// inode) or the same device (device number).
    Node(Identity),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    File { dev: u64, ino: u64 },
    BlockDevice { rdev: u64 },
}

impl Identity {
    pub fn of(meta: &Metadata) -> Option<Identity> {
        use std::os::unix::fs::FileTypeExt;
        if meta.file_type().is_block_device() {
            Some(Identity::BlockDevice { rdev: meta.rdev() })
        } else if meta.is_file() {
            Some(Identity::File { dev: meta.dev(), ino: meta.ino() })
        } else {
            None
        }
    }
}

/// What the job will do to one target: write it (the workload writes), or lay it out first
/// (a regular file shorter than `layout` bytes).
pub struct Use {
    pub writes: bool,
    pub layout: Option<u64>,
    pub allow_hardlinks: bool,
}

impl Use {
    pub fn of(group: &GroupSpec, allow_hardlinks: bool) -> Use {
        let spec = &group.target;
        Use {
            writes: group.access.writes(),
            layout: spec.size.map(|size| spec.offset.0 + size.0),
            allow_hardlinks,
        }
    }
}

/// How often a missing file is tried again when something else creates it in between.
const CREATE_ATTEMPTS: usize = 3;

/// Opens `path` (resolved; `relative` beneath `allowed` when it is a directory) for `using`,
/// and checks what was opened.
pub fn open_allowed(
    allowed: &Allowed,
    relative: &Path,
    path: &Path,
    using: &Use,
) -> Result<OpenedTarget, Failure> {
    let first = if using.writes { Access::Write } else { Access::Read };
    let opened = match allowed {
        Allowed::Directory(dir) => open_beneath(dir, relative, path, first, using)?,
        Allowed::Node(identity) => {
            // A file that may have to be laid out is opened for writing from the start.
            let lays_out = using.layout.is_some() && matches!(identity, Identity::File { .. });
            let first = if lays_out { Access::Write } else { first };
            let opened = OpenedTarget::open_path(path, first).map_err(|e| open_failure(path, first, e))?;
            let meta = stat(&opened)?;
            if Identity::of(&meta) != Some(*identity) {
                return Err(Failure::new(
                    StatusCode::FORBIDDEN,
                    format!(
                        "{} is no longer the file or device the agent was allowed to write when it started (it was replaced); its operator must restart the agent with --allow-write naming it; nothing was written",
                        path.display()
                    ),
                ));
            }
            opened
        }
    };
    let meta = stat(&opened)?;
    let kind = target::classify(path, meta.file_type()).map_err(|e| Failure::bad_request(e.to_string()))?;
    if kind == TargetKind::File
        && (using.writes || opened.writable)
        && meta.nlink() > 1
        && !using.allow_hardlinks
    {
        return Err(Failure::new(
            StatusCode::FORBIDDEN,
            format!(
                "{} has {} hard links: another name, possibly outside --allow-write, reaches the same data, so the agent does not write it; remove the other links, or its operator must pass --allow-hardlinks to `iolab agent`; nothing was written",
                path.display(),
                meta.nlink()
            ),
        ));
    }
    Ok(opened)
}

/// Beneath an allowed directory: opened for reading or writing, created (exclusively) when
/// missing and given a size, reopened for writing when a read-only job must lay it out.
fn open_beneath(
    dir: &OwnedFd,
    relative: &Path,
    path: &Path,
    first: Access,
    using: &Use,
) -> Result<OpenedTarget, Failure> {
    if relative.as_os_str().is_empty() {
        return Err(Failure::bad_request(format!(
            "target {} is a directory; name a file in it",
            path.display()
        )));
    }
    for _ in 0..CREATE_ATTEMPTS {
        let opened = match OpenedTarget::open_beneath(dir.as_fd(), relative, path, first) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) && using.layout.is_some() => {
                match OpenedTarget::open_beneath(dir.as_fd(), relative, path, Access::Create) {
                    // Created by someone else in between: look again.
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                    created => created.map_err(|e| open_failure(path, Access::Create, e))?,
                }
            }
            opened => opened.map_err(|e| open_failure(path, first, e))?,
        };
        let meta = stat(&opened)?;
        let short = using.layout.is_some_and(|needed| meta.is_file() && meta.len() < needed);
        if short && !opened.writable {
            return OpenedTarget::open_beneath(dir.as_fd(), relative, path, Access::Write)
                .map_err(|e| open_failure(path, Access::Write, e));
        }
        return Ok(opened);
    }
    Err(Failure::conflict(format!(
        "{} kept appearing and disappearing while the agent opened it; stop whatever renames it, and try again",
        path.display()
    )))
}

/// Outside `--allow-write`: read-only, and only when nothing has to be created or extended.
pub fn open_outside(path: &Path, given: &Path, using: &Use) -> Result<OpenedTarget, Failure> {
    let refused = |what: &str| {
        Failure::new(
            StatusCode::FORBIDDEN,
            format!(
                "this agent may not {what} {}: its operator must add --allow-write {} (or a directory above it) to `iolab agent`; nothing was written",
                given.display(),
                given.display()
            ),
        )
    };
    if using.writes {
        return Err(refused("write to"));
    }
    let opened = match OpenedTarget::open_path(path, Access::Read) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Err(refused("create or extend")),
        opened => opened.map_err(|e| open_failure(path, Access::Read, e))?,
    };
    let meta = stat(&opened)?;
    target::classify(path, meta.file_type()).map_err(|e| Failure::bad_request(e.to_string()))?;
    // Reading a file shorter than the region lays it out first: a write.
    if using.layout.is_some_and(|needed| meta.is_file() && meta.len() < needed) {
        return Err(refused("create or extend"));
    }
    Ok(opened)
}

fn stat(opened: &OpenedTarget) -> Result<Metadata, Failure> {
    opened.file.metadata().map_err(|e| {
        Failure::internal(format!("cannot stat {} after opening it: {e}", opened.path.display()))
    })
}

/// An open that failed, in words for the coordinator: a link or a rename under the allowed
/// directory is refused outright; anything else as the runner says it.
fn open_failure(path: &Path, access: Access, error: std::io::Error) -> Failure {
    match error.raw_os_error() {
        Some(libc::ELOOP | libc::EXDEV | libc::ENOTDIR | libc::EAGAIN) => Failure::new(
            StatusCode::FORBIDDEN,
            format!(
                "{} is reached through a symbolic link under --allow-write, or was renamed while the agent opened it; the agent follows no link there: name the file itself; nothing was written",
                path.display()
            ),
        ),
        Some(libc::EEXIST) => Failure::conflict(format!(
            "{} appeared while the agent created it; try again",
            path.display()
        )),
        _ => {
            let error = TargetError::from_open(&PathBuf::from(path), access != Access::Read, error);
            Failure::bad_request(error.to_string())
        }
    }
}
