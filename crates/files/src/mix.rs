//! A mix of operations over time (`--mix read:4,stat:2,create:1,unlink:1`): each thread draws an
//! operation by weight and a file by `--distribution`, for `--runtime` seconds after a warm-up,
//! over one tree all threads share whose population stays steady. What each operation does
//! is in docs/files.md ("A mix"); the threads' loop is `worker::mixing`, the files' states
//! `population`.

use std::fmt;
use std::str::FromStr;

use iolab_spec::{Bytes, Distribution};
use serde::{Deserialize, Serialize};

use crate::sizes::file_hash;

/// One operation a mix draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MixOp {
    /// Open a file, read it whole (to its end as it is now), close it.
    Read,
    /// Open a file, read `range_size` bytes at a random place in it, close it.
    ReadRange,
    /// Open a file for appending, write 1 to `append_size` bytes at its end (drawn evenly, as
    /// Filebench's appendfilerand; fsync with --fsync), close it.
    Append,
    /// Write `append_size` bytes (at most) at the end of the run's one log file, which each
    /// thread holds open (Filebench webserver's appendlog).
    AppendLog,
    /// Make a file that is not there, with its size's bytes (or an append's, with
    /// `create_appends`; fsync with --fsync).
    Create,
    Stat,
    /// List the directory of a drawn file.
    Readdir,
    /// Rename a file within its directory (f<N> <-> r<N>).
    Rename,
    /// Remove a file (and the links made to it).
    Unlink,
    /// Set a file's times to now.
    Setattr,
    /// Read a file's extended attribute `user.iolab` (none set yet is an answer too).
    Getxattr,
    /// Set a file's extended attribute `user.iolab`.
    Setxattr,
    /// Make a hard link beside a file that has none.
    Link,
    /// Make a symbolic link beside a file that has none.
    Symlink,
    /// Make a directory in the directory of a drawn file.
    Mkdir,
    /// Remove a directory the mix made.
    Rmdir,
}

pub const MIX_OPS: [MixOp; 16] = [
    MixOp::Read,
    MixOp::ReadRange,
    MixOp::Append,
    MixOp::AppendLog,
    MixOp::Create,
    MixOp::Stat,
    MixOp::Readdir,
    MixOp::Rename,
    MixOp::Unlink,
    MixOp::Setattr,
    MixOp::Getxattr,
    MixOp::Setxattr,
    MixOp::Link,
    MixOp::Symlink,
    MixOp::Mkdir,
    MixOp::Rmdir,
];

impl MixOp {
    pub fn name(self) -> &'static str {
        match self {
            MixOp::Read => "read",
            MixOp::ReadRange => "read-range",
            MixOp::Append => "append",
            MixOp::AppendLog => "append-log",
            MixOp::Create => "create",
            MixOp::Stat => "stat",
            MixOp::Readdir => "readdir",
            MixOp::Rename => "rename",
            MixOp::Unlink => "unlink",
            MixOp::Setattr => "setattr",
            MixOp::Getxattr => "getxattr",
            MixOp::Setxattr => "setxattr",
            MixOp::Link => "link",
            MixOp::Symlink => "symlink",
            MixOp::Mkdir => "mkdir",
            MixOp::Rmdir => "rmdir",
        }
    }

    /// Its place in `MIX_OPS`.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for MixOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MixOp {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim().to_ascii_lowercase().replace('_', "-");
        let alias = match text.as_str() {
            "open" | "readwhole" | "read-whole" | "readfile" => "read",
            "readrange" | "pread" => "read-range",
            "write" => "append",
            "appendlog" | "log" => "append-log",
            "delete" | "remove" => "unlink",
            "touch" | "utimes" => "setattr",
            "xattr-get" | "get-xattr" => "getxattr",
            "xattr-set" | "set-xattr" => "setxattr",
            "hardlink" | "ln" => "link",
            "softlink" | "ln-s" => "symlink",
            other => other,
        };
        crate::named::one_of(alias, &MIX_OPS, MixOp::name, "an operation of a mix")
    }
}

/// A whole mix: the operations and their weights, how long it runs, how it picks files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mix {
    /// Each operation with its weight, in the order given.
    pub ops: Vec<(MixOp, u32)>,
    /// Seconds measured, after the warm-up.
    pub runtime_s: f64,
    /// Seconds run before the measured ones, their operations not counted.
    pub warmup_s: f64,
    /// How the files are drawn: every file alike, or some hot (zipf, pareto, ...).
    pub distribution: Distribution,
    /// The share of the tree's names made before the mix begins (Filebench's prealloc); the
    /// mix keeps its population near it.
    pub prealloc_pct: u32,
    /// Bytes an append writes at most (each writes 1 to this many, evenly).
    pub append_size: u64,
    /// Bytes a read-range reads.
    pub range_size: u64,
    /// A create writes what an append does (1 to `append_size` bytes), not the file's size:
    /// Filebench varmail's createfile + appendfilerand.
    #[serde(default)]
    pub create_appends: bool,
}

pub const DEFAULT_RUNTIME_S: f64 = 60.0;
pub const DEFAULT_PREALLOC_PCT: u32 = 80;
pub const DEFAULT_APPEND_SIZE: u64 = 16 << 10;
pub const DEFAULT_RANGE_SIZE: u64 = 4 << 10;
/// The longest mix iolab runs: a week.
const MAX_RUNTIME_S: f64 = 7.0 * 86_400.0;

/// Salt of the hash that says which names exist before the mix.
const MADE_SALT: u64 = 0x7072_6561_6c6c_6f63;

impl Mix {
    /// The mix of `ops` with the defaults for the rest.
    pub fn of(ops: Vec<(MixOp, u32)>) -> Mix {
        Mix {
            ops,
            runtime_s: DEFAULT_RUNTIME_S,
            warmup_s: 0.0,
            distribution: Distribution::Uniform,
            prealloc_pct: DEFAULT_PREALLOC_PCT,
            append_size: DEFAULT_APPEND_SIZE,
            range_size: DEFAULT_RANGE_SIZE,
            create_appends: false,
        }
    }

    /// What cannot run, said before anything is touched.
    pub fn check(&self, direct: bool) -> Result<(), String> {
        if self.ops.iter().map(|&(_, w)| u64::from(w)).sum::<u64>() == 0 {
            return Err("--mix: the weights add up to 0; give at least one operation a weight above 0".into());
        }
        if !(self.runtime_s > 0.0 && self.runtime_s <= MAX_RUNTIME_S) {
            return Err(format!("--runtime must be above 0 and at most a week, not {} s", self.runtime_s));
        }
        if !(self.warmup_s >= 0.0 && self.warmup_s <= MAX_RUNTIME_S) {
            return Err(format!("--warmup must be 0 to a week, not {} s", self.warmup_s));
        }
        if self.prealloc_pct > 100 {
            return Err(format!("--prealloc is a share of the names, 0 to 100 %, not {}", self.prealloc_pct));
        }
        let appends = self.weight(MixOp::Append) + self.weight(MixOp::AppendLog);
        if (appends > 0 || self.create_appends) && self.append_size == 0 {
            return Err("--append-size must be above 0 when the mix appends".into());
        }
        if self.weight(MixOp::ReadRange) > 0 && self.range_size == 0 {
            return Err("--range-size must be above 0 when the mix reads ranges".into());
        }
        if direct {
            for (name, size, op) in [
                ("--append-size", self.append_size, MixOp::Append),
                ("--range-size", self.range_size, MixOp::ReadRange),
            ] {
                let weight =
                    self.weight(op) + if op == MixOp::Append { self.weight(MixOp::AppendLog) } else { 0 };
                if weight > 0 && size % 4096 != 0 {
                    return Err(format!(
                        "--direct needs {name} in whole 4 KiB blocks; {} is not",
                        Bytes(size)
                    ));
                }
            }
        }
        Ok(())
    }

    /// The weight of `op` (0 when the mix has none of it).
    pub fn weight(&self, op: MixOp) -> u32 {
        self.ops.iter().filter(|&&(o, _)| o == op).map(|&(_, w)| w).sum()
    }

    /// Whether the mix adds or removes directory entries (under its directory's lock).
    pub fn changes_entries(&self) -> bool {
        self.draws_any(&[
            MixOp::Create,
            MixOp::Unlink,
            MixOp::Rename,
            MixOp::Link,
            MixOp::Symlink,
            MixOp::Mkdir,
            MixOp::Rmdir,
        ])
    }

    /// Whether the mix makes the device write nothing of its own: only stat, readdir and
    /// getxattr (a read updates its file's access time, which the journal then writes).
    pub fn writes_nothing(&self) -> bool {
        self.ops.iter().all(|&(op, w)| w == 0 || matches!(op, MixOp::Stat | MixOp::Readdir | MixOp::Getxattr))
    }

    fn draws_any(&self, ops: &[MixOp]) -> bool {
        ops.iter().any(|&op| self.weight(op) > 0)
    }

    /// Whether file `index` of tree `tree` is made before the mix (`prealloc_pct` of them,
    /// spread by a hash of the seed).
    pub fn made_before(&self, seed: u64, tree: u32, index: u64) -> bool {
        self.prealloc_pct >= 100
            || file_hash(seed ^ MADE_SALT, tree, index) % 100 < u64::from(self.prealloc_pct)
    }

    /// "read 4, stat 2, create 1, unlink 1 for 60 s (after 5 s of warm-up), files drawn zipf:1.1".
    pub fn describe(&self) -> String {
        let ops: Vec<String> = self.ops.iter().map(|(op, w)| format!("{op} {w}")).collect();
        let warmup = if self.warmup_s > 0.0 {
            format!(" (after {} s of warm-up)", self.warmup_s)
        } else {
            String::new()
        };
        format!(
            "a mix of {} for {} s{warmup}, files drawn {}, {}% of the names made before it",
            ops.join(", "),
            self.runtime_s,
            self.distribution,
            self.prealloc_pct
        )
    }
}

/// Parses `read:4,stat:2,create:1,unlink:1` (a bare name weighs 1); an operation named twice
/// is refused.
pub fn parse_mix_ops(text: &str) -> Result<Vec<(MixOp, u32)>, String> {
    let mut ops: Vec<(MixOp, u32)> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, weight) = item.split_once(':').unwrap_or((item, "1"));
        let op: MixOp = name.parse()?;
        let weight: u32 = weight.trim().parse().map_err(|_| {
            format!("'{item}': the weight after the colon must be a whole number, e.g. {op}:3")
        })?;
        if ops.iter().any(|&(o, _)| o == op) {
            return Err(format!(
                "'{op}' is named twice in the mix; give each operation once, with its weight"
            ));
        }
        ops.push((op, weight));
    }
    if ops.is_empty() {
        return Err("--mix names no operation; e.g. --mix read:4,stat:2,create:1,unlink:1".into());
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_reads_by_name_and_weight() {
        let ops = parse_mix_ops("read:4, stat:2,create,delete:1").expect("valid");
        assert_eq!(ops, vec![(MixOp::Read, 4), (MixOp::Stat, 2), (MixOp::Create, 1), (MixOp::Unlink, 1)]);
        let e = parse_mix_ops("read:4,frobnicate:1").unwrap_err();
        assert!(e.contains("'frobnicate' is not an operation") && e.contains("read-range"), "{e}");
        assert!(parse_mix_ops("read:x").unwrap_err().contains("whole number"));
        assert!(parse_mix_ops("read:1,read:2").unwrap_err().contains("named twice"));
        assert!(parse_mix_ops(" , ").unwrap_err().contains("names no operation"));
    }

    #[test]
    fn weights_that_sum_to_zero_and_bad_sizes_are_refused() {
        let zero = Mix::of(vec![(MixOp::Read, 0), (MixOp::Stat, 0)]);
        assert!(zero.check(false).unwrap_err().contains("add up to 0"));
        let mut append = Mix::of(vec![(MixOp::Append, 1)]);
        append.append_size = 1000;
        assert!(append.check(false).is_ok());
        assert!(append.check(true).unwrap_err().contains("4 KiB"));
        let mut long = Mix::of(vec![(MixOp::Stat, 1)]);
        long.runtime_s = 0.0;
        assert!(long.check(false).is_err());
    }

    #[test]
    fn what_a_mix_does_to_the_tree_is_its_operations() {
        let web = Mix::of(vec![(MixOp::Read, 10), (MixOp::AppendLog, 1)]);
        assert!(!web.changes_entries() && !web.writes_nothing());
        let lookups = Mix::of(vec![(MixOp::Stat, 3), (MixOp::Readdir, 1), (MixOp::Create, 0)]);
        assert!(!lookups.changes_entries() && lookups.writes_nothing());
        assert!(Mix::of(vec![(MixOp::Stat, 3), (MixOp::Rmdir, 1)]).changes_entries());
    }

    #[test]
    fn the_names_made_before_are_the_share_asked() {
        let mut mix = Mix::of(vec![(MixOp::Stat, 1)]);
        let made = (0..100_000).filter(|&i| mix.made_before(3, 0, i)).count();
        assert!((79_000..81_000).contains(&made), "{made}");
        mix.prealloc_pct = 100;
        assert!((0..1000).all(|i| mix.made_before(3, 0, i)));
        mix.prealloc_pct = 0;
        assert!((0..1000).all(|i| !mix.made_before(3, 0, i)));
    }
}
