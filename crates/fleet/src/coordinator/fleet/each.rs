//! A job of its own on each host, every host still at one instant (`Remote::run_each`): a study
//! that sizes each host's jobs to that host's own region (`iolab fleet cache`, whose working
//! sets are shares of each host's region) runs them in lock-step as a sweep runs its points,
//! and gets back each host's exact result beside the merged one, to judge each host's own cache.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use iolab_runner::{EachHost, Observer, RunError};
use iolab_spec::JobSpec;

use super::{on_every_indexed, refusals, unix_ns, window_end_unix_ns, Fleet, HostJob};
use crate::merge::{self, HostOutcome};
use crate::protocol::Prepared;

impl Fleet {
    pub(super) fn host_addresses(&self) -> Vec<String> {
        self.hosts.iter().map(|h| h.client.address.clone()).collect()
    }

    /// Sends `jobs[i]` to host i (running hosts only); answers each host's `Prepared`. A
    /// refusal fails the job (nothing started anywhere); an unreachable host drops out.
    fn prepare_each(
        &mut self,
        jobs: &[HostJob],
        observer: &mut dyn Observer,
    ) -> Result<Vec<Option<Prepared>>, RunError> {
        let running = self.running();
        let clients: Vec<_> = running.iter().map(|&i| self.hosts[i].client.clone()).collect();
        let sessions: Vec<_> = running.iter().map(|&i| self.hosts[i].session.clone()).collect();
        let prepared = on_every_indexed(&clients, |n, client| {
            let job = &jobs[running[n]];
            client.prepare(&sessions[n], &job.text, job.replay.as_ref())
        });
        refusals(&clients, &prepared)?;
        let mut answers: Vec<Option<Prepared>> = vec![None; self.hosts.len()];
        for (&i, p) in running.iter().zip(prepared) {
            match p {
                Ok(prepared) => {
                    for note in &prepared.notes {
                        observer.note(&format!("{}: {note}", self.hosts[i].client.address));
                    }
                    answers[i] = Some(prepared);
                }
                Err(e) => self.drop_host(i, e.to_string(), observer),
            }
        }
        self.require_some()?;
        Ok(answers)
    }

    pub(super) fn regions(
        &mut self,
        job: &JobSpec,
        observer: &mut dyn Observer,
    ) -> Result<Vec<Option<u64>>, RunError> {
        let text = self.job_text(job)?;
        let texts = vec![text; self.hosts.len()];
        let prepared = self.prepare_each(&texts, observer)?;
        Ok(prepared.into_iter().map(|p| p.and_then(|p| p.region_bytes)).collect())
    }

    pub(super) fn each(
        &mut self,
        jobs: &[JobSpec],
        interrupt: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<EachHost, RunError> {
        if jobs.len() != self.hosts.len() {
            return Err(RunError::Invalid(format!(
                "{} jobs for {} hosts (a bug in iolab)",
                jobs.len(),
                self.hosts.len()
            )));
        }
        let texts = jobs.iter().map(|job| self.job_text(job)).collect::<Result<Vec<_>, _>>()?;
        self.prepare_each(&texts, observer)?;
        if interrupt.load(Relaxed) {
            return Err(RunError::Interrupted);
        }
        self.start_all(observer)?;
        let first = &jobs[self.running().first().copied().unwrap_or(0)];
        let live = self.follow(first, interrupt, observer);
        let parts = self.collect(&live, observer);
        let hosts = parts
            .iter()
            .map(|part| match &part.outcome {
                HostOutcome::Finished(host) => Some(host.result.clone()),
                HostOutcome::Failed { .. } => None,
            })
            .collect();
        let mut merged =
            merge::merge(first, &parts, &self.links).map_err(|e| RunError::Fleet(e.to_string()))?;
        if let Some(fleet) = merged.fleet.as_mut() {
            let phase_end_ns = parts.iter().filter_map(window_end_unix_ns).max().unwrap_or(0);
            fleet.merge_latency_ms = unix_ns().saturating_sub(phase_end_ns) as f64 / 1e6;
            fleet.max_stream_lag_ms = live.max_lag_ms();
        }
        Ok(EachHost { merged, hosts })
    }
}
