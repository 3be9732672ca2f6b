//! The figures of a fileset run, per phase: what the text and JSON reports give and the store
//! keeps. The JSON form is documented in docs/files.md; bump `FILES_SCHEMA` on a breaking change.

use iolab_stats::result::OpSummary;
use iolab_stats::OpStats;
use serde::{Deserialize, Serialize};

use crate::journal::JournalSeen;
use crate::mix::{MixOp, MIX_OPS};
use crate::plan::{FilesPlan, Phase};
use crate::verdict::FilesVerdict;

pub const FILES_SCHEMA: &str = "iolab.files/1";

/// A kind of operation, timed on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Mkdir,
    /// A whole file made: open, writes, fsync, close.
    Create,
    Open,
    Write,
    Fsync,
    Close,
    Stat,
    /// A whole directory listed: open, getdents64 to the end, close.
    Readdir,
    Read,
    /// A whole file read: open, reads, close.
    ReadFile,
    Rename,
    /// A whole file copied: both opens, reads and writes, fsync, both closes.
    Copy,
    Unlink,
    Rmdir,
    /// A directory's stat.
    StatDir,
    /// A file's times set (utimensat).
    Setattr,
    /// A file's extended attribute set and read back: open, set, get, close.
    Xattr,
    SetXattr,
    GetXattr,
    Link,
    Symlink,
    /// An operation of a mix, whichever it was: the mix's own count, rate and latency.
    Mix,
    /// A mix's append: open, a write at the end, fsync with --fsync, close.
    Append,
    /// A mix's write to its one log file, held open (Filebench webserver's appendlog).
    AppendLog,
    /// A mix's read of a range: open, one read, close.
    ReadRange,
}

pub const OP_KINDS: [OpKind; 25] = [
    OpKind::Mkdir,
    OpKind::Create,
    OpKind::Open,
    OpKind::Write,
    OpKind::Fsync,
    OpKind::Close,
    OpKind::Stat,
    OpKind::Readdir,
    OpKind::Read,
    OpKind::ReadFile,
    OpKind::Rename,
    OpKind::Copy,
    OpKind::Unlink,
    OpKind::Rmdir,
    OpKind::StatDir,
    OpKind::Setattr,
    OpKind::Xattr,
    OpKind::SetXattr,
    OpKind::GetXattr,
    OpKind::Link,
    OpKind::Symlink,
    OpKind::Mix,
    OpKind::Append,
    OpKind::AppendLog,
    OpKind::ReadRange,
];

impl OpKind {
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Mkdir => "mkdir",
            OpKind::Create => "create",
            OpKind::Open => "open",
            OpKind::Write => "write",
            OpKind::Fsync => "fsync",
            OpKind::Close => "close",
            OpKind::Stat => "stat",
            OpKind::Readdir => "readdir",
            OpKind::Read => "read",
            OpKind::ReadFile => "read_file",
            OpKind::Rename => "rename",
            OpKind::Copy => "copy",
            OpKind::Unlink => "unlink",
            OpKind::Rmdir => "rmdir",
            OpKind::StatDir => "stat_dir",
            OpKind::Setattr => "setattr",
            OpKind::Xattr => "xattr",
            OpKind::SetXattr => "set_xattr",
            OpKind::GetXattr => "get_xattr",
            OpKind::Link => "link",
            OpKind::Symlink => "symlink",
            OpKind::Mix => "mix",
            OpKind::Append => "append",
            OpKind::AppendLog => "append_log",
            OpKind::ReadRange => "read_range",
        }
    }

    /// The kind a mix records `op` as, whole.
    pub fn of_mix_op(op: MixOp) -> OpKind {
        match op {
            MixOp::Read => OpKind::ReadFile,
            MixOp::ReadRange => OpKind::ReadRange,
            MixOp::Append => OpKind::Append,
            MixOp::AppendLog => OpKind::AppendLog,
            MixOp::Create => OpKind::Create,
            MixOp::Stat => OpKind::Stat,
            MixOp::Readdir => OpKind::Readdir,
            MixOp::Rename => OpKind::Rename,
            MixOp::Unlink => OpKind::Unlink,
            MixOp::Setattr => OpKind::Setattr,
            MixOp::Getxattr => OpKind::GetXattr,
            MixOp::Setxattr => OpKind::SetXattr,
            MixOp::Link => OpKind::Link,
            MixOp::Symlink => OpKind::Symlink,
            MixOp::Mkdir => OpKind::Mkdir,
            MixOp::Rmdir => OpKind::Rmdir,
        }
    }

    /// Whether a mix records this kind for a whole operation (not a part of one: an open, a
    /// read, a write, an fsync, a close).
    pub fn is_mix_op(self) -> bool {
        MIX_OPS.iter().any(|&op| OpKind::of_mix_op(op) == self)
    }

    /// The operation a phase is counted in: one per file or directory of the phase.
    pub fn of_phase(phase: Phase) -> OpKind {
        match phase {
            Phase::Mkdir => OpKind::Mkdir,
            Phase::Create => OpKind::Create,
            Phase::Stat => OpKind::Stat,
            Phase::Readdir => OpKind::Readdir,
            Phase::Read => OpKind::ReadFile,
            Phase::Rename => OpKind::Rename,
            Phase::Copy => OpKind::Copy,
            Phase::Unlink => OpKind::Unlink,
            Phase::Rmdir => OpKind::Rmdir,
            Phase::StatDir => OpKind::StatDir,
            Phase::Setattr => OpKind::Setattr,
            Phase::Xattr => OpKind::Xattr,
            Phase::Link => OpKind::Link,
            Phase::Symlink => OpKind::Symlink,
            Phase::Mix => OpKind::Mix,
        }
    }
}

/// Why a phase stopped before its plan was done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The operation that failed ("open", "write", "mkdir", ...).
    pub op: String,
    /// The path, relative to the run's directory.
    pub path: String,
    /// The kernel's error, as the system describes it.
    pub error: String,
    /// The errno (28 is ENOSPC: the filesystem is full).
    pub errno: Option<i32>,
    /// With ENOSPC: what ran out, read from the filesystem when the operation failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_out_of: Option<RanOutOf>,
}

/// What a full filesystem had no more of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RanOutOf {
    /// No inode was free: more files cannot be made, whatever the space.
    Inodes,
    Space,
}

impl RanOutOf {
    /// What the filesystem of `dirfd` ran out of, after an ENOSPC there.
    pub fn at(dirfd: i32) -> Option<RanOutOf> {
        // SAFETY: the caller's directory stays open for the call.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(dirfd) };
        let stat = nix::sys::statvfs::fstatvfs(fd).ok()?;
        let no_inodes = stat.files() > 0 && stat.files_free() == 0;
        Some(if no_inodes { RanOutOf::Inodes } else { RanOutOf::Space })
    }

    /// "(the filesystem has no free inodes)".
    pub fn words(self) -> &'static str {
        match self {
            RanOutOf::Inodes => "the filesystem has no free inodes",
            RanOutOf::Space => "the filesystem is full",
        }
    }
}

/// One operation kind of a phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KindResult {
    pub kind: OpKind,
    /// Count, bytes, rates over the phase's time, and latency percentiles to 99.9999.
    pub summary: OpSummary,
}

/// One second of a phase: the phase's operations that completed in it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Second {
    pub t_s: f64,
    pub ops: u64,
    pub bytes: u64,
}

/// The rate when the first thread finished, beside the whole phase's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stonewall {
    /// When the first thread finished its part, seconds into the phase.
    pub first_done_s: f64,
    /// Operations all threads had completed by then.
    pub ops: u64,
    pub ops_per_s: f64,
    pub bytes_per_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseResult {
    pub phase: Phase,
    /// Operations the plan holds for the phase, and how many were done.
    pub planned: u64,
    pub done: u64,
    /// Until the last thread finished.
    pub elapsed_s: f64,
    pub ops_per_s: f64,
    pub bytes: u64,
    pub bytes_per_s: f64,
    pub stonewall: Stonewall,
    /// Directory entries listed (readdir).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u64>,
    /// Those entries per second over the phase (readdir): the rate mdtest and elbencho give,
    /// where `ops_per_s` counts directories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries_per_s: Option<f64>,
    /// Every kind of operation the phase timed, the phase's own first.
    pub kinds: Vec<KindResult>,
    pub series: Vec<Second>,
    /// The engine's CPU time over the threads' wall time, and the kernel's share of it: the
    /// threads' own, and their io_uring io-wq workers' (the requests io_uring punted).
    pub cpu_busy_pct: f64,
    pub cpu_sys_pct: f64,
    /// How its operations reached the kernel: "sync" or "io_uring" (with `--engine auto`, the
    /// faster way for the phase; empty in reports kept before phases said it).
    #[serde(default)]
    pub engine: String,
    /// The io-wq workers' part of `cpu_busy_pct` (0 on the sync engine).
    #[serde(default)]
    pub io_wq_pct: f64,
    /// The threads' time runnable but waiting for a core (another load on the machine, or
    /// their own io_uring workers).
    #[serde(default)]
    pub runq_wait_pct: f64,
    /// The threads' io_uring io-wq workers alive at a time, on average (0 on the sync engine).
    #[serde(default)]
    pub io_wq_workers: f64,
    /// A worker's time waiting for a core, in % of its time alive in the phase.
    #[serde(default)]
    pub io_wq_wait_pct: f64,
    /// How busy the block device under the directory was (none: tmpfs and the like).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_busy_pct: Option<f64>,
    /// The filesystem's journal thread over the phase (ext4: jbd2), where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<JournalSeen>,
    pub verdict: FilesVerdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    pub interrupted: bool,
    /// Which run of the phases it is, from 1 (`--repeat`).
    #[serde(default = "first_repeat")]
    pub repeat: u32,
    /// A mix's own figures: the population, swaps, draws that found no file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<MixFigures>,
    /// The merged histograms of each kind, to store and merge again. Not in the JSON.
    #[serde(skip)]
    pub histograms: Vec<(OpKind, OpStats)>,
}

impl PhaseResult {
    /// The phase's own operation kind.
    pub fn main(&self) -> Option<&KindResult> {
        let kind = OpKind::of_phase(self.phase);
        self.kinds.iter().find(|k| k.kind == kind)
    }

    /// Every planned operation done (a mix: its runtime run), nothing failed or interrupted.
    pub fn complete(&self) -> bool {
        self.failure.is_none() && !self.interrupted && (self.phase == Phase::Mix || self.done == self.planned)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FilesReport {
    pub schema: String,
    pub dir: String,
    pub plan: FilesPlan,
    /// The tree in words (`FilesPlan::describe_tree`): what the text report heads with.
    #[serde(default)]
    pub tree: String,
    pub total_files: u64,
    pub total_dirs: u64,
    pub phases: Vec<PhaseResult>,
    /// What the user should know about how the run was done (ring operations done as system
    /// calls, a tree left behind, ...).
    pub notes: Vec<String>,
    /// The most resident memory the process held (ru_maxrss).
    pub peak_rss_bytes: u64,
    /// Whether the tree was left in place (--keep, or a clean-up that failed).
    pub kept: bool,
    /// With `--repeat`: each phase's rate over the repeats and how far they spread.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<RepeatSpread>,
}

/// One phase over the repeats of a run: its rate in each, their mean, and their spread,
/// (max - min) / mean as `compare` judges noise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatSpread {
    /// The phase's place in the list (a phase may be listed twice: stat before and after a rename).
    pub position: usize,
    pub phase: Phase,
    pub ops_per_s: Vec<f64>,
    pub mean_ops_per_s: f64,
    pub spread_pct: f64,
}

/// What a mix did besides its operations' figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixFigures {
    /// Files in the tree as the mix began and as it ended.
    pub files_at_start: u64,
    pub files_at_end: u64,
    /// Names the tree has room for.
    pub names: u64,
    /// Creates done as unlinks (the population at the top of its band) and unlinks done as
    /// creates (at its bottom).
    pub swapped: u64,
    /// Per operation: draws that found no file in the state it needs near the drawn one (a link
    /// with every file linked), not done and not counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unplaced: Vec<(MixOp, u64)>,
    /// Seconds of warm-up before the measured ones.
    pub warmup_s: f64,
}

fn first_repeat() -> u32 {
    1
}

impl FilesReport {
    /// The first phase that failed, with what failed.
    pub fn failure(&self) -> Option<(&PhaseResult, &Failure)> {
        self.phases.iter().find_map(|p| p.failure.as_ref().map(|f| (p, f)))
    }

    pub fn interrupted(&self) -> bool {
        self.phases.iter().any(|p| p.interrupted)
    }
}
