//! `iolab fleet ... files [JOB_FILE] [flags] DIR`: the fileset workload on every host of the
//! fleet, phase by phase in lock-step (crates/fleet's `Fleet::run_files`), each phase's
//! histograms merged exactly across hosts. Kept as one run of kind `fleet files`, a point per
//! phase as it ends (as `iolab files` keeps its run), so `results`, `compare` and `report`
//! read it; the report is a local run's plus a `fleet` section with each host's phases.

use std::path::Path;
use std::process::ExitCode;

use iolab_files::stored::{self, Tree};
use iolab_files::{FilesPlan, FilesReport, PhaseResult, FILES_SCHEMA};
use iolab_fleet::coordinator::{FilesHost, Fleet, FleetFiles};
use iolab_report::{files_text, thousands};
use serde_json::json;

use crate::args::{FilesArgs, StoreArgs};
use crate::exit;
use crate::files_command;
use crate::files_progress::FilesLine;
use crate::flow::{self, Delivery};
use crate::progress::ProgressLine;

pub fn run(args: FilesArgs, store: &StoreArgs, fleet: &mut Fleet) -> ExitCode {
    if args.clean {
        return exit::usage(
            "--clean works on one host: an agent removes its tree itself when the session ends (run `iolab files --clean DIR` on a host for a tree a killed agent left)",
        );
    }
    let options = match files_command::options(&args) {
        Ok(options) => options,
        Err(message) => return exit::usage(message),
    };
    if options.keep == Some(true) {
        return exit::usage("--keep: an agent always removes its tree when the session ends; run `iolab files` on the host to keep one");
    }
    let dir = match &options.dir {
        Some(dir) if dir.is_absolute() => dir.clone(),
        Some(dir) => {
            return exit::usage(format!(
                "DIR {} is relative; give the absolute path on the hosts, under each agent's --allow-write",
                dir.display()
            ))
        }
        None => {
            return exit::usage(
                "give DIR, the directory each host builds its tree in (under its agent's --allow-write)",
            )
        }
    };
    let plan = match options.plan() {
        Ok(plan) if plan.mix.is_some() => {
            return exit::usage(
                "iolab fleet files runs phases in lock-step; a mix (--mix, --profile) runs on one host with `iolab files` for now",
            )
        }
        Ok(plan) => plan,
        Err(e) => return exit::usage(e),
    };
    let (json, quiet) = (options.json == Some(true), options.quiet == Some(true));
    let recording = match files_command::start(store, &plan, &dir.display().to_string(), true) {
        Ok(recording) => recording,
        Err(code) => return code,
    };
    let output = iolab_spec::OutputSpec { json, quiet, path: None };
    flow::run_own(
        &output,
        recording,
        |recording, interrupt| {
            let mut progress = ProgressLine::new(quiet || json);
            let line = FilesLine::new(quiet || json);
            let live = |seen| line.show(&seen);
            // Phases heard so far, each a host's `phases` index (a phase not kept still counts).
            let mut phases_heard = 0;
            let ran = fleet.run_files(
                &plan,
                &dir.display().to_string(),
                interrupt,
                &mut progress,
                &live,
                |phase, hosts| {
                    if !(quiet || json) {
                        line.say(&format!(
                            "iolab: fleet files: {} {} of {} on {} host(s) in {:.2} s ({}/s)",
                            phase.phase,
                            thousands(phase.done as f64),
                            thousands(phase.planned as f64),
                            hosts.iter().filter(|h| h.failed.is_none()).count(),
                            phase.elapsed_s,
                            thousands(phase.ops_per_s)
                        ));
                    }
                    let index = phases_heard;
                    phases_heard += 1;
                    let trees: Vec<Tree<'_>> = hosts
                        .iter()
                        .filter_map(|h| {
                            let name = format!("{}:{}", h.host, h.dir.as_deref().unwrap_or("?"));
                            h.phases.get(index).map(|phase| Tree { name, phase })
                        })
                        .collect();
                    recording
                        .keep("phase", phase.phase.name(), |seq| stored::point(seq, &plan, phase, &trees));
                },
            );
            line.finish();
            ran.map_err(|e| exit::fail(exit::run_error_code(&e), &e.to_string()))
        },
        |ran| {
            let report = report(&plan, &dir, &ran);
            let full = with_hosts(&report, &ran);
            let rendered = if json {
                format!("{}\n", serde_json::to_string_pretty(&full).unwrap_or_default())
            } else {
                format!("{}{}", files_text(&full), hosts_text(&ran))
            };
            let failure = report
                .failure()
                .map(|(phase, failure)| {
                    files_command::stopped(
                        phase,
                        failure,
                        "stopped the fleet",
                        &format!("; {}", ran.trees_said()),
                    )
                })
                .or_else(|| ran.lost_host().map(|host| (exit::IO_ERRORS, Some(dropped_out(host)))));
            files_command::ended(
                Delivery { rendered, json: Some(full.to_string()), failure },
                report.interrupted(),
            )
        },
        files_command::said_interrupted,
    )
}

/// A host that dropped out, and what it means for the run.
fn dropped_out(host: &FilesHost) -> String {
    format!(
        "{} dropped out ({}); the fleet stopped after that phase",
        host.host,
        host.failed.as_deref().unwrap_or("?")
    )
}

/// The fleet's report in the form of a local run's: merged phases, counts over every host.
fn report(plan: &FilesPlan, dir: &Path, ran: &FleetFiles) -> FilesReport {
    let hosts = ran.hosts.iter().filter(|h| h.dir.is_some()).count() as u64;
    let mut notes = Vec::new();
    for host in &ran.hosts {
        notes.extend(host.notes.iter().map(|note| format!("{}: {note}", host.host)));
        if let Some(reason) = &host.failed {
            notes.push(format!("{}: dropped out: {reason}", host.host));
        }
    }
    FilesReport {
        schema: FILES_SCHEMA.to_string(),
        dir: dir.display().to_string(),
        plan: plan.clone(),
        tree: plan.describe_tree(plan.total_files() * hosts, plan.total_dirs() * hosts),
        total_files: plan.total_files() * hosts,
        total_dirs: plan.total_dirs() * hosts,
        phases: ran.phases.clone(),
        notes,
        peak_rss_bytes: ran.hosts.iter().map(|h| h.peak_rss_bytes).max().unwrap_or(0),
        kept: false,
        repeats: Vec::new(),
    }
}

/// The report's JSON with `fleet`: each host's own phases (the same schema) and status.
fn with_hosts(report: &FilesReport, ran: &FleetFiles) -> serde_json::Value {
    let mut value = serde_json::to_value(report).unwrap_or_default();
    let hosts: Vec<serde_json::Value> = ran.hosts.iter().map(host_json).collect();
    if let Some(object) = value.as_object_mut() {
        let skews: Vec<serde_json::Value> = ran
            .phases
            .iter()
            .zip(&ran.start_skew_ns)
            .map(|(p, skew)| json!({ "phase": p.phase, "start_skew_ms": *skew as f64 / 1e6 }))
            .collect();
        object.insert("fleet".into(), json!({ "hosts": hosts, "phases": skews }));
    }
    value
}

fn host_json(host: &FilesHost) -> serde_json::Value {
    json!({
        "host": host.host,
        "hostname": host.hostname,
        "status": if host.failed.is_some() { "failed" } else { "ok" },
        "failed": host.failed,
        "clock_offset_ms": host.clock_offset_ns as f64 / 1e6,
        "dir": host.dir,
        "phases": host.phases,
        "notes": host.notes,
        "peak_rss_bytes": host.peak_rss_bytes,
    })
}

/// Each phase's row per host: what it did, its rates and its own kind's p99.
fn hosts_text(ran: &FleetFiles) -> String {
    let mut out = format!(
        "\nper host ({} hosts, each its own tree; peak memory is the agents' largest):\n  {:<8} {:<24} {:>10} {:>12} {:>14} {:>10}\n",
        ran.hosts.len(),
        "phase",
        "host",
        "done",
        "ops/s",
        "stonewall/s",
        "p99"
    );
    for (index, phase) in ran.phases.iter().enumerate() {
        let name = phase.phase.name();
        if let Some(skew) = ran.start_skew_ns.get(index) {
            out.push_str(&format!("  {name:<8} the hosts began it {:.2} ms apart\n", *skew as f64 / 1e6));
        }
        for host in &ran.hosts {
            let Some(own) = host.phases.get(index) else {
                let why = host.failed.as_deref().unwrap_or("no result");
                out.push_str(&format!("  {name:<8} {:<24} {why}\n", host.host));
                continue;
            };
            out.push_str(&format!(
                "  {name:<8} {:<24} {:>10} {:>12} {:>14} {:>10}{}\n",
                host.host,
                thousands(own.done as f64),
                thousands(own.ops_per_s),
                thousands(own.stonewall.ops_per_s),
                p99(own),
                own.failure
                    .as_ref()
                    .map_or(String::new(), |f| format!("  {} of {} failed: {}", f.op, f.path, f.error)),
            ));
        }
    }
    out
}

fn p99(phase: &PhaseResult) -> String {
    phase
        .main()
        .and_then(|k| k.summary.percentile(99.0))
        .map_or_else(|| "-".to_string(), |ns| iolab_stats::format::latency(ns as f64))
}
