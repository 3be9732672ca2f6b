//! Where a command's jobs run: in this process, or on a fleet of agents (`iolab fleet ...`).
//! The commands that measure (run, sweep, ramp, steady, suite) take a `Place`, so each of them
//! runs across a fleet with every job in lock-step.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use iolab_fleet::coordinator::Fleet;
use iolab_runner::{Lab, Observer, OnFailedStart, RunError};
use iolab_spec::RunPlan;

use crate::recording::{Recording, StoreArgs};

pub enum Place<'f> {
    Here,
    Fleet(&'f mut Fleet),
}

impl Place<'_> {
    /// Starts keeping a `kind` run of `plan`. A fleet's runs are their own kind ("fleet sweep"),
    /// and this machine's fingerprint says nothing of the hosts' targets, so it covers none.
    pub fn record(&self, store: &StoreArgs, kind: &str, plan: &RunPlan) -> Result<Recording, ExitCode> {
        match self {
            Place::Here => Recording::start(store, kind, plan),
            Place::Fleet(_) => Recording::start_remote(store, &format!("fleet {kind}"), plan),
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
        match self {
            Place::Here => Lab::open(plan, on_failed_start, interrupt, observer),
            Place::Fleet(fleet) => Ok(Lab::remote(&mut **fleet, interrupt)),
        }
    }
}
