//! What a job may touch on this host. The agent's operator decides with `--allow-write`; a
//! coordinator cannot widen it. Paths must be absolute with no `..`, writes (and
//! `allow_destroy`) only land under an allowed path, reads go anywhere the agent can read,
//! and a job with no target writes only its own scratch file.

use std::path::{Component, Path, PathBuf};

use axum::http::StatusCode;
use iolab_spec::JobSpec;

use super::error::{AgentError, Failure};

/// The `--allow-write` paths, as given and as resolved at startup.
#[derive(Debug, Default)]
pub struct AllowList {
    entries: Vec<(String, PathBuf)>,
}

impl AllowList {
    /// Resolves each path (symbolic links, `..`); each must exist.
    pub fn new(paths: &[PathBuf]) -> Result<Self, AgentError> {
        let entries = paths
            .iter()
            .map(|path| {
                let canonical = path
                    .canonicalize()
                    .map_err(|source| AgentError::AllowWrite { path: path.clone(), source })?;
                Ok((path.display().to_string(), canonical))
            })
            .collect::<Result<_, AgentError>>()?;
        Ok(AllowList { entries })
    }

    /// The paths as the operator gave them.
    pub fn given(&self) -> Vec<String> {
        self.entries.iter().map(|(given, _)| given.clone()).collect()
    }

    fn allows(&self, canonical: &Path) -> bool {
        self.entries.iter().any(|(_, allowed)| canonical.starts_with(allowed))
    }
}

/// Refuses a job that names a path it may not, and drops `allow_destroy` from groups whose
/// targets are not all under `--allow-write`.
pub fn check(job: &mut JobSpec, allow: &AllowList) -> Result<(), Failure> {
    for group in &mut job.groups {
        for path in &group.target.paths {
            check_shape(path)?;
        }
        let mut all_allowed = true;
        for path in &group.target.paths {
            let allowed = allow.allows(&resolve(path)?);
            all_allowed &= allowed;
            if group.access.writes() && !allowed {
                return Err(Failure::new(
                    StatusCode::FORBIDDEN,
                    format!(
                        "this agent may not write to {}: its operator must add --allow-write {} (or a directory above it) to `iolab agent`; nothing was written",
                        path.display(),
                        path.display()
                    ),
                ));
            }
        }
        if !all_allowed {
            group.target.allow_destroy = false;
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

/// The path with symbolic links resolved; for a file not yet laid out, its directory's.
fn resolve(path: &Path) -> Result<PathBuf, Failure> {
    if let Ok(canonical) = path.canonicalize() {
        return Ok(canonical);
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
        let allow = AllowList::new(&[dir.path().to_path_buf()]).expect("exists");
        let mut j = job(&text(&inside));
        check(&mut j, &allow).expect("inside");
        assert!(j.groups[0].target.allow_destroy);
        let mut read =
            job(&format!("engine = \"null\"\nallow_destroy = true\ntarget = \"{}\"", inside.display()));
        check(&mut read, &none).expect("reads go anywhere");
        assert!(!read.groups[0].target.allow_destroy);
    }
}
