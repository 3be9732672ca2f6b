//! What the session's handlers ask of its thread: prepare a job, start it at an instant, close;
//! or a step of a fileset run.

use std::time::SystemTime;

use tokio::sync::oneshot;

use crate::protocol::{FilesPrepare, FilesPrepared, Prepared};

use super::error::Failure;
use super::replay::Replay;

pub enum Command {
    Prepare { job: String, replay: Option<Replay>, reply: oneshot::Sender<Result<Prepared, Failure>> },
    Start { at: SystemTime },
    Close,
    Files(FilesCommand),
}

pub enum FilesCommand {
    Prepare { request: FilesPrepare, reply: oneshot::Sender<Result<FilesPrepared, Failure>> },
    Phase { at: SystemTime },
}
