//! `iolab files`: the fileset workload's arguments (crates/files).

use std::path::PathBuf;

use clap::Args;

use super::shared::KeepArgs;

#[derive(Debug, Args)]
pub struct FilesArgs {
    /// The directory the tree is made in: created if absent, else it must be empty or hold an
    /// earlier iolab tree (default: a scratch directory here, removed afterwards).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Remove the tree a killed run left in DIR (only what iolab made: its marker says so).
    #[arg(long, requires = "dir")]
    pub clean: bool,

    /// Files in all, spread evenly over the threads' trees and their leaf directories.
    #[arg(long, value_name = "N", conflicts_with = "files_per_dir", help_heading = "Tree")]
    pub files: Option<u64>,

    /// Files in each leaf directory of each tree (instead of --files).
    #[arg(long, value_name = "N", help_heading = "Tree")]
    pub files_per_dir: Option<u64>,

    /// Subdirectories of each directory above the leaves.
    #[arg(long, value_name = "N", default_value_t = 10, help_heading = "Tree")]
    pub dirs_per_dir: u32,

    /// Levels of subdirectories below each tree's root (0: every file in the root).
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = "Tree")]
    pub depth: u32,

    /// File sizes: one size (4k), a weighted list (4k:50,64k:30,1m:20), or a lognormal by its
    /// median and p99 (lognormal:16k:1m).
    #[arg(long, value_name = "SPEC", default_value = "0", help_heading = "Tree")]
    pub sizes: String,

    /// The phases, in order, from mkdir, create, stat, readdir, read, rename, copy, unlink,
    /// rmdir.
    #[arg(long, value_name = "LIST", default_value = "mkdir,create,stat,read,unlink,rmdir")]
    pub phases: String,

    /// Threads, each working its own tree (or, with --shared-dir, a share of one).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: u32,

    /// All threads work one tree, contending on its directories.
    #[arg(long)]
    pub shared_dir: bool,

    /// io_uring (each operation a ring entry) or sync (plain system calls).
    #[arg(long, value_name = "ENGINE", default_value = "io_uring")]
    pub engine: String,

    /// fsync each file after writing it (create, copy).
    #[arg(long)]
    pub fsync: bool,

    /// O_DIRECT for file data (sizes in whole 4 KiB blocks).
    #[arg(long)]
    pub direct: bool,

    /// Seed of the file sizes.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,

    /// Leave the tree in place at the end (`--clean DIR` removes it later).
    #[arg(long)]
    pub keep: bool,

    /// Print the report as JSON (schema iolab.files/1, docs/files.md).
    #[arg(long, help_heading = "Results")]
    pub json: bool,

    /// No progress lines on stderr.
    #[arg(short, long, help_heading = "Results")]
    pub quiet: bool,

    #[command(flatten)]
    pub store: KeepArgs,
}
