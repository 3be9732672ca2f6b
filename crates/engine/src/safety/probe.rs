//! Which signature check runs: libblkid where it can be loaded (it knows every format
//! `blkid -p` knows), else iolab's own list (`signatures.rs`), and the run is told which.

use std::fs::File;
use std::io;
use std::path::Path;

use super::blkid::Libblkid;
use super::signatures::{self, Signature};
use super::{ends, with_context};

/// How many formats iolab's own list knows: the rows of the table in `signatures.rs` (a test
/// holds the two together).
pub(crate) const OWN_FORMATS: usize = 18;

/// The signature check of one inspection.
pub(crate) enum Prober {
    Libblkid(Libblkid),
    /// libblkid could not be loaded, for this reason.
    OwnList(String),
}

impl Prober {
    pub(crate) fn load() -> Prober {
        Libblkid::load().map_or_else(Prober::OwnList, Prober::Libblkid)
    }

    /// The signatures in the `len` bytes at `start` of the open device `file` (`device` names
    /// it in errors).
    pub(crate) fn detect(
        &self,
        file: &File,
        device: &Path,
        start: u64,
        len: u64,
    ) -> io::Result<Vec<Signature>> {
        match self {
            // libblkid reads a size of 0 as "to the end of the device": an empty extent holds nothing.
            Prober::Libblkid(_) if len == 0 => Ok(Vec::new()),
            Prober::Libblkid(blkid) => blkid.probe(file, start, len).map_err(with_context(format!(
                "cannot check the {len} bytes at {start} of {} for signatures",
                device.display()
            ))),
            Prober::OwnList(_) => {
                let ends = ends::read_ends(file, device, start, len)?;
                Ok(signatures::detect(&ends.head, &ends.tail, ends.size))
            }
        }
    }

    /// What the user should know about how the check was made: nothing when libblkid made it.
    pub(crate) fn fallback_note(&self) -> Option<String> {
        match self {
            Prober::Libblkid(_) => None,
            Prober::OwnList(why) => Some(format!(
                "libblkid not found ({why}): iolab's own list of {OWN_FORMATS} signatures was checked, which \
                 misses rarer filesystems (minix, squashfs, erofs, ...); install libblkid1 (util-linux) for the full check"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_of_own_formats_is_the_table_s() {
        let source = include_str!("signatures.rs");
        let rows =
            source.lines().take_while(|l| l.starts_with("//!")).filter(|l| l.starts_with("//! |")).count();
        // Less the header and its rule.
        assert_eq!(rows - 2, OWN_FORMATS);
    }

    #[test]
    fn the_fallback_says_why_and_what_was_checked() {
        let own = Prober::OwnList("libblkid.so.1: cannot open shared object file".into());
        let note = own.fallback_note().expect("a note");
        assert!(note.starts_with("libblkid not found (libblkid.so.1: cannot open"), "{note}");
        assert!(note.contains("iolab's own list of 18 signatures was checked"), "{note}");
    }
}
