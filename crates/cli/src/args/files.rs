//! `iolab files`: the fileset workload's arguments (crates/files).

use std::path::PathBuf;

use clap::Args;
use iolab_files::{parse_phases, FileEngine, FilesOptions, MixOp, Phase, SizeSpec};
use iolab_spec::{Bytes, Distribution, Nanos};

use super::shared::KeepArgs;

#[derive(Debug, Args)]
pub struct FilesArgs {
    /// A job file (TOML, keys as the flags: docs/files.md), then the directory the tree is
    /// made in: created if absent, else it must be empty or hold an earlier iolab tree
    /// (default: the job file's `dir`, else a scratch directory here, removed afterwards).
    #[arg(value_names = ["JOB_FILE", "DIR"], num_args = 0..=2)]
    pub paths: Vec<PathBuf>,

    /// Remove the tree a killed run left in DIR (only what iolab made: its marker says so).
    #[arg(long)]
    pub clean: bool,

    /// Files in all, spread evenly over the threads' trees and their leaf directories.
    #[arg(long, value_name = "N", conflicts_with = "files_per_dir", help_heading = "Tree")]
    pub files: Option<u64>,

    /// Files in each leaf directory of each tree (instead of --files).
    #[arg(long, value_name = "N", help_heading = "Tree")]
    pub files_per_dir: Option<u64>,

    /// Subdirectories of each directory above the leaves (default 10).
    #[arg(long, value_name = "N", help_heading = "Tree")]
    pub dirs_per_dir: Option<u32>,

    /// Levels of subdirectories below each tree's root (default 1; 0: every file in the root).
    #[arg(long, value_name = "N", help_heading = "Tree")]
    pub depth: Option<u32>,

    /// File sizes: one size (4k), a weighted list (4k:50,64k:30,1m:20), a lognormal by its
    /// median and p99 (lognormal:16k:1m) or a gamma by its mean and shape (gamma:128k:1.5);
    /// default 0 (empty files).
    #[arg(long, value_name = "SPEC", value_parser = parse_sizes, help_heading = "Tree")]
    pub sizes: Option<SizeSpec>,

    /// The phases, in order, from mkdir, create, stat, statdir, readdir, read, setattr, xattr,
    /// link, symlink, rename, copy, unlink, rmdir, mix (default mkdir,create,stat,read,unlink,rmdir;
    /// with a mix, mkdir,create,mix).
    #[arg(long, value_name = "LIST", value_parser = parse_phase_list)]
    pub phases: Option<PhaseList>,

    /// Threads, each working its own tree (or, with --shared-dir, a share of one); default 1.
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,

    /// All threads work one tree, contending on its directories.
    #[arg(long)]
    pub shared_dir: bool,

    /// auto (the default: each phase the faster way, said in the report: plain system calls,
    /// faster than the ring in 19 of 22 phases measured on tmpfs, ext4 and xfs, but creates with
    /// --fsync on a filesystem on a device queued on a ring, 32 per thread), sync (plain system
    /// calls throughout) or io_uring (each operation a ring entry).
    #[arg(long, value_name = "ENGINE", value_parser = parse_engine)]
    pub engine: Option<FileEngine>,

    /// fsync each file after writing it (create, copy).
    #[arg(long)]
    pub fsync: bool,

    /// O_DIRECT for file data (sizes in whole 4 KiB blocks).
    #[arg(long)]
    pub direct: bool,

    /// Before each phase: sync, then drop the page cache, dentries and inodes (the whole
    /// machine's; root only), so that stat, readdir and read figures are cold-cache figures.
    #[arg(long)]
    pub drop_caches: bool,

    /// The order each phase works its files in: sequential (by index, default) or random (a
    /// permutation of its own per phase, as bonnie++'s random create, stat and delete).
    #[arg(long, value_name = "ORDER", value_parser = parse_order)]
    pub order: Option<iolab_files::Order>,

    /// Seed of the file sizes (default 1).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Leave the tree in place at the end (`--clean DIR` removes it later).
    #[arg(long)]
    pub keep: bool,

    /// Run the phases N times, each repeat on a new tree (or on the kept tree the run began on,
    /// which the phases must leave as found), and say each phase's spread (default 1).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,

    /// A named profile: fileserver, varmail or webserver (Filebench's personalities: their
    /// files, directory width, sizes, threads and mix; docs/files.md). Any flag changes it.
    #[arg(long, value_name = "NAME", value_parser = parse_profile, help_heading = "Mix")]
    pub profile: Option<iolab_files::Profile>,

    /// Run a mix of operations for --runtime over one tree the threads share, each drawn by
    /// its weight: read, read-range, append, append-log, create, stat, readdir, rename,
    /// unlink, setattr, getxattr, setxattr, link, symlink, mkdir, rmdir (read:4,stat:2,create:1,unlink:1).
    #[arg(long, value_name = "OP:WEIGHT,...", value_parser = parse_mix, help_heading = "Mix")]
    pub mix: Option<MixList>,

    /// How long the mix is measured, after its warm-up (default 60s).
    #[arg(long, value_name = "TIME", help_heading = "Mix")]
    pub runtime: Option<Nanos>,

    /// How long the mix runs before it is measured (default 0).
    #[arg(long, value_name = "TIME", help_heading = "Mix")]
    pub warmup: Option<Nanos>,

    /// How the mix draws its files: uniform (default), zipf:THETA, pareto:H, normal:PCT or
    /// zoned:IO/SIZE,... as the block workloads (docs/distributions.md).
    #[arg(long, value_name = "DIST", value_parser = parse_distribution, help_heading = "Mix")]
    pub distribution: Option<Distribution>,

    /// Percent of the tree's names made as files before the mix (default 80, Filebench's
    /// prealloc); the mix keeps the population near it.
    #[arg(long, value_name = "PCT", help_heading = "Mix")]
    pub prealloc: Option<u32>,

    /// The most an append writes; each writes 1 to this many bytes, evenly (default 16k).
    #[arg(long, value_name = "SIZE", help_heading = "Mix")]
    pub append_size: Option<Bytes>,

    /// Bytes a read-range reads (default 4k).
    #[arg(long, value_name = "SIZE", help_heading = "Mix")]
    pub range_size: Option<Bytes>,

    /// A create writes what an append does (1 to --append-size bytes) instead of the file's
    /// size, as Filebench varmail's createfile and appendfilerand (varmail sets it).
    #[arg(long, help_heading = "Mix")]
    pub create_appends: bool,

    /// Shape the tree so each directory holds about N entries (Filebench's meandirwidth):
    /// sets --dirs-per-dir and --depth where they are not given.
    #[arg(long, value_name = "N", help_heading = "Tree")]
    pub dir_width: Option<u64>,

    /// Print the report as JSON (schema iolab.files/1, docs/files.md).
    #[arg(long, help_heading = "Results")]
    pub json: bool,

    /// No progress lines on stderr.
    #[arg(short, long, help_heading = "Results")]
    pub quiet: bool,

    #[command(flatten)]
    pub store: KeepArgs,
}

fn parse_sizes(text: &str) -> Result<SizeSpec, String> {
    text.parse()
}

/// A name of its own so that clap takes the list as one value, not as repeated flags.
type PhaseList = Vec<Phase>;

fn parse_phase_list(text: &str) -> Result<PhaseList, String> {
    parse_phases(text)
}

/// A name of its own so that clap takes the list as one value.
type MixList = Vec<(MixOp, u32)>;

fn parse_mix(text: &str) -> Result<MixList, String> {
    iolab_files::mix::parse_mix_ops(text)
}

fn parse_profile(text: &str) -> Result<iolab_files::Profile, String> {
    text.parse()
}

fn parse_distribution(text: &str) -> Result<Distribution, String> {
    text.parse::<Distribution>().map_err(|e| e.to_string())
}

fn parse_order(text: &str) -> Result<iolab_files::Order, String> {
    text.parse()
}

fn parse_engine(text: &str) -> Result<FileEngine, String> {
    text.parse()
}

impl FilesArgs {
    /// The options the flags give (a switch not given leaves the job file's key).
    pub fn options(&self, dir: Option<PathBuf>) -> FilesOptions {
        let on = |flag: bool| flag.then_some(true);
        FilesOptions {
            dir,
            files: self.files,
            files_per_dir: self.files_per_dir,
            dirs_per_dir: self.dirs_per_dir,
            depth: self.depth,
            sizes: self.sizes.clone(),
            phases: self.phases.clone(),
            threads: self.threads,
            shared_dir: on(self.shared_dir),
            engine: self.engine,
            fsync: on(self.fsync),
            direct: on(self.direct),
            drop_caches: on(self.drop_caches),
            order: self.order,
            seed: self.seed,
            keep: on(self.keep),
            repeat: self.repeat,
            json: on(self.json),
            quiet: on(self.quiet),
            profile: self.profile,
            dir_width: self.dir_width,
            mix: self.mix.clone(),
            runtime: self.runtime,
            warmup: self.warmup,
            distribution: self.distribution.clone(),
            prealloc: self.prealloc,
            append_size: self.append_size,
            range_size: self.range_size,
            create_appends: on(self.create_appends),
        }
    }
}
