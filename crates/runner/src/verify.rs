//! `--verify` in a job: what each block of a target should hold (its record, `blockcheck`),
//! kept in memory while the job runs and in a state file between commands (docs/verify.md).
//!
//! The state file (`state_file.rs`) holds one little-endian u64 per 4 KiB block of the target,
//! from offset 0 (2 MiB per GiB), behind a header with the block count and a checksum. It is
//! read when the job starts and written when it ends; a job killed on the way leaves the
//! previous one.
//!
//! Lanes share a target's records. A write is recorded when it completes (the record is read
//! from the stamp in the buffer the write sent), last completion wins; while two writes of a
//! block are in flight together the device may apply them in either order, so the block's
//! record becomes `AMBIGUOUS` (either's stamp passes) until a write completes alone. A read is
//! checked when it completes, against the record when it was queued or the one now (a write
//! that completed in between may or may not be in what was read); a block with a write in
//! flight when the read was queued or completes is skipped and counted as such.

use std::path::{Path, PathBuf};
use std::sync::atomic::{
    AtomicBool, AtomicU64, AtomicU8,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};
use std::sync::{Arc, Mutex};

use iolab_engine::block::BLOCK;
use iolab_engine::blockcheck::{self, Found, Verdict, AMBIGUOUS};
use iolab_spec::{GroupSpec, JobSpec};
use iolab_stats::verify::{BadBlock, BlockStamp, VerifySummary};
use thiserror::Error;

mod state_file;

pub use state_file::{parse_state, read_state, state_bytes, write_state, StateError};

/// Why `--verify` cannot keep a target's records: where to keep them, or the state file, its
/// marker or the target's flush failed. Each says what it could not do and why.
#[derive(Debug, Error)]
pub enum VerifyError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error(
        "no place for the verify state: give --verify-state PATH (neither HOME nor XDG_DATA_HOME is set)"
    )]
    NoStatePlace,
    #[error("cannot stat {}: {source}", path.display())]
    Stat { path: PathBuf, source: std::io::Error },
    #[error("cannot write the verify marker {}: {source}", path.display())]
    MarkWriting { path: PathBuf, source: std::io::Error },
    #[error("cannot remove the verify marker {}: {source}", path.display())]
    Unmark { path: PathBuf, source: std::io::Error },
    #[error(
        "cannot flush {label} before saving its verify state (the records are kept as unsaved): {source}"
    )]
    Flush { label: String, source: std::io::Error },
}

/// In a block's in-flight byte: writes of it in flight together ever since the count was last 0.
const CONTESTED: u8 = 0x80;
/// The most writes of one block the in-flight byte counts.
const SATURATED: u8 = 0x7f;
/// In a read's queued records: the block had a write in flight, so the read is not checked.
const IN_FLIGHT: u64 = AMBIGUOUS - 1;

/// One target's records, shared by the lanes that use it.
pub struct TargetState {
    pub label: String,
    pub state_path: PathBuf,
    /// The target, flushed before the records of a job that wrote it are saved.
    target: PathBuf,
    /// A job writing this target runs (`mark_writing`).
    writes: AtomicBool,
    records: Vec<AtomicU64>,
    /// Writes in flight per block (low 7 bits) and `CONTESTED`.
    writing: Vec<AtomicU8>,
}

impl TargetState {
    /// Loads the records of `state_path` (none yet: all unwritten), sized for `bytes` of `target`,
    /// a target of `target_size` bytes.
    pub fn load(
        target: &Path,
        state_path: PathBuf,
        bytes: u64,
        target_size: u64,
    ) -> Result<TargetState, VerifyError> {
        let mut records = read_records(&state_path, bytes.max(target_size))?;
        let blocks = bytes.div_ceil(BLOCK as u64) as usize;
        if records.len() < blocks {
            records.resize(blocks, blockcheck::UNWRITTEN);
        }
        let writing = (0..records.len()).map(|_| AtomicU8::new(0)).collect();
        Ok(TargetState {
            label: target.display().to_string(),
            state_path,
            target: target.to_path_buf(),
            writes: AtomicBool::new(false),
            records: records.into_iter().map(AtomicU64::new).collect(),
            writing,
        })
    }

    /// The record of the block at `offset`.
    pub fn record(&self, offset: u64) -> u64 {
        self.records.get((offset / BLOCK as u64) as usize).map_or(blockcheck::UNWRITTEN, |r| r.load(Acquire))
    }

    /// Says in a marker beside the state file that a job writing this target runs: until
    /// `save`, the file does not hold its writes.
    pub fn mark_writing(&self) -> Result<(), VerifyError> {
        let marker = unsaved_marker(&self.state_path);
        self.writes.store(true, Relaxed);
        let fail = |source| VerifyError::MarkWriting { path: marker.clone(), source };
        // The first job to verify a target makes the state's directory.
        if let Some(dir) = marker.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        std::fs::write(&marker, std::process::id().to_string()).map_err(fail)
    }

    /// Writes the records back to the state file (through a temporary file and a rename), and
    /// removes the marker of unsaved writes. A job that wrote first flushes the target (fsync:
    /// the device's volatile cache too), so that what the records say was written survives a
    /// power cut: a block lost after that is the device's fault, not one it may commit.
    pub fn save(&self) -> Result<(), VerifyError> {
        if self.writes.load(Relaxed) {
            std::fs::File::open(&self.target)
                .and_then(|f| f.sync_all())
                .map_err(|source| VerifyError::Flush { label: self.label.clone(), source })?;
        }
        let records: Vec<u64> = self.records.iter().map(|r| r.load(Relaxed)).collect();
        write_state(&self.state_path, &records)?;
        let marker = unsaved_marker(&self.state_path);
        match std::fs::remove_file(&marker) {
            Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                Err(VerifyError::Unmark { path: marker, source })
            }
            _ => Ok(()),
        }
    }

    fn queue_write(&self, block: usize) {
        let Some(writing) = self.writing.get(block) else { return };
        // 127 writes of one block in flight at once saturate the count: the block then stays
        // "in flight" (never checked) and ambiguous for the rest of the job, never wrong.
        let _ = writing.fetch_update(AcqRel, Acquire, |w| match w & !CONTESTED {
            0 => Some(1),
            SATURATED => Some(w | CONTESTED),
            _ => Some((w + 1) | CONTESTED),
        });
    }

    fn complete_write(&self, block: usize, record: u64) {
        let Some(writing) = self.writing.get(block) else { return };
        // The record first, then the count: a reader that sees no write in flight sees this
        // write's record.
        let alone = writing.load(Acquire) == 1;
        self.records[block].store(if alone { record } else { AMBIGUOUS }, Release);
        let _ = writing.fetch_update(AcqRel, Acquire, |w| match w & !CONTESTED {
            0 | SATURATED => None,
            1 => Some(0),
            _ => Some(w - 1),
        });
    }

    fn write_in_flight(&self, block: usize) -> bool {
        self.writing.get(block).is_some_and(|w| w.load(Acquire) & !CONTESTED != 0)
    }

    /// Whether a group of this job writes the target (`mark_writing`, before any lane runs).
    /// When none does, no record changes during the job and no write is ever in flight, so a
    /// read needs neither looked up when it is queued: each look-up is a cache miss in
    /// records of 2 MiB per GiB, and the two of them cost a verified read more than its hash.
    fn written_in_this_job(&self) -> bool {
        self.writes.load(Relaxed)
    }
}

/// Beside a state file while a job that writes its target runs: left behind, the job ended
/// before it saved its records (killed, a power cut).
fn unsaved_marker(state: &Path) -> PathBuf {
    PathBuf::from(format!("{}.unsaved", state.display()))
}

/// The records to check against: the state file's, and where a job that wrote the target ended
/// without saving (its marker is there), every recorded block ambiguous, since that job's writes
/// are in the blocks but not in the records: an intact block of the right offset passes, a lost,
/// misdirected, torn or corrupted one is still found, and stale data can no longer be told.
/// The state may describe at most `covering` bytes of the target.
pub fn read_records(path: &Path, covering: u64) -> Result<Vec<u64>, StateError> {
    let mut records = read_state(path, covering)?;
    if unsaved_marker(path).exists() {
        for record in records.iter_mut().filter(|r| **r != blockcheck::UNWRITTEN) {
            *record = AMBIGUOUS;
        }
    }
    Ok(records)
}

/// The default state file of `target`: under the data directory ($XDG_DATA_HOME/iolab/verify,
/// else ~/.local/share/iolab/verify), named after the target's path and identity (a device's
/// number, a file's device and inode), so another file at the same path is another target.
pub fn default_state_path(target: &Path) -> Result<PathBuf, VerifyError> {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let from_env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let data = from_env("XDG_DATA_HOME")
        .or_else(|| from_env("HOME").map(|home| home.join(".local/share")))
        .ok_or(VerifyError::NoStatePlace)?;
    let path = std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
    let meta = std::fs::metadata(&path).map_err(|source| VerifyError::Stat { path: path.clone(), source })?;
    let identity = if meta.file_type().is_file() { (meta.dev(), meta.ino()) } else { (meta.rdev(), 0) };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (path.as_os_str(), identity).hash(&mut hasher);
    let name: String = path
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
        .collect();
    Ok(data.join("iolab").join("verify").join(format!(
        "{}-{:016x}.state",
        name.trim_matches('_'),
        hasher.finish()
    )))
}

/// The state file `--verify` uses for `target`: `given`, else the default.
pub fn state_path(given: Option<&Path>, target: &Path) -> Result<PathBuf, VerifyError> {
    match given {
        Some(path) => Ok(path.to_path_buf()),
        None => default_state_path(target),
    }
}

/// The state file of target `index` of the `count` targets of `group`: its `--verify-state`
/// (one file per target, numbered `.0`, `.1`, ..., when there are several), else the default.
pub fn group_state_path(
    group: &GroupSpec,
    index: usize,
    count: usize,
    target: &Path,
) -> Result<PathBuf, VerifyError> {
    let given = group.verify.state.as_ref().map(|p| match count {
        1 => p.clone(),
        _ => PathBuf::from(format!("{}.{index}", p.display())),
    });
    state_path(given.as_deref(), target)
}

/// The state files a plan's `--verify` groups read and write, and their unsaved markers: what a
/// results file must never be. A default state of a target that does not exist yet (it has no
/// identity to be named after) cannot be named, and is not listed.
pub fn plan_state_files(jobs: &[JobSpec]) -> Vec<PathBuf> {
    let groups = jobs.iter().flat_map(|job| &job.groups).filter(|group| group.verify.verify);
    let mut states = Vec::new();
    for group in groups {
        match group.target.paths.as_slice() {
            // The scratch file: only a given state can be named before it is made.
            [] => states.extend(group.verify.state.clone()),
            paths => states.extend(
                paths.iter().enumerate().filter_map(|(i, p)| group_state_path(group, i, paths.len(), p).ok()),
            ),
        }
    }
    let markers: Vec<PathBuf> = states.iter().map(|s| unsaved_marker(s)).collect();
    states.extend(markers);
    states
}

/// A lane's share of verification: the group's targets' records, what the lane found, and
/// room for the records a read saw when it was queued (no allocation per I/O).
pub struct LaneVerify {
    targets: Vec<Arc<TargetState>>,
    summary: VerifySummary,
    /// Per slot, the records of the blocks of its read when it was queued.
    queued_records: Vec<Vec<u64>>,
    /// Where the lane's summary goes when it finishes.
    sink: Arc<Mutex<VerifySummary>>,
}

impl LaneVerify {
    pub fn new(
        targets: Vec<Arc<TargetState>>,
        slots: u32,
        max_len: u32,
        sink: Arc<Mutex<VerifySummary>>,
    ) -> Self {
        let per_slot = (max_len as usize).div_ceil(BLOCK);
        LaneVerify {
            targets,
            summary: VerifySummary::default(),
            queued_records: vec![vec![0; per_slot]; slots as usize],
            sink,
        }
    }

    /// A request was queued.
    #[inline]
    pub fn queued(&mut self, slot: u32, target: u16, write: bool, offset: u64, len: u32) {
        let state = &self.targets[target as usize];
        let first = (offset / BLOCK as u64) as usize;
        let blocks = len as usize / BLOCK;
        if write {
            (first..first + blocks).for_each(|b| state.queue_write(b));
        } else if state.written_in_this_job() {
            // (Otherwise nothing can change under the read: it is judged against the record
            // at completion alone.)
            let Some(records) = self.queued_records.get_mut(slot as usize) else { return };
            for (i, record) in records.iter_mut().take(blocks).enumerate() {
                *record = if state.write_in_flight(first + i) {
                    IN_FLIGHT
                } else {
                    state.record((first + i) as u64 * BLOCK as u64)
                };
            }
        }
    }

    /// A request completed in full; `data` is what it sent or brought (`None`: the engine
    /// moves no bytes, and a write is recorded as ambiguous).
    #[inline]
    pub fn completed(
        &mut self,
        slot: u32,
        target: u16,
        write: bool,
        offset: u64,
        len: u32,
        data: Option<&[u8]>,
    ) {
        let state = &self.targets[target as usize];
        let first = (offset / BLOCK as u64) as usize;
        let Some(data) = data else {
            if write {
                (first..first + len as usize / BLOCK).for_each(|b| state.complete_write(b, AMBIGUOUS));
            }
            return;
        };
        for (i, block) in data.chunks_exact(BLOCK).enumerate() {
            let index = first + i;
            if write {
                let record = Found::read(block).map_or(AMBIGUOUS, |f| f.record());
                state.complete_write(index, record);
                self.summary.blocks_recorded += 1;
                continue;
            }
            let now = state.record(index as u64 * BLOCK as u64);
            let then = if state.written_in_this_job() {
                self.queued_records.get(slot as usize).and_then(|r| r.get(i)).copied().unwrap_or_default()
            } else {
                now
            };
            if then == IN_FLIGHT || (state.written_in_this_job() && state.write_in_flight(index)) {
                self.summary.skipped_in_flight += 1;
                continue;
            }
            let at = index as u64 * BLOCK as u64;
            match blockcheck::check(block, at, now) {
                Verdict::Good => self.summary.blocks_checked += 1,
                Verdict::NeverWritten => self.summary.never_written += 1,
                // The record changed while the read was out: the read raced a write of the
                // block and may have brought the older content (or an intermediate write's),
                // so it is good against the older record or not judged.
                Verdict::Bad(..) if then != now => {
                    if blockcheck::check(block, at, then) == Verdict::Good {
                        self.summary.blocks_checked += 1
                    } else {
                        self.summary.skipped_in_flight += 1
                    }
                }
                Verdict::Bad(kind, found) => {
                    self.summary.blocks_checked += 1;
                    self.summary.add_bad(bad_block(&state.label, at, kind, now, found));
                }
            }
        }
    }

    /// Bad blocks found so far.
    pub fn data_errors(&self) -> u64 {
        self.summary.data_errors()
    }

    /// Hands the lane's summary over.
    pub fn finish(&mut self) {
        let summary = std::mem::take(&mut self.summary);
        crate::poison::lock(&self.sink).merge(&summary);
    }
}

/// A bad block as the summary lists it.
pub fn bad_block(
    target: &str,
    offset: u64,
    kind: blockcheck::Kind,
    expected: u64,
    found: Option<Found>,
) -> BadBlock {
    BadBlock {
        target: target.to_string(),
        offset,
        kind,
        expected_record: if expected == AMBIGUOUS { 0 } else { expected },
        found: found.map(|f| BlockStamp { origin: f.origin, seq: f.seq, offset: f.offset }),
    }
}

/// A job's verification: each group's targets' records (one per state file, shared by the
/// groups that use it) and the summary the lanes hand in.
pub struct JobVerify {
    groups: Vec<Option<Vec<Arc<TargetState>>>>,
    states: Vec<Arc<TargetState>>,
    summary: Arc<Mutex<VerifySummary>>,
}

impl JobVerify {
    /// Loads the records of every target of a group with `--verify`.
    pub fn open(
        job: &iolab_spec::JobSpec,
        targets: &[Vec<crate::PreparedTarget>],
    ) -> Result<JobVerify, crate::RunError> {
        let mut states: Vec<Arc<TargetState>> = Vec::new();
        let mut groups = Vec::new();
        for (group, group_targets) in job.groups.iter().zip(targets) {
            if !group.verify.verify {
                groups.push(None);
                continue;
            }
            let mut mine = Vec::new();
            for (i, target) in group_targets.iter().enumerate() {
                let path = group_state_path(group, i, group_targets.len(), &target.path)?;
                let state = match states.iter().find(|s| s.state_path == path) {
                    Some(state) => state.clone(),
                    None => {
                        let bytes = target.region_start + target.region_size;
                        let size =
                            iolab_engine::target::inspect(&target.path, &target.file).map_or(0, |i| i.size);
                        let state = Arc::new(TargetState::load(&target.path, path, bytes, size)?);
                        states.push(state.clone());
                        state
                    }
                };
                if group.access.writes() {
                    state.mark_writing()?;
                }
                mine.push(state);
            }
            groups.push(Some(mine));
        }
        Ok(JobVerify { groups, states, summary: Arc::default() })
    }

    /// The share of a lane of group `group` with `slots` requests of at most `max_len` bytes.
    pub fn lane(&self, group: usize, slots: u32, max_len: u32) -> Option<LaneVerify> {
        let targets = self.groups.get(group)?.as_ref()?;
        Some(LaneVerify::new(targets.clone(), slots, max_len, self.summary.clone()))
    }

    /// Writes the state files back; the job's summary, if it verified anything.
    pub fn finish(self) -> Result<Option<VerifySummary>, VerifyError> {
        if self.states.is_empty() {
            return Ok(None);
        }
        for state in &self.states {
            state.save()?;
        }
        let mut summary = std::mem::take(&mut *crate::poison::lock(&self.summary));
        summary.state_files = self.states.iter().map(|s| s.state_path.display().to_string()).collect();
        Ok(Some(summary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_that_wrote_and_never_saved_leaves_its_blocks_ambiguous_until_the_next_save() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.state");
        write_state(&path, &[0, 5, 6]).expect("write");
        let state = TargetState::load(dir.path(), path.clone(), 3 * BLOCK as u64, 0).expect("load");
        state.mark_writing().expect("marker");
        drop(state); // killed: no save
        assert_eq!(
            read_records(&path, 1 << 20).expect("read"),
            vec![blockcheck::UNWRITTEN, AMBIGUOUS, AMBIGUOUS]
        );
        let state = TargetState::load(dir.path(), path.clone(), 3 * BLOCK as u64, 0).expect("load");
        state.mark_writing().expect("marker");
        state.queue_write(2);
        state.complete_write(2, 9);
        state.save().expect("save");
        assert_eq!(read_records(&path, 1 << 20).expect("read"), vec![blockcheck::UNWRITTEN, AMBIGUOUS, 9]);
    }

    #[test]
    fn the_first_job_to_verify_a_target_makes_the_state_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("never").join("made").join("t.state");
        let state = TargetState::load(dir.path(), path.clone(), BLOCK as u64, 0).expect("load");
        state.mark_writing().expect("the marker's directory is made");
        state.save().expect("save");
        assert_eq!(read_records(&path, 1 << 20).expect("read"), vec![blockcheck::UNWRITTEN]);
    }

    #[test]
    fn a_target_that_cannot_be_flushed_keeps_the_job_s_writes_unsaved() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.state");
        let gone = dir.path().join("gone");
        let state = TargetState::load(&gone, path.clone(), BLOCK as u64, 0).expect("load");
        state.mark_writing().expect("marker");
        state.queue_write(0);
        state.complete_write(0, 9);
        assert!(state.save().unwrap_err().to_string().contains("cannot flush"));
        assert!(unsaved_marker(&path).exists(), "the next job takes the records as ambiguous");
    }

    #[test]
    fn overlapping_writes_leave_the_block_ambiguous_until_one_completes_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = TargetState::load(dir.path(), dir.path().join("s"), 4 * BLOCK as u64, 0).expect("load");
        state.queue_write(1);
        state.complete_write(1, 7);
        assert_eq!(state.record(BLOCK as u64), 7);
        state.queue_write(1);
        state.queue_write(1);
        assert!(state.write_in_flight(1));
        state.complete_write(1, 8);
        state.complete_write(1, 9);
        assert_eq!(state.record(BLOCK as u64), AMBIGUOUS, "either write may be on the media");
        assert!(!state.write_in_flight(1));
        state.queue_write(1);
        state.complete_write(1, 10);
        assert_eq!(state.record(BLOCK as u64), 10);
    }
}
