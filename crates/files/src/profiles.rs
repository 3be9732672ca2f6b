//! Named profiles (`--profile fileserver`): the file-server personalities people already run,
//! as Filebench publishes them (workloads/fileserver.f, varmail.f, webserver.f), told as iolab
//! options. A profile is the lowest layer: a job file's keys and the command line's flags
//! change any of it. Where iolab does a flow differently from Filebench, docs/files.md says.
//!
//! A Filebench thread loops over a fixed sequence of flowops; iolab draws operations by weight,
//! so each profile's weights are the times its operation comes in one pass of the sequence.

use std::fmt;
use std::str::FromStr;

use crate::mix::MixOp;
use crate::sizes::SizeSpec;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// Filebench fileserver: 10,000 files of 128 KiB mean in directories of 20, 50 threads each
    /// creating and writing a whole file, appending to one, reading one whole, deleting one and
    /// stating one.
    Fileserver,
    /// Filebench varmail: 1,000 files of 16 KiB mean in one directory, 16 threads each deleting
    /// a message, creating one of up to 16 KiB (fsynced), appending to one (fsynced) and
    /// reading two whole.
    Varmail,
    /// Filebench webserver: 1,000 files of 16 KiB mean in directories of 20, 100 threads each
    /// reading ten whole files and appending up to 16 KiB to one shared log.
    Webserver,
}

pub const PROFILES: [Profile; 3] = [Profile::Fileserver, Profile::Varmail, Profile::Webserver];

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Fileserver => "fileserver",
            Profile::Varmail => "varmail",
            Profile::Webserver => "webserver",
        }
    }

    /// What the profile sets when nothing else is given (`FilesOptions` layers it).
    pub fn setting(self) -> ProfileSetting {
        // Filebench's file size: a gamma law of shape 1.5 around the mean.
        let gamma = |mean: u64| SizeSpec::Gamma { mean, shape: 1.5 };
        match self {
            Profile::Fileserver => ProfileSetting {
                files: 10_000,
                dir_width: 20,
                sizes: gamma(128 << 10),
                threads: 50,
                ops: vec![
                    (MixOp::Create, 1),
                    (MixOp::Append, 1),
                    (MixOp::Read, 1),
                    (MixOp::Unlink, 1),
                    (MixOp::Stat, 1),
                ],
                fsync: false,
                create_appends: false,
                prealloc_pct: 80,
            },
            // meandirwidth=1000000: every file in one directory.
            Profile::Varmail => ProfileSetting {
                files: 1_000,
                dir_width: 1_000_000,
                sizes: gamma(16 << 10),
                threads: 16,
                ops: vec![(MixOp::Unlink, 1), (MixOp::Create, 1), (MixOp::Append, 1), (MixOp::Read, 2)],
                fsync: true,
                create_appends: true,
                prealloc_pct: 80,
            },
            // The web pages are all made first (prealloc=100); the log is one file.
            Profile::Webserver => ProfileSetting {
                files: 1_000,
                dir_width: 20,
                sizes: gamma(16 << 10),
                threads: 100,
                ops: vec![(MixOp::Read, 10), (MixOp::AppendLog, 1)],
                fsync: false,
                create_appends: false,
                prealloc_pct: 100,
            },
        }
    }
}

/// A profile's files, tree, threads and mix; each runs 60 s and appends up to 16 KiB, as
/// Filebench's personalities.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileSetting {
    pub files: u64,
    /// Entries per directory (Filebench's meandirwidth).
    pub dir_width: u64,
    pub sizes: SizeSpec,
    pub threads: u32,
    pub ops: Vec<(MixOp, u32)>,
    /// fsync after each create and append.
    pub fsync: bool,
    /// A create writes an append's bytes (Filebench's createfile + appendfilerand).
    pub create_appends: bool,
    /// Percent of the names made first (Filebench's prealloc).
    pub prealloc_pct: u32,
}

pub const PROFILE_RUNTIME_S: u64 = 60;
pub const PROFILE_APPEND_SIZE: u64 = 16 << 10;

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim().to_ascii_lowercase();
        crate::named::one_of(&text, &PROFILES, Profile::name, "a profile")
    }
}
