//! One run kept in the store from its start to its end, the same way for every command: begun
//! before the first I/O, each point committed as it is measured (a point that cannot be written
//! is counted as lost and the run goes on), the end recorded with the command's report; a run
//! abandoned on an error is forgotten when it measured nothing and kept as failed when it did.
//! A whole run from elsewhere (an fio import) is kept completely or not at all.

use std::path::{Path, PathBuf};

use iolab_stats::result::{JobResult, Verdict};

use crate::error::StoreError;
use crate::model::{now_unix_s, NewRun, Point, RunEnd, RunId, RunStatus};
use crate::store::Store;

/// A run being kept.
pub struct Recorder {
    store: Store,
    run: RunId,
    /// The points the run has had so far (kept or lost): the next one's sequence number.
    next_seq: u32,
    /// The run continues an earlier one (`--resume`).
    resumed: bool,
    /// What could not be written, each named as the caller would say it ("'qd8'").
    lost: Vec<String>,
    /// The sequence number of each point handed in so far, in order (`None`: lost).
    kept: Vec<Option<u32>>,
    /// `finish`, `forget` or `abandon` has ended the run: dropping does nothing more.
    ended: bool,
}

/// How the end of a run went.
#[derive(Debug)]
pub struct Finished {
    pub run: RunId,
    pub path: PathBuf,
    /// Every point the run was handed, kept or lost.
    pub points: u32,
    /// What could not be written, in the order it was lost.
    pub lost: Vec<String>,
    /// Whether the end itself was recorded.
    pub ended: Result<(), StoreError>,
}

impl Finished {
    /// Everything the run measured, and its end, is in the store.
    pub fn complete(&self) -> bool {
        self.lost.is_empty() && self.ended.is_ok()
    }
}

impl Recorder {
    /// Records `run` as started in `store`, refusing a store this user may only read (SQLite
    /// opens one without a word, and the first point would fail).
    pub fn begin(mut store: Store, run: &NewRun) -> Result<Recorder, StoreError> {
        if store.read_only() {
            return Err(StoreError::Unwritable {
                path: store.path().to_path_buf(),
                detail: "opened read-only: no permission, or a read-only filesystem".into(),
            });
        }
        let id = store.begin_run(run)?;
        Ok(Recorder::of(store, id, 0, false))
    }

    /// Continues unfinished run `run`, keeping its first `points` points: those after them were
    /// cut short and are measured again.
    pub fn resume(mut store: Store, run: RunId, points: u32) -> Result<Recorder, StoreError> {
        store.truncate_points(run, points)?;
        store.reopen_run(run)?;
        Ok(Recorder::of(store, run, points, true))
    }

    fn of(store: Store, run: RunId, next_seq: u32, resumed: bool) -> Recorder {
        Recorder { store, run, next_seq, resumed, lost: Vec::new(), kept: Vec::new(), ended: false }
    }

    /// Keeps a whole run at once (an import): its points and its end, completely or not at all.
    pub fn import(
        store: &mut Store,
        run: &NewRun,
        points: &[Point],
        end: &RunEnd,
    ) -> Result<RunId, StoreError> {
        let id = store.begin_run(run)?;
        let stored = points
            .iter()
            .try_for_each(|point| store.add_point(id, point))
            .and_then(|()| store.finish_run(id, end));
        if let Err(e) = stored {
            // A half-stored run is no result: take it out again.
            let _ = store.delete_run(id);
            return Err(e);
        }
        Ok(id)
    }

    pub fn run(&self) -> RunId {
        self.run
    }

    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// A connection of its own to this run's database, for samples taken on another thread.
    pub fn sampler(&self) -> Result<Sampler, StoreError> {
        Ok(Sampler { store: Store::open(self.store.path())?, run: self.run })
    }

    /// Commits the next point, which `make` builds from its sequence number. A point that
    /// cannot be written is lost, named `what`, and the error returned for the caller to say;
    /// the run goes on.
    pub fn keep(&mut self, what: &str, make: impl FnOnce(u32) -> Point) -> Result<u32, StoreError> {
        let seq = self.next_seq;
        self.next_seq += 1;
        match self.store.add_point(self.run, &make(seq)) {
            Ok(()) => {
                self.kept.push(Some(seq));
                Ok(seq)
            }
            Err(e) => {
                self.lost.push(what.to_string());
                self.kept.push(None);
                Err(e)
            }
        }
    }

    /// Replaces the result of the `index`-th point handed in (what was measured after it, a
    /// read-back); `None` when that point was not kept.
    pub fn amend(&mut self, index: usize, result: &JobResult, what: &str) -> Option<Result<u32, StoreError>> {
        let seq = self.kept.get(index).copied().flatten()?;
        Some(match self.store.amend_result(self.run, seq, result) {
            Ok(()) => Ok(seq),
            Err(e) => {
                self.lost.push(what.to_string());
                Err(e)
            }
        })
    }

    /// Keeps `verdict` beside point `seq`; one that cannot be written is lost, named `what`.
    pub fn judged(&mut self, seq: u32, verdict: &Verdict, what: &str) -> Result<(), StoreError> {
        let set = self.store.set_verdict(self.run, seq, verdict);
        if set.is_err() {
            self.lost.push(what.to_string());
        }
        set
    }

    /// Takes back the last point handed in (an attempt that is measured again).
    pub fn forget_last(&mut self) -> Result<(), StoreError> {
        let Some(kept) = self.kept.pop() else { return Ok(()) };
        self.next_seq -= 1;
        match kept {
            Some(seq) => self.store.truncate_points(self.run, seq),
            None => {
                self.lost.pop();
                Ok(())
            }
        }
    }

    /// Records the run's end: `status`, the command's own `report`, and the fingerprint again.
    pub fn finish(
        mut self,
        status: RunStatus,
        report: Option<serde_json::Value>,
        environment_after: Option<serde_json::Value>,
    ) -> Finished {
        self.ended = true;
        let end = RunEnd { status, finished_at_unix_s: now_unix_s(), report, environment_after };
        let ended = self.store.finish_run(self.run, &end);
        Finished {
            run: self.run,
            path: self.store.path().to_path_buf(),
            points: self.next_seq,
            lost: std::mem::take(&mut self.lost),
            ended,
        }
    }

    /// The run stopped on an error before or between its points: one that measured nothing is
    /// forgotten, one that did keeps its points as failed. A resumed run is never forgotten,
    /// even with no point kept yet (its samples would go with it): it stays resumable, as
    /// interrupted. Dropping a recorder does this too, silently.
    pub fn abandon(mut self) -> Result<(), StoreError> {
        self.end_unfinished()
    }

    fn end_unfinished(&mut self) -> Result<(), StoreError> {
        self.ended = true;
        if self.next_seq == 0 && !self.resumed {
            return self.store.delete_run(self.run);
        }
        let status = if self.resumed { RunStatus::Interrupted } else { RunStatus::Failed };
        let end = RunEnd { status, finished_at_unix_s: now_unix_s(), report: None, environment_after: None };
        self.store.finish_run(self.run, &end)
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.end_unfinished();
        }
    }
}

/// Samples of one run (a burn-in's drive health) committed from a thread of their own.
pub struct Sampler {
    store: Store,
    run: RunId,
}

impl Sampler {
    /// Commits one `kind` sample taken at `taken_at_unix_s`, at once and on its own.
    pub fn add(
        &mut self,
        kind: &str,
        taken_at_unix_s: i64,
        body: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.store.add_sample(self.run, kind, taken_at_unix_s, body)
    }
}
