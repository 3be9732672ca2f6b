//! What a fileset run does: the tree's shape, the files' sizes, the phases in the user's
//! order, the threads and the engine. Checked here, before anything touches a disk: a phase
//! that needs files the earlier phases did not make is refused with the order that works.

use std::fmt;
use std::str::FromStr;

use iolab_spec::Bytes;
use iolab_stats::format::thousands;
use serde::{Deserialize, Serialize};

use crate::error::FilesError;
use crate::mix::Mix;
use crate::sizes::SizeSpec;

/// One phase of a run: every thread works its part of the tree with one kind of operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Mkdir,
    /// Create each file (O_CREAT|O_EXCL), write its size, fsync it with --fsync, close it.
    Create,
    Stat,
    Readdir,
    /// Open each file, read it whole, close it.
    Read,
    /// Rename each file within its directory (f<N> <-> r<N>).
    Rename,
    /// The whole tree to a second tree beside it: directories, then each file read and written.
    Copy,
    Unlink,
    Rmdir,
    /// Stat each directory (mdtest -D's stat): the directory rates beside mkdir and rmdir.
    #[serde(rename = "statdir")]
    StatDir,
    /// Set each file's times to now (utimensat, as touch): a metadata write per file.
    Setattr,
    /// Set each file's extended attribute `user.iolab` and read it back.
    Xattr,
    /// Make a hard link `h<N>` to each file, beside it (removed by unlink).
    Link,
    /// Make a symbolic link `l<N>` to each file, beside it (removed by unlink; never followed).
    Symlink,
    /// The plan's mix of operations for its runtime (`--mix`, `--profile`): the last phase.
    Mix,
}

pub const ALL_PHASES: [Phase; 15] = [
    Phase::Mkdir,
    Phase::Create,
    Phase::Stat,
    Phase::StatDir,
    Phase::Readdir,
    Phase::Read,
    Phase::Setattr,
    Phase::Xattr,
    Phase::Link,
    Phase::Symlink,
    Phase::Rename,
    Phase::Copy,
    Phase::Unlink,
    Phase::Rmdir,
    Phase::Mix,
];

/// The phases run when the user names none.
pub const DEFAULT_PHASES: [Phase; 6] =
    [Phase::Mkdir, Phase::Create, Phase::Stat, Phase::Read, Phase::Unlink, Phase::Rmdir];

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Mkdir => "mkdir",
            Phase::Create => "create",
            Phase::Stat => "stat",
            Phase::Readdir => "readdir",
            Phase::Read => "read",
            Phase::Rename => "rename",
            Phase::Copy => "copy",
            Phase::Unlink => "unlink",
            Phase::Rmdir => "rmdir",
            Phase::StatDir => "statdir",
            Phase::Setattr => "setattr",
            Phase::Xattr => "xattr",
            Phase::Link => "link",
            Phase::Symlink => "symlink",
            Phase::Mix => "mix",
        }
    }

    /// Whether the phase works the files that exist: every phase of one operation per file but
    /// create, which makes them.
    pub fn needs_files(self) -> bool {
        matches!(
            self,
            Phase::Stat
                | Phase::Read
                | Phase::Setattr
                | Phase::Xattr
                | Phase::Link
                | Phase::Symlink
                | Phase::Rename
                | Phase::Copy
                | Phase::Unlink
                | Phase::Mix
        )
    }

    /// Whether the phase changes the tree (its latencies are stored as writes): its entries,
    /// or its files' metadata (setattr, xattr).
    pub fn modifies(self) -> bool {
        !matches!(self, Phase::Stat | Phase::StatDir | Phase::Readdir | Phase::Read)
    }

    /// Whether the phase adds or removes directory entries, each under its directory's lock
    /// held exclusively; the others look entries up or change an inode, which takes no such lock.
    pub fn changes_entries(self) -> bool {
        self.modifies() && !matches!(self, Phase::Setattr | Phase::Xattr)
    }

    /// Whether the phase makes the device write nothing of its own: stat and readdir (reading
    /// a file's data updates its access time, which the journal then writes).
    pub fn writes_nothing(self) -> bool {
        matches!(self, Phase::Stat | Phase::StatDir | Phase::Readdir)
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Phase {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim().to_ascii_lowercase();
        let alias = match text.as_str() {
            "write" => "create",
            "open" | "read" => "read",
            "delete" | "remove" => "unlink",
            "dirstat" | "stat-dir" | "stat_dir" => "statdir",
            "utimes" | "touch" | "chattr" => "setattr",
            "setxattr" | "getxattr" => "xattr",
            "hardlink" | "ln" => "link",
            "softlink" | "ln-s" => "symlink",
            other => other,
        };
        crate::named::one_of(alias, &ALL_PHASES, Phase::name, "a phase")
    }
}

/// What exists of a tree: before a run's first phase, or after its last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeState {
    pub dirs: bool,
    pub files: bool,
    /// The files are named r<N> (a rename phase ran an odd number of times).
    pub renamed: bool,
    /// A copy of the tree stands beside it.
    pub copied: bool,
    /// A hard link `h<N>` stands beside each file.
    #[serde(default)]
    pub linked: bool,
    /// A symbolic link `l<N>` stands beside each file.
    #[serde(default)]
    pub symlinked: bool,
    /// A mix ran: some names hold files, others not, some renamed or linked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mixed: bool,
}

impl TreeState {
    pub fn is_empty(&self) -> bool {
        *self == TreeState::default()
    }

    /// The state after `phase` ran to its end.
    pub fn after(mut self, phase: Phase) -> TreeState {
        match phase {
            Phase::Mkdir => self.dirs = true,
            Phase::Create => self.files = true,
            Phase::Rename => self.renamed = !self.renamed,
            Phase::Copy => self.copied = true,
            Phase::Link => self.linked = true,
            Phase::Symlink => self.symlinked = true,
            Phase::Unlink => {
                (self.files, self.renamed, self.linked, self.symlinked) = (false, false, false, false)
            }
            Phase::Rmdir => (self.dirs, self.copied) = (false, false),
            // Which files stand after a mix is its own: nothing is planned after it.
            Phase::Mix => self.mixed = true,
            Phase::Stat | Phase::StatDir | Phase::Readdir | Phase::Read | Phase::Setattr | Phase::Xattr => {}
        }
        self
    }

    /// "directories and files (renamed), with a copy".
    pub fn words(&self) -> String {
        let mut what = match (self.dirs, self.files) {
            (false, _) => "nothing".to_string(),
            (true, false) => "the directories, no files".to_string(),
            (true, true) => "the directories and files".to_string(),
        };
        if self.renamed {
            what.push_str(" (renamed)");
        }
        if self.copied {
            what.push_str(", with a copy");
        }
        if self.linked {
            what.push_str(", hard-linked");
        }
        if self.symlinked {
            what.push_str(", with symbolic links");
        }
        if self.mixed {
            what.push_str(", as a mix left them");
        }
        what
    }
}

/// A worker's data buffer's size at most: larger files are written and read in pieces this big.
pub const MAX_CHUNK: u64 = 1 << 20;

/// How metadata operations reach the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FileEngine {
    /// The faster way for each phase (the default): plain system calls, but for creates with
    /// --fsync on a filesystem that keeps its files on a device, queued on a ring
    /// (`FilesPlan::engine_for`).
    #[default]
    Auto,
    /// One ring per thread; each operation an entry, waited for before the next.
    IoUring,
    /// Plain system calls: faster than the ring in 19 of 22 phases measured on tmpfs, ext4 and
    /// xfs (docs/files.md, "Phases").
    Sync,
}

impl FileEngine {
    pub fn name(self) -> &'static str {
        match self {
            FileEngine::Auto => "auto",
            FileEngine::IoUring => "io_uring",
            FileEngine::Sync => "sync",
        }
    }
}

impl FromStr for FileEngine {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "io_uring" | "uring" | "io-uring" => Ok(FileEngine::IoUring),
            "sync" | "psync" | "syscall" | "syscalls" => Ok(FileEngine::Sync),
            "auto" => Ok(FileEngine::Auto),
            other => Err(format!("'{other}' is not a files engine; choose auto, io_uring or sync")),
        }
    }
}

/// How many files the tree holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileCount {
    /// This many in each leaf directory of each tree.
    PerDir(u64),
    /// This many in all, spread evenly over the threads' trees and their leaf directories.
    Total(u64),
}

/// The whole run, as checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilesPlan {
    /// Subdirectories in each directory above the leaves.
    pub dirs_per_dir: u32,
    /// Levels of subdirectories below each tree's root; files live in the deepest level.
    pub depth: u32,
    pub files: FileCount,
    pub sizes: SizeSpec,
    pub phases: Vec<Phase>,
    pub threads: u32,
    /// All threads work one tree (each a share of every directory) instead of one tree each.
    pub shared_dir: bool,
    pub engine: FileEngine,
    /// fsync each file after writing it (create and copy).
    pub fsync: bool,
    /// O_DIRECT for file data (create, read, copy).
    pub direct: bool,
    /// Before each phase: sync, then drop the page cache, dentries and inodes (root only), so
    /// that each phase's figures are cold-cache figures.
    #[serde(default)]
    pub drop_caches: bool,
    /// The order each phase works its files in (`--order`).
    #[serde(default)]
    pub order: crate::order::Order,
    pub seed: u64,
    /// What exists before the first phase: nothing, or a kept tree's directories and files.
    #[serde(default, skip_serializing_if = "TreeState::is_empty")]
    pub start: TreeState,
    /// The mix the `mix` phase runs (`--mix`, `--profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<Mix>,
}

/// Directories in one tree at most: the tree is computed, but its levels are walked.
const MAX_DIRS_PER_TREE: u64 = 1 << 32;
pub const MAX_THREADS: u32 = 1024;

impl FilesPlan {
    /// Checks the shape, the sizes against --direct, and that each phase finds what it needs.
    pub fn check(&self) -> Result<(), FilesError> {
        let bad = |m: String| Err(FilesError::Plan(m));
        if self.threads == 0 || self.threads > MAX_THREADS {
            return bad(format!("--threads must be 1 to {MAX_THREADS}, not {}", self.threads));
        }
        if self.depth > 0 && self.dirs_per_dir == 0 {
            return bad("--dirs-per-dir must be at least 1 when --depth is above 0".into());
        }
        if self.depth > 32 {
            return bad(format!("--depth {} is deeper than any tree iolab builds (32)", self.depth));
        }
        if self.dirs_per_tree().is_none_or(|d| d > MAX_DIRS_PER_TREE) {
            return bad(format!(
                "--dirs-per-dir {} at --depth {} makes more than {MAX_DIRS_PER_TREE} directories per tree",
                self.dirs_per_dir, self.depth
            ));
        }
        if let FileCount::PerDir(n) = self.files {
            let total = self.leaves().checked_mul(n).and_then(|t| t.checked_mul(u64::from(self.trees())));
            if total.is_none_or(|t| t > 1 << 48) {
                return bad(
                    "--files-per-dir times the leaf directories is more files than iolab counts".into()
                );
            }
        }
        if self.phases.is_empty() {
            return bad("--phases names no phase".into());
        }
        match (&self.mix, self.phases.contains(&Phase::Mix)) {
            (Some(mix), true) => {
                mix.check(self.direct).map_err(FilesError::Plan)?;
                iolab_runner::Sampler::new(&mix.distribution, self.files_in_tree(0), self.seed)
                    .map_err(|e| FilesError::Plan(format!("--distribution {}: {e}", mix.distribution)))?;
                if !self.shared_dir {
                    return bad("a mix works one tree all its threads share: give --shared-dir".into());
                }
            }
            (None, true) => return bad("the mix phase needs a mix: give --mix or --profile".into()),
            (Some(_), false) => return bad("--mix is given but no phase runs it: put mix in --phases".into()),
            (None, false) => {}
        }
        if self.direct {
            if let Some(size) = self.sizes.unaligned(4096) {
                return bad(format!(
                    "--direct needs file sizes in whole 4 KiB blocks; {} is not (drop --direct or pick other sizes)",
                    Bytes(size)
                ));
            }
        }
        self.check_order()
    }

    /// Walks the phases over what exists, refusing one that finds nothing to work on.
    fn check_order(&self) -> Result<(), FilesError> {
        let mut state = self.start;
        for (n, &phase) in self.phases.iter().enumerate() {
            let TreeState { dirs, files, copied, linked, symlinked, mixed, .. } = state;
            let missing = match phase {
                _ if mixed => Some("a mix ran before it, and which files a mix leaves is its own: put the mix last"),
                Phase::Mkdir if dirs => Some("the directories exist already (one mkdir per run)"),
                Phase::Mkdir => None,
                Phase::Create if !dirs => Some("it needs the directories: put mkdir before it"),
                Phase::Create if files => Some("the files exist already (one create per run)"),
                Phase::Readdir | Phase::StatDir if !dirs => Some("it needs the directories: put mkdir before it"),
                _ if phase.needs_files() && !files => {
                    Some("it needs the files: put mkdir and create before it, or keep a tree with --keep in the directory and work it again")
                }
                Phase::Copy if copied => Some("the tree was copied already (one copy per run)"),
                Phase::Link if linked => Some("the files are linked already (one link per run)"),
                Phase::Symlink if symlinked => Some("the files have symbolic links already (one symlink per run)"),
                Phase::Rmdir if !dirs => Some("there are no directories to remove"),
                Phase::Rmdir if files => Some("the files are still there: put unlink before it"),
                _ => None,
            };
            if let Some(why) = missing {
                return Err(FilesError::Plan(format!("phase {} ({}) cannot run: {why}", n + 1, phase)));
            }
            state = state.after(phase);
        }
        Ok(())
    }

    /// The tree in words, for `files` of them in `dirs` directories (one host's, or a fleet's):
    /// "400 files, 5 directories (one shared tree, 1 level(s) of 4 per directory), sizes 4 KiB,
    /// 2 thread(s) on one shared tree, io_uring".
    pub fn describe_tree(&self, files: u64, dirs: u64) -> String {
        format!(
            "{} files, {} directories ({}, {} level(s) of {} per directory), sizes {}, {} thread(s){}, {}{}{}{}{}",
            thousands(files as f64),
            thousands(dirs as f64),
            if self.shared_dir { "one shared tree".to_string() } else { format!("{} trees", self.trees()) },
            self.depth,
            self.dirs_per_dir,
            self.sizes.describe(),
            self.threads,
            if self.shared_dir { " on one shared tree" } else { "" },
            match (self.engine, self.fsync) {
                (FileEngine::Auto, true) => {
                    "system calls, creates of one write queued on io_uring where fsync waits for a device (--engine auto)"
                }
                (FileEngine::Auto, false) => "system calls (--engine auto)",
                (engine, _) => engine.name(),
            },
            if self.fsync { ", fsync per file" } else { "" },
            if self.direct { ", O_DIRECT" } else { "" },
            if self.drop_caches { ", caches dropped before each phase" } else { "" },
            if self.order == crate::order::Order::Random { ", files in random order" } else { "" },
        )
    }

    /// The way `phase`'s operations reach the kernel. `auto` queues creates with --fsync on a
    /// ring where each file is one write and `queued_fsync_pays`: the tree is on a block device,
    /// whose writes each fsync waits for, and the machine makes rings (32 in flight per thread,
    /// their fsyncs sharing the journal's commits: ext4 over a loop device, 5.0-5.9x plain
    /// system calls). On tmpfs, where fsync waits for nothing, the ring made 0.66-0.75x, and
    /// system calls were faster in every other phase but two of 22 (docs/files.md, "Phases").
    pub fn engine_for(&self, phase: Phase, queued_fsync_pays: bool) -> iolab_engine::fileops::FileOpsEngine {
        use iolab_engine::fileops::FileOpsEngine::{Sync, Uring};
        match self.engine {
            FileEngine::IoUring => Uring,
            FileEngine::Sync => Sync,
            FileEngine::Auto
                if phase == Phase::Create && self.fsync && queued_fsync_pays && self.one_write_per_file() =>
            {
                Uring
            }
            FileEngine::Auto => Sync,
        }
    }

    /// Whether every file the create phase makes is one write of a worker's data (queued
    /// creates need that).
    fn one_write_per_file(&self) -> bool {
        self.sizes.max() <= MAX_CHUNK
    }

    /// Whether file `index` of tree `tree` is made by the create phase (or was, on a kept tree):
    /// every one, but a create under a mix makes only its prealloc share.
    pub fn made(&self, tree: u32, index: u64) -> bool {
        self.start.files || self.mix.as_ref().is_none_or(|mix| mix.made_before(self.seed, tree, index))
    }

    /// The files the create phase makes (all of them, but under a mix its prealloc share).
    pub fn made_files(&self) -> u64 {
        match &self.mix {
            Some(mix) if mix.prealloc_pct < 100 && !self.start.files => (0..self.trees())
                .map(|t| {
                    (0..self.files_in_tree(t)).filter(|&i| mix.made_before(self.seed, t, i)).count() as u64
                })
                .sum(),
            _ => self.total_files(),
        }
    }

    /// Trees in the run: one per thread, or one for all with --shared-dir.
    pub fn trees(&self) -> u32 {
        if self.shared_dir {
            1
        } else {
            self.threads
        }
    }

    /// Leaf directories of one tree (`dirs_per_dir ^ depth`).
    pub fn leaves(&self) -> u64 {
        u64::from(self.dirs_per_dir).checked_pow(self.depth).unwrap_or(u64::MAX)
    }

    /// Directories of one tree, its root included.
    pub fn dirs_per_tree(&self) -> Option<u64> {
        let mut total: u64 = 0;
        for level in 0..=self.depth {
            total = total.checked_add(u64::from(self.dirs_per_dir).checked_pow(level)?)?;
        }
        Some(total)
    }

    /// Files in tree `tree`.
    pub fn files_in_tree(&self, tree: u32) -> u64 {
        match self.files {
            FileCount::PerDir(n) => n * self.leaves(),
            FileCount::Total(n) => {
                let trees = u64::from(self.trees());
                n / trees + u64::from(u64::from(tree) < n % trees)
            }
        }
    }

    pub fn total_files(&self) -> u64 {
        (0..self.trees()).map(|t| self.files_in_tree(t)).sum()
    }

    pub fn total_dirs(&self) -> u64 {
        self.dirs_per_tree().unwrap_or(0) * u64::from(self.trees())
    }

    /// The operations each phase is planned to count, in order: what a complete run reports.
    pub fn planned(&self) -> Vec<(Phase, u64)> {
        let mut state = self.start;
        let made = self.made_files();
        self.phases
            .iter()
            .map(|&phase| {
                let copies = 1 + u64::from(state.copied);
                let links = u64::from(state.linked) + u64::from(state.symlinked);
                let count = match phase {
                    Phase::Mkdir | Phase::StatDir | Phase::Readdir => self.total_dirs(),
                    // Both trees' files after a copy, and every link beside the source's.
                    Phase::Unlink => made * (copies + links),
                    Phase::Rmdir => self.total_dirs() * copies,
                    // A mix runs for a time, not a count.
                    Phase::Mix => 0,
                    _ => made,
                };
                state = state.after(phase);
                (phase, count)
            })
            .collect()
    }
}

/// Parses "mkdir,create,stat": the phases in the order given.
pub fn parse_phases(text: &str) -> Result<Vec<Phase>, String> {
    text.split(',').filter(|s| !s.trim().is_empty()).map(Phase::from_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(phases: &str) -> FilesPlan {
        FilesPlan {
            dirs_per_dir: 3,
            depth: 2,
            files: FileCount::Total(100),
            sizes: SizeSpec::Fixed(0),
            phases: parse_phases(phases).expect("phases"),
            threads: 2,
            shared_dir: false,
            engine: FileEngine::Sync,
            fsync: false,
            direct: false,
            drop_caches: false,
            order: crate::order::Order::Sequential,
            seed: 1,
            start: Default::default(),
            mix: None,
        }
    }

    /// `auto` queues only creates with --fsync of one write each, and only where fsync waits
    /// for a device; the named engines keep every phase.
    #[test]
    fn auto_takes_the_ring_only_for_fsynced_creates_on_a_device() {
        use iolab_engine::fileops::FileOpsEngine::{Sync, Uring};
        let synced = FilesPlan { engine: FileEngine::Auto, fsync: true, ..plan("mkdir,create,stat") };
        assert_eq!(synced.engine_for(Phase::Create, true), Uring);
        assert_eq!(synced.engine_for(Phase::Create, false), Sync, "no device under it, or no ring");
        for phase in [Phase::Mkdir, Phase::Stat, Phase::Copy, Phase::Mix] {
            assert_eq!(synced.engine_for(phase, true), Sync, "{phase}");
        }
        let large = FilesPlan { sizes: SizeSpec::Fixed(2 << 20), ..synced.clone() };
        assert_eq!(large.engine_for(Phase::Create, true), Sync, "files of more than one write");
        let unsynced = FilesPlan { fsync: false, ..synced.clone() };
        assert_eq!(unsynced.engine_for(Phase::Create, true), Sync);
        let ring = FilesPlan { engine: FileEngine::IoUring, ..unsynced.clone() };
        assert_eq!(ring.engine_for(Phase::Stat, false), Uring);
        let calls = FilesPlan { engine: FileEngine::Sync, ..synced };
        assert_eq!(calls.engine_for(Phase::Create, true), Sync);
        assert_eq!("auto".parse::<FileEngine>(), Ok(FileEngine::Auto));
        assert_eq!(FileEngine::default(), FileEngine::Auto);
    }

    #[test]
    fn counts_follow_the_shape() {
        let p = plan("mkdir,create,copy,unlink,rmdir");
        p.check().expect("valid");
        assert_eq!(p.leaves(), 9);
        assert_eq!(p.dirs_per_tree(), Some(13));
        assert_eq!(p.files_in_tree(0) + p.files_in_tree(1), 100);
        assert_eq!(
            p.planned(),
            vec![
                (Phase::Mkdir, 26),
                (Phase::Create, 100),
                (Phase::Copy, 100),
                (Phase::Unlink, 200),
                (Phase::Rmdir, 52)
            ]
        );
    }

    #[test]
    fn per_dir_counts_multiply() {
        let mut p = plan("mkdir,create");
        p.files = FileCount::PerDir(5);
        p.shared_dir = true;
        assert_eq!(p.total_files(), 45);
        assert_eq!(p.total_dirs(), 13);
    }

    #[test]
    fn an_order_that_finds_nothing_is_refused() {
        for bad in ["stat", "create", "mkdir,create,rmdir", "mkdir,mkdir", "mkdir,create,copy,copy"] {
            assert!(plan(bad).check().is_err(), "{bad}");
        }
        assert!(plan("mkdir,create,unlink,create").check().is_ok());
    }

    #[test]
    fn direct_needs_whole_blocks() {
        let mut p = plan("mkdir,create");
        p.direct = true;
        p.sizes = SizeSpec::Fixed(1000);
        assert!(p.check().is_err());
        p.sizes = SizeSpec::Fixed(8192);
        assert!(p.check().is_ok());
    }
}
