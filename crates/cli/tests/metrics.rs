//! `--metrics ADDR`: the live figures of a running command, scraped over HTTP while it runs and
//! read by a real parser of the exposition formats: the Prometheus project's Python client
//! (`prometheus_client.openmetrics.parser`, strict, for OpenMetrics; `prometheus_client.parser`
//! for the text format 0.0.4). The tests find it in the CI venv (target/ci-venv, made by
//! .ci/run) or on PATH, and skip with a reason without it.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

const OPENMETRICS: &str = "application/openmetrics-text;version=1.0.0;q=0.9,text/plain;version=0.0.4;q=0.5";

/// Parses an exposition with the Prometheus Python client and prints its families as JSON.
const PARSER: &str = r#"
import json, sys
if sys.argv[1] == "openmetrics":
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
else:
    from prometheus_client.parser import text_string_to_metric_families
families = [
    {"name": f.name, "type": f.type, "unit": f.unit,
     "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]}
    for f in text_string_to_metric_families(sys.stdin.read())
]
print(json.dumps(families))
"#;

/// A python that has `prometheus_client`: the CI venv's, else the one on PATH.
fn parser_python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../ci-venv/bin/python");
    [venv, PathBuf::from("python3")].into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import prometheus_client.openmetrics.parser, prometheus_client.parser"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn skip_without_parser() -> Option<PathBuf> {
    let python = parser_python();
    if python.is_none() {
        common::skip!(
            common::Missing::PrometheusClient,
            "no python with prometheus_client (bash .ci/run makes target/ci-venv with it; or pip install prometheus-client)"
        );
    }
    python
}

/// The families of `text` as the parser reads them, by family name; panics with the text when
/// the parser refuses it.
fn parse(python: &Path, text: &str, format: &str) -> BTreeMap<String, Value> {
    let mut child = Command::new(python)
        .args(["-c", PARSER, format])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("text written");
    let out = child.wait_with_output().expect("python ends");
    assert!(
        out.status.success(),
        "the {format} parser refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let families: Vec<Value> = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    families.into_iter().map(|f| (f["name"].as_str().expect("name").to_string(), f)).collect()
}

/// GET /metrics with `accept`: the content type and the body.
fn scrape(address: &str, accept: Option<&str>) -> Result<(String, String), String> {
    let mut stream = TcpStream::connect(address).map_err(|e| format!("connect {address}: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(20))).map_err(|e| e.to_string())?;
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: {address}\r\n{accept}Connection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream.read_to_string(&mut response).map_err(|e| e.to_string())?;
    let (head, body) = response.split_once("\r\n\r\n").ok_or("no end of the headers")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("not 200: {head}"));
    }
    let content_type = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-type:").map(|v| v.trim().to_string()))
        .ok_or("no content type")?;
    Ok((content_type, body.to_string()))
}

/// A running iolab whose stderr is gathered by a thread, and the metrics address it printed.
struct Served {
    child: Child,
    address: String,
    log: Arc<Mutex<String>>,
}

fn start(dir: &Path, args: &[&str]) -> Served {
    let mut child = common::iolab()
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iolab starts");
    let (address, log) = common::follow_stderr(&mut child, "it served metrics", |line| {
        line.split("metrics on http://")
            .nth(1)
            .map(|rest| rest.trim().trim_end_matches("/metrics").to_string())
    });
    Served { child, address, log }
}

/// The read I/Os counted so far, over every sample of `iolab_ios` (the parser names a counter
/// family without `_total`).
fn reads(families: &BTreeMap<String, Value>) -> f64 {
    families.get("iolab_ios").map_or(0.0, |f| {
        f["samples"]
            .as_array()
            .expect("samples")
            .iter()
            .filter(|s| s["labels"]["op"] == "read")
            .map(|s| s["value"].as_f64().expect("a number"))
            .sum()
    })
}

fn samples<'a>(families: &'a BTreeMap<String, Value>, family: &str) -> &'a Vec<Value> {
    families
        .get(family)
        .unwrap_or_else(|| panic!("no family {family} in {:?}", families.keys().collect::<Vec<_>>()))
        ["samples"]
        .as_array()
        .expect("samples")
}

#[test]
fn run_serves_live_figures_that_the_prometheus_parser_reads_and_counters_grow() {
    let Some(python) = skip_without_parser() else { return };
    let dir = common::dir_with_target();
    // A job name with a quote and a backslash: escaped, the parser gives it back as it is.
    let file = "target = \"t\"\nsize = \"1m\"\n[[job]]\nname = 'say \"hi\" \\ there'\n";
    std::fs::write(dir.path().join("job.toml"), file).expect("job file");
    // Long enough to outlast the scrapes on a busy machine; the test stops it with Ctrl-C.
    let args = [
        "run",
        "job.toml",
        "--engine",
        "null",
        "--ramp",
        "1s",
        "--runtime",
        "300s",
        "--metrics",
        "127.0.0.1:0",
        "--no-store",
    ];
    let mut served = start(dir.path(), &args);

    // Scrape until the counters have counted something, then until they have grown: the run's
    // figures are live, not a summary at the end.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen: Vec<BTreeMap<String, Value>> = Vec::new();
    while seen.len() < 2 && Instant::now() < deadline {
        let (content_type, text) = match scrape(&served.address, Some(OPENMETRICS)) {
            Ok(scraped) => scraped,
            Err(e) => {
                panic!("scrape failed while the run goes on: {e}; log: {}", served.log.lock().expect("log"))
            }
        };
        assert_eq!(content_type, "application/openmetrics-text; version=1.0.0; charset=utf-8");
        assert!(text.ends_with("# EOF\n"), "{text}");
        let families = parse(&python, &text, "openmetrics");
        let grown = seen.last().map_or(0.0, reads);
        if reads(&families) > grown {
            seen.push(families);
        } else {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    assert_eq!(
        seen.len(),
        2,
        "the read counter did not grow between scrapes; log: {}",
        served.log.lock().expect("log")
    );
    let last = &seen[1];

    let run = samples(last, "iolab_run");
    assert_eq!(last["iolab_run"]["type"], "info");
    assert_eq!(run[0]["labels"]["command"], "run");
    assert!(run[0]["labels"]["version"].as_str().is_some_and(|v| !v.is_empty()));

    let job = "say \"hi\" \\ there";
    for (family, kind) in [
        ("iolab_ios", "counter"),
        ("iolab_bytes", "counter"),
        ("iolab_interval_iops", "gauge"),
        ("iolab_interval_bytes_per_second", "gauge"),
    ] {
        assert_eq!(last[family]["type"], kind, "{family}");
        let read = samples(last, family)
            .iter()
            .find(|s| s["labels"]["op"] == "read")
            .unwrap_or_else(|| panic!("{family} has no read sample"));
        assert_eq!(read["labels"]["iolab_job"], job, "{family}");
        assert_eq!(read["labels"]["group"], "main", "{family}");
        assert!(read["labels"]["target"].as_str().is_some_and(|t| t.ends_with('t')), "{family}: {read}");
        assert!(read["value"].as_f64().is_some_and(|v| v > 0.0), "{family}: {read}");
    }
    // Bytes are the I/Os' 4 KiB each.
    assert_eq!(
        samples(last, "iolab_bytes").iter().find(|s| s["labels"]["op"] == "read").expect("read")["value"],
        samples(last, "iolab_ios")
            .iter()
            .find(|s| s["labels"]["op"] == "read")
            .map(|s| s["value"].as_f64().expect("n") * 4096.0)
            .expect("read")
    );
    let errors = samples(last, "iolab_errors");
    assert_eq!(errors[0]["labels"]["iolab_job"], job);
    assert_eq!(errors[0]["value"], 0.0);

    let latency = &last["iolab_interval_latency_seconds"];
    assert_eq!(latency["type"], "gauge");
    assert_eq!(latency["unit"], "seconds");
    let quantiles: Vec<(String, f64)> = latency["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .filter(|s| s["labels"]["op"] == "read")
        .map(|s| (s["labels"]["quantile"].as_str().expect("q").to_string(), s["value"].as_f64().expect("v")))
        .collect();
    let mut names: Vec<&str> = quantiles.iter().map(|(q, _)| q.as_str()).collect();
    names.sort();
    assert_eq!(names, ["0.5", "0.99", "0.999", "0.9999"]);
    let at = |q: &str| quantiles.iter().find(|(name, _)| name == q).expect("quantile").1;
    assert!(at("0.5") > 0.0 && at("0.5") < 1.0, "a null I/O takes far less than a second: {quantiles:?}");
    assert!(
        at("0.5") <= at("0.99") && at("0.99") <= at("0.999") && at("0.999") <= at("0.9999"),
        "{quantiles:?}"
    );

    let info = samples(last, "iolab_group_info");
    assert_eq!(info[0]["labels"]["engine"], "null");
    assert_eq!(info[0]["labels"]["qd"], "32");
    assert_eq!(info[0]["labels"]["bs"], "4KiB");

    dashboard_names_what_is_served(last);

    // A scraper that does not ask for OpenMetrics gets the Prometheus text format 0.0.4.
    let (content_type, text) = scrape(&served.address, None).expect("a plain scrape");
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    assert!(!text.contains("# EOF"));
    let plain = parse(&python, &text, "text");
    assert_eq!(plain["iolab_ios"]["type"], "counter");
    assert!(reads(&plain) >= reads(last));
    assert_eq!(samples(&plain, "iolab_run_info")[0]["labels"]["command"], "run");

    // SAFETY: kill has no memory preconditions; the pid is our own child's, not yet reaped.
    unsafe { libc::kill(served.child.id() as libc::pid_t, libc::SIGINT) };
    let status = served.child.wait().expect("iolab ends");
    assert_eq!(status.code(), Some(130), "{status}; log: {}", served.log.lock().expect("log"));
    // The endpoint ends with the command.
    assert!(TcpStream::connect(&served.address).is_err(), "still served after the run ended");
}

#[test]
fn a_taken_metrics_port_is_a_usage_error_before_anything_runs() {
    let dir = common::dir_with_target();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = taken.local_addr().expect("address").to_string();
    let out = common::iolab()
        .args(["run", "--engine", "null", "--target", "t", "--size", "1m", "--runtime", "1s"])
        .args(["--metrics", &address, "--no-store", "--json"])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .output()
        .expect("iolab runs");
    let said = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains(&format!("--metrics {address}")) && said.contains("port 0"), "{said}");
    assert!(out.stdout.is_empty(), "nothing ran, so nothing was reported");
    assert!(!said.contains("ramp") && !said.contains("measure"), "{said}");
}

#[test]
fn an_agent_serves_metrics_only_when_asked_and_never_its_token() {
    let dir = common::dir_with_target();
    let mut quiet = common::fleet::Agent::start(dir.path(), "127.0.0.1:0", &[]);
    assert!(!quiet.log().contains("metrics on"), "{}", quiet.log());
    quiet.kill();

    let mut agent = common::fleet::Agent::start(dir.path(), "127.0.0.1:0", &["--metrics", "127.0.0.1:0"]);
    let address = metrics_address(&agent);
    // A job through the agent: its figures are the agent's.
    let token = dir.path().join("token");
    let target = dir.path().join("t");
    let out = common::iolab()
        .args(["fleet", "--hosts", &agent.address, "--token-file"])
        .arg(&token)
        .args(["run", "--engine", "null", "--ramp", "0", "--runtime", "1s", "--target"])
        .arg(&target)
        .args(["--no-store", "--json"])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .output()
        .expect("the coordinator runs");
    assert!(out.status.success(), "{}; agent: {}", common::stderr(&out), agent.log());
    let (_, text) = scrape(&address, Some(OPENMETRICS)).expect("the agent's metrics");
    assert!(!text.contains(common::fleet::TOKEN), "the token is in the metrics:\n{text}");
    assert!(text.contains("iolab_run_info{command=\"agent\""), "{text}");
    if let Some(python) = skip_without_parser() {
        let families = parse(&python, &text, "openmetrics");
        assert!(reads(&families) > 0.0, "the agent's job counted no reads:\n{text}");
    }
    agent.kill();
}

/// Where `agent` said it serves its figures.
fn metrics_address(agent: &common::fleet::Agent) -> String {
    let log = agent.log();
    log.split("metrics on http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(|a| a.trim_end_matches("/metrics").to_string())
        .unwrap_or_else(|| panic!("no metrics address in {log}"))
}

/// Issue 32: idle connections to an agent's metrics port (1,135 under `ulimit -n 1024`) took
/// every descriptor it had, and the coordinator's requests went unanswered. Here the agent may
/// open 512 descriptors and 600 idle connections wait on its metrics port: the API still answers
/// (and so does the metrics port, a connection at a time).
#[test]
fn idle_connections_to_the_agents_metrics_port_leave_its_api_answering() {
    let dir = common::dir_with_target();
    let prlimit = common::iolab_via("prlimit", &["--nofile=512:512", "--"]);
    let agent =
        common::fleet::Agent::start_with(prlimit, dir.path(), "127.0.0.1:0", &["--metrics", "127.0.0.1:0"]);
    let address = metrics_address(&agent);
    let idle: Vec<TcpStream> = (0..600).map_while(|_| TcpStream::connect(&address).ok()).collect();
    assert!(idle.len() > 512, "only {} connections to the metrics port were made", idle.len());
    let hello = agent.hello();
    assert!(hello.is_ok(), "the API did not answer: {hello:?}; agent: {}", agent.log());
    drop(idle);
    // The agent sees the 600 connections close in its own time (beside busy cores, a scrape
    // right after the drop met one still counted and was refused): it must answer again soon.
    let mut last = None;
    for _ in 0..300 {
        match scrape(&address, None) {
            Ok(_) => return,
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the metrics port never answered once the flood was gone: {last:?}");
}

/// The Grafana dashboard in deploy/grafana asks only for series a run serves (or, for the
/// fleet panels, the coordinator), and labels its lines with labels those series have.
fn dashboard_names_what_is_served(scraped: &BTreeMap<String, Value>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/grafana/iolab.json");
    let text = std::fs::read_to_string(&path).expect("the dashboard is readable");
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut served: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for family in scraped.values() {
        for sample in family["samples"].as_array().expect("samples") {
            let labels = sample["labels"].as_object().expect("labels").keys().cloned();
            served.entry(sample["name"].as_str().expect("name").to_string()).or_default().extend(labels);
        }
    }
    for name in ["iolab_host_interval_iops", "iolab_host_failed"] {
        served.insert(name.into(), vec!["iolab_job".into(), "host".into()]);
    }
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(!panels.is_empty());
    for target in panels.iter().flat_map(|p| p["targets"].as_array().expect("targets")) {
        let expr = target["expr"].as_str().expect("expr");
        let names: Vec<&str> = expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| word.starts_with("iolab_") && *word != "iolab_job")
            .collect();
        assert!(!names.is_empty(), "{expr}");
        for name in &names {
            assert!(served.contains_key(*name), "the dashboard asks for {name}, which is not served: {expr}");
        }
        // Every {{label}} of the legend is a label of the first series, or the host the query joins in.
        let legend = target["legendFormat"].as_str().unwrap_or_default();
        for label in legend.split("{{").skip(1).filter_map(|rest| rest.split("}}").next()) {
            let has = label == "host" || served[names[0]].iter().any(|l| l == label);
            assert!(has, "the legend names {label}, which {} lacks: {expr}", names[0]);
        }
    }
}
