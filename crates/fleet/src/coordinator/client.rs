//! One agent, as the coordinator talks to it: the API of `protocol` as blocking calls (the
//! coordinator runs a thread per host; it has nothing to gain from an async runtime).

use std::io::{BufRead, BufReader};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::protocol::{
    AgentResult, ApiError, Hello, HelloRequest, LiveEvent, NetMeasured, NetSend, OpenSession, Prepare,
    Prepared, ReplayLoaded, ReplayWire, SessionOpened, Start, PROTOCOL,
};

/// Requests that answer at once; a result is waited for in slices of this.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Closing waits this long, then leaves the session to its lease.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(3);
/// Laying out a target or scratch file (prepare) may take this long.
const PREPARE_TIMEOUT: Duration = Duration::from_secs(3600);
/// A replay's requests: up to `replay_wire::MAX_REPLAY_BYTES`, on a slow link.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(600);
/// The most a result may weigh (histograms of every interval of a long job).
const MAX_RESULT_BYTES: u64 = 512 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach it: {0}")]
    Unreachable(String),
    #[error("it refused ({status}): {message}")]
    Refused { status: u16, message: String },
    #[error("it answered something this coordinator cannot read: {0}")]
    Garbled(String),
}

impl ClientError {
    /// A refusal the user can act on (bad job, target not allowed), not a failure.
    pub fn is_refusal(&self) -> bool {
        matches!(self, ClientError::Refused { status, .. } if (400..500).contains(status))
    }
}

/// What `hello` learnt: the agent and its clock.
#[derive(Debug, Clone)]
pub struct Greeting {
    pub hello: Hello,
    /// The agent's clock minus ours, from the handshake with the shortest round trip.
    pub clock_offset_ns: i64,
    pub round_trip: Duration,
}

pub struct AgentClient {
    /// "host:port", as the user gave it.
    pub address: String,
    base: String,
    authorization: String,
    http: ureq::Agent,
}

impl AgentClient {
    pub fn new(address: &str, token: &str) -> Self {
        let http: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(CALL_TIMEOUT))
            .timeout_connect(Some(CONNECT_TIMEOUT))
            // An agent closes a connection idle for its header-read timeout (10 s): reuse
            // only younger ones, so no request goes out on a connection being closed.
            .max_idle_age(Duration::from_secs(5))
            .http_status_as_error(false)
            .build()
            .into();
        AgentClient {
            address: address.to_string(),
            base: format!("http://{address}/v1"),
            authorization: format!("Bearer {token}"),
            http,
        }
    }

    /// The version handshake, three times: the clock offset comes from the fastest exchange,
    /// whose midpoint is closest to when the agent read its clock.
    pub fn hello(&self) -> Result<Greeting, ClientError> {
        let mut best: Option<Greeting> = None;
        for _ in 0..3 {
            let sent = unix_ns();
            let hello: Hello = self.post("/hello", &HelloRequest { protocol: PROTOCOL.into() })?;
            let received = unix_ns();
            if hello.protocol != PROTOCOL {
                return Err(ClientError::Garbled(format!(
                    "it speaks {}, this coordinator {PROTOCOL}; run the same iolab version on both",
                    hello.protocol
                )));
            }
            let round_trip = Duration::from_nanos(received.saturating_sub(sent));
            let midpoint = sent / 2 + received / 2;
            let clock_offset_ns = hello.unix_ns as i64 - midpoint as i64;
            if best.as_ref().is_none_or(|b| round_trip < b.round_trip) {
                best = Some(Greeting { hello, clock_offset_ns, round_trip });
            }
        }
        Ok(best.expect("three handshakes"))
    }

    pub fn open_session(&self, lease: Duration, coordinator: &str) -> Result<SessionOpened, ClientError> {
        let open = OpenSession { lease_ms: lease.as_millis() as u64, coordinator: coordinator.into() };
        self.post("/sessions", &open)
    }

    /// Has the agent check the job and open (perhaps lay out) its targets: laying out a large
    /// file on a slow disk takes minutes, so this waits up to PREPARE_TIMEOUT.
    /// Prepares `job_text`; with `replay`, uploads its requests first and names them.
    pub fn prepare(
        &self,
        session: &str,
        job_text: &str,
        replay: Option<&(ReplayWire, Arc<[u8]>)>,
    ) -> Result<Prepared, ClientError> {
        if let Some((_, requests)) = replay {
            self.upload_replay(session, requests)?;
        }
        let prepare = Prepare { job: job_text.into(), replay: replay.map(|(wire, _)| wire.clone()) };
        read(self.send(&format!("/sessions/{session}/prepare"), &prepare, PREPARE_TIMEOUT)?)
    }

    /// A replay's requests (`replay_wire`'s bytes) for the session's next prepare.
    fn upload_replay(&self, session: &str, requests: &[u8]) -> Result<ReplayLoaded, ClientError> {
        let response = self
            .http
            .put(format!("{}/sessions/{session}/replay", self.base))
            .header("Authorization", &self.authorization)
            .header("Content-Type", "application/octet-stream")
            .config()
            .timeout_global(Some(UPLOAD_TIMEOUT))
            .build()
            .send(requests)
            .map_err(unreachable)?;
        read(check(response)?)
    }

    pub fn start(&self, session: &str, at_unix_ns: u64) -> Result<(), ClientError> {
        self.post_ignoring(&format!("/sessions/{session}/start"), &Start { at_unix_ns })
    }

    /// Renews the lease of `session`, giving up after `within`.
    pub fn heartbeat(&self, session: &str, within: Duration) -> Result<(), ClientError> {
        self.send(&format!("/sessions/{session}/heartbeat"), &serde_json::json!({}), within).map(|_| ())
    }

    pub fn abort(&self, session: &str) -> Result<(), ClientError> {
        self.post_ignoring(&format!("/sessions/{session}/abort"), &serde_json::json!({}))
    }

    /// Closes `session`; an agent that does not answer soon is left to its lease.
    pub fn close(&self, session: &str) -> Result<(), ClientError> {
        let response = self
            .http
            .delete(format!("{}/sessions/{session}", self.base))
            .header("Authorization", &self.authorization)
            .config()
            .timeout_global(Some(CLOSE_TIMEOUT))
            .build()
            .call()
            .map_err(unreachable)?;
        check(response).map(|_| ())
    }

    /// The job's result once it is done; `None` while it still runs after `wait`.
    pub fn result(&self, session: &str, wait: Duration) -> Result<Option<AgentResult>, ClientError> {
        let path = format!("/sessions/{session}/result?wait_ms={}", wait.as_millis());
        let response = self.get(&path, Some(wait + CALL_TIMEOUT))?;
        if response.status().as_u16() == 202 {
            return Ok(None);
        }
        let mut response = check(response)?;
        let result = response
            .body_mut()
            .with_config()
            .limit(MAX_RESULT_BYTES)
            .read_json()
            .map_err(|e| ClientError::Garbled(e.to_string()))?;
        Ok(Some(result))
    }

    /// The live stream from its `from`-th event on: an iterator that ends with the stream (after
    /// Finished or Failed) and yields an error if the connection breaks first.
    pub fn live(&self, session: &str, from: usize) -> Result<LiveStream, ClientError> {
        let response = check(self.get(&format!("/sessions/{session}/live?from={from}"), None)?)?;
        Ok(LiveStream { lines: BufReader::new(response.into_body().into_reader()) })
    }

    /// Has this agent push bytes to `to` (another agent) for `duration`.
    pub fn netbench(&self, to: &str, duration: Duration) -> Result<NetMeasured, ClientError> {
        let send = NetSend { to: to.into(), duration_ms: duration.as_millis() as u64 };
        read(self.send("/netbench/send", &send, duration + CALL_TIMEOUT)?)
    }

    fn post<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T, ClientError> {
        read(self.send(path, body, CALL_TIMEOUT)?)
    }

    fn post_ignoring<B: Serialize>(&self, path: &str, body: &B) -> Result<(), ClientError> {
        self.send(path, body, CALL_TIMEOUT).map(|_| ())
    }

    /// GETs `path`, waiting at most `within` (`None`: as long as it streams).
    pub(super) fn get(
        &self,
        path: &str,
        within: Option<Duration>,
    ) -> Result<ureq::http::Response<ureq::Body>, ClientError> {
        self.http
            .get(format!("{}{path}", self.base))
            .header("Authorization", &self.authorization)
            .config()
            .timeout_global(within)
            .build()
            .call()
            .map_err(unreachable)
    }

    /// POSTs `body` to `path`, waiting at most `within`; the response if it is a success.
    pub(super) fn send<B: Serialize>(
        &self,
        path: &str,
        body: &B,
        within: Duration,
    ) -> Result<ureq::http::Response<ureq::Body>, ClientError> {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .header("Authorization", &self.authorization)
            .config()
            .timeout_global(Some(within))
            .build()
            .send_json(body)
            .map_err(unreachable)?;
        check(response)
    }
}

pub struct LiveStream {
    lines: BufReader<ureq::BodyReader<'static>>,
}

/// Each item is an event, or `None` for the agent's keep-alive (an empty line).
impl Iterator for LiveStream {
    type Item = Result<Option<LiveEvent>, ClientError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut line = String::new();
        match self.lines.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) if line.trim().is_empty() => Some(Ok(None)),
            Ok(_) => {
                Some(serde_json::from_str(&line).map(Some).map_err(|e| ClientError::Garbled(e.to_string())))
            }
            Err(e) => Some(Err(ClientError::Unreachable(format!("the live stream broke: {e}")))),
        }
    }
}

fn unreachable(error: ureq::Error) -> ClientError {
    ClientError::Unreachable(error.to_string())
}

/// The response if it is a success; its `ApiError` (or status) if not.
pub(super) fn check(
    mut response: ureq::http::Response<ureq::Body>,
) -> Result<ureq::http::Response<ureq::Body>, ClientError> {
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(response);
    }
    let text = response.body_mut().with_config().limit(64 << 10).read_to_string().unwrap_or_default();
    let message = serde_json::from_str::<ApiError>(&text).map(|e| e.error).unwrap_or(text);
    let message = match (status, message.trim()) {
        (401, _) => "the token is wrong or missing: give the agent's token with --token-file".to_string(),
        (_, "") => format!("HTTP {status}"),
        (_, text) => text.to_string(),
    };
    Err(ClientError::Refused { status, message })
}

pub(super) fn read<T: DeserializeOwned>(
    mut response: ureq::http::Response<ureq::Body>,
) -> Result<T, ClientError> {
    response.body_mut().read_json().map_err(|e| ClientError::Garbled(e.to_string()))
}

pub fn unix_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}
