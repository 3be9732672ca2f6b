//! The verify state file: what each 4 KiB block of a target should hold, kept between commands.
//! Reading it checks everything that can be checked, because a state that reads as "nothing
//! recorded" turns a lost device into a clean one: `iolab verify` would pass, checking nothing.
//!
//! | bytes | format 3 (`iolabvs3`, written)            | format 2 (`iolabvs2`, still read) |
//! |-------|-------------------------------------------|-----------------------------------|
//! | 0..8  | the magic                                 | the magic                         |
//! | 8..16 | block count N (u64 LE)                    | block count N                     |
//! | 16..24| XXH3-64 of every other byte of the file   | (records from byte 16)            |
//! | 24..  | N records, one u64 LE per block           |                                   |
//!
//! So a file is N * 8 + 24 bytes (format 2: + 16), and a state truncated, extended, zeroed or
//! damaged is an error naming what is wrong. Format 2 has no checksum: its length is checked,
//! its records cannot be, and the next job that saves it writes format 3. Format 1 went with
//! blocks checked by eight sector CRCs, which this iolab cannot check.

use std::hash::Hasher;
use std::io;
use std::path::{Path, PathBuf};

use iolab_engine::block::BLOCK;
use iolab_spec::user_file::{self, Cap, UserFileError};
use thiserror::Error;
use twox_hash::XxHash3_64;

const MAGIC: &[u8; 8] = b"iolabvs3";
const MAGIC_V2: &[u8; 8] = b"iolabvs2";
const MAGIC_V1: &[u8; 8] = b"iolabvs1";
const HEADER: u64 = 24;
const HEADER_V2: u64 = 16;
/// Where the block count ends: enough of a header to say what the file should have been.
const COUNT_END: usize = 16;

/// What the user can do about a state that cannot be trusted.
const NEXT: &str = "what it recorded cannot be trusted: give the --verify-state of the run that wrote the \
                    target, or move this file away and write the region again with --verify";

/// Why a state file cannot be read; each says what to do next.
#[derive(Debug, Error)]
pub enum StateError {
    #[error(transparent)]
    Unreadable(UserFileError),
    #[error("cannot write the verify state {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error(
        "{path} goes with blocks written by an earlier iolab, whose block check this one does not read; write the region again with --verify (or give another --verify-state)"
    )]
    OldFormat { path: PathBuf },
    #[error("{path} is not an iolab verify state file; give --verify-state another path, or remove it")]
    NotAState { path: PathBuf },
    #[error("state file {path} is {len} bytes of zeros: it was wiped or never written; {NEXT}")]
    Zeroed { path: PathBuf, len: u64 },
    #[error("state file {path} is {len} bytes, too short to hold even a verify state's header: it was truncated; {NEXT}")]
    NoHeader { path: PathBuf, len: u64 },
    #[error("state file {path} is {len} bytes, a state for {blocks} blocks is {expected} bytes: it was {how}; {NEXT}", how = cut_or_grown(.len, .expected))]
    WrongLength { path: PathBuf, len: u64, blocks: u64, expected: u64 },
    #[error("state file {path} says it holds {blocks} blocks, more than any device has: its header is damaged; {NEXT}")]
    ImpossibleCount { path: PathBuf, blocks: u64 },
    #[error("state file {path} fails its checksum: its records changed after iolab wrote them (zeroed, edited or damaged on disk); {NEXT}")]
    Checksum { path: PathBuf },
}

/// The records of the state file at `path` (absent: none), checked; it may describe at most
/// `covering` bytes of the target, so a path that holds more (a device or /dev/zero linked
/// there, another target's state) is refused unread, and so is anything but a regular file
/// (a FIFO would block the read).
pub fn read_state(path: &Path, covering: u64) -> Result<Vec<u64>, StateError> {
    let cap = Cap { what: "verify state", bytes: HEADER + 8 * covering.div_ceil(BLOCK as u64) };
    let bytes = match user_file::read(path, cap) {
        Ok(bytes) => bytes,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(source) => return Err(StateError::Unreadable(source)),
    };
    parse_state(path, &bytes)
}

/// Writes `records` to `path` in format 3 (through a temporary file and a rename), creating
/// its directory.
pub fn write_state(path: &Path, records: &[u64]) -> Result<(), StateError> {
    let fail = |source| StateError::Write { path: path.to_path_buf(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, state_bytes(records)).map_err(fail)?;
    std::fs::rename(&temporary, path).map_err(fail)
}

/// The bytes of a format-3 state file holding `records`, as `write_state` writes them.
pub fn state_bytes(records: &[u64]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER as usize + 8 * records.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(records.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    records.iter().for_each(|r| bytes.extend_from_slice(&r.to_le_bytes()));
    let sum = checksum(&bytes);
    bytes[16..24].copy_from_slice(&sum.to_le_bytes());
    bytes
}

/// The records of a state file's `bytes`, checked as `read_state` checks the file; `path` only
/// names the file in errors. No I/O, so that any bytes can be fed to it (the `verify_state`
/// fuzz target, fuzz/README.md).
pub fn parse_state(path: &Path, bytes: &[u8]) -> Result<Vec<u64>, StateError> {
    let path_buf = || path.to_path_buf();
    let len = bytes.len() as u64;
    if !bytes.is_empty() && bytes.iter().all(|b| *b == 0) {
        return Err(StateError::Zeroed { path: path_buf(), len });
    }
    let header = match bytes.get(..8) {
        Some(magic) if magic == MAGIC_V1 => return Err(StateError::OldFormat { path: path_buf() }),
        Some(magic) if magic == MAGIC => HEADER,
        Some(magic) if magic == MAGIC_V2 => HEADER_V2,
        // Shorter than a magic: a truncated state if what is there begins one.
        _ if MAGIC.starts_with(bytes) || MAGIC_V2.starts_with(bytes) => {
            return Err(StateError::NoHeader { path: path_buf(), len })
        }
        _ => return Err(StateError::NotAState { path: path_buf() }),
    };
    let Some(count) = bytes.get(8..COUNT_END) else {
        return Err(StateError::NoHeader { path: path_buf(), len });
    };
    let blocks = u64::from_le_bytes(count.try_into().unwrap_or_default());
    let expected = blocks.checked_mul(8).and_then(|b| b.checked_add(header));
    let Some(expected) = expected else {
        return Err(StateError::ImpossibleCount { path: path_buf(), blocks });
    };
    if len != expected {
        return Err(StateError::WrongLength { path: path_buf(), len, blocks, expected });
    }
    if header == HEADER {
        let stored = u64::from_le_bytes(bytes[16..24].try_into().unwrap_or_default());
        if stored != checksum(bytes) {
            return Err(StateError::Checksum { path: path_buf() });
        }
    }
    Ok(bytes[header as usize..]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect())
}

fn cut_or_grown(len: &u64, expected: &u64) -> &'static str {
    if len < expected {
        "truncated"
    } else {
        "extended"
    }
}

/// XXH3-64 of a format-3 file with its checksum field taken as zeros.
fn checksum(bytes: &[u8]) -> u64 {
    let mut hasher = XxHash3_64::new();
    hasher.write(&bytes[..16]);
    hasher.write(&[0; 8]);
    hasher.write(&bytes[24..]);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_of(records: &[u64]) -> (tempfile::TempDir, PathBuf, Vec<u8>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.state");
        write_state(&path, records).expect("write");
        let bytes = std::fs::read(&path).expect("read");
        (dir, path, bytes)
    }

    fn error_of(path: &Path, bytes: &[u8]) -> String {
        std::fs::write(path, bytes).expect("write");
        read_state(path, 1 << 30).expect_err("refused").to_string()
    }

    #[test]
    fn records_survive_a_round_trip_and_absent_is_empty() {
        let (dir, path, bytes) = state_of(&[0, 5, u64::MAX]);
        assert_eq!(bytes.len(), 24 + 3 * 8);
        assert_eq!(read_state(&path, 1 << 30).expect("read"), vec![0, 5, u64::MAX]);
        assert_eq!(read_state(&dir.path().join("absent"), 1 << 30).expect("absent"), Vec::<u64>::new());
    }

    #[test]
    fn the_bytes_in_hand_read_and_write_as_the_file_does() {
        let (_dir, path, bytes) = state_of(&[0, 5, u64::MAX]);
        assert_eq!(state_bytes(&[0, 5, u64::MAX]), bytes);
        assert_eq!(parse_state(&path, &bytes).expect("parse"), vec![0, 5, u64::MAX]);
        assert!(parse_state(&path, &bytes[..30]).expect_err("cut").to_string().contains("truncated"));
    }

    #[test]
    fn a_truncated_state_says_how_long_it_should_be() {
        let (_dir, path, bytes) = state_of(&vec![7; 4096]);
        let err = error_of(&path, &bytes[..16]);
        assert!(
            err.starts_with(&format!(
                "state file {} is 16 bytes, a state for 4096 blocks is 32792 bytes: it was truncated;",
                path.display()
            )),
            "{err}"
        );
        let err = error_of(&path, &bytes[..5]);
        assert!(
            err.contains("is 5 bytes, too short to hold even a verify state's header: it was truncated"),
            "{err}"
        );
        let err = error_of(&path, &[bytes.clone(), vec![1; 8]].concat());
        assert!(
            err.contains("is 32800 bytes, a state for 4096 blocks is 32792 bytes: it was extended"),
            "{err}"
        );
        let err = error_of(&path, b"");
        assert!(err.contains("is 0 bytes, too short"), "{err}");
    }

    #[test]
    fn zeroed_or_changed_records_fail_the_checksum_and_a_zeroed_file_is_named() {
        let (_dir, path, bytes) = state_of(&vec![7; 64]);
        let mut zeroed = bytes.clone();
        zeroed[24..].fill(0);
        let err = error_of(&path, &zeroed);
        assert!(err.contains("fails its checksum: its records changed after iolab wrote them"), "{err}");
        let mut flipped = bytes.clone();
        flipped[100] ^= 1;
        assert!(error_of(&path, &flipped).contains("fails its checksum"));
        let err = error_of(&path, &vec![0; bytes.len()]);
        assert!(err.contains(&format!("is {} bytes of zeros: it was wiped", bytes.len())), "{err}");
        assert!(err.contains("give the --verify-state of the run that wrote the target"), "{err}");
    }

    #[test]
    fn other_files_and_formats() {
        let (_dir, path, _) = state_of(&[1]);
        assert!(error_of(&path, b"not a state").contains("not an iolab verify state"));
        assert!(error_of(&path, &[&MAGIC_V1[..], &[0u8; 8]].concat()).contains("written by an earlier iolab"));
        let err = error_of(&path, &[&MAGIC[..], &u64::MAX.to_le_bytes()].concat());
        assert!(err.contains("says it holds 18446744073709551615 blocks"), "{err}");
        // Format 2: no checksum, but its length is checked.
        let v2 = [&MAGIC_V2[..], &2u64.to_le_bytes(), &5u64.to_le_bytes(), &6u64.to_le_bytes()].concat();
        std::fs::write(&path, &v2).expect("write");
        assert_eq!(read_state(&path, 1 << 30).expect("format 2"), vec![5, 6]);
        assert!(error_of(&path, &v2[..24])
            .contains("is 24 bytes, a state for 2 blocks is 32 bytes: it was truncated"));
    }
}
