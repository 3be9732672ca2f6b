//! The network between agents, measured the way a fleet uses it: one agent pushes zeros over
//! HTTP to another's sink for a while, and the sink says how many bytes arrived how fast.
//! The sink streams and discards (no body limit); the sender runs its blocking client on a
//! blocking thread, off the async runtime.

use std::io::Read;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use tokio_stream::StreamExt;

use crate::protocol::{NetMeasured, NetSend, PROTOCOL};

use super::auth::PROTOCOL_HEADER;
use super::body::JsonBody;
use super::error::Failure;

/// The longest push a coordinator may ask for.
pub const MAX_SEND_MS: u64 = 30_000;

const CHUNK: usize = 1 << 20;

/// How much longer than the longest push the sink reads before giving up.
const SINK_SLACK: Duration = Duration::from_secs(10);

pub async fn sink(body: Body) -> Result<Json<NetMeasured>, Failure> {
    let mut stream = body.into_data_stream();
    let mut bytes = 0u64;
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    // A push lasts at most MAX_SEND_MS: a body still arriving well after that is not one.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(MAX_SEND_MS) + SINK_SLACK;
    while let Some(chunk) = tokio::time::timeout_at(deadline, stream.next()).await.map_err(|_| {
        Failure::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the pushed data kept coming for over {MAX_SEND_MS} ms, the longest push; run netbench again"
            ),
        )
    })? {
        let chunk = chunk.map_err(|e| {
            Failure::bad_request(format!("the pushed data broke off: {e}; run netbench again"))
        })?;
        if chunk.is_empty() {
            continue;
        }
        first.get_or_insert_with(Instant::now);
        last = Instant::now();
        bytes += chunk.len() as u64;
    }
    let seconds = first.map_or(0.0, |first| (last - first).as_secs_f64());
    Ok(Json(measured(bytes, seconds)))
}

pub async fn send(
    headers: HeaderMap,
    JsonBody(request): JsonBody<NetSend>,
) -> Result<Json<NetMeasured>, Failure> {
    check_peer(&request.to)?;
    if request.duration_ms == 0 || request.duration_ms > MAX_SEND_MS {
        return Err(Failure::bad_request(format!(
            "duration_ms {} is outside 1..={MAX_SEND_MS}; ask for a shorter push",
            request.duration_ms
        )));
    }
    // The token was checked on the way in; the peer takes the same one.
    let authorization = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let duration = Duration::from_millis(request.duration_ms);
    let to = request.to.clone();
    let outcome = tokio::task::spawn_blocking(move || push(&to, &authorization, duration))
        .await
        .map_err(|e| Failure::internal(format!("the netbench sender failed: {e}")))?;
    outcome.map(Json)
}

/// "host:port" and nothing else: no scheme, path, user or query can ride along.
fn check_peer(to: &str) -> Result<(), Failure> {
    let refuse = || {
        Failure::bad_request(format!(
            "netbench peer '{to}' is not host:port (e.g. 10.0.0.2:7410); give the other agent's --listen address"
        ))
    };
    let (host, port) = to.rsplit_once(':').ok_or_else(refuse)?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let host_ok = !host.is_empty()
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'_'));
    match (host_ok, port.parse::<u16>()) {
        (true, Ok(port)) if port > 0 => Ok(()),
        _ => Err(refuse()),
    }
}

/// Pushes zeros to the agent at `to` for `duration`. The token goes only to a peer that first
/// shows, without it, that it is an iolab agent: never to whatever service a coordinator names.
fn push(to: &str, authorization: &str, duration: Duration) -> Result<NetMeasured, Failure> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(duration + Duration::from_secs(10)))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    let not_an_agent = || {
        Failure::new(
            StatusCode::BAD_GATEWAY,
            format!(
                "{to} does not answer as an iolab agent ({PROTOCOL}); give another agent's --listen address"
            ),
        )
    };
    let probe = agent.post(format!("http://{to}/v1/hello")).send_empty().map_err(|_| not_an_agent())?;
    let speaks = probe.headers().get(PROTOCOL_HEADER).and_then(|v| v.to_str().ok());
    if probe.status() != StatusCode::UNAUTHORIZED || speaks != Some(PROTOCOL) {
        return Err(not_an_agent());
    }
    let zeros = Zeros { until: Instant::now() + duration, left_in_chunk: 0 };
    let unreachable = |e: ureq::Error| {
        Failure::new(
            StatusCode::BAD_GATEWAY,
            format!("cannot push to the agent at {to}: {e}; check it runs `iolab agent` there with the same token and that its --listen address is reachable from here"),
        )
    };
    let mut response = agent
        .post(format!("http://{to}/v1/netbench/sink"))
        .header("Authorization", authorization)
        .send(ureq::SendBody::from_owned_reader(zeros))
        .map_err(unreachable)?;
    let status = response.status();
    if !status.is_success() {
        // The peer's own words stay with the peer.
        return Err(Failure::new(
            StatusCode::BAD_GATEWAY,
            format!("the agent at {to} refused the push ({status})"),
        ));
    }
    response.body_mut().read_json::<NetMeasured>().map_err(unreachable)
}

fn measured(bytes: u64, seconds: f64) -> NetMeasured {
    let mb_s = if seconds > 0.0 { bytes as f64 / seconds / 1e6 } else { 0.0 };
    NetMeasured { bytes, seconds, mb_s }
}

/// Zero bytes in whole chunks until the instant passes, then the end of the body.
struct Zeros {
    until: Instant,
    left_in_chunk: usize,
}

impl Read for Zeros {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left_in_chunk == 0 {
            if Instant::now() >= self.until {
                return Ok(0);
            }
            self.left_in_chunk = CHUNK;
        }
        let n = buf.len().min(self.left_in_chunk);
        buf[..n].fill(0);
        self.left_in_chunk -= n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::check_peer;

    #[test]
    fn only_host_port_is_a_peer() {
        for good in ["10.0.0.2:7410", "host-a.example:80", "[::1]:7410", "localhost:1"] {
            assert!(check_peer(good).is_ok(), "{good}");
        }
        for bad in ["10.0.0.2", "http://a:1", "a:1/x", "user@a:1", "a:0", "a:99999", ":80", "a b:1"] {
            assert!(check_peer(bad).is_err(), "{bad}");
        }
    }
}
