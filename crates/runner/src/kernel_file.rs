//! Reading one of the kernel's text files for a figure: what cannot be read, or holds no such
//! figure, is said in a list of what was missing (the verdict says it lacked it), never fatal.

use std::path::Path;

/// `parse` of the file at `path`; `None`, with why in `unread`, when it cannot be read or holds
/// no `what` ("no stall totals in it").
pub fn read_parsed<T>(
    path: &Path,
    what: &str,
    parse: impl FnOnce(&str) -> Option<T>,
    unread: &mut Vec<String>,
) -> Option<T> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text).or_else(|| {
            unread.push(format!("{}: no {what} in it", path.display()));
            None
        }),
        Err(e) => {
            unread.push(format!("{}: {e}", path.display()));
            None
        }
    }
}
