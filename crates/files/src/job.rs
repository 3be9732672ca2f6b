//! The options of a fileset run, one table for both sources: the flags of `iolab files` and
//! the keys of a TOML job file (the flag's name with `_` for `-`: `--dirs-per-dir 4` is
//! `dirs_per_dir = 4`). A flag given on the command line overrides the file's key; an unknown
//! key is an error naming it, never ignored (a misspelt `fsnyc` that ran without fsync would
//! be a wrong result). The keys are listed in docs/files.md.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use crate::error::FilesError;
use crate::order::Order;
use crate::plan::TreeState;
use crate::plan::{parse_phases, FileCount, FileEngine, FilesPlan, Phase, DEFAULT_PHASES};
use crate::sizes::SizeSpec;

/// Files in the tree when neither `files` nor `files_per_dir` is given.
pub const DEFAULT_FILES: u64 = 10_000;
pub const DEFAULT_DIRS_PER_DIR: u32 = 10;
pub const DEFAULT_DEPTH: u32 = 1;
pub const DEFAULT_THREADS: u32 = 1;
pub const DEFAULT_SEED: u64 = 1;

/// Every option, unset where neither the file nor a flag gave it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesOptions {
    pub dir: Option<PathBuf>,
    pub files: Option<u64>,
    pub files_per_dir: Option<u64>,
    pub dirs_per_dir: Option<u32>,
    pub depth: Option<u32>,
    #[serde(default, deserialize_with = "sizes")]
    pub sizes: Option<SizeSpec>,
    #[serde(default, deserialize_with = "phases")]
    pub phases: Option<Vec<Phase>>,
    pub threads: Option<u32>,
    pub shared_dir: Option<bool>,
    #[serde(default, deserialize_with = "engine")]
    pub engine: Option<FileEngine>,
    pub fsync: Option<bool>,
    pub direct: Option<bool>,
    pub drop_caches: Option<bool>,
    #[serde(default, deserialize_with = "order")]
    pub order: Option<Order>,
    pub seed: Option<u64>,
    pub keep: Option<bool>,
    /// How many times to run the phases (`--repeat`), each phase's spread said.
    pub repeat: Option<u32>,
    pub json: Option<bool>,
    pub quiet: Option<bool>,
}

impl FilesOptions {
    /// These options over `base` (a job file's): each one set here wins. `files` and
    /// `files_per_dir` are one choice told two ways: setting either here replaces both below.
    pub fn over(self, base: FilesOptions) -> FilesOptions {
        let count_here = self.files.is_some() || self.files_per_dir.is_some();
        let (files, files_per_dir) =
            if count_here { (self.files, self.files_per_dir) } else { (base.files, base.files_per_dir) };
        FilesOptions {
            dir: self.dir.or(base.dir),
            files,
            files_per_dir,
            dirs_per_dir: self.dirs_per_dir.or(base.dirs_per_dir),
            depth: self.depth.or(base.depth),
            sizes: self.sizes.or(base.sizes),
            phases: self.phases.or(base.phases),
            threads: self.threads.or(base.threads),
            shared_dir: self.shared_dir.or(base.shared_dir),
            engine: self.engine.or(base.engine),
            fsync: self.fsync.or(base.fsync),
            direct: self.direct.or(base.direct),
            drop_caches: self.drop_caches.or(base.drop_caches),
            order: self.order.or(base.order),
            seed: self.seed.or(base.seed),
            keep: self.keep.or(base.keep),
            repeat: self.repeat.or(base.repeat),
            json: self.json.or(base.json),
            quiet: self.quiet.or(base.quiet),
        }
    }

    /// The run these options describe, defaults filled in, checked.
    /// The plan of a tree made from nothing.
    pub fn plan(&self) -> Result<FilesPlan, FilesError> {
        self.plan_from(TreeState::default())
    }

    /// The plan of phases that begin on a tree in state `start` (a kept tree's).
    pub fn plan_from(&self, start: TreeState) -> Result<FilesPlan, FilesError> {
        let files = match (self.files, self.files_per_dir) {
            (Some(_), Some(_)) => return Err(FilesError::Plan(
                "files and files_per_dir (--files, --files-per-dir) are two ways to say one thing: give one"
                    .into(),
            )),
            (_, Some(n)) => FileCount::PerDir(n),
            (Some(n), None) => FileCount::Total(n),
            (None, None) => FileCount::Total(DEFAULT_FILES),
        };
        let plan = FilesPlan {
            dirs_per_dir: self.dirs_per_dir.unwrap_or(DEFAULT_DIRS_PER_DIR),
            depth: self.depth.unwrap_or(DEFAULT_DEPTH),
            files,
            sizes: self.sizes.clone().unwrap_or(SizeSpec::Fixed(0)),
            phases: self.phases.clone().unwrap_or_else(|| DEFAULT_PHASES.to_vec()),
            threads: self.threads.unwrap_or(DEFAULT_THREADS),
            shared_dir: self.shared_dir.unwrap_or(false),
            engine: self.engine.unwrap_or_default(),
            fsync: self.fsync.unwrap_or(false),
            direct: self.direct.unwrap_or(false),
            drop_caches: self.drop_caches.unwrap_or(false),
            order: self.order.unwrap_or_default(),
            seed: self.seed.unwrap_or(DEFAULT_SEED),
            start,
        };
        plan.check()?;
        Ok(plan)
    }
}

/// Reads a fileset job file (a regular file of at most `JOB_FILE`'s size: a FIFO or a device
/// named here is refused, never waited on or read without end).
pub fn load(path: &Path) -> Result<FilesOptions, String> {
    let text = iolab_spec::user_file::read_to_string(path, iolab_spec::user_file::JOB_FILE)
        .map_err(|e| e.to_string())?;
    parse(&text).map_err(|e| format!("job file {}: {e}", path.display()))
}

/// Parses job-file text; the error is one line with the line number and the key.
pub fn parse(text: &str) -> Result<FilesOptions, String> {
    iolab_spec::jobfile::parse_toml(
        text,
        "unknown key",
        "the keys of `iolab files` are listed in docs/files.md",
    )
    .map_err(|e| e.to_string())
}

/// A value written as text, a number (sizes in bytes) or, for lists, an array of either.
struct Text {
    list: bool,
}

impl<'de> Visitor<'de> for Text {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.list { "a string or an array of strings" } else { "a string or a number" })
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<String, A::Error> {
        if !self.list {
            return Err(de::Error::invalid_type(de::Unexpected::Seq, &self));
        }
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<String>()? {
            items.push(item);
        }
        if items.is_empty() {
            return Err(de::Error::custom("an empty list: name at least one"));
        }
        Ok(items.join(","))
    }
}

fn sizes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SizeSpec>, D::Error> {
    let text = d.deserialize_any(Text { list: false })?;
    text.parse().map(Some).map_err(de::Error::custom)
}

fn phases<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Phase>>, D::Error> {
    let text = d.deserialize_any(Text { list: true })?;
    parse_phases(&text).map(Some).map_err(de::Error::custom)
}

fn order<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Order>, D::Error> {
    let text = d.deserialize_any(Text { list: false })?;
    text.parse().map(Some).map_err(de::Error::custom)
}

fn engine<'de, D: Deserializer<'de>>(d: D) -> Result<Option<FileEngine>, D::Error> {
    let text = d.deserialize_any(Text { list: false })?;
    text.parse().map(Some).map_err(de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_take_the_flags_values() {
        let o = parse(
            "dir = \"/mnt/t\"\nfiles = 5000\ndirs_per_dir = 4\ndepth = 2\nsizes = \"4k:3,1m:1\"\n\
             phases = [\"mkdir\", \"create\"]\nthreads = 2\nengine = \"sync\"\nfsync = true\nseed = 9\n",
        )
        .expect("valid");
        let plan = o.plan().expect("plan");
        assert_eq!(o.dir.as_deref(), Some(Path::new("/mnt/t")));
        assert_eq!(plan.files, FileCount::Total(5000));
        assert_eq!((plan.dirs_per_dir, plan.depth, plan.threads, plan.seed), (4, 2, 2, 9));
        assert_eq!(plan.sizes, SizeSpec::Weighted(vec![(4096, 3), (1 << 20, 1)]));
        assert_eq!(plan.phases, vec![Phase::Mkdir, Phase::Create]);
        assert_eq!(plan.engine, FileEngine::Sync);
        assert!(plan.fsync && !plan.direct);
        assert_eq!(
            parse("sizes = 4096\nphases = \"mkdir\"").expect("valid").sizes,
            Some(SizeSpec::Fixed(4096))
        );
    }

    #[test]
    fn an_unknown_key_or_bad_value_is_named_with_its_line() {
        let err = parse("files = 10\nfsnyc = true\n").unwrap_err();
        assert!(err.starts_with("line 2: unknown key `fsnyc`"), "{err}");
        let err = parse("files = 10\nsizes = \"4q\"\n").unwrap_err();
        assert!(err.starts_with("line 2 (sizes):"), "{err}");
        let err = parse("phases = \"mkdir,stats\"\n").unwrap_err();
        assert!(err.contains("'stats' is not a phase"), "{err}");
        assert!(parse("phases = []\n").unwrap_err().contains("empty"));
        assert!(parse("engine = [\"sync\"]\n").is_err());
    }

    #[test]
    fn flags_override_the_file() {
        let file = parse("files_per_dir = 7\nthreads = 4\nengine = \"sync\"\nkeep = true\n").expect("valid");
        let flags = FilesOptions { files: Some(100), threads: Some(2), ..FilesOptions::default() };
        let both = flags.over(file);
        let plan = both.plan().expect("plan");
        assert_eq!(plan.files, FileCount::Total(100), "--files replaces the file's files_per_dir");
        assert_eq!(plan.threads, 2);
        assert_eq!(plan.engine, FileEngine::Sync, "kept from the file");
        assert_eq!(both.keep, Some(true));
        let both_counts = FilesOptions { files: Some(1), files_per_dir: Some(2), ..FilesOptions::default() };
        assert!(both_counts.plan().is_err());
    }
}
