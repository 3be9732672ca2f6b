//! One coordinator's session: its lease, the stage of its job, its live events, and the
//! dedicated thread that owns the `Lab` (engine threads stay synchronous, off the async
//! runtime). Handlers talk to the thread through a channel; it answers through oneshots and
//! the shared stage.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;

use iolab_spec::ReplayIo;

use crate::protocol::{AgentResult, Prepared, ReplayWire, MAX_START_DELAY_MS};

use super::command::Command;
use super::error::Failure;
use super::files_slot::FilesSlot;
use super::live::EventLog;
use super::lock;
use super::log::say;
use super::replay::Replay;

/// Where a session's job is.
#[derive(Clone)]
pub enum Stage {
    Idle,
    Preparing,
    Prepared,
    Running,
    Done(Arc<AgentResult>),
    Failed(Failure),
}

pub struct Session {
    pub id: String,
    pub coordinator: String,
    pub lease: Duration,
    deadline: Mutex<Instant>,
    /// Stops the job (abort, close, lease expiry); the runner keeps what it measured.
    pub interrupt: Arc<AtomicBool>,
    closing: AtomicBool,
    stage: Mutex<Stage>,
    pub log: Arc<EventLog>,
    commands: Mutex<mpsc::Sender<Command>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Where a fileset run (`files_session`) is.
    pub files: FilesSlot,
    /// A replay's requests, as last uploaded (`replay::upload`), for the prepares that name them.
    replay: Mutex<Option<Arc<[ReplayIo]>>>,
}

impl Session {
    /// A session whose thread will hear `commands`' other end (`worker::open_session`).
    pub(super) fn new(
        id: String,
        coordinator: String,
        lease: Duration,
        commands: mpsc::Sender<Command>,
    ) -> Session {
        Session {
            id,
            coordinator,
            lease,
            deadline: Mutex::new(Instant::now() + lease),
            interrupt: Arc::new(AtomicBool::new(false)),
            closing: AtomicBool::new(false),
            stage: Mutex::new(Stage::Idle),
            log: Arc::new(EventLog::default()),
            commands: Mutex::new(commands),
            thread: Mutex::new(None),
            files: FilesSlot::default(),
            replay: Mutex::new(None),
        }
    }

    /// The session's thread, which `join` waits for.
    pub(super) fn attach(&self, thread: JoinHandle<()>) {
        *lock(&self.thread) = Some(thread);
    }

    pub fn renew(&self) {
        *lock(&self.deadline) = Instant::now() + self.lease;
    }

    /// How long the coordinator has been silent, once that is longer than the lease.
    pub fn expired(&self, now: Instant) -> Option<Duration> {
        let deadline = *lock(&self.deadline);
        (now > deadline).then(|| now - deadline + self.lease)
    }

    pub fn closing(&self) -> bool {
        self.closing.load(SeqCst)
    }

    pub fn stage(&self) -> Stage {
        lock(&self.stage).clone()
    }

    pub(super) fn set_stage(&self, stage: Stage) {
        *lock(&self.stage) = stage;
    }

    pub(super) fn send(&self, command: Command) -> Result<(), Failure> {
        lock(&self.commands).send(command).map_err(|_| {
            Failure::internal("the session's thread has ended; close the session and open another")
        })
    }

    /// Keeps a replay's requests for the prepares that name them (the last upload wins).
    pub fn load_replay(&self, ios: Arc<[ReplayIo]>) {
        *lock(&self.replay) = Some(ios);
    }

    /// The uploaded requests `wire` describes.
    fn replay_for(&self, wire: ReplayWire) -> Result<Replay, Failure> {
        let Some(ios) = lock(&self.replay).clone() else {
            return Err(Failure::bad_request(
                "the job replays requests that were never uploaded; PUT them to the session's replay first",
            ));
        };
        if ios.len() as u64 != wire.requests {
            return Err(Failure::conflict(format!(
                "the job replays {} requests and the last upload held {}; upload its requests again",
                wire.requests,
                ios.len()
            )));
        }
        Ok((wire, ios))
    }

    /// Parses and checks the job and opens its targets, on the session's thread; `replay`
    /// lays the uploaded requests onto it.
    pub async fn prepare(&self, job: String, replay: Option<ReplayWire>) -> Result<Prepared, Failure> {
        let replay = replay.map(|wire| self.replay_for(wire)).transpose()?;
        {
            let mut stage = lock(&self.stage);
            match *stage {
                Stage::Preparing => {
                    return Err(Failure::conflict("a job is being prepared; wait for its answer"))
                }
                Stage::Running => {
                    return Err(Failure::conflict("a job is running; wait for its result or abort it first"))
                }
                _ => *stage = Stage::Preparing,
            }
        }
        let (reply, answer) = oneshot::channel();
        if let Err(failure) = self.send(Command::Prepare { job, replay, reply }) {
            self.set_stage(Stage::Idle);
            return Err(failure);
        }
        answer.await.map_err(|_| {
            Failure::internal("the session's thread ended while preparing; see the agent's log")
        })?
    }

    /// Runs the prepared job at `at_unix_ns` (at once if that is past).
    pub fn start(&self, at_unix_ns: u64) -> Result<(), Failure> {
        let now = unix_ns(SystemTime::now());
        let latest = now.saturating_add(MAX_START_DELAY_MS * 1_000_000);
        if at_unix_ns > latest {
            return Err(Failure::bad_request(format!(
                "the start instant is {} ms ahead of this agent's clock, more than the {MAX_START_DELAY_MS} ms allowed; check the clocks and start sooner",
                (at_unix_ns - now) / 1_000_000
            )));
        }
        {
            let mut stage = lock(&self.stage);
            match *stage {
                Stage::Prepared => *stage = Stage::Running,
                Stage::Running => {
                    return Err(Failure::conflict("the job is already running; wait for its result"))
                }
                _ => return Err(Failure::conflict("no job is prepared; POST prepare first, then start")),
            }
        }
        let at = UNIX_EPOCH + Duration::from_nanos(at_unix_ns);
        self.send(Command::Start { at }).inspect_err(|_| self.set_stage(Stage::Idle))
    }

    /// Stops the running job; its result (interrupted) stays available.
    pub fn abort(&self) {
        self.interrupt.store(true, SeqCst);
    }

    /// Stops the job and tells the thread to end; `join` waits for it.
    pub fn begin_close(&self) {
        self.closing.store(true, SeqCst);
        self.interrupt.store(true, SeqCst);
        let _ = lock(&self.commands).send(Command::Close);
        self.log.close();
    }

    /// Waits for the thread (and so the removal of any scratch file). Blocking.
    pub fn join(&self) {
        let thread = lock(&self.thread).take();
        if let Some(thread) = thread {
            if thread.join().is_err() {
                say!("iolab agent: the thread of session {} panicked; see above", self.id);
            }
        }
    }

    /// The job's stop flag is cleared for a new job, unless the session is closing.
    pub(super) fn rearm(&self) {
        self.interrupt.store(false, SeqCst);
        // A close that raced with the line above must still stop the job.
        if self.closing() {
            self.interrupt.store(true, SeqCst);
        }
    }
}

pub fn unix_ns(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
