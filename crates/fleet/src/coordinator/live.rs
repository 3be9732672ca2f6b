//! Following a fleet job while it runs: one thread per host reads its agent's live stream and
//! forwards each event here; `LiveFleet` keeps each host's latest figures, merges the hosts'
//! interval histograms as they arrive (the fleet's live p99 is the p99 of the union, not an
//! average), and notices hosts that drop out.

use std::collections::BTreeMap;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use iolab_runner::{HostRate, Phase, ProgressUpdate};
use iolab_spec::Nanos;
use iolab_stats::result::SeriesPoint;
use iolab_stats::IntervalStats;

use super::client::{unix_ns, AgentClient, ClientError};
use crate::protocol::LiveEvent;

/// Reconnections a broken stream gets before its host counts as gone.
const RECONNECTS: u32 = 3;
const RECONNECT_PAUSE: Duration = Duration::from_millis(300);

/// A host whose stream says nothing, not even its keep-alive, for this long is gone.
pub const SILENCE_LIMIT: Duration = Duration::from_secs(10);

/// What a host's reader thread forwards.
// Nearly every message is an Event; boxing it to shrink the rare Lost would cost an allocation each.
#[allow(clippy::large_enum_variant)]
pub enum Heard {
    Event {
        host: usize,
        event: LiveEvent,
        received_ns: u64,
    },
    /// The agent's keep-alive: the host is there, with nothing new to say.
    Alive {
        host: usize,
    },
    /// The stream is gone for good, with why.
    Lost {
        host: usize,
        reason: String,
    },
}

/// Starts the thread that follows `host`'s stream of `session`, reconnecting where it broke.
pub fn follow(host: usize, client: Arc<AgentClient>, session: String, to: Sender<Heard>) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name(format!("iolab-live{host}"))
        .spawn(move || {
            let (mut seen, mut failures) = (0usize, 0u32);
            loop {
                let ended = match client.live(&session, seen) {
                    Ok(stream) => {
                        let mut ended = None;
                        for event in stream {
                            match event {
                                Ok(None) => {
                                    if to.send(Heard::Alive { host }).is_err() {
                                        return;
                                    }
                                }
                                Ok(Some(event)) => {
                                    seen += 1;
                                    failures = 0;
                                    let last =
                                        matches!(event, LiveEvent::Finished | LiveEvent::Failed { .. });
                                    let heard = Heard::Event { host, event, received_ns: unix_ns() };
                                    if to.send(heard).is_err() || last {
                                        return;
                                    }
                                }
                                Err(e) => {
                                    ended = Some(e);
                                    break;
                                }
                            }
                        }
                        ended
                            .unwrap_or_else(|| ClientError::Unreachable("the live stream ended early".into()))
                    }
                    Err(e) => e,
                };
                failures += 1;
                if failures > RECONNECTS || ended.is_refusal() {
                    let _ = to.send(Heard::Lost { host, reason: ended.to_string() });
                    return;
                }
                std::thread::sleep(RECONNECT_PAUSE);
            }
        })
        .expect("a thread can be started")
}

#[derive(Default)]
struct HostState {
    phase: Option<Phase>,
    elapsed_ns: u64,
    total_ns: u64,
    iops: f64,
    series: Vec<SeriesPoint>,
    done: bool,
    failure: Option<String>,
    /// When its stream last said anything.
    heard: Option<Instant>,
}

/// The fleet's figures so far.
pub struct LiveFleet {
    names: Vec<String>,
    hosts: Vec<HostState>,
    /// The agents' clock offsets, to measure how late their events arrive.
    offsets: Vec<i64>,
    /// Per measured interval: the merged histograms of the hosts heard so far, and how many.
    intervals: BTreeMap<u64, (IntervalStats, usize)>,
    /// The last complete (or newest) merged interval, as the progress line shows it.
    shown: Option<SeriesPoint>,
    max_lag_ns: u64,
    rates: Vec<HostRate>,
}

impl LiveFleet {
    pub fn new(names: Vec<String>, offsets: Vec<i64>) -> Self {
        let hosts = names.iter().map(|_| HostState::default()).collect();
        LiveFleet {
            names,
            hosts,
            offsets,
            intervals: BTreeMap::new(),
            shown: None,
            max_lag_ns: 0,
            rates: Vec::new(),
        }
    }

    pub fn hear(&mut self, heard: Heard) {
        match heard {
            Heard::Lost { host, reason } => self.fail(host, reason),
            Heard::Alive { host } => self.hosts[host].heard = Some(Instant::now()),
            Heard::Event { host, event, received_ns } => {
                self.hosts[host].heard = Some(Instant::now());
                self.hear_event(host, event, received_ns);
            }
        }
    }

    fn hear_event(&mut self, host: usize, event: LiveEvent, received_ns: u64) {
        match event {
            LiveEvent::Progress { phase, elapsed_ns, total_ns, iops, unix_ns, .. } => {
                let state = &mut self.hosts[host];
                state.phase = Some(if phase == "ramp" { Phase::Ramp } else { Phase::Measure });
                (state.elapsed_ns, state.total_ns, state.iops) = (elapsed_ns, total_ns, iops);
                let sent = unix_ns as i64 - self.offsets[host];
                self.max_lag_ns = self.max_lag_ns.max((received_ns as i64 - sent).max(0) as u64);
            }
            LiveEvent::Interval { index, point, histograms, .. } => {
                self.hosts[host].series.push(point);
                if let Ok(stats) = histograms.decode() {
                    self.add_interval(index, &stats);
                }
            }
            LiveEvent::Note { .. } => {}
            LiveEvent::Finished => self.hosts[host].done = true,
            LiveEvent::Failed { message } => self.fail(host, message),
        }
    }

    fn fail(&mut self, host: usize, reason: String) {
        let state = &mut self.hosts[host];
        if !state.done && state.failure.is_none() {
            state.failure = Some(reason);
        }
    }

    fn add_interval(&mut self, index: u64, stats: &IntervalStats) {
        let entry = self.intervals.entry(index).or_default();
        entry.0.merge(stats);
        entry.1 += 1;
        let running = self.hosts.iter().filter(|h| h.failure.is_none()).count();
        // The newest interval every running host has reported is exact; older ones are done.
        if entry.1 >= running {
            let duration =
                self.hosts.iter().find_map(|h| h.series.last().map(|p| p.duration_s)).unwrap_or(1.0);
            self.shown = Some(entry.0.point(Nanos(0), Nanos((duration * 1e9) as u64)));
            self.intervals.retain(|&i, _| i > index);
        }
    }

    /// Marks failed every running host whose stream has said nothing for `SILENCE_LIMIT`
    /// (counted from `since` for a host not heard at all): a frozen host, or a network path
    /// that dropped without closing the connection.
    pub fn give_up_on_silent(&mut self, since: Instant) {
        let silent: Vec<usize> = (0..self.hosts.len())
            .filter(|&i| {
                let host = &self.hosts[i];
                !host.done && host.failure.is_none() && host.heard.unwrap_or(since).elapsed() > SILENCE_LIMIT
            })
            .collect();
        for host in silent {
            self.fail(host, format!("it has said nothing for {} s", SILENCE_LIMIT.as_secs()));
        }
    }

    /// Every host has finished or dropped out.
    pub fn settled(&self) -> bool {
        self.hosts.iter().all(|h| h.done || h.failure.is_some())
    }

    pub fn failure(&self, host: usize) -> Option<&str> {
        self.hosts[host].failure.as_deref()
    }

    /// What a host's stream delivered (for a host that failed, all that is left of it).
    pub fn series(&self, host: usize) -> &[SeriesPoint] {
        &self.hosts[host].series
    }

    pub fn max_lag_ms(&self) -> f64 {
        self.max_lag_ns as f64 / 1e6
    }

    /// The fleet's progress: the furthest host's clock, the summed IOPS of the last second and
    /// the latest merged interval's latency.
    pub fn progress<'a>(&'a mut self, job: &'a str) -> Option<ProgressUpdate<'a>> {
        let lead = self
            .hosts
            .iter()
            .filter(|h| h.phase.is_some())
            .max_by_key(|h| (h.phase == Some(Phase::Measure), h.elapsed_ns))?;
        let (phase, elapsed, total) = (lead.phase?, lead.elapsed_ns, lead.total_ns);
        self.rates = self
            .names
            .iter()
            .zip(&self.hosts)
            .map(|(name, h)| HostRate { host: name.clone(), iops: h.iops, failed: h.failure.is_some() })
            .collect();
        let live = self.hosts.iter().filter(|h| h.failure.is_none());
        Some(ProgressUpdate {
            job,
            phase,
            elapsed: Nanos(elapsed.min(total)),
            total: Nanos(total),
            iops: live.map(|h| h.iops).sum(),
            mean_ns: self.shown.as_ref().map_or(0.0, |p| p.mean_ns),
            p99_ns: self.shown.as_ref().map_or(0, |p| p.p99_ns),
            limit_done: None,
            hosts: &self.rates,
        })
    }
}
