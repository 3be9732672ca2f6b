//! A tree kept in its directory (`--keep`) and worked again by a later run: stat, read,
//! readdir, rename, copy, unlink and rmdir after a remount, with cold caches, or from another
//! host that mounts the same filesystem. The marker says what is there: the tree's shape (the
//! options that compute every path and size) and its state (directories made, files made,
//! renamed, copied). A run that works a kept tree and does not finish leaves the state unknown,
//! and such a tree is only cleaned, never worked again: its files may be half made.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::FilesError;
use crate::job::FilesOptions;

use crate::plan::{FileCount, FilesPlan, Phase, TreeState, DEFAULT_PHASES};
use crate::safety::{self, Prepared, KEPT_LINE, UNKNOWN_LINE};
use crate::sizes::SizeSpec;

/// The options that compute a tree's every path and size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    pub files: FileCount,
    pub dirs_per_dir: u32,
    pub depth: u32,
    pub sizes: SizeSpec,
    pub seed: u64,
    pub threads: u32,
    pub shared_dir: bool,
}

impl Shape {
    pub fn of(plan: &FilesPlan) -> Shape {
        Shape {
            files: plan.files,
            dirs_per_dir: plan.dirs_per_dir,
            depth: plan.depth,
            sizes: plan.sizes.clone(),
            seed: plan.seed,
            threads: plan.threads,
            shared_dir: plan.shared_dir,
        }
    }

    /// The shape as options a user's own are laid over.
    fn options(&self) -> FilesOptions {
        let (files, files_per_dir) = match self.files {
            FileCount::Total(n) => (Some(n), None),
            FileCount::PerDir(n) => (None, Some(n)),
        };
        FilesOptions {
            files,
            files_per_dir,
            dirs_per_dir: Some(self.dirs_per_dir),
            depth: Some(self.depth),
            sizes: Some(self.sizes.clone()),
            seed: Some(self.seed),
            threads: Some(self.threads),
            shared_dir: Some(self.shared_dir),
            ..FilesOptions::default()
        }
    }

    /// What differs between `self` (the kept tree) and `asked`, in the options' words.
    fn differences(&self, asked: &Shape) -> Vec<String> {
        let mut said = Vec::new();
        let mut differ = |name: &str, kept: String, wanted: String| {
            if kept != wanted {
                said.push(format!("{name} {kept} (asked {wanted})"));
            }
        };
        let count = |c: FileCount| match c {
            FileCount::Total(n) => format!("{n} in all"),
            FileCount::PerDir(n) => format!("{n} per directory"),
        };
        differ("files", count(self.files), count(asked.files));
        differ("--dirs-per-dir", self.dirs_per_dir.to_string(), asked.dirs_per_dir.to_string());
        differ("--depth", self.depth.to_string(), asked.depth.to_string());
        differ("--sizes", format!("{:?}", self.sizes), format!("{:?}", asked.sizes));
        differ("--seed", self.seed.to_string(), asked.seed.to_string());
        differ("--threads", self.threads.to_string(), asked.threads.to_string());
        differ("--shared-dir", self.shared_dir.to_string(), asked.shared_dir.to_string());
        said
    }
}

/// A kept tree as its marker records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptTree {
    pub shape: Shape,
    pub state: TreeState,
}

impl KeptTree {
    /// The marker's line for it.
    pub(crate) fn line(&self) -> String {
        format!("{KEPT_LINE} {}", serde_json::to_string(self).unwrap_or_default())
    }

    /// The kept tree a marker's `text` records: `None` without one, an error when a run that
    /// worked it did not finish (or the line does not read).
    pub(crate) fn in_marker(text: &str) -> Result<Option<KeptTree>, String> {
        let Some(line) = text.lines().find(|l| l.starts_with(KEPT_LINE)) else { return Ok(None) };
        if line.trim() == UNKNOWN_LINE {
            return Err("a run that worked it stopped part-way, so what is there is unknown".into());
        }
        serde_json::from_str(line[KEPT_LINE.len()..].trim())
            .map(Some)
            .map_err(|e| format!("its marker's kept-tree line does not read ({e})"))
    }
}

/// The plan for `options` in `dir`: where the phases begin with one that works what exists
/// (anything but mkdir) and `dir` holds a kept tree, its shape and state are the plan's start
/// (the user's own shape options must agree with it); otherwise a plan from nothing.
pub fn plan_in(options: &FilesOptions, dir: &Path) -> Result<FilesPlan, FilesError> {
    let first = options.phases.as_deref().unwrap_or(&DEFAULT_PHASES).first().copied();
    if first == Some(Phase::Mkdir) || first.is_none() {
        return options.plan();
    }
    let kept = match kept_tree(dir)? {
        None => return options.plan(),
        Some(Err(why)) => {
            return Err(FilesError::Refused(format!(
            "{} holds an iolab tree that cannot be worked again: {why}; `iolab files --clean {0}` removes it",
            dir.display()
        )))
        }
        Some(Ok(kept)) => kept,
    };
    let plan = options.clone().over(kept.shape.options()).plan_from(kept.state)?;
    let differences = kept.shape.differences(&Shape::of(&plan));
    if !differences.is_empty() {
        return Err(FilesError::Refused(format!(
            "{} holds a kept tree of another shape: {}; drop those options to work it (its own are taken), or give another directory",
            dir.display(),
            differences.join(", ")
        )));
    }
    Ok(plan)
}

/// The kept tree `dir`'s marker records: `None` where there is no marker or it records none,
/// `Some(Err(why))` where it cannot be worked again.
fn kept_tree(dir: &Path) -> Result<Option<Result<KeptTree, String>>, FilesError> {
    Ok(safety::marker_text(dir)?.and_then(|text| KeptTree::in_marker(&text).transpose()))
}

/// Makes `dir`'s kept tree ready for `plan`, which starts on it: refused while another run
/// works it, or when it is no longer what the plan was made from. Until the run records what
/// it left, the marker says the state is unknown.
pub(crate) fn reopen(dir: &Path, plan: &FilesPlan) -> Result<Prepared, FilesError> {
    let expected = KeptTree { shape: Shape::of(plan), state: plan.start };
    safety::reclaim(dir, KEPT_LINE, UNKNOWN_LINE, |text| match KeptTree::in_marker(text) {
        Ok(Some(kept)) if kept == expected => Ok(()),
        Err(why) => Err(FilesError::Refused(format!(
            "{}: {why}; `iolab files --clean {0}` removes it",
            dir.display()
        ))),
        Ok(_) => Err(FilesError::Refused(format!(
            "{}'s kept tree changed since the run was planned (another run worked it); nothing was touched",
            dir.display()
        ))),
    })
}

/// Records in `dir`'s marker what its tree now holds (`None`: unknown, a phase stopped).
pub(crate) fn record(dir: &Path, kept: Option<&KeptTree>) -> Result<(), FilesError> {
    let line = kept.map_or_else(|| UNKNOWN_LINE.to_string(), KeptTree::line);
    safety::set_marker_line(dir, KEPT_LINE, &line)
}
