//! Where `iolab run` reads its job file from: an iolab (TOML) job file, or a fio job file
//! translated into one (iolab_fiojob), told apart by name or first line.

use crate::exit::say;
use std::path::Path;

use iolab_spec::{jobfile, Options};

/// The job file's options; a fio job file's notes go to stderr unless `quiet`.
pub fn load(path: &Path, quiet: bool) -> Result<Options, String> {
    if !iolab_fiojob::looks_like_fio(path) {
        return jobfile::load(path).map_err(|e| e.to_string());
    }
    let translation = iolab_fiojob::translate_file(path).map_err(|e| e.to_string())?;
    if !quiet {
        for note in &translation.notes {
            say!("iolab: note: fio job file {note}");
        }
    }
    translation.options(&path.display().to_string()).map_err(|e| e.to_string())
}
