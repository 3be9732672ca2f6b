//! `iolab verify`'s arguments.

use std::path::PathBuf;

use clap::Args;
use iolab_spec::Bytes;

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The file or block device a `--verify` run wrote.
    #[arg(value_name = "TARGET")]
    pub target: PathBuf,
    /// The record of what each block should hold (default: the one `--verify` keeps for TARGET
    /// under the data directory).
    #[arg(long, value_name = "PATH")]
    pub verify_state: Option<PathBuf>,
    /// Where the region to read starts (default 0; a multiple of 4k).
    #[arg(long, value_name = "SIZE")]
    pub offset: Option<Bytes>,
    /// How much to read (default: as far as the record goes, else the whole target).
    #[arg(long, value_name = "SIZE")]
    pub size: Option<Bytes>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}
