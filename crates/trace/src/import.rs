//! Opens a trace of any kind iolab reads, telling them apart by their first bytes: iolab's own
//! file, blktrace's binary output, a fio iolog. blktrace writes one file per CPU
//! (NAME.blktrace.0, .1, ...): given NAME or any one of them, every one is read, since one
//! CPU's file alone is part of the trace.

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::blktrace::{self, BlktraceError};
use crate::file_format::{self, FormatError};
use crate::iolog::{self, IologError};
use crate::Trace;

#[derive(Debug, Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Format { path: PathBuf, source: FormatError },
    #[error("{path}: {source}")]
    Blktrace { path: PathBuf, source: BlktraceError },
    #[error("{path}: {source}")]
    Iolog { path: PathBuf, source: IologError },
    #[error("{0}: not a trace iolab reads (an iolab trace, blktrace's output NAME.blktrace.N, or a fio iolog v2/v3)")]
    Unknown(PathBuf),
}

pub fn open(path: &Path) -> Result<Trace, ImportError> {
    let blktrace_files = blktrace_set(path);
    if !blktrace_files.is_empty() && !path.is_file() || path_is_blktrace_part(path) {
        // Errors name the trace by its base (NAME), and the part where it went wrong.
        let base = split_part(path).map_or_else(|| path.to_path_buf(), |(base, _)| base);
        return read_blktrace(&base, &blktrace_files);
    }
    let bytes = std::fs::read(path).map_err(|source| ImportError::Read { path: path.into(), source })?;
    if bytes.starts_with(file_format::MAGIC) {
        return file_format::read(&bytes).map_err(|source| ImportError::Format { path: path.into(), source });
    }
    if blktrace::looks_like_blktrace(&bytes) {
        let files = vec![(path.display().to_string(), bytes)];
        return blktrace::read(&files).map_err(|source| ImportError::Blktrace { path: path.into(), source });
    }
    if iolog::looks_like_iolog(&bytes) {
        let text = String::from_utf8(bytes).map_err(|e| ImportError::Iolog {
            path: path.into(),
            source: IologError::Line {
                line: 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count(),
                text: String::new(),
                reason: "not text (invalid UTF-8)".into(),
            },
        })?;
        return iolog::read(&text).map_err(|source| ImportError::Iolog { path: path.into(), source });
    }
    Err(ImportError::Unknown(path.into()))
}

fn read_blktrace(path: &Path, files: &[PathBuf]) -> Result<Trace, ImportError> {
    let mut loaded = Vec::with_capacity(files.len());
    for file in files {
        let bytes = std::fs::read(file).map_err(|source| ImportError::Read { path: file.clone(), source })?;
        let name =
            file.file_name().map_or_else(|| file.display().to_string(), |n| n.to_string_lossy().into_owned());
        loaded.push((name, bytes));
    }
    blktrace::read(&loaded).map_err(|source| ImportError::Blktrace { path: path.into(), source })
}

/// Whether `path` is NAME.blktrace.N.
fn path_is_blktrace_part(path: &Path) -> bool {
    split_part(path).is_some()
}

fn split_part(path: &Path) -> Option<(PathBuf, u32)> {
    let name = path.file_name()?.to_str()?;
    let (base, cpu) = name.rsplit_once(".blktrace.")?;
    Some((path.with_file_name(base), cpu.parse().ok()?))
}

/// The per-CPU files of the blktrace `path` names (NAME, or one of NAME.blktrace.N), in CPU
/// order; empty when there are none.
fn blktrace_set(path: &Path) -> Vec<PathBuf> {
    let base = split_part(path).map_or_else(|| path.to_path_buf(), |(base, _)| base);
    let (Some(dir), Some(stem)) = (base.parent(), base.file_name().and_then(|n| n.to_str())) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let prefix = format!("{stem}.blktrace.");
    let mut parts: Vec<(u32, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let cpu = name.strip_prefix(&prefix)?.parse().ok()?;
            Some((cpu, e.path()))
        })
        .collect();
    parts.sort();
    parts.into_iter().map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blktrace_named_by_its_base_or_one_part_reads_every_cpu() {
        let dir = tempfile::tempdir().expect("dir");
        let rec = |t, s| crate::blktrace::tests_support::issue(t, s);
        std::fs::write(dir.path().join("cap.blktrace.0"), rec(0, 8)).expect("w");
        std::fs::write(dir.path().join("cap.blktrace.1"), rec(10, 16)).expect("w");
        for given in ["cap", "cap.blktrace.1"] {
            let trace = open(&dir.path().join(given)).expect(given);
            assert_eq!(trace.requests.len(), 2, "{given}");
        }
    }

    #[test]
    fn an_unknown_file_says_what_is_read() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("x.csv");
        std::fs::write(&path, "a,b,c\n").expect("w");
        let error = open(&path).expect_err("unknown").to_string();
        assert!(error.ends_with("not a trace iolab reads (an iolab trace, blktrace's output NAME.blktrace.N, or a fio iolog v2/v3)"), "{error}");
        let error = open(&dir.path().join("missing")).expect_err("missing").to_string();
        assert!(error.starts_with("cannot read"), "{error}");
    }
}
