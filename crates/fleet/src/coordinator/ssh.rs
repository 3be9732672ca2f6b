//! `iolab fleet --ssh host1,host2`: starts an agent on each host through the user's own ssh
//! (their keys, their config, their jump hosts), so a fleet needs no agent installed as a
//! service. Each agent listens on 127.0.0.1 of its host and is reached through an `ssh -L`
//! tunnel; the token travels on ssh's stdin, never on a command line. The agent stops when
//! that stdin closes: when the coordinator ends, or its ssh dies, so does every agent.
//!
//! `$IOLAB_SSH` names another ssh command (tests use a stand-in that runs the agent locally).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::client::AgentClient;

/// How long an agent may take to come up at the far end of its tunnel.
const READY_WITHIN: Duration = Duration::from_secs(20);

pub struct SshAgents {
    /// The local ends of the tunnels, "127.0.0.1:port", one per host: what the coordinator uses.
    pub addresses: Vec<String>,
    children: Vec<Child>,
    /// The start of what each ssh (and its agent) said on stderr, read as it comes so a chatty
    /// agent never blocks on a full pipe.
    said: Vec<Arc<Mutex<String>>>,
}

/// How much of an ssh's stderr is kept for an error message.
const KEPT_STDERR: usize = 4096;

/// Starts an agent on every host; an error names each host that failed, and the agents already
/// started are stopped.
pub fn launch(hosts: &[String], iolab: &str, agent_args: &str, token: &str) -> Result<SshAgents, String> {
    let ssh = std::env::var("IOLAB_SSH").unwrap_or_else(|_| "ssh".into());
    let mut agents = SshAgents { addresses: Vec::new(), children: Vec::new(), said: Vec::new() };
    for host in hosts {
        if host.starts_with('-') || host.contains(char::is_whitespace) {
            return Err(format!("'{host}' is not an ssh host"));
        }
        let port =
            free_port().map_err(|e| format!("cannot find a free local port for {host}'s tunnel: {e}"))?;
        let remote = format!(
            "{iolab} agent --listen 127.0.0.1:{port} --token-file - {agent_args}",
            iolab = shell_word(iolab)
        );
        let mut child = Command::new(&ssh)
            .args(["-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes", "-L"])
            .arg(format!("127.0.0.1:{port}:127.0.0.1:{port}"))
            .arg(host)
            .arg("--")
            .arg(remote)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {ssh}: {e}"))?;
        if let Some(stdin) = child.stdin.as_mut() {
            // The agent reads its token as the first line; the pipe then stays open as its
            // lifeline. An ssh that already ended refuses it: its own words, read when its
            // agent is waited for, say why.
            let _ = stdin.write_all(format!("{token}\n").as_bytes());
        }
        agents.said.push(drain(child.stderr.take()));
        agents.children.push(child);
        agents.addresses.push(format!("127.0.0.1:{port}"));
    }
    let mut failed = Vec::new();
    for (n, host) in hosts.iter().enumerate() {
        if let Err(e) = agents.wait_ready(n, token) {
            failed.push(format!("{host}: {e}"));
        }
    }
    if failed.is_empty() {
        Ok(agents)
    } else {
        Err(format!("could not start agents through ssh: {}", failed.join("; ")))
    }
}

impl SshAgents {
    /// Waits until agent `n` answers the handshake through its tunnel.
    fn wait_ready(&mut self, n: usize, token: &str) -> Result<(), String> {
        let client = AgentClient::new(&self.addresses[n], token);
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.children[n].try_wait() {
                std::thread::sleep(Duration::from_millis(50)); // the last words reach the buffer
                let stderr = self.said[n].lock().map(|s| s.clone()).unwrap_or_default();
                let said = stderr.trim();
                return Err(format!(
                    "ssh ended ({status}){}",
                    if said.is_empty() { String::new() } else { format!(": {said}") }
                ));
            }
            match client.hello() {
                Ok(_) => return Ok(()),
                Err(e) if started.elapsed() > READY_WITHIN => {
                    return Err(format!("no agent answered within {} s: {e}", READY_WITHIN.as_secs()))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }
}

impl Drop for SshAgents {
    /// Closing ssh's stdin stops the agent at the far end; ssh itself is then ended.
    fn drop(&mut self) {
        for child in &mut self.children {
            drop(child.stdin.take());
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        for child in &mut self.children {
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

/// Reads `pipe` to its end on a thread, keeping its first KEPT_STDERR bytes.
fn drain(pipe: Option<std::process::ChildStderr>) -> Arc<Mutex<String>> {
    let kept = Arc::new(Mutex::new(String::new()));
    if let Some(mut pipe) = pipe {
        let into = kept.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 1024];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                if let Ok(mut kept) = into.lock() {
                    if kept.len() < KEPT_STDERR {
                        kept.push_str(&String::from_utf8_lossy(&chunk[..n]));
                    }
                }
            }
        });
    }
    kept
}

/// A local port nobody listens on now (the tunnel binds it a moment later).
fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `word` quoted for the remote shell ssh hands the command to.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_words_are_quoted() {
        assert_eq!(shell_word("/usr/local/bin/iolab"), "/usr/local/bin/iolab");
        assert_eq!(shell_word("my iolab"), "'my iolab'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$(rm -rf /)"), "'$(rm -rf /)'");
    }
}
