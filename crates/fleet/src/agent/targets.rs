//! What a job may touch on this host. The agent's operator decides with `--allow-write`; a
//! coordinator cannot widen it. Paths must be absolute with no `..`, writes (and
//! `allow_destroy`) only land under an allowed path, reads go anywhere the agent can read,
//! and a job with no target writes only its own scratch file. Every target is opened here,
//! once (`open_target`), and the runner works on those descriptors.

use std::path::{Component, Path, PathBuf};

use axum::http::StatusCode;
use iolab_engine::target::open_directory;
use iolab_runner::{OpenedTargets, SCRATCH_SIZE};
use iolab_spec::JobSpec;

use super::error::{AgentError, Failure};
use super::open_target::{open_allowed, open_outside, Allowed, Identity, Use};

/// What the operator lets jobs write: the `--allow-write` paths, as given, as resolved at
/// startup and as opened then; the largest scratch file (`--max-scratch`); and whether a file
/// with more than one hard link may be written (`--allow-hardlinks`).
#[derive(Debug)]
pub struct AllowList {
    entries: Vec<Entry>,
    max_scratch: u64,
    allow_hardlinks: bool,
}

#[derive(Debug)]
struct Entry {
    given: String,
    canonical: PathBuf,
    allowed: Allowed,
}

impl Default for AllowList {
    fn default() -> Self {
        AllowList {
            entries: Vec::new(),
            max_scratch: super::config::DEFAULT_MAX_SCRATCH,
            allow_hardlinks: false,
        }
    }
}

impl AllowList {
    /// Resolves each path (symbolic links, `..`); each must exist. A directory is opened and
    /// held: jobs write beneath that descriptor. A file or device is remembered by identity.
    pub fn new(paths: &[PathBuf], max_scratch: u64) -> Result<Self, AgentError> {
        let entries = paths
            .iter()
            .map(|path| {
                let error = |source| AgentError::AllowWrite { path: path.clone(), source };
                let canonical = path.canonicalize().map_err(error)?;
                let meta = std::fs::metadata(&canonical).map_err(error)?;
                let allowed = if meta.is_dir() {
                    Allowed::Directory(open_directory(&canonical).map_err(error)?)
                } else {
                    Allowed::Node(Identity::of(&meta).ok_or_else(|| {
                        error(std::io::Error::new(
                            std::io::ErrorKind::InvalidInput,
                            "neither a directory, a regular file nor a block device",
                        ))
                    })?)
                };
                Ok(Entry { given: path.display().to_string(), canonical, allowed })
            })
            .collect::<Result<_, AgentError>>()?;
        Ok(AllowList { entries, max_scratch, allow_hardlinks: false })
    }

    /// Lets jobs write files with more than one hard link (`--allow-hardlinks`).
    pub fn allowing_hardlinks(mut self, allow: bool) -> Self {
        self.allow_hardlinks = allow;
        self
    }

    /// The paths as the operator gave them.
    pub fn given(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.given.clone()).collect()
    }

    /// The allowed place `canonical` is in, and its path relative to that place.
    pub(super) fn place_of<'a>(&'a self, canonical: &'a Path) -> Option<(&'a Allowed, &'a Path)> {
        self.entries.iter().find_map(|entry| match &entry.allowed {
            Allowed::Directory(_) => {
                canonical.strip_prefix(&entry.canonical).ok().map(|rel| (&entry.allowed, rel))
            }
            Allowed::Node(_) => (canonical == entry.canonical).then_some((&entry.allowed, Path::new(""))),
        })
    }
}

/// Refuses a job that names a path it may not, opens every target it may (the runner lays out
/// and runs on those descriptors: a name swapped for a link afterwards changes nothing), points
/// every target at its resolved path, drops `allow_destroy` from groups whose targets are not
/// all under `--allow-write`, and never keeps a scratch file after its session.
pub fn check(job: &mut JobSpec, allow: &AllowList) -> Result<OpenedTargets, Failure> {
    let mut opened = Vec::with_capacity(job.groups.len());
    for group in &mut job.groups {
        for path in &group.target.paths {
            check_shape(path)?;
        }
        let using = Use::of(group, allow.allow_hardlinks);
        let mut all_allowed = true;
        let mut group_opened = Vec::with_capacity(group.target.paths.len());
        for path in &mut group.target.paths {
            let canonical = resolve(path)?;
            let target = match allow.place_of(&canonical) {
                Some((allowed, relative)) => open_allowed(allowed, relative, &canonical, &using)?,
                None => {
                    all_allowed = false;
                    open_outside(&canonical, path, &using)?
                }
            };
            group_opened.push(target);
            *path = canonical;
        }
        opened.push(group_opened);
        if !all_allowed {
            group.target.allow_destroy = false;
        }
        if group.target.paths.is_empty() {
            group.target.keep = false;
            let scratch = group.target.offset.0 + group.target.size.unwrap_or(SCRATCH_SIZE).0;
            if scratch > allow.max_scratch {
                return Err(Failure::new(
                    StatusCode::FORBIDDEN,
                    format!(
                        "a scratch file of {} is more than this agent allows ({}): ask for less with --size, or its operator must raise --max-scratch",
                        iolab_spec::Bytes(scratch),
                        iolab_spec::Bytes(allow.max_scratch)
                    ),
                ));
            }
        }
    }
    Ok(opened)
}

/// Absolute, with no `..`: a target means the same thing whatever the agent's directory.
pub(super) fn check_shape(path: &Path) -> Result<(), Failure> {
    if !path.is_absolute() {
        return Err(Failure::bad_request(format!(
            "target {} is relative; an agent takes absolute paths only (e.g. /data/{})",
            path.display(),
            path.display()
        )));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(Failure::bad_request(format!(
            "target {} contains '..' (path traversal); give the target's plain absolute path",
            path.display()
        )));
    }
    Ok(())
}

/// The path with symbolic links resolved; for a file not yet laid out, its directory's. A
/// symbolic link to nothing is refused: laying it out would create its target, wherever that is.
pub(super) fn resolve(path: &Path) -> Result<PathBuf, Failure> {
    if let Ok(canonical) = path.canonicalize() {
        return Ok(canonical);
    }
    if path.symlink_metadata().is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(Failure::bad_request(format!(
            "target {} is a symbolic link to nothing; name the file itself",
            path.display()
        )));
    }
    let missing_dir = || {
        Failure::bad_request(format!(
            "the directory of target {} does not exist on this agent; create it or fix the path",
            path.display()
        ))
    };
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else { return Err(missing_dir()) };
    Ok(parent.canonicalize().map_err(|_| missing_dir())?.join(name))
}

#[cfg(test)]
#[path = "targets_tests.rs"]
mod tests;
