//! The coordinator's routes of a fileset run (`iolab fleet files`): prepare it, start a phase
//! at an instant, and wait for the phase's answer, from the session's files slot while the
//! session's thread (`files_session`) does the work.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use tokio::sync::oneshot;

use crate::protocol::{FilesPrepare, FilesPrepared, Start, MAX_START_DELAY_MS};

use super::body::JsonBody;
use super::command::{Command, FilesCommand};
use super::error::Failure;
use super::files_slot::FilesStage;
use super::session::{unix_ns, Stage};
use super::slot::Slot;

/// The longest a result request waits for the phase to end.
const MAX_RESULT_WAIT: Duration = Duration::from_secs(30);

pub async fn prepare(
    State(slot): State<Arc<Slot>>,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<FilesPrepare>,
) -> Result<Json<FilesPrepared>, Failure> {
    let session = slot.get(&id)?;
    if matches!(session.stage(), Stage::Preparing | Stage::Running) {
        return Err(Failure::conflict("a job is being prepared or running in this session; wait for it"));
    }
    match session.files.get() {
        FilesStage::Preparing | FilesStage::Running => {
            return Err(Failure::conflict("a fileset run is being prepared or running; wait for it"))
        }
        _ => session.files.set(FilesStage::Preparing),
    }
    let (reply, answer) = oneshot::channel();
    if let Err(failure) = session.send(Command::Files(FilesCommand::Prepare { request, reply })) {
        session.files.set(FilesStage::None);
        return Err(failure);
    }
    answer
        .await
        .map_err(|_| Failure::internal("the session's thread ended while preparing; see the agent's log"))?
        .map(Json)
}

/// Runs the next phase at `at_unix_ns` (at once if that is past).
pub async fn start(
    State(slot): State<Arc<Slot>>,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<Start>,
) -> Result<StatusCode, Failure> {
    let session = slot.get(&id)?;
    let now = unix_ns(SystemTime::now());
    if request.at_unix_ns > now.saturating_add(MAX_START_DELAY_MS * 1_000_000) {
        return Err(Failure::bad_request(format!(
            "the start instant is {} ms ahead of this agent's clock, more than the {MAX_START_DELAY_MS} ms allowed; check the clocks and start sooner",
            (request.at_unix_ns - now) / 1_000_000
        )));
    }
    session.files.begin_phase()?;
    let at = UNIX_EPOCH + Duration::from_nanos(request.at_unix_ns);
    session
        .send(Command::Files(FilesCommand::Phase { at }))
        .inspect_err(|_| session.files.set(FilesStage::None))?;
    Ok(StatusCode::ACCEPTED)
}

#[derive(Deserialize)]
pub struct Wait {
    #[serde(default)]
    wait_ms: u64,
}

/// The last phase's result once it ended (202 while it runs).
pub async fn result(
    State(slot): State<Arc<Slot>>,
    Path(id): Path<String>,
    query: Result<Query<Wait>, QueryRejection>,
) -> Result<Response, Failure> {
    let Query(Wait { wait_ms }) = query.map_err(|e| {
        Failure::bad_request(format!("{e}; the query takes a whole number (e.g. ?wait_ms=1000)"))
    })?;
    let session = slot.get(&id)?;
    let until = tokio::time::Instant::now() + Duration::from_millis(wait_ms).min(MAX_RESULT_WAIT);
    loop {
        let mut changed = session.log.subscribe();
        match session.files.get() {
            FilesStage::Done(done) => return Ok(Json(done.as_ref()).into_response()),
            FilesStage::Failed(failure) => return Err(failure),
            FilesStage::Running => {}
            FilesStage::None | FilesStage::Preparing | FilesStage::Ready => {
                return Err(Failure::conflict(
                    "no phase has been started; POST files/prepare, then files/start",
                ))
            }
        }
        if session.closing() || tokio::time::timeout_at(until, changed.changed()).await.is_err() {
            return Ok(match session.files.progress() {
                Some(progress) => (StatusCode::ACCEPTED, Json(progress)).into_response(),
                None => Failure::new(StatusCode::ACCEPTED, "still running").into_response(),
            });
        }
    }
}
