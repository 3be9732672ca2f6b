//! Agents for the fleet tests: real `iolab agent` processes on loopback ports (or inside network
//! namespaces), a token file, and a bare HTTP client to ask an agent how it is.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const TOKEN: &str = "fleet-tests-token-0123456789abcdef";

/// A token file only its owner can read (agents refuse one others can).
pub fn token_file(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("token");
    std::fs::write(&path, format!("{TOKEN}\n")).expect("token file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

/// An agent per size, each in a directory of its own (`host0`, `host1`, ...) that holds a target
/// `t` of that many MiB: jobs name `/proc/self/cwd/t`, which each agent resolves to its own
/// file, so one machine stands for hosts with targets of different sizes. With `writable`, each
/// agent may write its own directory (`--allow-write`).
pub fn agents_with_targets(dir: &Path, sizes_mib: &[u64], writable: bool) -> Vec<Agent> {
    sizes_mib
        .iter()
        .enumerate()
        .map(|(i, &mib)| {
            let own = dir.join(format!("host{i}"));
            std::fs::create_dir_all(&own).expect("host dir");
            std::fs::write(own.join("t"), vec![7u8; (mib << 20) as usize]).expect("target");
            let allow = own.to_str().expect("a UTF-8 path");
            let extra: &[&str] = if writable { &["--allow-write", allow] } else { &[] };
            Agent::start(&own, "127.0.0.1:0", extra)
        })
        .collect()
}

pub struct Agent {
    pub child: Child,
    pub address: String,
    /// What the agent said on stderr, gathered by a thread.
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Agent {
    /// Starts `iolab agent` on `listen` (port 0 for any) with `extra` arguments, in `dir`,
    /// and waits until it says where it listens.
    pub fn start(dir: &Path, listen: &str, extra: &[&str]) -> Agent {
        Agent::start_with(super::iolab(), dir, listen, extra)
    }

    /// As `start`, with `command` the iolab to run (`common::iolab_via("ip", ...)` to run it
    /// inside a network namespace).
    pub fn start_with(mut command: Command, dir: &Path, listen: &str, extra: &[&str]) -> Agent {
        let token = token_file(dir);
        let mut child = command
            .args(["agent", "--listen", listen, "--token-file"])
            .arg(&token)
            .args(extra)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the agent starts");
        let (address, log) = super::follow_stderr(&mut child, "it listened", |line| {
            line.split("listening on ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .map(String::from)
        });
        Agent { child, address, log }
    }

    pub fn log(&self) -> String {
        self.log.lock().expect("log").clone()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The agent's answer to the handshake, or why there is none.
    pub fn hello(&self) -> Result<serde_json::Value, String> {
        post(&self.address, "/v1/hello", r#"{"protocol":"iolab.fleet/2"}"#)
    }

    /// Waits (at most `within`) until the agent holds no session.
    pub fn wait_idle(&self, within: Duration) -> Result<Duration, String> {
        let started = Instant::now();
        loop {
            let hello = self.hello()?;
            if hello["session"].is_null() {
                return Ok(started.elapsed());
            }
            if started.elapsed() > within {
                return Err(format!("still holds session {} after {within:?}", hello["session"]));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A POST with the tests' token, over a plain socket; the body of a 200, else the status line.
pub fn post(address: &str, path: &str, body: &str) -> Result<serde_json::Value, String> {
    let mut stream = TcpStream::connect(address).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).map_err(|e| e.to_string())?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream.read_to_string(&mut response).map_err(|e| e.to_string())?;
    let (head, body) = response.split_once("\r\n\r\n").ok_or("no HTTP response")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(head.lines().next().unwrap_or("").to_string());
    }
    serde_json::from_str(body).map_err(|e| format!("{e}: {body}"))
}

/// "a,b,c" of the agents' addresses.
pub fn hosts(agents: &[Agent]) -> String {
    agents.iter().map(|a| a.address.as_str()).collect::<Vec<_>>().join(",")
}
