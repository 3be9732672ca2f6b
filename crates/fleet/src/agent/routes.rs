//! The HTTP surface of protocol v1: one handler per route, each a thin call into the slot or
//! session, plus JSON answers for unknown paths and methods.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode, Uri};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use serde::Deserialize;

use iolab_spec::ReplayIo;

use crate::protocol::{
    Hello, HelloRequest, OpenSession, Prepare, Prepared, ReplayLoaded, SessionOpened, Start, PROTOCOL,
};
use crate::replay_wire;

use super::auth::{log_refusals, require_token, Token};
use super::body::{JsonBody, ReplayBody};
use super::error::Failure;
use super::files_routes;
use super::live;
use super::netbench;
use super::refusal_log::{capped, RefusalLog, MAX_LOGGED_FIELD};
use super::session::{unix_ns, Stage};
use super::slot::Slot;

/// The longest a result request waits for the job to end.
const MAX_RESULT_WAIT: Duration = Duration::from_secs(30);

pub fn router(slot: Arc<Slot>, token: Arc<Token>, log: Arc<RefusalLog>) -> Router {
    Router::new()
        .route("/v1/hello", post(hello))
        .route("/v1/sessions", post(open))
        .route("/v1/sessions/{id}", delete(close))
        .route("/v1/sessions/{id}/replay", put(upload_replay))
        .route("/v1/sessions/{id}/prepare", post(prepare))
        .route("/v1/sessions/{id}/start", post(start))
        .route("/v1/sessions/{id}/live", get(live_events))
        .route("/v1/sessions/{id}/result", get(result))
        .route("/v1/sessions/{id}/heartbeat", post(heartbeat))
        .route("/v1/sessions/{id}/abort", post(abort))
        .route("/v1/sessions/{id}/files/prepare", post(files_routes::prepare))
        .route("/v1/sessions/{id}/files/start", post(files_routes::start))
        .route("/v1/sessions/{id}/files/result", get(files_routes::result))
        .route("/v1/netbench/send", post(netbench::send))
        .route("/v1/netbench/sink", post(netbench::sink))
        .fallback(unknown_path)
        .method_not_allowed_fallback(wrong_method)
        .with_state(slot)
        // Outermost last: the log sees every answer, the token is checked before anything else.
        .layer(middleware::from_fn_with_state(token, require_token))
        .layer(middleware::from_fn_with_state(log, log_refusals))
}

async fn hello(
    State(slot): State<Arc<Slot>>,
    JsonBody(request): JsonBody<HelloRequest>,
) -> Result<Json<Hello>, Failure> {
    if request.protocol != PROTOCOL {
        return Err(Failure::bad_request(format!(
            "this agent speaks {PROTOCOL}, the coordinator {}; run the same iolab version on both",
            capped(&request.protocol, 64)
        )));
    }
    let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default();
    Ok(Json(Hello {
        protocol: PROTOCOL.to_string(),
        iolab_version: env!("CARGO_PKG_VERSION").to_string(),
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        unix_ns: unix_ns(SystemTime::now()),
        allow_write: slot.allow().given(),
        session: slot.holder(),
    }))
}

async fn open(
    State(slot): State<Arc<Slot>>,
    JsonBody(request): JsonBody<OpenSession>,
) -> Result<Json<SessionOpened>, Failure> {
    slot.open(&request).map(Json)
}

async fn prepare(
    State(slot): State<Arc<Slot>>,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<Prepare>,
) -> Result<Json<Prepared>, Failure> {
    let session = slot.get(&id)?;
    session.prepare(request.job, request.replay).await.map(Json)
}

/// A replay's requests, kept in the session for the prepare that names them.
async fn upload_replay(
    State(slot): State<Arc<Slot>>,
    Path(id): Path<String>,
    ReplayBody(bytes): ReplayBody,
) -> Result<Json<ReplayLoaded>, Failure> {
    let session = slot.get(&id)?;
    let decoded = tokio::task::spawn_blocking(move || replay_wire::decode(&bytes))
        .await
        .map_err(|_| Failure::internal("decoding the replay's requests failed (a bug in iolab)"))?;
    let ios: Arc<[ReplayIo]> = Arc::from(decoded.map_err(|e| Failure::bad_request(e.to_string()))?);
    let requests = ios.len() as u64;
    session.load_replay(ios);
    Ok(Json(ReplayLoaded { requests }))
}

async fn start(
    State(slot): State<Arc<Slot>>,
    Path(id): Path<String>,
    JsonBody(request): JsonBody<Start>,
) -> Result<StatusCode, Failure> {
    slot.get(&id)?.start(request.at_unix_ns)?;
    Ok(StatusCode::ACCEPTED)
}

#[derive(Deserialize)]
struct LiveQuery {
    #[serde(default)]
    from: usize,
}

async fn live_events(
    State(slot): State<Arc<Slot>>,
    Path(id): Path<String>,
    query: Result<Query<LiveQuery>, QueryRejection>,
) -> Result<Response, Failure> {
    let Query(LiveQuery { from }) = query.map_err(bad_query)?;
    let session = slot.get(&id)?;
    let body = live::ndjson(Arc::clone(&session.log), from);
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response())
}

#[derive(Deserialize)]
struct Wait {
    #[serde(default)]
    wait_ms: u64,
}

async fn result(
    State(slot): State<Arc<Slot>>,
    Path(id): Path<String>,
    query: Result<Query<Wait>, QueryRejection>,
) -> Result<Response, Failure> {
    let Query(Wait { wait_ms }) = query.map_err(bad_query)?;
    let session = slot.get(&id)?;
    let until = tokio::time::Instant::now() + Duration::from_millis(wait_ms).min(MAX_RESULT_WAIT);
    loop {
        let mut changed = session.log.subscribe();
        match session.stage() {
            Stage::Done(result) => return Ok(Json(result.as_ref()).into_response()),
            Stage::Failed(failure) => return Err(failure),
            Stage::Idle | Stage::Preparing | Stage::Prepared => {
                return Err(Failure::conflict(
                    "no job has been started in this session; POST prepare, then start",
                ))
            }
            Stage::Running => {}
        }
        if session.closing() || tokio::time::timeout_at(until, changed.changed()).await.is_err() {
            return Ok(Failure::new(StatusCode::ACCEPTED, "still running").into_response());
        }
    }
}

async fn heartbeat(
    State(slot): State<Arc<Slot>>,
    Path(id): Path<String>,
) -> Result<Json<SessionOpened>, Failure> {
    let session = slot.get(&id)?;
    Ok(Json(SessionOpened {
        session: session.id.clone(),
        lease_ms: u64::try_from(session.lease.as_millis()).unwrap_or(u64::MAX),
    }))
}

async fn abort(State(slot): State<Arc<Slot>>, Path(id): Path<String>) -> Result<StatusCode, Failure> {
    slot.get(&id)?.abort();
    Ok(StatusCode::NO_CONTENT)
}

async fn close(State(slot): State<Arc<Slot>>, Path(id): Path<String>) -> Result<StatusCode, Failure> {
    let session = slot.get(&id)?;
    slot.close(session, "closed by its coordinator").await;
    Ok(StatusCode::NO_CONTENT)
}

fn bad_query(rejection: QueryRejection) -> Failure {
    Failure::bad_request(format!("{rejection}; the query takes whole numbers (e.g. ?from=0, ?wait_ms=1000)"))
}

async fn unknown_path(uri: Uri) -> Failure {
    let path = capped(uri.path(), MAX_LOGGED_FIELD);
    let version = path.strip_prefix("/v").and_then(|rest| rest.split('/').next());
    match version {
        Some(v) if v != "1" && !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => Failure::not_found(format!(
            "this agent speaks {PROTOCOL} (paths under /v1/), not /v{}/; run the same iolab version on coordinator and agents",
            capped(v, 20)
        )),
        _ => Failure::not_found(format!("no route {path} in {PROTOCOL}; see docs/fleet.md for the paths")),
    }
}

async fn wrong_method(uri: Uri) -> Failure {
    Failure::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{} does not take this method in {PROTOCOL}; see docs/fleet.md",
            capped(uri.path(), MAX_LOGGED_FIELD)
        ),
    )
}
