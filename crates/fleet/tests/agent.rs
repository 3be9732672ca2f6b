//! The agent over real HTTP, in process on 127.0.0.1:0: the token on every route, hostile
//! requests, what may be written, one session at a time, a full run streamed and handed over,
//! abort, and the lease that stops a job whose coordinator went silent.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use iolab_fleet::agent::{self, AgentConfig, RunningAgent};
use iolab_fleet::protocol::{
    AgentResult, FilesPhaseDone, FilesProgress, Hello, LiveEvent, Prepared, SessionOpened, PROTOCOL,
};
use serde_json::{json, Value};

const TOKEN: &str = "test-token-0123456789";

struct Client {
    base: String,
    http: ureq::Agent,
    _agent: RunningAgent,
}

/// An answer: status and body text.
struct Answer {
    status: u16,
    text: String,
}

impl Answer {
    fn json<T: serde::de::DeserializeOwned>(&self) -> T {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }
}

fn start_agent(allow_write: Vec<PathBuf>) -> Client {
    let mut config = AgentConfig::new("127.0.0.1:0".parse().expect("address"), TOKEN);
    config.allow_write = allow_write;
    let running = agent::spawn(config).expect("the agent starts");
    let http: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(40)))
        .build()
        .into();
    Client { base: format!("http://{}", running.addr()), http, _agent: running }
}

impl Client {
    fn request(&self, method: &str, path: &str, token: Option<&str>, body: Option<&[u8]>) -> Answer {
        let url = format!("{}{path}", self.base);
        let auth = token.map(|t| format!("Bearer {t}"));
        let outcome = match (method, body) {
            ("GET", _) => {
                let mut r = self.http.get(&url);
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()
            }
            ("DELETE", _) => {
                let mut r = self.http.delete(&url);
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()
            }
            (_, body) => {
                let mut r = self.http.post(&url).header("Content-Type", "application/json");
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.send(body.unwrap_or(b"{}"))
            }
        };
        let mut response = outcome.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        Answer { status, text }
    }

    fn post(&self, path: &str, body: &Value) -> Answer {
        self.request("POST", path, Some(TOKEN), Some(body.to_string().as_bytes()))
    }

    fn get(&self, path: &str) -> Answer {
        self.request("GET", path, Some(TOKEN), None)
    }

    fn hello(&self) -> Hello {
        let answer = self.post("/v1/hello", &json!({ "protocol": PROTOCOL }));
        assert_eq!(answer.status, 200, "{}", answer.text);
        answer.json()
    }

    fn open(&self, lease_ms: u64) -> String {
        let answer = self.post("/v1/sessions", &json!({ "lease_ms": lease_ms, "coordinator": "test" }));
        assert_eq!(answer.status, 200, "{}", answer.text);
        answer.json::<SessionOpened>().session
    }

    fn prepare(&self, session: &str, job: &str) -> Answer {
        self.post(&format!("/v1/sessions/{session}/prepare"), &json!({ "job": job }))
    }

    fn start_in(&self, session: &str, delay: Duration) -> u64 {
        let at = unix_ns() + delay.as_nanos() as u64;
        let answer = self.post(&format!("/v1/sessions/{session}/start"), &json!({ "at_unix_ns": at }));
        assert_eq!(answer.status, 202, "{}", answer.text);
        at
    }

    fn result(&self, session: &str, wait_ms: u64) -> Answer {
        self.get(&format!("/v1/sessions/{session}/result?wait_ms={wait_ms}"))
    }
}

fn unix_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_nanos() as u64
}

/// A file of `size` bytes of data (not sparse).
fn data_file(dir: &Path, name: &str, size: usize) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, vec![0x5a; size]).expect("writes the test file");
    path
}

fn null_job(target: &Path, runtime: &str) -> String {
    format!(
        "engine = \"null\"\nbuffered = true\nruntime = \"{runtime}\"\nramp = \"0s\"\ninterval = \"200ms\"\ntarget = \"{}\"\n",
        target.display()
    )
}

/// Waits (bounded) until `check` holds.
fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    check()
}

#[test]
fn every_route_wants_the_token_and_nothing_runs_without_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = data_file(dir.path(), "t.bin", 1 << 20);
    let client = start_agent(vec![dir.path().to_path_buf()]);
    let session = client.open(10_000);
    let job = json!({ "job": format!("engine = \"null\"\nrw = \"randwrite\"\nbuffered = true\ntarget = \"{}\"", target.display()) }).to_string();
    let start = json!({ "at_unix_ns": unix_ns() }).to_string();
    let routes: Vec<(&str, String, String)> = vec![
        ("POST", "/v1/hello".into(), json!({ "protocol": PROTOCOL }).to_string()),
        ("POST", "/v1/sessions".into(), json!({ "lease_ms": 1000, "coordinator": "x" }).to_string()),
        ("POST", format!("/v1/sessions/{session}/prepare"), job),
        ("POST", format!("/v1/sessions/{session}/start"), start),
        ("GET", format!("/v1/sessions/{session}/live?from=0"), String::new()),
        ("GET", format!("/v1/sessions/{session}/result?wait_ms=0"), String::new()),
        ("POST", format!("/v1/sessions/{session}/heartbeat"), "{}".into()),
        ("POST", format!("/v1/sessions/{session}/abort"), "{}".into()),
        ("DELETE", format!("/v1/sessions/{session}"), String::new()),
        ("POST", "/v1/netbench/send".into(), json!({ "to": "127.0.0.1:1", "duration_ms": 100 }).to_string()),
        ("POST", "/v1/netbench/sink".into(), "zeros".into()),
        ("GET", "/v1/nowhere".into(), String::new()),
    ];
    for (method, path, body) in &routes {
        for token in [None, Some("wrong"), Some("test-token-012345678"), Some("")] {
            let answer = client.request(method, path, token, Some(body.as_bytes()));
            assert_eq!(answer.status, 401, "{method} {path} with {token:?}: {}", answer.text);
            assert!(answer.text.contains("token"), "{}", answer.text);
        }
    }
    // Nothing ran: no job started, the file is as it was, the session is still the test's.
    let answer = client.result(&session, 0);
    assert_eq!(answer.status, 409, "{}", answer.text);
    assert!(std::fs::read(&target).expect("reads").iter().all(|&b| b == 0x5a));
    assert_eq!(client.hello().session.as_deref(), Some("test"));
}

#[test]
fn version_handshake() {
    let client = start_agent(Vec::new());
    let hello = client.hello();
    assert_eq!(hello.protocol, PROTOCOL);
    assert!(hello.unix_ns > 0 && hello.cpus > 0);
    assert_eq!(hello.session, None);

    let answer = client.post("/v1/hello", &json!({ "protocol": "iolab.fleet/9" }));
    assert_eq!(answer.status, 400);
    assert!(answer.text.contains(PROTOCOL) && answer.text.contains("iolab.fleet/9"), "{}", answer.text);

    let answer = client.post("/v2/hello", &json!({ "protocol": "iolab.fleet/2" }));
    assert_eq!(answer.status, 404);
    assert!(answer.text.contains(PROTOCOL), "{}", answer.text);
}

#[test]
fn hostile_requests_get_a_clear_4xx_and_the_agent_survives() {
    let dir = tempfile::tempdir().expect("tempdir");
    let allowed = tempfile::tempdir().expect("tempdir");
    let client = start_agent(vec![allowed.path().to_path_buf()]);

    let huge = vec![b' '; 2 << 20];
    let answer = client.request("POST", "/v1/hello", Some(TOKEN), Some(&huge));
    assert_eq!(answer.status, 413, "{}", answer.text);
    client.hello();

    let answer = client.request("POST", "/v1/hello", Some(TOKEN), Some(b"{\"protocol\": "));
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert!(answer.json::<Value>()["error"].as_str().is_some_and(|e| e.contains("JSON")), "{}", answer.text);

    let session = client.open(10_000);
    let answer = client.prepare(&session, "engine = \"null\"\nqd = [[[\n");
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert!(answer.text.contains("line 2"), "{}", answer.text);

    for target in ["/tmp/../etc/passwd", "data.bin"] {
        let answer = client.prepare(&session, &format!("engine = \"null\"\ntarget = \"{target}\""));
        assert_eq!(answer.status, 400, "{target}: {}", answer.text);
    }

    let outside = data_file(dir.path(), "outside.bin", 1 << 20);
    let write = |target: &Path| {
        format!(
            "engine = \"null\"\nrw = \"randwrite\"\nbuffered = true\nruntime = \"300ms\"\nramp = \"0s\"\ntarget = \"{}\"",
            target.display()
        )
    };
    let answer = client.prepare(&session, &write(&outside));
    assert_eq!(answer.status, 403, "{}", answer.text);
    assert!(answer.text.contains("--allow-write"), "{}", answer.text);
    assert!(std::fs::read(&outside).expect("reads").iter().all(|&b| b == 0x5a), "untouched");

    let inside = data_file(allowed.path(), "inside.bin", 1 << 20);
    let answer = client.prepare(&session, &write(&inside));
    assert_eq!(answer.status, 200, "{}", answer.text);
    client.start_in(&session, Duration::ZERO);
    let answer = client.result(&session, 10_000);
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(answer.json::<AgentResult>().result.write.ios > 0);

    // A job whose buffers would not fit in memory is the user's to fix.
    let answer = client.prepare(
        &session,
        &format!(
            "engine = \"null\"\nbs = \"1MiB\"\nqd = 32768\nworkers = 64\ntarget = \"{}\"",
            inside.display()
        ),
    );
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert!(answer.text.contains("memory"), "{}", answer.text);

    let answer = client.post("/v1/netbench/send", &json!({ "to": "http://evil/x", "duration_ms": 100 }));
    assert_eq!(answer.status, 400, "{}", answer.text);
    client.hello();
}

#[test]
fn one_session_at_a_time() {
    let client = start_agent(Vec::new());
    let session = client.open(10_000);
    let answer = client.post("/v1/sessions", &json!({ "lease_ms": 1000, "coordinator": "other" }));
    assert_eq!(answer.status, 409, "{}", answer.text);
    assert!(answer.text.contains("test"), "names the holder: {}", answer.text);
    let answer = client.post("/v1/sessions", &json!({ "lease_ms": 10, "coordinator": "other" }));
    assert_eq!(answer.status, 400, "lease too short: {}", answer.text);
    assert_eq!(client.request("DELETE", &format!("/v1/sessions/{session}"), Some(TOKEN), None).status, 204);
    assert_eq!(client.hello().session, None);
    client.open(10_000);
}

#[test]
fn a_full_run_streams_live_and_hands_over_its_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = data_file(dir.path(), "t.bin", 1 << 20);
    let client = start_agent(Vec::new());
    let session = client.open(10_000);
    let answer = client.prepare(&session, &null_job(&target, "1s"));
    assert_eq!(answer.status, 200, "{}", answer.text);
    let prepared: Prepared = answer.json();
    assert_eq!(prepared.targets, vec![target.display().to_string()]);

    let at = client.start_in(&session, Duration::from_millis(200));
    let response = client
        .http
        .get(format!("{}/v1/sessions/{session}/live?from=0", client.base))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .call()
        .expect("live stream");
    assert_eq!(response.status().as_u16(), 200);
    let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    assert_eq!(kind, "application/x-ndjson");
    let lines = BufReader::new(response.into_body().into_reader()).lines();
    let events: Vec<LiveEvent> =
        lines.map(|l| serde_json::from_str(&l.expect("a line")).expect("an event")).collect();
    assert!(events.iter().any(|e| matches!(e, LiveEvent::Progress { .. })));
    let intervals = events.iter().filter(|e| matches!(e, LiveEvent::Interval { .. })).count();
    assert!(intervals > 0);
    assert_eq!(events.last(), Some(&LiveEvent::Finished));

    let answer = client.result(&session, 5_000);
    assert_eq!(answer.status, 200, "{}", answer.text);
    let handed: AgentResult = answer.json();
    let decoded = handed.histograms.decode().expect("histograms decode");
    let result = &handed.result;
    assert!(result.total.ios > 0);
    assert_eq!(result.total.ios, decoded.read.ios() + decoded.write.ios());
    assert_eq!(handed.intervals.len(), result.series.len());
    assert_eq!(handed.intervals.len(), intervals);
    assert_eq!(handed.groups.len(), result.groups.len());
    for group in &handed.groups {
        group.decode().expect("group histograms decode");
    }
    let window = result.window_start_unix_ns.saturating_sub((result.ramp_s * 1e9) as u64);
    assert!(
        window.abs_diff(at) < 2_000_000_000,
        "started {} ms from the instant",
        window.abs_diff(at) / 1_000_000
    );

    let answer = client.get(&format!("/v1/sessions/{session}/live?from=minus"));
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert!(answer.json::<Value>()["error"].is_string(), "{}", answer.text);

    // A second read of the stream replays it; from an index, only the rest.
    let again = client.get(&format!("/v1/sessions/{session}/live?from={}", events.len() - 1));
    assert_eq!(again.text.lines().count(), 1, "{}", again.text);
}

#[test]
fn a_real_read_job_runs_on_psync() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = data_file(dir.path(), "t.bin", 4 << 20);
    let client = start_agent(Vec::new());
    let session = client.open(10_000);
    let job = format!(
        "engine = \"psync\"\nbuffered = true\nqd = 2\nruntime = \"500ms\"\nramp = \"0s\"\ntarget = \"{}\"",
        target.display()
    );
    let answer = client.prepare(&session, &job);
    assert_eq!(answer.status, 200, "{}", answer.text);
    client.start_in(&session, Duration::from_millis(50));
    let answer = client.result(&session, 10_000);
    assert_eq!(answer.status, 200, "{}", answer.text);
    let handed: AgentResult = answer.json();
    assert!(handed.result.read.ios > 0);
    assert_eq!(handed.histograms.decode().expect("decodes").read.ios(), handed.result.read.ios);
}

#[test]
fn abort_stops_the_job_and_keeps_its_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = data_file(dir.path(), "t.bin", 1 << 20);
    let client = start_agent(Vec::new());
    let session = client.open(10_000);
    assert_eq!(client.prepare(&session, &null_job(&target, "30s")).status, 200);
    client.start_in(&session, Duration::ZERO);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(client.result(&session, 0).status, 202, "still running");
    let aborted = Instant::now();
    assert_eq!(client.post(&format!("/v1/sessions/{session}/abort"), &json!({})).status, 204);
    let answer = client.result(&session, 5_000);
    assert!(aborted.elapsed() < Duration::from_secs(5), "stopped in {:?}", aborted.elapsed());
    assert_eq!(answer.status, 200, "{}", answer.text);
    let handed: AgentResult = answer.json();
    assert_eq!(serde_json::to_value(handed.result.stop_reason).expect("json"), json!("interrupted"));
    client.hello();
}

#[test]
fn a_silent_coordinator_loses_its_session_and_its_job_stops() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = data_file(dir.path(), "t.bin", 1 << 20);
    let client = start_agent(Vec::new());
    let session = client.open(500);
    assert_eq!(client.prepare(&session, &null_job(&target, "30s")).status, 200);
    client.start_in(&session, Duration::ZERO);
    let silent = Instant::now();
    assert!(
        eventually(Duration::from_secs(3), || client.hello().session.is_none()),
        "the session outlived its lease"
    );
    assert!(silent.elapsed() < Duration::from_secs(5), "stopped after {:?}", silent.elapsed());
    assert_eq!(client.result(&session, 0).status, 404);
    client.open(1_000);
}

#[test]
fn netbench_pushes_to_another_agent() {
    let sender = start_agent(Vec::new());
    let sink = start_agent(Vec::new());
    let to = sink.base.trim_start_matches("http://").to_string();
    let answer = sender.post("/v1/netbench/send", &json!({ "to": to, "duration_ms": 200 }));
    assert_eq!(answer.status, 200, "{}", answer.text);
    let measured: iolab_fleet::protocol::NetMeasured = answer.json();
    assert!(measured.bytes >= 1 << 20 && measured.seconds > 0.0 && measured.mb_s > 0.0, "{measured:?}");
    let answer = sender.post("/v1/netbench/send", &json!({ "to": to, "duration_ms": 60_000 }));
    assert_eq!(answer.status, 400, "{}", answer.text);
}

#[test]
fn a_job_without_a_target_writes_a_scratch_file_that_goes_with_the_session() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut config = AgentConfig::new("127.0.0.1:0".parse().expect("address"), TOKEN);
    config.scratch_dir = Some(scratch.path().to_path_buf());
    let client = {
        let running = agent::spawn(config).expect("the agent starts");
        let http = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        Client { base: format!("http://{}", running.addr()), http, _agent: running }
    };
    let session = client.open(10_000);
    let job = "engine = \"null\"\nbuffered = true\nrw = \"randwrite\"\nsize = \"4MiB\"\nruntime = \"200ms\"\nramp = \"0s\"";
    let answer = client.prepare(&session, job);
    assert_eq!(answer.status, 200, "writing its own scratch file is always allowed: {}", answer.text);
    let prepared: Prepared = answer.json();
    let file = PathBuf::from(&prepared.targets[0]);
    assert!(
        file.starts_with(scratch.path().canonicalize().expect("exists")) || file.starts_with(scratch.path())
    );
    assert!(file.exists());
    client.start_in(&session, Duration::ZERO);
    assert_eq!(client.result(&session, 10_000).status, 200);
    assert_eq!(client.request("DELETE", &format!("/v1/sessions/{session}"), Some(TOKEN), None).status, 204);
    assert!(!file.exists(), "the scratch file went with the session");
}

#[test]
fn a_running_fileset_phase_answers_a_result_request_with_how_far_it_is() {
    let shm = Path::new("/dev/shm");
    let allowed =
        if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.expect("tempdir");
    let client = start_agent(vec![allowed.path().to_path_buf()]);
    let session = client.open(60_000);
    let job =
        "files = 100000\nthreads = 1\nsizes = 0\nphases = \"mkdir,create,unlink,rmdir\"\nengine = \"sync\"\n";
    let dir = allowed.path().join("tree");
    let answer = client.post(
        &format!("/v1/sessions/{session}/files/prepare"),
        &json!({ "job": job, "dir": dir.display().to_string() }),
    );
    assert_eq!(answer.status, 200, "{}", answer.text);
    let mut heard: Vec<FilesProgress> = Vec::new();
    for phase in ["mkdir", "create", "unlink", "rmdir"] {
        let at = unix_ns();
        let answer =
            client.post(&format!("/v1/sessions/{session}/files/start"), &json!({ "at_unix_ns": at }));
        assert_eq!(answer.status, 202, "{}", answer.text);
        loop {
            let answer = client.get(&format!("/v1/sessions/{session}/files/result?wait_ms=20"));
            match answer.status {
                202 => heard.push(answer.json()),
                200 => {
                    let done: FilesPhaseDone = answer.json();
                    assert_eq!(done.result.phase.name(), phase);
                    break;
                }
                other => panic!("{other}: {}", answer.text),
            }
        }
    }
    // 100,000 creates and unlinks take a good part of a second at least: several answers
    // came while they ran, each within its phase's plan, never going back.
    let of = |name: &str| heard.iter().filter(|p| p.phase.name() == name).collect::<Vec<_>>();
    for name in ["create", "unlink"] {
        let seen = of(name);
        assert!(seen.iter().any(|p| p.done > 0 && p.done < 100_000), "{name}: {heard:?}");
        assert!(seen.iter().all(|p| p.planned == 100_000 && p.done <= p.planned), "{name}: {seen:?}");
        assert!(seen.windows(2).all(|w| w[0].done <= w[1].done && w[0].elapsed_ns <= w[1].elapsed_ns));
    }
}
