//! The agent under a flood, over real sockets on loopback: slow connections that never finish
//! their request (slow loris), a body that never arrives, a huge coordinator name. The attack
//! comes from 127.0.0.2 (all of 127/8 is loopback) and the coordinator from 127.0.0.1, as two
//! hosts would.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use iolab_fleet::agent::{self, AgentConfig, Limits, RunningAgent};
use iolab_fleet::protocol::{Hello, LiveEvent, PROTOCOL};
use serde_json::{json, Value};

const TOKEN: &str = "test-token-0123456789";

fn start(limits: Limits) -> RunningAgent {
    let mut config = AgentConfig::new("127.0.0.1:0".parse().expect("address"), TOKEN);
    config.limits = limits;
    agent::spawn(config).expect("the agent starts")
}

fn http() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into()
}

/// A legitimate request: the version handshake, with the token.
fn hello(http: &ureq::Agent, addr: SocketAddr) -> Result<Hello, String> {
    let mut response = http
        .post(format!("http://{addr}/v1/hello"))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .header("Content-Type", "application/json")
        .send(json!({ "protocol": PROTOCOL }).to_string().as_bytes())
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().map_err(|e| e.to_string())?;
    if status != 200 {
        return Err(format!("{status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))
}

/// `count` connections from `source` to `addr`, each having sent half a request head.
fn half_sent(addr: SocketAddr, source: &str, count: usize) -> Vec<std::net::TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let mut held = Vec::new();
        for _ in 0..count {
            let socket = tokio::net::TcpSocket::new_v4().expect("socket");
            if socket.bind(format!("{source}:0").parse().expect("source")).is_err() {
                break;
            }
            let Ok(stream) = socket.connect(addr).await else { continue };
            let Ok(mut stream) = stream.into_std() else { continue };
            let _ = stream.set_nonblocking(false);
            let _ = stream.write_all(b"POST /v1/hello HTTP/1.1\r\nHost: agent\r\nAuthoriz");
            held.push(stream);
        }
        held
    })
}

/// Whether the peer closed `stream` (end of file or reset) within `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_nonblocking(false).expect("blocking");
    stream.set_read_timeout(Some(within)).expect("timeout");
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

/// The defect: with a 1,024-descriptor limit, 1,100 slow connections blocked every legitimate
/// request. A few hundred half-sent heads from one address now hold at most that address's
/// share of connections, and the coordinator's request goes through.
#[test]
fn slow_loris_connections_do_not_block_a_legitimate_request() {
    let running = start(Limits::default());
    let attack = half_sent(running.addr(), "127.0.0.2", 400);
    if attack.is_empty() {
        eprintln!("skipped: cannot connect from 127.0.0.2 (loopback holds only 127.0.0.1 here)");
        return;
    }
    let http = http();
    let hello = hello(&http, running.addr()).expect("the coordinator gets through during the attack");
    assert_eq!(hello.protocol, PROTOCOL);
    // Past its share, the attacker's connections were answered 503 and closed, not kept.
    let sent = attack.len();
    let closed = attack
        .into_iter()
        .filter(|s| closed_within(&mut s.try_clone().expect("clone"), Duration::from_millis(200)))
        .count();
    let share = Limits::default().max_connections_per_peer;
    assert!(closed >= sent - share, "{closed} of {sent} slow connections closed; at most {share} may stay");
}

/// Spread over many addresses, slow connections fill every connection the agent takes; the
/// oldest of those that never sent the token make room, and the coordinator gets through.
#[test]
fn slow_connections_from_many_addresses_do_not_shut_out_the_coordinator() {
    let limits = Limits { max_connections: 64, max_connections_per_peer: 32, ..Limits::default() };
    let running = start(limits);
    let attack: Vec<TcpStream> =
        (2..12).flat_map(|host| half_sent(running.addr(), &format!("127.0.0.{host}"), 30)).collect();
    if attack.len() < 100 {
        eprintln!("skipped: cannot connect from 127.0.0.2-11 (loopback holds only 127.0.0.1 here)");
        return;
    }
    let http = http();
    for round in 0..3 {
        let hello = hello(&http, running.addr()).unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(hello.protocol, PROTOCOL);
    }
    drop(attack);
}

/// A connection that never finishes its request head is closed after the header timeout.
#[test]
fn a_stalled_request_head_is_closed() {
    let running = start(Limits { header_read: Duration::from_secs(1), ..Limits::default() });
    let mut stream = TcpStream::connect(running.addr()).expect("connects");
    stream.write_all(b"GET /v1/hello HTTP/1.1\r\nHost: agent\r\n").expect("half a head");
    assert!(closed_within(&mut stream, Duration::from_secs(30)), "a stalled head was kept open");
    let mut idle = TcpStream::connect(running.addr()).expect("connects");
    assert!(closed_within(&mut idle, Duration::from_secs(30)), "a silent connection was kept open");
}

/// A body that stops arriving is answered 408, and the connection closed.
#[test]
fn a_stalled_request_body_is_answered_408() {
    let running = start(Limits { body_read: Duration::from_secs(1), ..Limits::default() });
    let mut stream = TcpStream::connect(running.addr()).expect("connects");
    let head = format!(
        "POST /v1/sessions HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"lease_ms\""
    );
    stream.write_all(head.as_bytes()).expect("head and a bit of body");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

/// The defect: a 300 KB coordinator name was accepted, echoed in answers and logged whole.
#[test]
fn a_300_kb_coordinator_name_is_refused() {
    let running = start(Limits::default());
    let http = http();
    let name = "n".repeat(300 * 1024);
    let mut response = http
        .post(format!("http://{}/v1/sessions", running.addr()))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .header("Content-Type", "application/json")
        .send(json!({ "lease_ms": 10_000, "coordinator": name }).to_string().as_bytes())
        .expect("answered");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().expect("body");
    assert_eq!(status, 400, "{}", &text[..text.len().min(300)]);
    assert!(text.len() < 1024, "the answer echoes {} bytes", text.len());
    let error =
        serde_json::from_str::<Value>(&text).expect("json")["error"].as_str().unwrap_or("").to_string();
    assert!(error.contains("256 bytes") && error.contains('…'), "{error}");
    assert_eq!(hello(&http, running.addr()).expect("hello").session, None, "no session was opened");
}

/// Only reading a request is timed: a live stream that lasts longer than both timeouts is
/// streamed to its end.
#[test]
fn a_live_stream_outlasts_the_request_timeouts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("t.bin");
    std::fs::write(&target, vec![0x5a; 1 << 20]).expect("target");
    let running = start(Limits {
        header_read: Duration::from_secs(1),
        body_read: Duration::from_secs(1),
        ..Limits::default()
    });
    let http = http();
    let call = |path: &str, body: Value| -> Value {
        let mut response = http
            .post(format!("http://{}{path}", running.addr()))
            .header("Authorization", format!("Bearer {TOKEN}"))
            .header("Content-Type", "application/json")
            .send(body.to_string().as_bytes())
            .expect("answered");
        let text = response.body_mut().read_to_string().unwrap_or_default();
        serde_json::from_str(&text).unwrap_or(Value::Null)
    };
    let session = call("/v1/sessions", json!({ "lease_ms": 10_000, "coordinator": "test" }));
    let id = session["session"].as_str().expect("a session").to_string();
    let job = format!(
        "engine = \"null\"\nbuffered = true\nruntime = \"3s\"\nramp = \"0s\"\ninterval = \"200ms\"\ntarget = \"{}\"\n",
        target.display()
    );
    call(&format!("/v1/sessions/{id}/prepare"), json!({ "job": job }));
    let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("now").as_nanos()
        as u64
        + 200_000_000;
    call(&format!("/v1/sessions/{id}/start"), json!({ "at_unix_ns": at }));
    let started = Instant::now();
    let response = http
        .get(format!("http://{}/v1/sessions/{id}/live?from=0", running.addr()))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .call()
        .expect("live stream");
    use std::io::BufRead;
    let last = std::io::BufReader::new(response.into_body().into_reader())
        .lines()
        .map_while(Result::ok)
        .filter(|l| !l.is_empty())
        .last()
        .expect("events");
    assert_eq!(serde_json::from_str::<LiveEvent>(&last).expect("an event"), LiveEvent::Finished);
    assert!(started.elapsed() > Duration::from_secs(1), "the stream ended before the timeouts could matter");
}

/// One answer read off `stream`: its head and its body (by its Content-Length), or what came
/// before the connection closed.
fn read_answer(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => got.push(byte[0]),
            _ => return String::from_utf8_lossy(&got).into_owned(),
        }
    }
    let head = String::from_utf8_lossy(&got).into_owned();
    let length = head
        .lines()
        .find_map(|line| {
            line.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string())
        })
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    let _ = stream.read_exact(&mut body);
    head + &String::from_utf8_lossy(&body)
}

/// The defect: a request refused for want of the token whose body came a moment after its head
/// had its connection closed after the 401, which did not say so, and a client that kept the
/// connection for its next request saw that one fail ("Peer disconnected": the agent test of
/// every route, now and then). The body is read and thrown away, and the connection answers
/// the next request.
#[test]
fn a_refused_request_leaves_its_connection_for_the_next_one() {
    let running = start(Limits::default());
    let mut stream = TcpStream::connect(running.addr()).expect("connects");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let body = json!({ "lease_ms": 1000, "coordinator": "x" }).to_string();
    let head = format!(
        "POST /v1/sessions HTTP/1.1\r\nHost: agent\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("head");
    // The body in a write of its own, after the agent has had the head.
    std::thread::sleep(Duration::from_millis(50));
    stream.write_all(body.as_bytes()).expect("body");
    let first = read_answer(&mut stream);
    assert!(first.starts_with("HTTP/1.1 401"), "{first}");
    assert!(!first.to_ascii_lowercase().contains("connection: close"), "{first}");
    stream.write_all(b"GET /v1/nowhere HTTP/1.1\r\nHost: agent\r\n\r\n").expect("a second request");
    let second = read_answer(&mut stream);
    assert!(second.starts_with("HTTP/1.1 401"), "the connection did not answer a second request: {second:?}");
}
