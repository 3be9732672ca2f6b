//! `iolab fleet files`: one fileset on every host, phase by phase in lock-step. Every host
//! makes its directory ready first (one refusal and nothing runs); then each phase starts at
//! one instant on every host (on each agent's own clock), and the next starts only once every
//! host has ended this one. A host that fails a phase (a full filesystem), or cannot be
//! reached, stops the fleet after that phase. Each host removes its tree as its run ends and
//! says what it removed and left (`FilesHost::tree`); a host that could not say (it dropped
//! out) removes it when its session closes (the `Fleet`'s drop), if it can be reached.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use iolab_files::{FilesPlan, PhaseResult, PhaseSnapshot, SizeSpec};
use iolab_runner::{Observer, RunError};

use super::super::client::{check, read, AgentClient, ClientError};
use super::{on_every_indexed, refusals, Fleet};
use crate::merge::files::merge_phase;
use crate::protocol::{FilesPhaseDone, FilesPrepare, FilesPrepared, FilesProgress, Start, TreeRemoved};

/// Each wait for a phase's result asks for at most this much; the coordinator asks again.
const RESULT_POLL: Duration = Duration::from_secs(2);
const CALL_TIMEOUT: Duration = Duration::from_secs(15);
/// Making the directory ready may remove an earlier tree of millions of files.
const PREPARE_TIMEOUT: Duration = Duration::from_secs(3600);

/// One host's part of a fileset run.
#[derive(Debug, Clone)]
pub struct FilesHost {
    /// "host:port", as given.
    pub host: String,
    pub hostname: String,
    pub clock_offset_ns: i64,
    /// The directory as the agent opened it.
    pub dir: Option<String>,
    /// Its phases, with their histograms.
    pub phases: Vec<PhaseResult>,
    pub notes: Vec<String>,
    /// When each phase began there, on the coordinator's clock (ns since the Unix epoch).
    pub phase_starts_ns: Vec<u64>,
    /// Its agent's peak resident memory, bytes.
    pub peak_rss_bytes: u64,
    /// Why it dropped out.
    pub failed: Option<String>,
    /// Its tree removed as its run ended: what went and what was left (None: not said).
    pub tree: Option<TreeRemoved>,
}

/// The fleet's phases (merged) and each host's.
#[derive(Debug, Clone)]
pub struct FleetFiles {
    pub phases: Vec<PhaseResult>,
    pub hosts: Vec<FilesHost>,
    /// Per phase: how far apart the hosts began it, on the coordinator's clock (agents'
    /// offsets taken out), ns.
    pub start_skew_ns: Vec<u64>,
}

impl FleetFiles {
    /// What became of each host's tree, in a clause: "every host's tree was removed" only when
    /// every host said so.
    pub fn trees_said(&self) -> String {
        if self.hosts.iter().all(|h| h.tree.as_ref().is_some_and(TreeRemoved::whole)) {
            return "every host's tree was removed".to_string();
        }
        let said: Vec<String> = self
            .hosts
            .iter()
            .filter_map(|h| match &h.tree {
                Some(tree) if tree.whole() => None,
                Some(TreeRemoved { error: Some(error), .. }) => {
                    Some(format!("{}'s tree could not be removed ({error})", h.host))
                }
                Some(tree) => Some(format!(
                    "{} left {} entries iolab did not make (first: {}) with its marker",
                    h.host,
                    tree.left,
                    tree.first_left.as_deref().unwrap_or("?")
                )),
                None => Some(format!(
                    "{} did not say; its agent removes its tree when the session closes",
                    h.host
                )),
            })
            .collect();
        said.join("; ")
    }

    /// A host dropped out (its phases up to then are kept, none of the fleet's later ones ran).
    pub fn lost_host(&self) -> Option<&FilesHost> {
        self.hosts.iter().find(|h| h.failed.is_some())
    }
}

impl Fleet {
    /// Runs `plan` in `dir` on every host, calling `on_phase` with each merged phase (and every
    /// host's part) as it ends, and `live` with the running phase summed over the hosts each
    /// time a host says how far it is.
    pub fn run_files(
        &mut self,
        plan: &FilesPlan,
        dir: &str,
        interrupt: &AtomicBool,
        observer: &mut dyn Observer,
        live: &(dyn Fn(PhaseSnapshot) + Sync),
        mut on_phase: impl FnMut(&PhaseResult, &[FilesHost]),
    ) -> Result<FleetFiles, RunError> {
        let job = job_text(plan);
        let mut hosts: Vec<FilesHost> = self
            .hosts
            .iter()
            .map(|h| FilesHost {
                host: h.client.address.clone(),
                hostname: h.greeting.hello.hostname.clone(),
                clock_offset_ns: h.greeting.clock_offset_ns,
                dir: None,
                phases: Vec::new(),
                notes: Vec::new(),
                phase_starts_ns: Vec::new(),
                peak_rss_bytes: 0,
                failed: h.failed.clone(),
                tree: None,
            })
            .collect();
        self.prepare_files(&job, dir, &mut hosts, observer)?;
        let (mut phases, mut start_skew_ns) = (Vec::new(), Vec::new());
        for (index, (phase, planned)) in plan.planned().into_iter().enumerate() {
            if interrupt.load(Relaxed) {
                break;
            }
            let running = self.running();
            let mut lost = self.start_files_phase(&running, &mut hosts, observer);
            let running = self.running();
            let clients: Vec<_> = running.iter().map(|&i| self.hosts[i].client.clone()).collect();
            let sessions: Vec<_> = running.iter().map(|&i| self.hosts[i].session.clone()).collect();
            let heard = Mutex::new(vec![None::<FilesProgress>; clients.len()]);
            let hear = |n: usize, progress: FilesProgress| {
                let mut heard = heard.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                heard[n] = Some(progress);
                let this_phase = || heard.iter().flatten().filter(|p| p.phase == phase);
                live(PhaseSnapshot {
                    phase,
                    done: this_phase().map(|p| p.done).sum(),
                    planned: planned * clients.len() as u64,
                    runtime: None,
                    elapsed: Duration::from_nanos(this_phase().map(|p| p.elapsed_ns).max().unwrap_or(0)),
                });
            };
            let results = on_every_indexed(&clients, |n, client| {
                phase_result(client, &sessions[n], interrupt, &|progress| hear(n, progress))
            });
            for (&i, result) in running.iter().zip(results) {
                match result.and_then(decode) {
                    Ok(done) if done.index == index && done.result.phase == phase => {
                        hosts[i].phases.push(done.result);
                        hosts[i].notes = done.notes;
                        hosts[i].peak_rss_bytes = done.peak_rss_bytes;
                        hosts[i].tree = done.tree;
                        let start = done.started_unix_ns.saturating_add_signed(-hosts[i].clock_offset_ns);
                        hosts[i].phase_starts_ns.push(start);
                    }
                    Ok(done) => {
                        lost = true;
                        let reason = format!(
                            "it answered phase {} ({}) where phase {index} ({phase}) was asked",
                            done.index, done.result.phase
                        );
                        self.drop_host(i, reason.clone(), observer);
                        hosts[i].failed = Some(reason);
                    }
                    Err(e) => {
                        lost = true;
                        self.drop_host(i, e.to_string(), observer);
                        hosts[i].failed = Some(e.to_string());
                    }
                }
            }
            let parts: Vec<(&str, &PhaseResult)> =
                hosts.iter().filter_map(|h| h.phases.get(index).map(|p| (h.host.as_str(), p))).collect();
            let Some(merged) = merge_phase(&parts) else { break };
            let starts = hosts.iter().filter_map(|h| h.phase_starts_ns.get(index).copied());
            let (first, last) = starts.fold((u64::MAX, 0), |(lo, hi), s| (lo.min(s), hi.max(s)));
            start_skew_ns.push(last.saturating_sub(first));
            on_phase(&merged, &hosts);
            let go_on = merged.failure.is_none() && !merged.interrupted && !lost;
            phases.push(merged);
            if !go_on {
                break;
            }
        }
        Ok(FleetFiles { phases, hosts, start_skew_ns })
    }

    /// Has every host make its directory ready. A refusal on any host is the user's to fix:
    /// nothing runs (the hosts that did prepare remove their empty trees when the sessions close).
    fn prepare_files(
        &mut self,
        job: &str,
        dir: &str,
        hosts: &mut [FilesHost],
        observer: &mut dyn Observer,
    ) -> Result<(), RunError> {
        let running = self.running();
        let clients: Vec<_> = running.iter().map(|&i| self.hosts[i].client.clone()).collect();
        let sessions: Vec<_> = running.iter().map(|&i| self.hosts[i].session.clone()).collect();
        // `{n}` in DIR is the host's place in the list: each host its own directory on a
        // filesystem the hosts share.
        let requests: Vec<FilesPrepare> = running
            .iter()
            .map(|i| FilesPrepare { job: job.to_string(), dir: dir.replace("{n}", &i.to_string()) })
            .collect();
        let prepared =
            on_every_indexed(&clients, |n, client| files_prepare(client, &sessions[n], &requests[n]));
        refusals(&clients, &prepared)?;
        for (&i, p) in running.iter().zip(prepared) {
            match p {
                Ok(prepared) => {
                    for note in &prepared.notes {
                        observer.note(&format!("{}: {note}", self.hosts[i].client.address));
                    }
                    hosts[i].dir = Some(prepared.dir);
                }
                Err(e) => {
                    self.drop_host(i, e.to_string(), observer);
                    hosts[i].failed = Some(e.to_string());
                }
            }
        }
        self.require_some()
    }

    /// Starts the next phase on every running host at one instant, as `start_all` does a job;
    /// whether a host dropped out (its start was not taken).
    fn start_files_phase(
        &mut self,
        running: &[usize],
        hosts: &mut [FilesHost],
        observer: &mut dyn Observer,
    ) -> bool {
        let (clients, starts) = self.start_instants(running);
        let started = on_every_indexed(&clients, |n, client| {
            client
                .send(
                    &format!("/sessions/{}/files/start", starts[n].0),
                    &Start { at_unix_ns: starts[n].1 },
                    CALL_TIMEOUT,
                )
                .map(drop)
        });
        let mut lost = false;
        for (&i, s) in running.iter().zip(started) {
            if let Err(e) = s {
                lost = true;
                self.drop_host(i, e.to_string(), observer);
                hosts[i].failed = Some(e.to_string());
            }
        }
        lost
    }
}

fn files_prepare(
    client: &AgentClient,
    session: &str,
    request: &FilesPrepare,
) -> Result<FilesPrepared, ClientError> {
    read(client.send(&format!("/sessions/{session}/files/prepare"), request, PREPARE_TIMEOUT)?)
}

/// Waits for the phase's result on one host; once `interrupt` is set, aborts it there (it
/// answers with what it did).
/// Waits for the host's phase to end, handing `live` each answer that says how far it is.
fn phase_result(
    client: &AgentClient,
    session: &str,
    interrupt: &AtomicBool,
    live: &dyn Fn(FilesProgress),
) -> Result<FilesPhaseDone, ClientError> {
    let mut aborted = false;
    loop {
        if interrupt.load(Relaxed) && !aborted {
            aborted = true;
            let _ = client.abort(session);
        }
        let path = format!("/sessions/{session}/files/result?wait_ms={}", RESULT_POLL.as_millis());
        let mut response = client.get(&path, Some(RESULT_POLL + CALL_TIMEOUT))?;
        if response.status().as_u16() == 202 {
            // An older agent says only "still running".
            if let Ok(progress) = response.body_mut().read_json::<FilesProgress>() {
                live(progress);
            }
            continue;
        }
        let mut response = check(response)?;
        return response
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_json()
            .map_err(|e| ClientError::Garbled(e.to_string()));
    }
}

/// The phase with its histograms decoded.
fn decode(mut done: FilesPhaseDone) -> Result<FilesPhaseDone, ClientError> {
    done.result.histograms = done
        .histograms
        .iter()
        .map(|(kind, encoded)| {
            encoded.decode().map(|stats| (*kind, stats)).map_err(|e| {
                ClientError::Garbled(format!(
                    "the {} histogram of its {} phase: {e}",
                    kind.name(),
                    done.result.phase
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(done)
}

/// The plan as `iolab files` job-file text: what travels, so that the agent parses and checks
/// it exactly as a user's job file.
pub fn job_text(plan: &FilesPlan) -> String {
    let count = match plan.files {
        iolab_files::FileCount::Total(n) => format!("files = {n}"),
        iolab_files::FileCount::PerDir(n) => format!("files_per_dir = {n}"),
    };
    let sizes = match &plan.sizes {
        SizeSpec::Fixed(size) => size.to_string(),
        SizeSpec::Weighted(list) => {
            let list: Vec<String> = list.iter().map(|(size, weight)| format!("{size}:{weight}")).collect();
            format!("\"{}\"", list.join(","))
        }
        SizeSpec::Lognormal { median, p99 } => format!("\"lognormal:{median}:{p99}\""),
        SizeSpec::Gamma { mean, shape } => format!("\"gamma:{mean}:{shape}\""),
    };
    let phases: Vec<&str> = plan.phases.iter().map(|p| p.name()).collect();
    format!(
        "{count}\ndirs_per_dir = {}\ndepth = {}\nsizes = {sizes}\nphases = \"{}\"\nthreads = {}\nshared_dir = {}\nengine = \"{}\"\nfsync = {}\ndirect = {}\nseed = {}\n",
        plan.dirs_per_dir,
        plan.depth,
        phases.join(","),
        plan.threads,
        plan.shared_dir,
        plan.engine.name(),
        plan.fsync,
        plan.direct,
        plan.seed
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_files::FilesOptions;

    #[test]
    fn the_job_text_is_the_same_plan() {
        for options in [
            FilesOptions {
                files: Some(300),
                sizes: Some("4k:3,64k:1".parse().expect("sizes")),
                threads: Some(2),
                fsync: Some(true),
                ..FilesOptions::default()
            },
            FilesOptions {
                files_per_dir: Some(7),
                depth: Some(2),
                sizes: Some("lognormal:16k:1m".parse().expect("sizes")),
                shared_dir: Some(true),
                engine: Some("sync".parse().expect("engine")),
                seed: Some(42),
                ..FilesOptions::default()
            },
        ] {
            let plan = options.plan().expect("plan");
            let text = job_text(&plan);
            let again = iolab_files::job::parse(&text).expect("parses").plan().expect("plan");
            assert_eq!(serde_json::to_value(&again).ok(), serde_json::to_value(&plan).ok(), "{text}");
        }
    }
}
