//! Opening a results database without ever harming a file that is not one: the file's header,
//! its application id and its tables are checked before anything is written.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::StoreError;
use crate::schema::{self, APPLICATION_ID};

/// How long a writer waits for another process's transaction before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The database the results commands use when given no `--db` and no `IOLAB_DB`:
/// `$XDG_DATA_HOME/iolab/results.db`, else `~/.local/share/iolab/results.db`.
pub fn default_path() -> Option<PathBuf> {
    let from_env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let data =
        from_env("XDG_DATA_HOME").or_else(|| from_env("HOME").map(|home| home.join(".local/share")))?;
    Some(data.join("iolab").join("results.db"))
}

/// Opens (creating when absent) the database at `path`, migrated to this iolab's schema, in
/// WAL mode so several iolab processes can write to it at once. A database this call created
/// and could not finish (a full disk, say) is removed again, with the directories made for it:
/// a failed open leaves nothing behind.
pub fn open(path: &Path) -> Result<Connection, StoreError> {
    if path.exists() {
        return open_at(path, true);
    }
    let made_dirs = missing_dirs(path);
    let remove_dirs = || made_dirs.iter().for_each(|dir| drop(std::fs::remove_dir(dir)));
    let fail = |detail: String| StoreError::Open { path: path.to_path_buf(), detail };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(parent) {
            remove_dirs();
            return Err(fail(format!("cannot create {}: {e}", parent.display())));
        }
    }
    // Made exclusively, so this call knows the file is its own to remove: another iolab
    // creating the same database at this moment keeps the one it is using.
    let created = match std::fs::File::create_new(path) {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => {
            remove_dirs();
            return Err(fail(e.to_string()));
        }
    };
    let opened = open_at(path, false);
    if opened.is_err() && created {
        for file in
            [path.to_path_buf(), sibling(path, "-wal"), sibling(path, "-shm"), sibling(path, "-journal")]
        {
            let _ = std::fs::remove_file(file);
        }
        // Deepest first; a directory something else has since put a file in stays.
        remove_dirs();
    }
    opened
}

/// The directories above `path` that do not exist yet, deepest first.
fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .filter(|dir| !dir.as_os_str().is_empty())
        .take_while(|dir| !dir.exists())
        .map(Path::to_path_buf)
        .collect()
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// Opens the database at `path`; `exists`: it was there before this open (so it is checked to
/// be iolab's and sound before anything is written).
fn open_at(path: &Path, exists: bool) -> Result<Connection, StoreError> {
    let fail = |detail: String| StoreError::Open { path: path.to_path_buf(), detail };
    if exists {
        check_header(path)?;
    }
    let flags =
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags).map_err(|e| fail(e.to_string()))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| fail(e.to_string()))?;
    let damaged = |e: rusqlite::Error| classify(path, e);
    if exists {
        check_ours(&conn, path).and_then(|()| check_sound(&conn, path)).map_err(|e| match e {
            StoreError::Sqlite(e) => classify(path, e),
            other => other,
        })?;
    }
    let version: i32 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(damaged)?;
    if version > schema::VERSION {
        return Err(StoreError::Newer { version, known: schema::VERSION });
    }
    // WAL lets readers and a writer work at once; FULL syncs the log at every commit, so a
    // point, once committed, survives a killed process and a power loss.
    use_wal(&conn).map_err(damaged)?;
    conn.pragma_update(None, "synchronous", "FULL").map_err(damaged)?;
    conn.pragma_update(None, "foreign_keys", "ON").map_err(damaged)?;
    schema::migrate(&mut conn).map_err(|e| match e {
        StoreError::Sqlite(e) => classify(path, e),
        other => other,
    })?;
    Ok(conn)
}

/// Puts the database in WAL mode (a lasting property of the file). The switch needs the file
/// to itself, and SQLite answers "locked" at once, without waiting as for other locks, while
/// another process has it open: several iolab processes opening a new database together wait
/// for each other here, as long as a writer waits for a lock.
fn use_wal(conn: &Connection) -> rusqlite::Result<()> {
    let start = std::time::Instant::now();
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && start.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            done => return done,
        }
    }
}

/// An SQLite error, named for what it means to the user: a damaged or foreign file, or one this
/// user cannot write.
pub fn classify(path: &Path, error: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode::{
        CannotOpen, DatabaseCorrupt, DiskFull, NotADatabase, PermissionDenied, ReadOnly,
    };
    match error.sqlite_error_code() {
        Some(DatabaseCorrupt) => StoreError::Damaged { path: path.to_path_buf(), detail: error.to_string() },
        Some(DiskFull) => StoreError::Full { path: path.to_path_buf() },
        // SQLite opens a file it may not write read-only and says so at the first write
        // (ReadOnly); a directory it may not write leaves it no journal (CannotOpen).
        Some(ReadOnly | PermissionDenied | CannotOpen) => {
            StoreError::Unwritable { path: path.to_path_buf(), detail: error.to_string() }
        }
        Some(NotADatabase) => {
            StoreError::Foreign { path: path.to_path_buf(), what: "not an SQLite file".into() }
        }
        _ => StoreError::Sqlite(error),
    }
}

/// A non-empty file must start as every SQLite database does.
fn check_header(path: &Path) -> Result<(), StoreError> {
    let mut header = [0u8; 16];
    let read = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut header))
        .map_err(|e| StoreError::Open { path: path.to_path_buf(), detail: e.to_string() })?;
    match read {
        0 => Ok(()),
        16 if &header == b"SQLite format 3\0" => Ok(()),
        _ => Err(StoreError::Foreign { path: path.to_path_buf(), what: "not an SQLite file".into() }),
    }
}

/// Every page of the file is readable and consistent (`PRAGMA quick_check`: a read of the whole
/// file, a fraction of a second for a large store), so a damaged database is never written to.
fn check_sound(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let verdict: String = conn.query_row("PRAGMA quick_check(1)", [], |row| row.get(0))?;
    if verdict == "ok" {
        return Ok(());
    }
    Err(StoreError::Damaged { path: path.to_path_buf(), detail: verdict })
}

/// An existing SQLite file is ours when it carries our application id, or is still empty.
/// Both are read in one statement, so from one snapshot: read apart, another iolab's first
/// migration (tables and id in one transaction) could commit in between, and its new database
/// would look like another program's (tables without the id).
fn check_ours(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let (id, tables): (i32, i64) = conn.query_row(
        "SELECT (SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_master)",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    if id == APPLICATION_ID {
        return Ok(());
    }
    if id == 0 && tables == 0 {
        return Ok(());
    }
    let what = if id == 0 {
        format!("an SQLite database of another program, with {tables} tables and indexes")
    } else {
        format!("an SQLite database of another program (application id {id:#x})")
    };
    Err(StoreError::Foreign { path: path.to_path_buf(), what })
}
