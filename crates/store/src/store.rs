//! The results database: runs and their points, written as they complete, read back by the
//! results commands, comparisons and reports.

use std::path::{Path, PathBuf};

use iolab_stats::result::{JobResult, Verdict};
use rusqlite::{params, Connection, OptionalExtension, Row, TransactionBehavior};
use serde::de::DeserializeOwned;

use crate::error::StoreError;
use crate::model::{NewRun, Point, PointFigures, RunEnd, RunId, RunInfo, RunStatus, StoredRun};
use crate::open::{classify, open};

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

const RUN_COLUMNS: &str = "r.id, r.kind, r.label, r.command, r.iolab_version, r.host, r.started_at, \
     r.finished_at, r.status, (SELECT count(*) FROM points p WHERE p.run_id = r.id), r.pid, r.boot_id";

impl Store {
    /// Opens the database at `path` (see `open::open`).
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Ok(Store { conn: open(path)?, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// SQLite opened the file read-only (this user may not write it, or its filesystem is
    /// read-only): reading works, the first write would fail.
    pub fn read_only(&self) -> bool {
        self.conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false)
    }

    /// Records a run as started (status running) and returns its id.
    pub fn begin_run(&mut self, run: &NewRun) -> Result<RunId, StoreError> {
        let path = self.path.clone();
        self.write(|tx| {
            let environment = environment_id(tx, &run.environment)?;
            tx.execute(
                "INSERT INTO runs (kind, label, command, iolab_version, host, started_at, status, plan, environment_id,
                     pid, boot_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    run.kind,
                    run.label,
                    to_json(&run.command),
                    run.iolab_version,
                    run.host,
                    run.started_at_unix_s,
                    RunStatus::Running.name(),
                    to_json(&run.plan),
                    environment,
                    std::process::id(),
                    boot_id()
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
        .map_err(|e| classify(&path, e))
    }

    /// Commits one point of `run`, at once and on its own: a later crash keeps it.
    pub fn add_point(&mut self, run: RunId, point: &Point) -> Result<(), StoreError> {
        let path = self.path.clone();
        self.write(|tx| {
            let environment: i64 =
                tx.query_row("SELECT environment_id FROM runs WHERE id = ?1", [run], |row| row.get(0))?;
            let total = &point.summary.total;
            let latency = total.latency.as_ref();
            let p99 = total.percentile(99.0).map(|ns| ns as i64);
            tx.execute(
                "INSERT INTO points (run_id, seq, name, source, completed_at, environment_id, iops, mb_s,
                     mean_ns, p99_ns, spec, summary, series, verdict, histograms, result)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                params![
                    run,
                    point.seq,
                    point.name,
                    point.source,
                    point.completed_at_unix_s,
                    environment,
                    total.iops,
                    total.mb_s,
                    latency.map(|l| l.mean_ns),
                    p99,
                    to_json(&point.spec),
                    to_json(&point.summary),
                    to_json(&point.series),
                    point.verdict.as_ref().map(to_json),
                    point.histograms.as_ref().map(to_json),
                    to_json(&point.result),
                ],
            )?;
            Ok(())
        })
        .map_err(|e| classify(&path, e))
    }

    /// Sets the verdict of point `seq` of `run`, judged after the point was kept: beside the
    /// point, and in its whole result, as if it had been there from the start. A point that
    /// was kept and never judged (a crash between the two) reads as not judged.
    pub fn set_verdict(&mut self, run: RunId, seq: u32, verdict: &Verdict) -> Result<(), StoreError> {
        let path = self.path.clone();
        self.write(|tx| {
            let verdict = to_json(verdict);
            let updated = tx.execute(
                "UPDATE points SET verdict = ?3, result = json_set(result, '$.verdict', json(?3))
                 WHERE run_id = ?1 AND seq = ?2",
                params![run, seq, verdict],
            )?;
            match updated {
                1 => Ok(()),
                _ => Err(rusqlite::Error::QueryReturnedNoRows),
            }
        })
        .map_err(|e| classify(&path, e))
    }

    /// Puts `result` in place of point `seq`'s whole result: facts measured after the point
    /// was kept (the trial of its verdict's advice, the attempts a study dropped before it),
    /// where judging it again finds them. Its figures are the point's own, unchanged.
    pub fn amend_result(&mut self, run: RunId, seq: u32, result: &JobResult) -> Result<(), StoreError> {
        let path = self.path.clone();
        self.write(|tx| {
            let updated = tx.execute(
                "UPDATE points SET result = ?3 WHERE run_id = ?1 AND seq = ?2",
                params![run, seq, to_json(result)],
            )?;
            match updated {
                1 => Ok(()),
                _ => Err(rusqlite::Error::QueryReturnedNoRows),
            }
        })
        .map_err(|e| classify(&path, e))
    }

    /// Marks `run` as ended, with the command's report.
    pub fn finish_run(&mut self, run: RunId, end: &RunEnd) -> Result<(), StoreError> {
        let path = self.path.clone();
        self.write(|tx| {
            let after = end.environment_after.as_ref().map(|e| environment_id(tx, e)).transpose()?;
            tx.execute(
                "UPDATE runs SET status = ?2, finished_at = ?3, report = ?4, environment_after_id = ?5 WHERE id = ?1",
                params![run, end.status.name(), end.finished_at_unix_s, end.report.as_ref().map(to_json), after],
            )?;
            Ok(())
        })
        .map_err(|e| classify(&path, e))
    }

    /// Every run, newest first.
    pub fn runs(&self) -> Result<Vec<RunInfo>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs r ORDER BY r.id DESC");
        self.read(|conn| conn.prepare(&sql)?.query_map([], run_info)?.collect::<Result<Vec<_>, _>>())
            .and_then(|rows| rows.into_iter().collect())
    }

    /// One run with all it holds.
    pub fn run(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let mut run = self.run_head(id)?;
        run.points = self.points(id)?;
        Ok(run)
    }

    /// One run without its points (`points` is empty): for a caller that reads only what it
    /// needs of them (`point_figures`).
    pub fn run_head(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS}, r.plan, e.fingerprint, a.fingerprint, r.report FROM runs r
             JOIN environments e ON e.id = r.environment_id
             LEFT JOIN environments a ON a.id = r.environment_after_id WHERE r.id = ?1"
        );
        let row = self.read(|conn| {
            conn.query_row(&sql, [id], |row| {
                Ok((
                    run_info(row)?,
                    row.get::<_, String>(12)?,
                    row.get::<_, String>(13)?,
                    row.get(14)?,
                    row.get(15)?,
                ))
            })
            .optional()
        })?;
        let (info, plan, environment, after, report): (_, _, _, Option<String>, Option<String>) =
            row.ok_or(StoreError::NoRun(id))?;
        Ok(StoredRun {
            info: info?,
            plan: parse("plan", &plan)?,
            environment: parse("environment", &environment)?,
            environment_after: after.map(|a| parse("environment", &a)).transpose()?,
            report: report.map(|r| parse("report", &r)).transpose()?,
            points: Vec::new(),
        })
    }

    /// The points of `run`, in order, without their series and whole results: a resumed
    /// burn-in of weeks reads back its segments' figures and histograms, not megabytes of JSON.
    pub fn point_figures(&self, run: RunId) -> Result<Vec<PointFigures>, StoreError> {
        // The same count as `PointFigures::of`, read inside SQLite.
        let rows = self.read(|conn| {
            conn.prepare(
                "SELECT seq, name, completed_at, summary, histograms,
                        coalesce(json_extract(result, '$.errors.count'), 0)
                          + coalesce(json_extract(result, '$.verify.bad.lost_write'), 0)
                          + coalesce(json_extract(result, '$.verify.bad.stale_data'), 0)
                          + coalesce(json_extract(result, '$.verify.bad.misdirected_write'), 0)
                          + coalesce(json_extract(result, '$.verify.bad.torn_write'), 0)
                          + coalesce(json_extract(result, '$.verify.bad.corrupted_bytes'), 0)
                 FROM points WHERE run_id = ?1 ORDER BY seq",
            )?
            .query_map([run], |row| {
                Ok((
                    row.get::<_, u32>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, Option<String>>(4)?,
                    row.get::<_, i64>(5)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()
        })?;
        rows.into_iter()
            .map(|(seq, name, completed_at_unix_s, summary, histograms, errors)| {
                Ok(PointFigures {
                    seq,
                    name,
                    completed_at_unix_s,
                    summary: parse("summary", &summary)?,
                    histograms: histograms.map(|h| parse("histograms", &h)).transpose()?,
                    errors: u64::try_from(errors).unwrap_or(0),
                })
            })
            .collect()
    }

    /// The points of `run`, in order.
    pub fn points(&self, run: RunId) -> Result<Vec<Point>, StoreError> {
        let rows = self.read(|conn| {
            conn.prepare(
                "SELECT seq, name, source, completed_at, spec, summary, series, verdict, histograms, result
                 FROM points WHERE run_id = ?1 ORDER BY seq",
            )?
            .query_map([run], |row| {
                Ok(StoredPointRow {
                    seq: row.get(0)?,
                    name: row.get(1)?,
                    source: row.get(2)?,
                    completed_at: row.get(3)?,
                    spec: row.get(4)?,
                    summary: row.get(5)?,
                    series: row.get(6)?,
                    verdict: row.get(7)?,
                    histograms: row.get(8)?,
                    result: row.get(9)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()
        })?;
        rows.into_iter().map(StoredPointRow::parse).collect()
    }

    /// The newest unfinished run of `kind` that planned exactly `plan`: what `--resume` continues.
    /// A run still `running` counts only when the process that wrote it is gone (another pid
    /// alive on this boot is a live sweep, never taken over).
    pub fn resumable(&self, kind: &str, plan: &serde_json::Value) -> Result<Option<RunId>, StoreError> {
        let statuses = [RunStatus::Running.name(), RunStatus::Interrupted.name()];
        let candidates: Vec<(RunId, String, u32, String)> = self.read(|conn| {
            conn.prepare(
                "SELECT id, status, pid, boot_id FROM runs WHERE kind = ?1 AND plan = ?2 AND status IN (?3, ?4)
                 ORDER BY id DESC",
            )?
            .query_map(params![kind, to_json(plan), statuses[0], statuses[1]], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?
            .collect()
        })?;
        Ok(candidates
            .into_iter()
            .find(|(_, status, pid, boot)| status != RunStatus::Running.name() || !writer_alive(*pid, boot))
            .map(|(id, ..)| id))
    }

    /// Marks a run being resumed as running again.
    pub fn reopen_run(&mut self, run: RunId) -> Result<(), StoreError> {
        let path = self.path.clone();
        self.write(|tx| {
            tx.execute(
                "UPDATE runs SET status = ?2, finished_at = NULL, report = NULL, pid = ?3, boot_id = ?4 WHERE id = ?1",
                params![run, RunStatus::Running.name(), std::process::id(), boot_id()],
            )
        })
        .map_err(|e| classify(&path, e))
        .and_then(|changed| if changed == 0 { Err(StoreError::NoRun(run)) } else { Ok(()) })
    }

    /// Drops the points of `run` from `seq` on: a resumed run measures them again.
    pub fn truncate_points(&mut self, run: RunId, seq: u32) -> Result<(), StoreError> {
        let path = self.path.clone();
        self.write(|tx| tx.execute("DELETE FROM points WHERE run_id = ?1 AND seq >= ?2", params![run, seq]))
            .map(|_| ())
            .map_err(|e| classify(&path, e))
    }

    /// Commits one `kind` sample of `run` (a burn-in's drive health), taken at `taken_at_unix_s`,
    /// at once and on its own, as `add_point` does a point.
    pub fn add_sample(
        &mut self,
        run: RunId,
        kind: &str,
        taken_at_unix_s: i64,
        body: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO samples (run_id, kind, taken_at, body) VALUES (?1, ?2, ?3, ?4)",
                params![run, kind, taken_at_unix_s, to_json(body)],
            )
        })
        .map(|_| ())
        .map_err(|e| classify(&path, e))
    }

    /// The `kind` samples of `run`, in the order they were taken.
    pub fn samples(&self, run: RunId, kind: &str) -> Result<Vec<serde_json::Value>, StoreError> {
        let rows: Vec<String> = self.read(|conn| {
            conn.prepare("SELECT body FROM samples WHERE run_id = ?1 AND kind = ?2 ORDER BY taken_at, id")?
                .query_map(params![run, kind], |row| row.get(0))?
                .collect()
        })?;
        rows.iter().map(|body| parse("sample", body)).collect()
    }

    /// Deletes a run and its points; environments no run uses any more go too.
    pub fn delete_run(&mut self, run: RunId) -> Result<(), StoreError> {
        let path = self.path.clone();
        let deleted = self
            .write(|tx| {
                let deleted = tx.execute("DELETE FROM runs WHERE id = ?1", [run])?;
                tx.execute(
                    "DELETE FROM environments WHERE id NOT IN (SELECT environment_id FROM runs)
                       AND id NOT IN (SELECT environment_after_id FROM runs WHERE environment_after_id IS NOT NULL)
                       AND id NOT IN (SELECT environment_id FROM points)",
                    [],
                )?;
                Ok(deleted)
            })
            .map_err(|e| classify(&path, e))?;
        if deleted == 0 {
            return Err(StoreError::NoRun(run));
        }
        Ok(())
    }

    /// Runs `work` in an immediate transaction: it takes the write lock at once (waiting up to
    /// the busy timeout for another process), so it never fails half-way for want of it.
    fn write<T>(
        &mut self,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let result = work(&tx)?;
        tx.commit()?;
        Ok(result)
    }

    fn read<T>(&self, work: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        work(&self.conn).map_err(|e| classify(&self.path, e))
    }
}

/// Whether the process `pid` of boot `boot` that writes a running run is still there: a run
/// whose writer is gone was interrupted (killed, or the machine went down), whatever it says.
fn writer_alive(pid: u32, boot: &str) -> bool {
    boot == boot_id() && Path::new(&format!("/proc/{pid}")).exists()
}

/// This boot of the machine: with the pid, who writes a running run.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|id| id.trim().to_string())
        .unwrap_or_default()
}

/// The id of `fingerprint` in the environments table, added when new: runs in one environment
/// share one row.
fn environment_id(tx: &rusqlite::Transaction<'_>, fingerprint: &serde_json::Value) -> rusqlite::Result<i64> {
    let text = to_json(fingerprint);
    tx.execute("INSERT OR IGNORE INTO environments (fingerprint) VALUES (?1)", [&text])?;
    tx.query_row("SELECT id FROM environments WHERE fingerprint = ?1", [&text], |row| row.get(0))
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("stored values serialize")
}

fn parse<T: DeserializeOwned>(what: &'static str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Stored { what, detail: e.to_string() })
}

fn run_info(row: &Row<'_>) -> rusqlite::Result<Result<RunInfo, StoreError>> {
    let command: String = row.get(3)?;
    let status: String = row.get(8)?;
    let points: i64 = row.get(9)?;
    let (pid, boot): (u32, String) = (row.get(10)?, row.get(11)?);
    let info = (|| {
        Ok(RunInfo {
            id: row.get(0)?,
            kind: row.get(1)?,
            label: row.get(2)?,
            command: parse("command", &command)?,
            iolab_version: row.get(4)?,
            host: row.get(5)?,
            started_at_unix_s: row.get(6)?,
            finished_at_unix_s: row.get(7)?,
            status: match RunStatus::parse(&status) {
                Some(RunStatus::Running) if !writer_alive(pid, &boot) => RunStatus::Interrupted,
                Some(status) => status,
                None => return Err(StoreError::Stored { what: "status", detail: status.clone() }),
            },
            points: points as usize,
        })
    })();
    Ok(info.map_err(|e: StoreError| e))
}

struct StoredPointRow {
    seq: u32,
    name: String,
    source: String,
    completed_at: i64,
    spec: String,
    summary: String,
    series: String,
    verdict: Option<String>,
    histograms: Option<String>,
    result: String,
}

impl StoredPointRow {
    fn parse(self) -> Result<Point, StoreError> {
        Ok(Point {
            seq: self.seq,
            name: self.name,
            source: self.source,
            completed_at_unix_s: self.completed_at,
            spec: parse("spec", &self.spec)?,
            summary: parse("summary", &self.summary)?,
            series: parse("series", &self.series)?,
            verdict: self.verdict.map(|v| parse("verdict", &v)).transpose()?,
            histograms: self.histograms.map(|h| parse("histograms", &h)).transpose()?,
            result: parse("result", &self.result)?,
        })
    }
}
