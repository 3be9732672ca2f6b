//! The database's layout and how it gets there: each migration takes the schema from one
//! version (`PRAGMA user_version`) to the next, in one transaction. docs/results-store.md
//! describes the tables; a change here is a new migration, never an edit of an old one.

use rusqlite::Connection;

use crate::error::StoreError;

/// `PRAGMA application_id` of an iolab database ("IOLB"): how a file is known to be ours.
pub const APPLICATION_ID: i32 = 0x494F_4C42;

/// The migrations, in order: `MIGRATIONS[n]` takes version n to n + 1.
const MIGRATIONS: &[&str] = &[
    // 1: runs, their points, and the environments they ran in.
    "CREATE TABLE environments (
        id INTEGER PRIMARY KEY,
        fingerprint TEXT NOT NULL UNIQUE
    );
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        label TEXT NOT NULL,
        command TEXT NOT NULL,
        iolab_version TEXT NOT NULL,
        host TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        finished_at INTEGER,
        status TEXT NOT NULL,
        plan TEXT NOT NULL,
        environment_id INTEGER NOT NULL REFERENCES environments(id),
        environment_after_id INTEGER REFERENCES environments(id),
        report TEXT
    );
    CREATE INDEX runs_by_plan ON runs(kind, plan);
    CREATE TABLE points (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        name TEXT NOT NULL,
        source TEXT NOT NULL,
        completed_at INTEGER NOT NULL,
        environment_id INTEGER NOT NULL REFERENCES environments(id),
        iops REAL NOT NULL,
        mb_s REAL NOT NULL,
        mean_ns REAL,
        p99_ns INTEGER,
        spec TEXT NOT NULL,
        summary TEXT NOT NULL,
        series TEXT NOT NULL,
        verdict TEXT,
        histograms TEXT,
        result TEXT NOT NULL,
        UNIQUE (run_id, seq)
    );",
    // 2: who writes a running run (process and boot), so --resume never takes over a live one.
    "ALTER TABLE runs ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';",
    // 3: what a run samples beside its points (a burn-in's drive health every few minutes),
    // committed as taken, so a killed run keeps its samples as it keeps its points.
    "CREATE TABLE samples (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        taken_at INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX samples_by_run ON samples(run_id, kind);",
];

/// The schema version this iolab writes.
pub const VERSION: i32 = MIGRATIONS.len() as i32;

/// Brings a database of ours (or a new, empty one) to `VERSION`. A newer database is refused:
/// this iolab would not know what its tables mean.
pub fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let version: i32 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if version > VERSION {
        return Err(StoreError::Newer { version, known: VERSION });
    }
    for (from, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // Another process may have migrated while this one waited for the lock.
        let now: i32 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        if now > from as i32 {
            continue;
        }
        tx.execute_batch(sql)?;
        tx.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {}",
            from + 1
        ))?;
        tx.commit()?;
    }
    Ok(())
}
