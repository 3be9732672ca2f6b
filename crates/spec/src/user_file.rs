//! Reading a file the user named (a job file, an included fio file, `--rated`, a token or hosts
//! file, a verify state): only a regular file, and only up to a size that suits its kind. Each
//! reader once read whatever the path gave: a `--verify-state` linked to /dev/zero grew to 20 GB
//! and was killed, and a FIFO hung the command before it ran anything. The path is looked at
//! before it is opened (opening some devices acts), opened with O_NONBLOCK (a FIFO with no
//! writer would block the open) and looked at again through the descriptor, since the path may
//! have changed in between.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::Bytes;

/// What a file is for, named in errors, and the most it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// "job file", "token file": how errors name the file.
    pub what: &'static str,
    pub bytes: u64,
}

/// A TOML job file: the largest real ones are a few KiB.
pub const JOB_FILE: Cap = Cap { what: "job file", bytes: 4 << 20 };
/// A fio job file, and each file it includes.
pub const FIO_JOB_FILE: Cap = Cap { what: "fio job file", bytes: 4 << 20 };
/// `--rated`: a drive's datasheet figures.
pub const RATED_FILE: Cap = Cap { what: "rated figures file", bytes: 1 << 20 };
/// A fleet's shared token: one line.
pub const TOKEN_FILE: Cap = Cap { what: "token file", bytes: 64 << 10 };
/// A fleet's hosts, one a line.
pub const HOSTS_FILE: Cap = Cap { what: "hosts file", bytes: 4 << 20 };

#[derive(Debug, thiserror::Error)]
pub enum UserFileError {
    #[error("{what} {path}: cannot read it: {source}", path = path.display())]
    Open {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} {path} is {kind}, not a regular file; give a regular file", path = path.display())]
    NotRegular { what: &'static str, path: PathBuf, kind: &'static str },
    #[error("{what} {path} holds more than {cap}, the most a {what} may; is it the file you meant?", path = path.display(), cap = Bytes(*cap))]
    TooLarge { what: &'static str, path: PathBuf, cap: u64 },
    #[error("{what} {path}: cannot read it: {source}", path = path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} {path} is not text (UTF-8); give a {what}", path = path.display())]
    NotText { what: &'static str, path: PathBuf },
}

impl UserFileError {
    /// The path names nothing (a reader to which an absent file means "none yet" asks).
    pub fn is_not_found(&self) -> bool {
        matches!(self, UserFileError::Open { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Opens `path` for reading if it is a regular file (through links), without blocking.
pub fn open(path: &Path, what: &'static str) -> Result<File, UserFileError> {
    let open_error = |source| UserFileError::Open { what, path: path.to_path_buf(), source };
    regular(path, what, &std::fs::metadata(path).map_err(open_error)?)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(open_error)?;
    regular(path, what, &file.metadata().map_err(open_error)?)?;
    Ok(file)
}

/// The bytes of the regular file `path`, refused beyond `cap`.
pub fn read(path: &Path, cap: Cap) -> Result<Vec<u8>, UserFileError> {
    let file = open(path, cap.what)?;
    let too_large = || UserFileError::TooLarge { what: cap.what, path: path.to_path_buf(), cap: cap.bytes };
    if file.metadata().is_ok_and(|meta| meta.len() > cap.bytes) {
        return Err(too_large());
    }
    // Read to one byte past the cap: a file that grew since it was looked at is still refused.
    let mut bytes = Vec::new();
    file.take(cap.bytes.saturating_add(1)).read_to_end(&mut bytes).map_err(|source| UserFileError::Read {
        what: cap.what,
        path: path.to_path_buf(),
        source,
    })?;
    if bytes.len() as u64 > cap.bytes {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The text of the regular file `path`, refused beyond `cap` or when it is not UTF-8.
pub fn read_to_string(path: &Path, cap: Cap) -> Result<String, UserFileError> {
    String::from_utf8(read(path, cap)?)
        .map_err(|_| UserFileError::NotText { what: cap.what, path: path.to_path_buf() })
}

fn regular(path: &Path, what: &'static str, meta: &Metadata) -> Result<(), UserFileError> {
    let kind = meta.file_type();
    let kind = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a file"
    };
    Err(UserFileError::NotRegular { what, path: path.to_path_buf(), kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Cap = Cap { what: "job file", bytes: 8 };

    /// Issue 32: a FIFO hung the reader and /dev/zero grew it to 20 GB.
    #[test]
    fn a_fifo_or_a_device_is_refused_without_blocking_or_reading() {
        let dir = tempfile::tempdir().expect("dir");
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let error = read_to_string(&fifo, SMALL).expect_err("a FIFO");
        assert!(error.to_string().contains("is a FIFO, not a regular file"), "{error}");
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("link");
        let error = read(&zero, SMALL).expect_err("a device");
        assert!(error.to_string().contains("is a character device, not a regular file"), "{error}");
        let error = read(dir.path(), SMALL).expect_err("a directory");
        assert!(error.to_string().contains("is a directory"), "{error}");
    }

    #[test]
    fn a_file_beyond_its_cap_is_refused_and_one_within_is_read() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("job.toml");
        std::fs::write(&path, "123456789").expect("write");
        let error = read(&path, SMALL).expect_err("9 bytes over 8");
        assert!(error.to_string().contains("holds more than 8B, the most a job file may"), "{error}");
        std::fs::write(&path, "12345678").expect("write");
        assert_eq!(read_to_string(&path, SMALL).expect("8 bytes"), "12345678");
        assert!(read(&dir.path().join("absent"), SMALL).expect_err("absent").is_not_found());
    }

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
        assert!(status.success(), "mkfifo {}", path.display());
    }
}
