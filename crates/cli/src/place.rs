//! Where a command's jobs run: in this process, or on a fleet of agents (`iolab fleet ...`),
//! and who else hears of them (the `--metrics` endpoint). The commands that measure (run,
//! sweep, ramp, steady, suite) take a `Place`, so each of them runs across a fleet with every
//! job in lock-step, and exports its live figures, without knowing of either.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use iolab_fleet::coordinator::Fleet;
use iolab_runner::{Lab, Observer, OnFailedStart, RunError};
use iolab_spec::RunPlan;

use crate::args::StoreArgs;
use crate::recording::Recording;

pub struct Place<'f> {
    on: On<'f>,
    /// Hears every job run here, beside the command's own progress line.
    watcher: Option<&'f mut dyn Observer>,
}

enum On<'f> {
    Here,
    Fleet(&'f mut Fleet),
}

impl<'f> Place<'f> {
    pub fn here() -> Self {
        Place { on: On::Here, watcher: None }
    }

    pub fn fleet(fleet: &'f mut Fleet) -> Self {
        Place { on: On::Fleet(fleet), watcher: None }
    }

    /// Has `watcher` (a metrics exporter) hear every job of every lab opened here.
    pub fn watched_by(self, watcher: Option<&'f mut dyn Observer>) -> Self {
        Place { watcher, ..self }
    }

    /// Starts keeping a `kind` run of `plan`. A fleet's runs are their own kind ("fleet sweep"),
    /// and this machine's fingerprint says nothing of the hosts' targets, so it covers none.
    pub fn record(
        &self,
        store: &StoreArgs,
        kind: &str,
        title: Option<&str>,
        plan: &RunPlan,
    ) -> Result<Recording, ExitCode> {
        match self.on {
            On::Here => Recording::start(store, kind, title, plan),
            On::Fleet(_) => {
                let title = title.map(|t| format!("fleet {t}"));
                Recording::start_remote(store, &format!("fleet {kind}"), title.as_deref(), plan)
            }
        }
    }

    /// A lab for `plan`: here, the targets checked and the scratch file laid out; on a fleet,
    /// every host does that for itself.
    pub fn open_lab<'a>(
        &'a mut self,
        plan: &RunPlan,
        on_failed_start: OnFailedStart,
        interrupt: &'a AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<Lab<'a>, RunError> {
        let mut lab = match &mut self.on {
            On::Here => Lab::open(plan, on_failed_start, interrupt, observer)?,
            On::Fleet(fleet) => Lab::remote(&mut **fleet, interrupt),
        };
        if let Some(watcher) = self.watcher.as_deref_mut() {
            lab.watched_by(watcher);
        }
        Ok(lab)
    }
}
