//! A fileset run for a coordinator (`iolab fleet files`): the tree's directory is checked
//! against `--allow-write` and opened beneath the held allowed directory without following any
//! link (`BeneathDir`), and the run works only through that descriptor (`iolab_files::Steps`):
//! the marker, every phase and the clean-up. Each phase runs on the session's thread at the
//! instant the coordinator gives, so the hosts start each phase together. The tree is removed
//! once the run is over (the last phase's answer, or a failed or interrupted one's, says what
//! was removed and left), else when the session closes or a new run is prepared, whatever
//! happened: an agent keeps no tree, as it keeps no scratch file.

use std::os::fd::AsFd;
use std::path::{Path as FsPath, PathBuf};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::http::StatusCode;
use iolab_engine::target::BeneathDir;
use iolab_files::{FilesError, PhaseProgress, Steps};
use iolab_stats::encoded::EncodedOpStats;

use crate::protocol::{FilesPhaseDone, FilesPrepare, FilesPrepared, LiveEvent, TreeRemoved};

use super::command::FilesCommand;
use super::error::Failure;
use super::files_slot::FilesStage;
use super::log::say;
use super::open_target::Allowed;
use super::refusal_log::{capped, MAX_LOGGED_FIELD};
use super::session::{unix_ns, Session};
use super::targets::{check_shape, resolve, AllowList};

/// How often a wait for the start instant looks at the stop flag.
const START_POLL: Duration = Duration::from_millis(10);

/// The run, owned by the session's thread; its tree is removed once it is over, or when it
/// drops.
pub struct FilesRun {
    steps: Steps,
    dir: BeneathDir,
    shown: PathBuf,
    progress: Arc<PhaseProgress>,
    /// The tree was removed (`remove_tree`).
    removed: bool,
}

impl FilesRun {
    /// Removes the tree (and the directory, when the agent made it and nothing else is left),
    /// once; what was removed and left, also said in the agent's log.
    fn remove_tree(&mut self) -> TreeRemoved {
        self.removed = true;
        let shown = self.shown.display().to_string();
        let shown = capped(&shown, MAX_LOGGED_FIELD);
        match self.steps.clean() {
            Ok(cleaned) => {
                if cleaned.left.is_empty() {
                    if let Err(e) = self.dir.remove_created() {
                        say!("iolab agent: the file tree's directory {shown} stays: {e}");
                    }
                } else {
                    say!(
                        "iolab agent: {} entries not made by iolab were left in {shown} with the marker",
                        cleaned.left.len()
                    );
                }
                TreeRemoved {
                    files: cleaned.files,
                    dirs: cleaned.dirs,
                    left: cleaned.left.len() as u64,
                    first_left: cleaned
                        .left
                        .first()
                        .map(|p| capped(&p.display().to_string(), MAX_LOGGED_FIELD).into_owned()),
                    error: None,
                }
            }
            Err(e) => {
                let error = capped(&e.to_string(), MAX_LOGGED_FIELD).into_owned();
                say!(
                    "iolab agent: the file tree in {shown} could not be removed ({error}): `iolab files --clean DIR` removes it"
                );
                TreeRemoved { files: 0, dirs: 0, left: 0, first_left: None, error: Some(error) }
            }
        }
    }
}

impl Drop for FilesRun {
    fn drop(&mut self) {
        if !self.removed {
            self.remove_tree();
        }
    }
}

/// Runs one command on the session's thread.
pub fn handle(session: &Session, allow: &AllowList, run: &mut Option<FilesRun>, command: FilesCommand) {
    match command {
        FilesCommand::Prepare { request, reply } => {
            // The last run's tree goes first.
            *run = None;
            session.rearm();
            match open_run(&request, allow) {
                Ok((ready, prepared)) => {
                    session.files.watch(Some(Arc::clone(&ready.progress)));
                    *run = Some(ready);
                    session.files.set(FilesStage::Ready);
                    let _ = reply.send(Ok(prepared));
                }
                Err(failure) => {
                    session.files.set(FilesStage::None);
                    session.files.watch(None);
                    let _ = reply.send(Err(failure));
                }
            }
        }
        FilesCommand::Phase { at } => {
            let stage = match run.as_mut() {
                None => FilesStage::Failed(Failure::conflict(
                    "no fileset run is prepared; POST files/prepare first",
                )),
                Some(run) => {
                    while SystemTime::now() < at && !session.interrupt.load(SeqCst) {
                        let left = at.duration_since(SystemTime::now()).unwrap_or_default();
                        std::thread::sleep(left.min(START_POLL));
                    }
                    let index = run.steps.ran();
                    let started_unix_ns = unix_ns(SystemTime::now());
                    match run.steps.run_next(&session.interrupt, Some(&run.progress)) {
                        Some(result) => {
                            // The run is over: its tree goes now, and the answer says how.
                            let tree = run.steps.next_phase().is_none().then(|| run.remove_tree());
                            let histograms = result
                                .histograms
                                .iter()
                                .map(|(k, s)| (*k, EncodedOpStats::encode(s)))
                                .collect();
                            FilesStage::Done(Arc::new(FilesPhaseDone {
                                index,
                                result,
                                histograms,
                                notes: run.steps.notes.clone(),
                                peak_rss_bytes: iolab_stats::cpu::peak_rss_bytes().unwrap_or(0),
                                started_unix_ns,
                                tree,
                            }))
                        }
                        None => FilesStage::Failed(Failure::conflict(
                            "no phase is left to run (all ran, or one stopped the run)",
                        )),
                    }
                }
            };
            session.files.set(stage);
            session.log.push(LiveEvent::Note { message: "a fileset phase ended".into() });
        }
    }
}

/// Checks the job and the directory, and makes the directory ready beneath `--allow-write`.
fn open_run(request: &FilesPrepare, allow: &AllowList) -> Result<(FilesRun, FilesPrepared), Failure> {
    let options = iolab_files::job::parse(&request.job)
        .map_err(|e| Failure::bad_request(format!("the fileset job: {e}")))?;
    let options = iolab_files::FilesOptions { dir: None, keep: None, json: None, quiet: None, ..options };
    let plan = options.plan().map_err(|e| Failure::bad_request(e.to_string()))?;
    let given = FsPath::new(&request.dir);
    check_shape(given)?;
    let canonical = resolve(given)?;
    let refused = || {
        Failure::new(
            StatusCode::FORBIDDEN,
            format!(
                "this agent may not write to {}: its operator must add --allow-write with a directory above it to `iolab agent`; nothing was touched",
                given.display()
            ),
        )
    };
    let (allowed, relative) = allow.place_of(&canonical).ok_or_else(refused)?;
    let Allowed::Directory(allowed) = allowed else { return Err(refused()) };
    let dir = BeneathDir::open(allowed.as_fd(), relative).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP | libc::EXDEV | libc::ENOTDIR | libc::EAGAIN) => Failure::new(
            StatusCode::FORBIDDEN,
            format!(
                "{} is reached through a symbolic link under --allow-write, is not a directory, or was renamed while the agent opened it; the agent follows no link there: name the directory itself; nothing was written",
                canonical.display()
            ),
        ),
        _ => Failure::bad_request(format!("cannot make or open {}: {e}", canonical.display())),
    })?;
    let top =
        dir.dir.try_clone().map_err(|e| Failure::internal(format!("cannot duplicate a descriptor: {e}")))?;
    let steps = match Steps::prepare(plan, top, canonical.clone(), dir.created) {
        Ok(steps) => steps,
        Err(e) => {
            let _ = dir.remove_created();
            return Err(match e {
                FilesError::Refused(message) => Failure::new(StatusCode::FORBIDDEN, message),
                FilesError::Plan(message) => Failure::bad_request(message),
                e @ FilesError::Io { .. } => Failure::internal(e.to_string()),
            });
        }
    };
    let prepared = FilesPrepared {
        dir: canonical.display().to_string(),
        planned: steps.planned().to_vec(),
        notes: steps.notes.clone(),
    };
    let progress = Arc::new(PhaseProgress::new(steps.plan().threads));
    Ok((FilesRun { steps, dir, shown: canonical, progress, removed: false }, prepared))
}
