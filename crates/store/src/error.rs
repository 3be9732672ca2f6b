use std::path::PathBuf;

use crate::model::RunId;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path} is not an iolab results database ({what}); iolab leaves it as it is: give another --db")]
    Foreign { path: PathBuf, what: String },
    #[error("the results database {path} is damaged ({detail}); iolab leaves it as it is: `sqlite3 {path} .recover` may save its data, or give another --db")]
    Damaged { path: PathBuf, detail: String },
    #[error(
        "the results database was made by a newer iolab (schema {version}; this one knows up to {known})"
    )]
    Newer { version: i32, known: i32 },
    #[error("the results database {path} cannot grow: its filesystem is full; free some space, give --db on another filesystem, or --no-store")]
    Full { path: PathBuf },
    #[error("cannot open the results database {path}: {detail}")]
    Open { path: PathBuf, detail: String },
    /// The database exists but this user cannot write it or the directory beside it (where
    /// SQLite keeps its write-ahead log), or it is on a read-only filesystem.
    #[error("cannot write the results database {path} ({detail}): give --db PATH for one you can write, or make {path} and its directory writable")]
    Unwritable { path: PathBuf, detail: String },
    #[error("no run {0} in the results database")]
    NoRun(RunId),
    #[error("results database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("results database: a stored {what} does not parse: {detail}")]
    Stored { what: &'static str, detail: String },
}
