//! The Kubernetes manifests in deploy/kubernetes/ and the image they run.
//!
//! Two layers, because each catches what the other cannot. The official JSON schemas
//! (through `kubernetes-validate`, from PyPI, when it is installed) catch misspelt fields and
//! wrong types, offline. The schemas know nothing of how the files fit together, so the rest
//! of this file reads the YAML itself and checks the wiring: the token file the agent and the
//! coordinator are told to read is a file their Secret volume really holds, the coordinator's
//! hosts and job files are keys of the ConfigMap it mounts, the agent listens on the port the
//! hosts list names, the example job is a job file iolab accepts, and the Dockerfile builds this
//! package's binary.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn kubernetes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes")
}

/// The manifest files, sorted.
fn manifest_files() -> Vec<PathBuf> {
    let dir = kubernetes_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no manifests in {}", dir.display());
    files
}

/// Every object of the manifests, one per file.
fn objects() -> Vec<Value> {
    manifest_files()
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).expect("manifest is readable");
            serde_norway::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not one YAML document ({e})", file.display()))
        })
        .collect()
}

/// The one object of this kind and name.
fn object<'a>(all: &'a [Value], kind: &str, name: &str) -> &'a Value {
    let found: Vec<&Value> =
        all.iter().filter(|o| o["kind"] == kind && o["metadata"]["name"] == name).collect();
    assert_eq!(
        found.len(),
        1,
        "expected one {kind} named {name} in deploy/kubernetes, found {}",
        found.len()
    );
    found[0]
}

/// The one object of this kind.
fn only<'a>(all: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = all.iter().filter(|o| o["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "expected one {kind} in deploy/kubernetes, found {}", found.len());
    found[0]
}

/// The first container of a workload's pod template, with the pod spec.
fn container(workload: &Value) -> (&Value, &Value) {
    let pod = &workload["spec"]["template"]["spec"];
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1, "{} should run one container", workload["metadata"]["name"]);
    (pod, &containers[0])
}

fn args(container: &Value) -> Vec<&str> {
    container["args"]
        .as_array()
        .expect("the container has args")
        .iter()
        .map(|a| a.as_str().unwrap_or_else(|| panic!("arg {a} is not a string")))
        .collect()
}

/// The value following `flag`, once.
fn flag<'a>(args: &[&'a str], flag: &str) -> &'a str {
    let at: Vec<usize> = args.iter().enumerate().filter(|(_, a)| **a == flag).map(|(i, _)| i).collect();
    assert_eq!(at.len(), 1, "{flag} should be given once in {args:?}");
    args.get(at[0] + 1).unwrap_or_else(|| panic!("{flag} has no value in {args:?}"))
}

/// A file mode as Kubernetes reads it. Kubernetes parses YAML 1.1, where `0400` is octal;
/// serde_norway follows YAML 1.2, where it is the string "0400".
fn file_mode(value: &Value) -> Option<u32> {
    match value {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) if s.len() > 1 && s.starts_with('0') => u32::from_str_radix(&s[1..], 8).ok(),
        _ => None,
    }
}

/// A file a container sees through a Secret or ConfigMap volume.
#[derive(Debug)]
struct MountedFile {
    kind: &'static str,
    object: String,
    key: String,
    mode: Option<u32>,
}

/// The files a container sees through its Secret and ConfigMap volumes, by path. Each is
/// checked against the object it comes from: a key the object lacks fails here.
fn mounted_files(all: &[Value], pod: &Value, container: &Value) -> BTreeMap<String, MountedFile> {
    let mut files = BTreeMap::new();
    let volumes = pod["volumes"].as_array().expect("pod volumes");
    for mount in container["volumeMounts"].as_array().expect("volumeMounts") {
        let name = mount["name"].as_str().expect("volumeMount name");
        let volume = volumes
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("volumeMount {name} names no volume of the pod"));
        let (kind, source, object_name) = if volume["secret"].is_object() {
            ("Secret", &volume["secret"], volume["secret"]["secretName"].as_str())
        } else if volume["configMap"].is_object() {
            ("ConfigMap", &volume["configMap"], volume["configMap"]["name"].as_str())
        } else {
            continue;
        };
        let object_name = object_name.unwrap_or_else(|| panic!("volume {name} names no {kind}"));
        let data = object(all, kind, object_name);
        let keys: Vec<&String> = ["data", "stringData"]
            .iter()
            .filter_map(|field| data[*field].as_object())
            .flat_map(|map| map.keys())
            .collect();
        let mount_path = mount["mountPath"].as_str().expect("mountPath").trim_end_matches('/');
        let mode = file_mode(&source["defaultMode"]);
        let exposed: Vec<(String, String)> = match source["items"].as_array() {
            Some(items) => items
                .iter()
                .map(|item| {
                    let key = item["key"].as_str().expect("item key").to_string();
                    (item["path"].as_str().expect("item path").to_string(), key)
                })
                .collect(),
            None => keys.iter().map(|k| (k.to_string(), k.to_string())).collect(),
        };
        for (path, key) in exposed {
            assert!(keys.contains(&&key), "volume {name} mounts key {key}, which {kind} {object_name} lacks");
            files.insert(
                format!("{mount_path}/{path}"),
                MountedFile { kind, object: object_name.to_string(), key, mode },
            );
        }
        if kind == "Secret" {
            assert_eq!(mount["readOnly"], true, "the {kind} volume {name} should be mounted readOnly");
        }
    }
    files
}

/// The mounted file at `path`, which must come from a `kind` object.
fn mounted<'a>(files: &'a BTreeMap<String, MountedFile>, path: &str, kind: &str) -> &'a MountedFile {
    let file = files.get(path).unwrap_or_else(|| {
        panic!("{path} is not a file of any mounted Secret or ConfigMap; mounted: {:?}", files.keys())
    });
    assert_eq!(file.kind, kind, "{path} should come from a {kind}, not {file:?}");
    file
}

fn port_of(address: &str) -> u16 {
    let (_, port) = address.rsplit_once(':').unwrap_or_else(|| panic!("{address} has no port"));
    port.parse().unwrap_or_else(|e| panic!("{address}: the port is not a number ({e})"))
}

#[test]
fn manifests_pass_the_kubernetes_schemas() {
    let validator = "kubernetes-validate";
    if Command::new(validator).arg("--version").output().is_err() {
        return common::skip!(
            common::Missing::KubernetesValidate,
            "kubernetes-validate is not installed (pip install kubernetes-validate)"
        );
    }
    let files = manifest_files();
    // --strict: a misspelt field (`backofLimit`) is an error, not silently dropped.
    let out = Command::new(validator).arg("--strict").args(&files).output().expect("the validator runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "kubernetes-validate rejected the manifests:\n{said}");
    // An object whose schema it lacks is only a warning, with success: each file must have passed.
    for file in &files {
        let shown = file.display().to_string();
        assert!(
            said.lines().any(|l| l.contains(&shown) && l.contains(" passed ")),
            "kubernetes-validate did not validate {shown}:\n{said}"
        );
    }
    assert!(!said.contains("WARN"), "kubernetes-validate warned:\n{said}");
}

#[test]
fn every_object_is_in_the_namespace_the_manifests_create() {
    let all = objects();
    let namespace = only(&all, "Namespace")["metadata"]["name"].as_str().expect("namespace name");
    for o in all.iter().filter(|o| o["kind"] != "Namespace") {
        assert_eq!(o["metadata"]["namespace"], namespace, "{} {}", o["kind"], o["metadata"]["name"]);
    }
}

#[test]
fn the_agent_runs_on_labelled_nodes_with_the_token_from_the_secret() {
    let all = objects();
    let daemonset = only(&all, "DaemonSet");
    let (pod, agent) = container(daemonset);
    let args = args(agent);
    assert_eq!(
        args.first(),
        Some(&"agent"),
        "the image's entrypoint is iolab: args start with the subcommand"
    );
    let files = mounted_files(&all, pod, agent);
    let token = mounted(&files, flag(&args, "--token-file"), "Secret");
    assert_eq!(token.mode, Some(0o400), "the agent's token should be readable by its owner only");
    object(&all, "Secret", &token.object);

    assert_eq!(pod["nodeSelector"]["iolab.io/agent"], "true");
    assert_eq!(pod["hostNetwork"], true, "the agent measures the node's own network");
    // The API server checks this when applying; offline nothing else does.
    let selector = daemonset["spec"]["selector"]["matchLabels"].as_object().expect("matchLabels");
    let labels = &daemonset["spec"]["template"]["metadata"]["labels"];
    for (key, value) in selector {
        assert_eq!(&labels[key], value, "the pod template lacks the selector's label {key}");
    }
    // The README's and the ConfigMap's one-liner finds the agents by this label.
    assert_eq!(labels["app"], "iolab-agent");
    // Writes go only where --allow-write says, and the scratch dir is the mounted host dir.
    assert!(flag(&args, "--allow-write").starts_with("/dev/"), "{args:?}");
    let scratch = flag(&args, "--scratch-dir");
    let mounts = agent["volumeMounts"].as_array().expect("volumeMounts");
    assert!(
        mounts.iter().any(|m| m["mountPath"] == scratch),
        "--scratch-dir {scratch} is not a mounted volume"
    );
}

#[test]
fn the_coordinator_reads_the_token_hosts_and_job_from_what_it_mounts() {
    let all = objects();
    let job = only(&all, "Job");
    assert_eq!(job["spec"]["backoffLimit"], 0);
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    let (pod, coordinator) = container(job);
    let args = args(coordinator);
    assert_eq!(args.first(), Some(&"fleet"), "{args:?}");
    assert!(args.contains(&"--json"), "{args:?}");
    let files = mounted_files(&all, pod, coordinator);

    let token = mounted(&files, flag(&args, "--token-file"), "Secret");
    let agent_token = {
        let (agent_pod, agent) = container(only(&all, "DaemonSet"));
        let agent_args = self::args(agent);
        let files = mounted_files(&all, agent_pod, agent);
        let file = mounted(&files, flag(&agent_args, "--token-file"), "Secret");
        (file.object.clone(), file.key.clone())
    };
    assert_eq!(
        (token.object.clone(), token.key.clone()),
        agent_token,
        "agent and coordinator must share one token"
    );

    let hosts = mounted(&files, flag(&args, "--hosts-file"), "ConfigMap");
    assert_eq!(hosts.key, "hosts.txt");
    // The job file is the one argument that is neither a flag nor a flag's value.
    let takes_value = ["--hosts-file", "--token-file", "--hosts", "--ssh"];
    let positional: Vec<&str> = (1..args.len())
        .filter(|&i| !args[i].starts_with("--") && !takes_value.contains(&args[i - 1]))
        .map(|i| args[i])
        .collect();
    assert_eq!(positional.len(), 1, "expected one job file in {args:?}");
    let job_file = mounted(&files, positional[0], "ConfigMap");
    assert_eq!(job_file.object, hosts.object);
    assert_eq!(job_file.key, "job.toml");
}

/// The non-comment lines of the ConfigMap's hosts.txt.
fn example_hosts(all: &[Value]) -> Vec<String> {
    let text =
        object(all, "ConfigMap", "iolab-fleet")["data"]["hosts.txt"].as_str().expect("hosts.txt").to_string();
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect()
}

#[test]
fn the_agent_listens_on_the_port_the_hosts_list_names() {
    let all = objects();
    let (_, agent) = container(only(&all, "DaemonSet"));
    let port = port_of(flag(&args(agent), "--listen"));
    assert_eq!(agent["readinessProbe"]["tcpSocket"]["port"], port, "the probe checks another port");
    let declared = &agent["ports"][0];
    assert_eq!(declared["containerPort"], port);
    assert_eq!(declared["hostPort"], port, "with hostNetwork the host port is the container port");
    let hosts = example_hosts(&all);
    assert!(!hosts.is_empty(), "the example hosts.txt lists no host");
    for host in &hosts {
        assert_eq!(port_of(host), port, "hosts.txt line {host}");
    }
}

#[test]
fn the_example_job_is_a_job_file_iolab_accepts_on_the_agents_disk() {
    let all = objects();
    let text =
        object(&all, "ConfigMap", "iolab-fleet")["data"]["job.toml"].as_str().expect("job.toml").to_string();
    let options = iolab_spec::jobfile::parse(&text).unwrap_or_else(|e| panic!("job.toml: {e}"));
    let plan = iolab_spec::resolve(Some(&options), &iolab_spec::Options::default())
        .unwrap_or_else(|e| panic!("job.toml: {e}"));
    let group = &plan.jobs[0].groups[0];
    assert_eq!((group.access.read_pct, group.access.random_pct), (100, 100), "a random read job");
    assert_eq!(group.access.max_bs(), iolab_spec::Bytes(4096));
    let (_, agent) = container(only(&all, "DaemonSet"));
    let allowed = PathBuf::from(flag(&args(agent), "--allow-write"));
    assert_eq!(group.target.paths, vec![allowed], "the example should test the disk the agents are given");
}

#[test]
fn the_dockerfile_builds_this_package_and_runs_its_binary() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/Dockerfile");
    let text = std::fs::read_to_string(&path).expect("deploy/Dockerfile");
    // This test belongs to the package that builds the binary; its name is what -p takes.
    let build = format!("cargo build --release --locked -p {}", env!("CARGO_PKG_NAME"));
    assert!(text.contains(&build), "deploy/Dockerfile should run `{build}`");
    assert!(Path::new(common::IOLAB).ends_with("iolab"));
    assert!(
        text.contains("/target/release/iolab /usr/local/bin/iolab"),
        "the binary is copied from the builder"
    );
    // The manifests give only args, so the entrypoint must be iolab itself.
    assert!(text.contains(r#"ENTRYPOINT ["/usr/local/bin/iolab"]"#), "deploy/Dockerfile's entrypoint");
}
