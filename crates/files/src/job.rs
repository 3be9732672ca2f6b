//! The options of a fileset run, one table for both sources: the flags of `iolab files` and
//! the keys of a TOML job file (the flag's name with `_` for `-`: `--dirs-per-dir 4` is
//! `dirs_per_dir = 4`). A flag given on the command line overrides the file's key; an unknown
//! key is an error naming it, never ignored (a misspelt `fsnyc` that ran without fsync would
//! be a wrong result). The keys are listed in docs/files.md.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use iolab_spec::{Bytes, Distribution, Nanos};

use crate::error::FilesError;
use crate::mix::{parse_mix_ops, Mix, MixOp};
use crate::order::Order;
use crate::plan::TreeState;
use crate::plan::{parse_phases, FileCount, FileEngine, FilesPlan, Phase, DEFAULT_PHASES};
use crate::profiles::{Profile, PROFILE_APPEND_SIZE, PROFILE_RUNTIME_S};
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
    /// A named profile (`fileserver`, ...): the layer under everything else given.
    #[serde(default, deserialize_with = "profile")]
    pub profile: Option<Profile>,
    /// Entries per directory the tree is shaped for, as Filebench's meandirwidth: sets
    /// dirs_per_dir and depth where they are not given.
    pub dir_width: Option<u64>,
    /// The mix's operations and weights (`read:4,stat:1`).
    #[serde(default, deserialize_with = "mix")]
    pub mix: Option<Vec<(MixOp, u32)>>,
    pub runtime: Option<Nanos>,
    pub warmup: Option<Nanos>,
    #[serde(default, deserialize_with = "distribution")]
    pub distribution: Option<Distribution>,
    /// Percent of the names made before the mix.
    pub prealloc: Option<u32>,
    pub append_size: Option<Bytes>,
    pub range_size: Option<Bytes>,
    /// A mix's create writes an append's bytes, not the file's size.
    pub create_appends: Option<bool>,
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
            profile: self.profile.or(base.profile),
            dir_width: self.dir_width.or(base.dir_width),
            mix: self.mix.or(base.mix),
            runtime: self.runtime.or(base.runtime),
            warmup: self.warmup.or(base.warmup),
            distribution: self.distribution.or(base.distribution),
            prealloc: self.prealloc.or(base.prealloc),
            append_size: self.append_size.or(base.append_size),
            range_size: self.range_size.or(base.range_size),
            create_appends: self.create_appends.or(base.create_appends),
        }
    }

    /// These options over their profile's, if they name one.
    fn with_profile(&self) -> FilesOptions {
        match self.profile {
            Some(profile) => self.clone().over(FilesOptions::of_profile(profile)),
            None => self.clone(),
        }
    }

    /// What a run of `profile` sets when nothing else is given.
    fn of_profile(profile: Profile) -> FilesOptions {
        let set = profile.setting();
        FilesOptions {
            files: Some(set.files),
            dir_width: Some(set.dir_width),
            sizes: Some(set.sizes),
            threads: Some(set.threads),
            shared_dir: Some(true),
            fsync: Some(set.fsync),
            mix: Some(set.ops),
            runtime: Some(Nanos::from_secs(PROFILE_RUNTIME_S)),
            append_size: Some(Bytes(PROFILE_APPEND_SIZE)),
            prealloc: Some(set.prealloc_pct),
            create_appends: Some(set.create_appends),
            ..FilesOptions::default()
        }
    }

    /// The mix these options ask for, if any.
    fn mix(&self) -> Option<Mix> {
        let ops = self.mix.clone()?;
        let mut mix = Mix::of(ops);
        if let Some(runtime) = self.runtime {
            mix.runtime_s = runtime.0 as f64 / 1e9;
        }
        if let Some(warmup) = self.warmup {
            mix.warmup_s = warmup.0 as f64 / 1e9;
        }
        if let Some(distribution) = &self.distribution {
            mix.distribution = distribution.clone();
        }
        mix.prealloc_pct = self.prealloc.unwrap_or(mix.prealloc_pct);
        mix.append_size = self.append_size.map_or(mix.append_size, |b| b.0);
        mix.range_size = self.range_size.map_or(mix.range_size, |b| b.0);
        mix.create_appends = self.create_appends.unwrap_or(false);
        Some(mix)
    }

    /// The mix's own options given without a mix: said, never ignored.
    fn check_mix_keys(&self) -> Result<(), FilesError> {
        if self.mix.is_some() {
            return Ok(());
        }
        let given: Vec<&str> = [
            ("runtime", self.runtime.is_some()),
            ("warmup", self.warmup.is_some()),
            ("distribution", self.distribution.is_some()),
            ("prealloc", self.prealloc.is_some()),
            ("append-size", self.append_size.is_some()),
            ("range-size", self.range_size.is_some()),
            ("create-appends", self.create_appends.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
        if given.is_empty() {
            Ok(())
        } else {
            Err(FilesError::Plan(format!(
                "--{} set(s) a mix, but none is given: add --mix or --profile",
                given.join(", --")
            )))
        }
    }

    /// The run these options describe, defaults filled in, checked.
    /// The plan of a tree made from nothing.
    pub fn plan(&self) -> Result<FilesPlan, FilesError> {
        self.plan_from(TreeState::default())
    }

    /// The plan of phases that begin on a tree in state `start` (a kept tree's).
    pub fn plan_from(&self, start: TreeState) -> Result<FilesPlan, FilesError> {
        let options = self.with_profile();
        options.check_mix_keys()?;
        options.plan_of(start)
    }

    fn plan_of(&self, start: TreeState) -> Result<FilesPlan, FilesError> {
        let files = match (self.files, self.files_per_dir) {
            (Some(_), Some(_)) => return Err(FilesError::Plan(
                "files and files_per_dir (--files, --files-per-dir) are two ways to say one thing: give one"
                    .into(),
            )),
            (_, Some(n)) => FileCount::PerDir(n),
            (Some(n), None) => FileCount::Total(n),
            (None, None) => FileCount::Total(DEFAULT_FILES),
        };
        let mix = self.mix();
        let (dirs_per_dir, depth) = match self.dir_width {
            Some(width) => shape_for_width(files, self.trees_asked(mix.is_some()), width)?,
            None => (DEFAULT_DIRS_PER_DIR, DEFAULT_DEPTH),
        };
        let phases = match (&self.phases, &mix) {
            (Some(phases), Some(_)) if !phases.contains(&Phase::Mix) => {
                phases.iter().copied().chain([Phase::Mix]).collect()
            }
            (Some(phases), _) => phases.clone(),
            (None, Some(_)) => vec![Phase::Mkdir, Phase::Create, Phase::Mix],
            (None, None) => DEFAULT_PHASES.to_vec(),
        };
        let plan = FilesPlan {
            dirs_per_dir: self.dirs_per_dir.unwrap_or(dirs_per_dir),
            depth: self.depth.unwrap_or(depth),
            files,
            sizes: self.sizes.clone().unwrap_or(SizeSpec::Fixed(0)),
            phases,
            threads: self.threads.unwrap_or(DEFAULT_THREADS),
            // A mix's threads share one population of files.
            shared_dir: self.shared_dir.unwrap_or(mix.is_some()),
            engine: self.engine.unwrap_or_default(),
            fsync: self.fsync.unwrap_or(false),
            direct: self.direct.unwrap_or(false),
            drop_caches: self.drop_caches.unwrap_or(false),
            order: self.order.unwrap_or_default(),
            seed: self.seed.unwrap_or(DEFAULT_SEED),
            start,
            mix,
        };
        plan.check()?;
        Ok(plan)
    }

    /// The trees the files will be spread over: one when shared (a mix's default).
    fn trees_asked(&self, mix: bool) -> u64 {
        if self.shared_dir.unwrap_or(mix) {
            1
        } else {
            u64::from(self.threads.unwrap_or(DEFAULT_THREADS).max(1))
        }
    }
}

/// The directories per directory and depth that give each directory about `width` entries
/// (Filebench's meandirwidth): leaves of `width` files each, under levels of about `width`
/// directories; a width of at least the files per tree is one directory.
fn shape_for_width(files: FileCount, trees: u64, width: u64) -> Result<(u32, u32), FilesError> {
    if width < 2 {
        return Err(FilesError::Plan(format!("--dir-width must be at least 2, not {width}")));
    }
    let per_tree = match files {
        FileCount::Total(n) => n.div_ceil(trees.max(1)),
        FileCount::PerDir(_) => {
            return Err(FilesError::Plan(
                "--dir-width shapes the tree for --files; --files-per-dir says the shape already".into(),
            ))
        }
    };
    let leaves = per_tree.div_ceil(width).max(1);
    if leaves == 1 {
        return Ok((1, 0));
    }
    let depth = ((leaves as f64).ln() / (width as f64).ln()).round().max(1.0);
    let per_dir = (leaves as f64).powf(1.0 / depth).ceil();
    Ok((per_dir as u32, depth as u32))
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

fn profile<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Profile>, D::Error> {
    let text = d.deserialize_any(Text { list: false })?;
    text.parse().map(Some).map_err(de::Error::custom)
}

fn mix<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<(MixOp, u32)>>, D::Error> {
    let text = d.deserialize_any(Text { list: true })?;
    parse_mix_ops(&text).map(Some).map_err(de::Error::custom)
}

fn distribution<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Distribution>, D::Error> {
    let text = d.deserialize_any(Text { list: false })?;
    text.parse::<Distribution>().map(Some).map_err(de::Error::custom)
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
