//! The fileset workload (`iolab files`): a tree of directories and files, computed from its
//! shape rather than stored, worked in phases the user chooses and orders (mkdir, create,
//! stat, statdir, readdir, read, setattr, xattr, rename, copy, unlink, rmdir) by threads that
//! each own a tree or share one directory, or by a mix of operations drawn by weight for a
//! time (`--mix`, `--profile fileserver`), on io_uring or plain system calls, every operation
//! timed exactly into the mergeable histograms the block lanes use.
//!
//! Why its own crate: the block runner keeps queues of I/Os to open files; here each operation
//! names a path, waits for its answer and moves to the next, and the tree, not a device, is
//! the target. What it shares with blocks is the measurement (`iolab-stats`) and the results.
//!
//! Memory stays constant in the number of files: a path is made from its index when needed,
//! a size from a hash of the seed and the index, and the figures are histograms.

mod error;
mod gate;
mod io_wq;
pub mod job;
mod journal;
mod kept;
pub mod mix;
mod named;
mod order;
mod owner;
mod parents;
mod phases;
mod plan;
mod population;
mod preflight;
pub mod profiles;
mod progress;
mod repeats;
mod report;
mod run;
pub mod safety;
pub mod safety_at;
mod sizes;
pub mod stored;
mod tree;
mod verdict;
mod worker;

pub use error::FilesError;
pub use job::FilesOptions;
pub use journal::JournalSeen;
pub use kept::{plan_in, KeptTree, Shape};
pub use mix::{Mix, MixOp};
pub use order::Order;
pub use plan::{
    parse_phases, FileCount, FileEngine, FilesPlan, Phase, TreeState, ALL_PHASES, DEFAULT_PHASES,
};
pub use profiles::Profile;
pub use progress::{PhaseProgress, PhaseSnapshot};
pub use repeats::{check_repeats, run_repeated, MAX_REPEATS};
pub use report::{
    Failure, FilesReport, KindResult, MixFigures, OpKind, PhaseResult, RanOutOf, RepeatSpread, Second,
    Stonewall, FILES_SCHEMA,
};
pub use run::steps::Steps;
pub use run::{run, RunOptions};
pub use sizes::SizeSpec;
pub use verdict::{FilesCause, FilesVerdict};

#[cfg(test)]
mod kept_tests;
#[cfg(test)]
mod mix_tests;
#[cfg(test)]
mod repeats_tests;
#[cfg(test)]
mod run_tests;
