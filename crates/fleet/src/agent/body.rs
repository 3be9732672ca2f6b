//! Reading a JSON request body: at most `MAX_BODY_BYTES` (413 beyond), and a message that says
//! what was wrong with it (400). An oversized body is drained (up to a bound) before the
//! answer, so that a client still writing it reads the 413 instead of a reset connection. The
//! whole read is timed (`serve::Limits::body_read`, 408 beyond): a peer that sends a head and
//! then trickles its body does not hold a connection for longer.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use tokio_stream::StreamExt;

use crate::protocol::MAX_BODY_BYTES;
use crate::replay_wire::MAX_REPLAY_BYTES;

use super::error::Failure;
use super::serve::{BodyReadTimeout, Limits};

/// How much of an oversized body is read and thrown away before answering.
const DRAIN_BYTES: usize = 64 * MAX_BODY_BYTES;

/// A JSON body of type `T`, within the size limit.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = Failure;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Failure> {
        let limit =
            request.extensions().get::<BodyReadTimeout>().map_or(Limits::default().body_read, |t| t.0);
        let too_large = || {
            format!(
                "the request body is over the {MAX_BODY_BYTES} bytes an agent reads; a job file is a few KiB, so check what is being sent"
            )
        };
        let read = read_limited(request.into_body(), MAX_BODY_BYTES, too_large);
        let bytes = tokio::time::timeout(limit, read).await.map_err(|_| {
            Failure::new(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body took longer than {} s to arrive; send it in one go (a job file is a few KiB)",
                    limit.as_secs()
                ),
            )
        })??;
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            Failure::bad_request(format!(
                "the request body is not the JSON this route takes ({e}); see docs/fleet.md for the {} API",
                crate::protocol::PROTOCOL
            ))
        })
    }
}

/// How long a refused request's body may take to arrive (`drain`): a client sends it right
/// after the head.
const DRAIN_WITHIN: Duration = Duration::from_secs(1);

/// Reads and throws away a refused request's body (nothing of it is parsed), at most
/// `MAX_BODY_BYTES` within `DRAIN_WITHIN`, so that the connection can carry the client's next
/// request: answered with its body still on the way, the connection was closed after the
/// answer, and a client that had kept it for its next request saw that one fail ("peer
/// disconnected"). Whether the body was read to its end: if not, the answer must say it closes
/// the connection.
pub async fn drain(body: Body) -> bool {
    let read = async {
        let mut stream = body.into_data_stream();
        let mut seen = 0usize;
        while let Some(chunk) = stream.next().await {
            let Ok(chunk) = chunk else { return false };
            seen = seen.saturating_add(chunk.len());
            if seen > MAX_BODY_BYTES {
                return false;
            }
        }
        true
    };
    tokio::time::timeout(DRAIN_WITHIN, read).await.unwrap_or(false)
}

/// A replay's requests (`PUT .../replay`): bytes, up to `MAX_REPLAY_BYTES`, within
/// `REPLAY_READ` (they may be hundreds of MiB on a slow link).
pub struct ReplayBody(pub Vec<u8>);

/// How long a replay's requests may take to arrive.
const REPLAY_READ: Duration = Duration::from_secs(600);

impl<S: Send + Sync> FromRequest<S> for ReplayBody {
    type Rejection = Failure;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Failure> {
        let too_large = || {
            format!(
                "the replay's requests are over the {MAX_REPLAY_BYTES} bytes an agent takes; replay a shorter part of the trace"
            )
        };
        let read = read_limited(request.into_body(), MAX_REPLAY_BYTES, too_large);
        let bytes = tokio::time::timeout(REPLAY_READ, read).await.map_err(|_| {
            Failure::new(
                StatusCode::REQUEST_TIMEOUT,
                format!("the replay's requests took longer than {} s to arrive", REPLAY_READ.as_secs()),
            )
        })??;
        Ok(ReplayBody(bytes))
    }
}

/// The body, up to `limit` bytes; past it (after draining up to `DRAIN_BYTES` more), 413 with
/// `too_large`'s message.
async fn read_limited(
    body: Body,
    limit: usize,
    too_large: impl FnOnce() -> String,
) -> Result<Vec<u8>, Failure> {
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    let mut seen = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            Failure::bad_request(format!("the request body could not be read: {e}; send it again"))
        })?;
        seen = seen.saturating_add(chunk.len());
        if seen > limit.saturating_add(DRAIN_BYTES) {
            break;
        }
        if seen <= limit {
            bytes.extend_from_slice(&chunk);
        }
    }
    if seen > limit {
        return Err(Failure::new(StatusCode::PAYLOAD_TOO_LARGE, too_large()));
    }
    Ok(bytes)
}
