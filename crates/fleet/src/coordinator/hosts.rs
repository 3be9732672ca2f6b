//! The fleet's hosts as the user lists them: `--hosts a:7878,b:7878` or a hosts file with one
//! `host:port` per line (`#` starts a comment).

use std::collections::HashSet;
use std::path::Path;

use iolab_spec::user_file;

/// The port an agent listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 7878;

/// Parses a comma-separated list; a host without a port gets `DEFAULT_PORT`.
pub fn parse_list(text: &str) -> Result<Vec<String>, String> {
    let hosts = text
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(address)
        .collect::<Result<Vec<_>, _>>()?;
    checked(hosts, "--hosts")
}

pub fn load_file(path: &Path) -> Result<Vec<String>, String> {
    let shown = path.display();
    let text = user_file::read_to_string(path, user_file::HOSTS_FILE).map_err(|e| e.to_string())?;
    let mut hosts = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if !line.is_empty() {
            hosts.push(address(line).map_err(|e| format!("{shown} line {}: {e}", number + 1))?);
        }
    }
    checked(hosts, &shown.to_string())
}

/// `--ssh` destinations as ssh takes them (host, user@host, an alias of ~/.ssh/config).
pub fn ssh_list(text: &str) -> Result<Vec<String>, String> {
    let hosts: Vec<String> =
        text.split(',').map(str::trim).filter(|h| !h.is_empty()).map(String::from).collect();
    if let Some(bad) =
        hosts.iter().find(|h| h.starts_with('-') || h.contains(|c: char| c.is_whitespace() || c == '/'))
    {
        return Err(format!("'{bad}' is not an ssh host"));
    }
    checked(hosts, "--ssh")
}

/// "host:port", "host" (default port) or "[v6]:port".
fn address(text: &str) -> Result<String, String> {
    let bad = || format!("'{text}' is not a host: write host:port, e.g. 10.0.0.2:{DEFAULT_PORT}");
    if text.contains(['/', '@', ' ', '?', '#']) {
        return Err(bad());
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') && (!host.contains(':') || host.starts_with('[')) => {
            (host, port.parse::<u16>().map_err(|_| bad())?)
        }
        _ if text.contains(':') && !text.starts_with('[') => return Err(bad()),
        _ => (text, DEFAULT_PORT),
    };
    if host.is_empty() || port == 0 {
        return Err(bad());
    }
    Ok(format!("{host}:{port}"))
}

fn checked(hosts: Vec<String>, source: &str) -> Result<Vec<String>, String> {
    if hosts.is_empty() {
        return Err(format!("{source} names no host"));
    }
    let mut seen = HashSet::new();
    if let Some(twice) = hosts.iter().find(|h| !seen.insert(h.as_str())) {
        return Err(format!("{source} names {twice} twice: each agent runs one share of the job"));
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_take_ports_and_defaults() {
        assert_eq!(parse_list("a:1, b ,[::1]:9").unwrap(), ["a:1", "b:7878", "[::1]:9"]);
        assert!(parse_list("a:1,a:1").unwrap_err().contains("twice"));
        assert!(parse_list(" , ").unwrap_err().contains("no host"));
        for bad in ["a:x", "a:0", "http://a:1", "a:1/x", "::1", "u@a:1"] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn files_skip_comments_and_name_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        std::fs::write(&path, "# rack 1\n10.0.0.1:7878\n\n10.0.0.2 # spare\n").unwrap();
        assert_eq!(load_file(&path).unwrap(), ["10.0.0.1:7878", "10.0.0.2:7878"]);
        std::fs::write(&path, "10.0.0.1\nnot a host\n").unwrap();
        assert!(load_file(&path).unwrap_err().contains("line 2"));
    }
}
