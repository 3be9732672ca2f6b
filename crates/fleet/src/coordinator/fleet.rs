//! The coordinator: a fleet of agents behind `iolab_runner::Remote`. It greets every host and
//! opens a session on each before anything runs (one refusal and nothing starts), checks each
//! job on every host, starts them at one instant on each agent's own clock, follows their live
//! streams, and merges their results exactly. A host that dies mid-job is marked failed with
//! its reason; the others finish and are merged, and what the dead host streamed is kept.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use iolab_runner::{Observer, Remote, RunError};
use iolab_spec::JobSpec;
use iolab_stats::result::JobResult;

// `iolab fleet files`: its phases in lock-step, on the hosts of this fleet.
#[path = "files.rs"]
pub mod files;

use super::client::{unix_ns, AgentClient, ClientError, Greeting};
use super::heartbeat::Heartbeat;
use super::live::{self, LiveFleet};
use super::netbench;
use crate::merge::{self, FinishedHost, HostOutcome, HostPart};
use crate::protocol::{AgentResult, ReplayWire};
use crate::replay_wire;

mod each;

/// How long after the start requests go out the hosts begin: room for every request to land.
const MIN_START_LEAD: Duration = Duration::from_millis(300);
/// How long a finished job's result may take to arrive.
const RESULT_WAIT: Duration = Duration::from_secs(30);
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

pub struct FleetConfig {
    /// "host:port" of each agent.
    pub hosts: Vec<String>,
    pub token: String,
    /// How long an agent keeps running without hearing from this coordinator.
    pub lease: Duration,
    /// Measure each host's network throughput first, for this long per host.
    pub netbench: Option<Duration>,
}

/// One host's job as it is sent: job-file text, and a replay's description with its requests
/// as `replay_wire` bytes.
#[derive(Clone)]
struct HostJob {
    text: String,
    replay: Option<(ReplayWire, Arc<[u8]>)>,
}

struct Host {
    client: Arc<AgentClient>,
    greeting: Greeting,
    session: String,
    /// Why it dropped out; it takes no part in later jobs.
    failed: Option<String>,
}

pub struct Fleet {
    hosts: Vec<Host>,
    heartbeat: Heartbeat,
    /// Per host: its measured network throughput, 10^6 bytes/s.
    links: Vec<Option<f64>>,
}

impl Fleet {
    /// Greets every host and opens a session on each; an error names every host that failed,
    /// and no session is left open.
    pub fn connect(config: &FleetConfig, observer: &mut dyn Observer) -> Result<Fleet, RunError> {
        let coordinator = format!("{}[{}]", hostname(), std::process::id());
        let clients: Vec<Arc<AgentClient>> =
            config.hosts.iter().map(|h| Arc::new(AgentClient::new(h, &config.token))).collect();
        let greeted = on_every(&clients, |client| {
            let greeting = client.hello()?;
            let opened = client.open_session(config.lease, &coordinator)?;
            Ok((greeting, opened.session))
        });
        let failures = failures(&clients, &greeted);
        if !failures.is_empty() {
            for (client, ok) in clients.iter().zip(&greeted) {
                if let Ok((_, session)) = ok {
                    let _ = client.close(session);
                }
            }
            return Err(RunError::Invalid(format!("{failures}; nothing was started")));
        }
        let hosts: Vec<Host> = clients
            .into_iter()
            .zip(greeted)
            .filter_map(|(client, ok)| {
                ok.ok().map(|(greeting, session)| Host { client, greeting, session, failed: None })
            })
            .collect();
        for host in &hosts {
            let hello = &host.greeting.hello;
            observer.note(&format!(
                "{}: {} ({} CPUs, kernel {}), clock {:+.3} ms, round trip {:.2} ms",
                host.client.address,
                hello.hostname,
                hello.cpus,
                hello.kernel,
                host.greeting.clock_offset_ns as f64 / 1e6,
                host.greeting.round_trip.as_secs_f64() * 1e3
            ));
        }
        let sessions = hosts.iter().map(|h| (h.client.clone(), h.session.clone())).collect();
        let heartbeat = Heartbeat::start(sessions, config.lease / 3);
        let mut fleet = Fleet { links: vec![None; hosts.len()], hosts, heartbeat };
        if let Some(duration) = config.netbench {
            let clients: Vec<_> = fleet.hosts.iter().map(|h| h.client.clone()).collect();
            fleet.links = netbench::measure(&clients, duration, observer);
        }
        Ok(fleet)
    }

    /// What each host runs: `job`, with a rate (`--rate-iops`) shared evenly by the running
    /// hosts, as a group's rate is by its threads: a fleet's rate is the fleet's. A group's
    /// replay goes beside the text, its requests as bytes.
    fn job_text(&self, job: &JobSpec) -> Result<HostJob, RunError> {
        let hosts = self.running().len().max(1) as u64;
        let mut share = job.clone();
        for rate in share.groups.iter_mut().filter_map(|g| g.rate.as_mut()) {
            rate.iops = rate.iops.div_ceil(hosts).max(1);
        }
        let replay = match share.groups.as_mut_slice() {
            [group] => group.replay.take().map(|spec| {
                let wire = ReplayWire {
                    source: spec.source,
                    speed: spec.speed,
                    fit: spec.fit,
                    skipped: spec.skipped,
                    requests: spec.ios.len() as u64,
                };
                (wire, Arc::from(replay_wire::encode(&spec.ios)))
            }),
            // The wire form refuses a replay among several groups.
            _ => None,
        };
        let text = iolab_spec::wire::job_file_text(&share).map_err(|e| RunError::Invalid(e.to_string()))?;
        Ok(HostJob { text, replay })
    }

    fn running(&self) -> Vec<usize> {
        (0..self.hosts.len()).filter(|&i| self.hosts[i].failed.is_none()).collect()
    }

    /// Sends `job` to every running host. A refusal is the user's to fix and fails the job;
    /// an unreachable host drops out.
    fn prepare_all(&mut self, job: &HostJob, observer: &mut dyn Observer) -> Result<(), RunError> {
        let running = self.running();
        let clients: Vec<_> = running.iter().map(|&i| self.hosts[i].client.clone()).collect();
        let sessions: Vec<_> = running.iter().map(|&i| self.hosts[i].session.clone()).collect();
        let prepared = on_every_indexed(&clients, |n, client| {
            client.prepare(&sessions[n], &job.text, job.replay.as_ref())
        });
        refusals(&clients, &prepared)?;
        for (&i, p) in running.iter().zip(prepared) {
            match p {
                Ok(prepared) => {
                    for note in prepared.notes {
                        observer.note(&format!("{}: {note}", self.hosts[i].client.address));
                    }
                }
                Err(e) => self.drop_host(i, e.to_string(), observer),
            }
        }
        self.require_some()
    }

    fn drop_host(&mut self, i: usize, reason: String, observer: &mut dyn Observer) {
        observer.note(&format!("{} dropped out: {reason}", self.hosts[i].client.address));
        self.heartbeat.forget(&self.hosts[i].session);
        self.hosts[i].failed = Some(reason);
    }

    fn require_some(&self) -> Result<(), RunError> {
        if self.running().is_empty() {
            let reasons: Vec<String> = self
                .hosts
                .iter()
                .map(|h| format!("{}: {}", h.client.address, h.failed.as_deref().unwrap_or("?")))
                .collect();
            return Err(RunError::Fleet(format!("every host of the fleet failed ({})", reasons.join("; "))));
        }
        Ok(())
    }

    /// One start instant for the `running` hosts: now plus a lead of four of the slowest round
    /// trips (at least MIN_START_LEAD). Per host, its client, and its session with the instant
    /// on that agent's clock.
    fn start_instants(&self, running: &[usize]) -> (Vec<Arc<AgentClient>>, Vec<(String, u64)>) {
        let slowest = running.iter().map(|&i| self.hosts[i].greeting.round_trip).max().unwrap_or_default();
        let instant = unix_ns() + (slowest * 4).max(MIN_START_LEAD).as_nanos() as u64;
        let clients = running.iter().map(|&i| self.hosts[i].client.clone()).collect();
        let starts = running
            .iter()
            .map(|&i| {
                let host = &self.hosts[i];
                (host.session.clone(), instant.saturating_add_signed(host.greeting.clock_offset_ns))
            })
            .collect();
        (clients, starts)
    }

    /// Starts every running host at one instant (`start_instants`).
    fn start_all(&mut self, observer: &mut dyn Observer) -> Result<(), RunError> {
        let running = self.running();
        let (clients, starts) = self.start_instants(&running);
        let started = on_every_indexed(&clients, |n, client| client.start(&starts[n].0, starts[n].1));
        for (&i, s) in running.iter().zip(started) {
            if let Err(e) = s {
                self.drop_host(i, e.to_string(), observer);
            }
        }
        self.require_some()
    }

    /// Follows the running hosts until each has finished or dropped out; aborts them all once
    /// `interrupt` is set.
    fn follow(&mut self, job: &JobSpec, interrupt: &AtomicBool, observer: &mut dyn Observer) -> LiveFleet {
        let names = self.hosts.iter().map(|h| h.client.address.clone()).collect();
        let offsets = self.hosts.iter().map(|h| h.greeting.clock_offset_ns).collect();
        let mut fleet = LiveFleet::new(names, offsets);
        let (tx, rx) = mpsc::channel();
        for (i, host) in self.hosts.iter().enumerate() {
            match &host.failed {
                None => drop(live::follow(i, host.client.clone(), host.session.clone(), tx.clone())),
                Some(reason) => fleet.hear(live::Heard::Lost { host: i, reason: reason.clone() }),
            }
        }
        drop(tx);
        let (mut aborted, mut shown, began) = (false, Instant::now(), Instant::now());
        while !fleet.settled() {
            fleet.give_up_on_silent(began);
            if interrupt.load(Relaxed) && !aborted {
                aborted = true;
                let running = self.running();
                let clients: Vec<_> = running.iter().map(|&i| self.hosts[i].client.clone()).collect();
                let sessions: Vec<_> = running.iter().map(|&i| self.hosts[i].session.clone()).collect();
                on_every_indexed(&clients, |n, client| client.abort(&sessions[n]));
            }
            match rx.recv_timeout(PROGRESS_EVERY) {
                Ok(heard) => fleet.hear(heard),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if shown.elapsed() >= PROGRESS_EVERY {
                shown = Instant::now();
                if let Some(update) = fleet.progress(&job.name) {
                    observer.progress(&update);
                }
            }
        }
        observer.finish();
        fleet
    }

    /// Fetches each finished host's result; a host whose result cannot be had drops out.
    fn collect(&mut self, live: &LiveFleet, observer: &mut dyn Observer) -> Vec<HostPart> {
        let running = self.running();
        let clients: Vec<_> = running.iter().map(|&i| self.hosts[i].client.clone()).collect();
        let sessions: Vec<_> = running.iter().map(|&i| self.hosts[i].session.clone()).collect();
        let fetched = on_every_indexed(&clients, |n, client| match live.failure(running[n]) {
            Some(reason) => Err(ClientError::Unreachable(reason.to_string())),
            None => client.result(&sessions[n], RESULT_WAIT)?.ok_or_else(|| {
                ClientError::Unreachable(format!("no result {} s after the job ended", RESULT_WAIT.as_secs()))
            }),
        });
        let mut results: Vec<Option<AgentResult>> = (0..self.hosts.len()).map(|_| None).collect();
        for (&i, fetched) in running.iter().zip(fetched) {
            match fetched {
                Ok(result) => results[i] = Some(result),
                Err(e) => self.drop_host(i, e.to_string(), observer),
            }
        }
        self.hosts
            .iter()
            .zip(results)
            .enumerate()
            .map(|(i, (host, result))| {
                let outcome = match (result, &host.failed) {
                    (Some(result), None) => FinishedHost::decode(result)
                        .map(|host| HostOutcome::Finished(Box::new(host)))
                        .map_err(|e| format!("its result is damaged: {e}")),
                    (_, failed) => Err(failed.clone().unwrap_or_else(|| "no result".into())),
                };
                let outcome = outcome.unwrap_or_else(|reason| HostOutcome::Failed {
                    reason,
                    live_series: live.series(i).to_vec(),
                });
                HostPart {
                    host: host.client.address.clone(),
                    hostname: host.greeting.hello.hostname.clone(),
                    clock_offset_ns: host.greeting.clock_offset_ns,
                    outcome,
                }
            })
            .collect()
    }
}

impl Remote for Fleet {
    fn check(&mut self, job: &JobSpec, observer: &mut dyn Observer) -> Result<(), RunError> {
        let text = self.job_text(job)?;
        self.prepare_all(&text, observer)
    }

    fn run(
        &mut self,
        job: &JobSpec,
        interrupt: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<JobResult, RunError> {
        // A host that drops out while preparing changes every host's share of a rate.
        loop {
            let hosts = self.running().len();
            let text = self.job_text(job)?;
            self.prepare_all(&text, observer)?;
            if self.running().len() == hosts {
                break;
            }
        }
        if interrupt.load(Relaxed) {
            return Err(RunError::Interrupted);
        }
        self.start_all(observer)?;
        let live = self.follow(job, interrupt, observer);
        let parts = self.collect(&live, observer);
        let mut merged =
            merge::merge(job, &parts, &self.links).map_err(|e| RunError::Fleet(e.to_string()))?;
        if let Some(fleet) = merged.fleet.as_mut() {
            let phase_end_ns = parts.iter().filter_map(window_end_unix_ns).max().unwrap_or(0);
            fleet.merge_latency_ms = unix_ns().saturating_sub(phase_end_ns) as f64 / 1e6;
            fleet.max_stream_lag_ms = live.max_lag_ms();
        }
        Ok(merged)
    }

    fn host_names(&self) -> Vec<String> {
        self.host_addresses()
    }

    fn check_regions(
        &mut self,
        job: &JobSpec,
        observer: &mut dyn Observer,
    ) -> Result<Vec<Option<u64>>, RunError> {
        self.regions(job, observer)
    }

    fn run_each(
        &mut self,
        jobs: &[JobSpec],
        interrupt: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<iolab_runner::EachHost, RunError> {
        self.each(jobs, interrupt, observer)
    }
}

impl Drop for Fleet {
    /// Closes every session (the agents remove their scratch files); an agent that cannot be
    /// reached stops by itself when its lease runs out.
    fn drop(&mut self) {
        self.heartbeat.stop();
        let clients: Vec<_> = self.hosts.iter().map(|h| h.client.clone()).collect();
        let sessions: Vec<_> = self.hosts.iter().map(|h| h.session.clone()).collect();
        on_every_indexed(&clients, |n, client| client.close(&sessions[n]));
    }
}

/// Runs `call` on every client at once, a thread each; results in the clients' order.
fn on_every<T: Send>(
    clients: &[Arc<AgentClient>],
    call: impl Fn(&AgentClient) -> Result<T, ClientError> + Sync,
) -> Vec<Result<T, ClientError>> {
    on_every_indexed(clients, |_, client| call(client))
}

/// The job's refusals by any host (a 4xx answer: the user's to fix), each named by its host:
/// an error, so nothing starts anywhere. Unreachable hosts are the caller's to drop.
fn refusals<T>(clients: &[Arc<AgentClient>], prepared: &[Result<T, ClientError>]) -> Result<(), RunError> {
    let refused: Vec<String> = clients
        .iter()
        .zip(prepared)
        .filter_map(|(client, p)| match p {
            Err(e) if e.is_refusal() => Some(format!("{}: {e}", client.address)),
            _ => None,
        })
        .collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err(RunError::Invalid(format!("{}; nothing was started", refused.join("; "))))
    }
}

fn on_every_indexed<T: Send>(
    clients: &[Arc<AgentClient>],
    call: impl Fn(usize, &AgentClient) -> Result<T, ClientError> + Sync,
) -> Vec<Result<T, ClientError>> {
    std::thread::scope(|scope| {
        let call = &call;
        let handles: Vec<_> =
            clients.iter().enumerate().map(|(n, client)| scope.spawn(move || call(n, client))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Err(ClientError::Garbled("the request thread panicked".into())))
            })
            .collect()
    })
}

/// "a:7878: cannot reach it: ...; b:7878: it refused (403): ..." for every failed host.
fn failures<T>(clients: &[Arc<AgentClient>], results: &[Result<T, ClientError>]) -> String {
    clients
        .iter()
        .zip(results)
        .filter_map(|(client, r)| r.as_ref().err().map(|e| format!("{}: {e}", client.address)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// When a finished host's measured window closed, on the coordinator's clock.
fn window_end_unix_ns(part: &HostPart) -> Option<u64> {
    let HostOutcome::Finished(host) = &part.outcome else { return None };
    let start = host.result.window_start_unix_ns.saturating_add_signed(-part.clock_offset_ns);
    Some(start + (host.result.measured_s * 1e9) as u64)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_default()
}
