//! What a job may touch on this host. The agent's operator decides with `--allow-write`; a
//! coordinator cannot widen it. Paths must be absolute with no `..`, writes (and
//! `allow_destroy`) only land under an allowed path, reads go anywhere the agent can read,
//! and a job with no target writes only its own scratch file.

use std::path::{Component, Path, PathBuf};

use axum::http::StatusCode;
use iolab_runner::SCRATCH_SIZE;
use iolab_spec::JobSpec;

use super::error::{AgentError, Failure};

/// What the operator lets jobs write: the `--allow-write` paths, as given and as resolved at
/// startup, and the largest scratch file (`--max-scratch`).
#[derive(Debug)]
pub struct AllowList {
    entries: Vec<(String, PathBuf)>,
    max_scratch: u64,
}

impl Default for AllowList {
    fn default() -> Self {
        AllowList { entries: Vec::new(), max_scratch: super::config::DEFAULT_MAX_SCRATCH }
    }
}

impl AllowList {
    /// Resolves each path (symbolic links, `..`); each must exist.
    pub fn new(paths: &[PathBuf], max_scratch: u64) -> Result<Self, AgentError> {
        let entries = paths
            .iter()
            .map(|path| {
                let canonical = path
                    .canonicalize()
                    .map_err(|source| AgentError::AllowWrite { path: path.clone(), source })?;
                Ok((path.display().to_string(), canonical))
            })
            .collect::<Result<_, AgentError>>()?;
        Ok(AllowList { entries, max_scratch })
    }

    /// The paths as the operator gave them.
    pub fn given(&self) -> Vec<String> {
        self.entries.iter().map(|(given, _)| given.clone()).collect()
    }

    fn allows(&self, canonical: &Path) -> bool {
        self.entries.iter().any(|(_, allowed)| canonical.starts_with(allowed))
    }
}

/// Refuses a job that names a path it may not, points every target at its resolved path (so
/// the runner opens what was checked, not whatever a symbolic link says later), drops
/// `allow_destroy` from groups whose targets are not all under `--allow-write`, and never keeps
/// a scratch file after its session.
pub fn check(job: &mut JobSpec, allow: &AllowList) -> Result<(), Failure> {
    for group in &mut job.groups {
        for path in &group.target.paths {
            check_shape(path)?;
        }
        let mut all_allowed = true;
        let needed = group.target.offset.0 + group.target.size.map_or(0, |s| s.0);
        for path in &mut group.target.paths {
            let canonical = resolve(path)?;
            let allowed = allow.allows(&canonical);
            all_allowed &= allowed;
            // Reading a file that is missing or shorter than the region lays it out first: a write.
            let lays_out = match std::fs::metadata(&canonical) {
                Ok(meta) => meta.is_file() && meta.len() < needed,
                Err(_) => true,
            };
            if (group.access.writes() || lays_out) && !allowed {
                let what = if group.access.writes() { "write to" } else { "create or extend" };
                return Err(Failure::new(
                    StatusCode::FORBIDDEN,
                    format!(
                        "this agent may not {what} {}: its operator must add --allow-write {} (or a directory above it) to `iolab agent`; nothing was written",
                        path.display(),
                        path.display()
                    ),
                ));
            }
            *path = canonical;
        }
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
    Ok(())
}

/// Absolute, with no `..`: a target means the same thing whatever the agent's directory.
fn check_shape(path: &Path) -> Result<(), Failure> {
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
fn resolve(path: &Path) -> Result<PathBuf, Failure> {
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
mod tests {
    use super::*;

    fn job(text: &str) -> JobSpec {
        let options = iolab_spec::jobfile::parse(text).expect("parses");
        iolab_spec::resolve(Some(&options), &iolab_spec::Options::default()).expect("resolves").jobs.remove(0)
    }

    #[test]
    fn relative_and_traversing_paths_are_refused() {
        let allow = AllowList::default();
        for target in ["data.bin", "/tmp/../etc/passwd"] {
            let mut j = job(&format!("engine = \"null\"\ntarget = \"{target}\""));
            let failure = check(&mut j, &allow).expect_err(target);
            assert_eq!(failure.status, StatusCode::BAD_REQUEST, "{target}");
        }
    }

    #[test]
    fn writes_land_only_under_allow_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let inside = dir.path().join("a.bin");
        let text = |p: &Path| {
            format!(
                "engine = \"null\"\nrw = \"randwrite\"\nallow_destroy = true\ntarget = \"{}\"",
                p.display()
            )
        };
        let none = AllowList::default();
        let failure = check(&mut job(&text(&inside)), &none).expect_err("outside");
        assert_eq!(failure.status, StatusCode::FORBIDDEN);
        assert!(failure.message.contains("--allow-write"), "{}", failure.message);
        let allow = AllowList::new(&[dir.path().to_path_buf()], 1 << 30).expect("exists");
        let mut j = job(&text(&inside));
        check(&mut j, &allow).expect("inside");
        assert!(j.groups[0].target.allow_destroy);
        std::fs::write(&inside, [0u8; 4096]).expect("file");
        let mut read =
            job(&format!("engine = \"null\"\nallow_destroy = true\ntarget = \"{}\"", inside.display()));
        check(&mut read, &none).expect("reads go anywhere");
        assert!(!read.groups[0].target.allow_destroy);
    }

    /// A read of a missing or short file would lay it out: a write, refused outside the list.
    #[test]
    fn reads_that_would_create_or_extend_a_file_count_as_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let none = AllowList::default();
        let missing = dir.path().join("new.bin");
        let mut j = job(&format!("engine = \"null\"\nsize = \"8m\"\ntarget = \"{}\"", missing.display()));
        let failure = check(&mut j, &none).expect_err("creates");
        assert_eq!(failure.status, StatusCode::FORBIDDEN);
        assert!(failure.message.contains("create or extend"), "{}", failure.message);
        let short = dir.path().join("short.bin");
        std::fs::write(&short, [0u8; 4096]).expect("file");
        let mut j = job(&format!("engine = \"null\"\nsize = \"8m\"\ntarget = \"{}\"", short.display()));
        assert_eq!(check(&mut j, &none).expect_err("extends").status, StatusCode::FORBIDDEN);
        let mut j = job(&format!("engine = \"null\"\nsize = \"4k\"\ntarget = \"{}\"", short.display()));
        check(&mut j, &none).expect("a read within the file");
        assert!(!missing.exists() && std::fs::metadata(&short).expect("file").len() == 4096);
    }

    /// A scratch file beyond --max-scratch is refused; one within it is allowed.
    #[test]
    fn scratch_files_stay_within_max_scratch() {
        let allow = AllowList::new(&[], 1 << 30).expect("no paths");
        let mut big = job("engine = \"null\"\nsize = \"2g\"");
        let failure = check(&mut big, &allow).expect_err("too big");
        assert_eq!(failure.status, StatusCode::FORBIDDEN);
        assert!(failure.message.contains("--max-scratch"), "{}", failure.message);
        check(&mut job("engine = \"null\"\nsize = \"512m\""), &allow).expect("within");
        check(&mut job("engine = \"null\""), &allow).expect("the default 1 GiB");
    }

    /// A dangling link is refused; a link to a file is replaced by the file it names.
    #[test]
    fn links_are_resolved_before_anything_is_opened() {
        let dir = tempfile::tempdir().expect("tempdir");
        let allow = AllowList::new(&[dir.path().to_path_buf()], 1 << 30).expect("exists");
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink("/nonexistent-iolab-test/x", &dangling).expect("symlink");
        let mut j = job(&format!("engine = \"null\"\nrw = \"write\"\ntarget = \"{}\"", dangling.display()));
        assert_eq!(check(&mut j, &allow).expect_err("dangling").status, StatusCode::BAD_REQUEST);
        let real = dir.path().join("real.bin");
        std::fs::write(&real, [0u8; 4096]).expect("file");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let mut j = job(&format!("engine = \"null\"\nsize = \"4k\"\ntarget = \"{}\"", link.display()));
        check(&mut j, &allow).expect("a link to a file");
        assert_eq!(j.groups[0].target.paths, [real.canonicalize().expect("exists")]);
    }
}
