//! The token check, in front of every route (the fallback included) and before any body is
//! parsed: without the right token nothing is parsed and nothing runs (a refused request's body
//! is read only to be thrown away, `body::drain`). Also the one log line per refused request.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::body::drain;
use super::error::{Failure, Refusal};
use super::refusal_log::{capped, RefusalLog, MAX_LOGGED_FIELD};
use super::serve::ConnectionProof;
use crate::protocol::PROTOCOL;

/// The token the agent expects.
pub struct Token(String);

impl Token {
    pub fn new(token: String) -> Self {
        Token(token)
    }

    /// Whether `offered` is the token, in time that does not depend on where they differ.
    fn accepts(&self, offered: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), offered.as_bytes());
        let mut differ = a.len() ^ b.len();
        for (i, &x) in a.iter().enumerate() {
            differ |= usize::from(x ^ b.get(i).copied().unwrap_or(!x));
        }
        differ == 0
    }
}

pub async fn require_token(State(token): State<Arc<Token>>, request: Request, next: Next) -> Response {
    let offered = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let refusal = match offered {
        Some(offered) if token.accepts(offered.trim()) => {
            if let Some(proof) = request.extensions().get::<ConnectionProof>() {
                proof.proven();
            }
            return next.run(request).await;
        }
        Some(_) => "wrong token; give the coordinator the agent's token file (--token-file)",
        None => "no token; send `Authorization: Bearer <token>` with the agent's token",
    };
    let whole = drain(request.into_body()).await;
    let mut response = Failure::new(StatusCode::UNAUTHORIZED, refusal).into_response();
    // Says "an iolab agent is here" without the token, so a peer can be recognised before the
    // token is sent to it (netbench).
    response.headers_mut().insert(PROTOCOL_HEADER, header::HeaderValue::from_static(PROTOCOL));
    if !whole {
        response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    }
    response
}

/// The header of a 401 answer that names the protocol the agent speaks.
pub const PROTOCOL_HEADER: &str = "iolab-protocol";

/// Logs refused or failed requests, one line each: who, what, and why (never a body), every
/// field a peer chose capped; at most a few lines a window, then a count (`RefusalLog`).
pub async fn log_refusals(State(log): State<Arc<RefusalLog>>, request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| "?".to_string(), |c| c.0.to_string());
    let line = format!("{} {}", request.method(), capped(request.uri().path(), MAX_LOGGED_FIELD));
    let response = next.run(request).await;
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        let why = response.extensions().get::<Refusal>().map_or("", |r| r.0.as_str());
        log.refused(|| format!("{line} from {peer}: {} {}", status.as_u16(), capped(why, MAX_LOGGED_FIELD)));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::Token;

    #[test]
    fn only_the_token_is_accepted() {
        let token = Token::new("s3cret".into());
        assert!(token.accepts("s3cret"));
        for wrong in ["", "s3cre", "s3crett", "S3cret", "s3creu"] {
            assert!(!token.accepts(wrong), "{wrong}");
        }
    }
}
