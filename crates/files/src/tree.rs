//! The tree, computed: a directory's path from its level and index, a file's from its index.
//! Nothing is stored per file, so a million files cost no more memory than ten.
//!
//! Layout under the run's directory: one tree per thread (`t0`, `t1`, ...) or, with
//! --shared-dir, one for all (`s`); a copy beside its source (`ct0`, `cs`). A tree's root is
//! level 0; level k holds `dirs_per_dir ^ k` directories named by the base-`dirs_per_dir`
//! digits of their index (`t0/d2/d0`); files live in the deepest level, spread evenly
//! (the first leaves hold one more when they do not divide), named `f<index>` (`r<index>`
//! once renamed).

use crate::plan::FilesPlan;

/// Which of a tree's two copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Source,
    Copy,
}

/// One tree of the run.
#[derive(Debug, Clone)]
pub struct Tree {
    /// Its number (the thread's, or 0 for the shared tree).
    pub index: u32,
    shared: bool,
    pub depth: u32,
    /// `dirs_per_dir ^ k` for k in 0..=depth.
    powers: Vec<u64>,
    pub files: u64,
}

impl Tree {
    pub fn new(plan: &FilesPlan, index: u32) -> Tree {
        let b = u64::from(plan.dirs_per_dir);
        let powers = (0..=plan.depth).map(|k| b.pow(k)).collect();
        Tree { index, shared: plan.shared_dir, depth: plan.depth, powers, files: plan.files_in_tree(index) }
    }

    /// Directories at `level` (0 is the root).
    pub fn dirs_at(&self, level: u32) -> u64 {
        self.powers[level as usize]
    }

    pub fn leaves(&self) -> u64 {
        self.dirs_at(self.depth)
    }

    fn push_root(&self, side: Side, buf: &mut Vec<u8>) {
        if side == Side::Copy {
            buf.push(b'c');
        }
        if self.shared {
            buf.push(b's');
        } else {
            buf.push(b't');
            push_decimal(buf, u64::from(self.index));
        }
    }

    fn push_dir(&self, side: Side, level: u32, index: u64, buf: &mut Vec<u8>) {
        self.push_root(side, buf);
        let b = self.powers.get(1).copied().unwrap_or(1).max(1);
        for k in (0..level).rev() {
            buf.extend_from_slice(b"/d");
            push_decimal(buf, (index / self.powers[k as usize]) % b);
        }
    }

    /// The path (NUL-terminated, relative to the run's directory) of directory `index` of `level`.
    pub fn dir_path(&self, side: Side, level: u32, index: u64, buf: &mut Vec<u8>) {
        buf.clear();
        self.push_dir(side, level, index, buf);
        buf.push(0);
    }

    /// The directory holding directory `index` of `level`: `None` for a tree's root (the run's
    /// directory holds it), else its index one level up.
    pub fn parent_of(&self, level: u32, index: u64) -> Option<u64> {
        let b = self.powers.get(1).copied().unwrap_or(1).max(1);
        (level > 0).then_some(index / b)
    }

    /// The name (NUL-terminated) of directory `index` of `level` in its parent: the tree's root
    /// name at level 0 (`t0`, `ct0`, `s`), else `d<digit>`.
    pub fn dir_name(&self, side: Side, level: u32, index: u64, buf: &mut Vec<u8>) {
        buf.clear();
        if level == 0 {
            self.push_root(side, buf);
        } else {
            let b = self.powers.get(1).copied().unwrap_or(1).max(1);
            buf.push(b'd');
            push_decimal(buf, index % b);
        }
        buf.push(0);
    }

    /// The name (NUL-terminated) of file `index` in its leaf directory, `r<index>` when `renamed`.
    pub fn file_name(&self, index: u64, renamed: bool, buf: &mut Vec<u8>) {
        buf.clear();
        buf.push(if renamed { b'r' } else { b'f' });
        push_decimal(buf, index);
        buf.push(0);
    }

    /// The name (NUL-terminated) of file `index`'s link beside it: `h<index>` for a hard link,
    /// `l<index>` for a symbolic one.
    pub fn link_name(&self, index: u64, symbolic: bool, buf: &mut Vec<u8>) {
        buf.clear();
        buf.push(if symbolic { b'l' } else { b'h' });
        push_decimal(buf, index);
        buf.push(0);
    }

    /// The leaf directory file `index` lives in.
    pub fn leaf_of(&self, index: u64) -> u64 {
        let leaves = self.leaves();
        let (q, r) = (self.files / leaves, self.files % leaves);
        let big = r * (q + 1);
        if index < big {
            index / (q + 1)
        } else {
            r + (index - big) / q.max(1)
        }
    }

    /// The path (NUL-terminated) of file `index`, named `r<index>` when `renamed`.
    pub fn file_path(&self, side: Side, index: u64, renamed: bool, buf: &mut Vec<u8>) {
        buf.clear();
        self.push_dir(side, self.depth, self.leaf_of(index), buf);
        buf.extend_from_slice(if renamed { b"/r" } else { b"/f" });
        push_decimal(buf, index);
        buf.push(0);
    }
}

/// Appends `n` in decimal without formatting machinery (this runs once per operation).
pub fn push_decimal(buf: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[at..]);
}

/// Whether `name` is one iolab gives a tree's directory or file (or a tree's root): what a
/// clean-up may remove.
pub fn is_our_name(name: &[u8], top_level: bool) -> bool {
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    if top_level {
        let name = name.strip_prefix(b"c").unwrap_or(name);
        return name == b"s" || name.strip_prefix(b"t").is_some_and(digits);
    }
    match name.split_first() {
        Some((b'd' | b'f' | b'r' | b'h' | b'l', rest)) => digits(rest),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{FileCount, FileEngine, Phase};
    use crate::sizes::SizeSpec;

    fn plan(b: u32, depth: u32, files: u64, shared: bool) -> FilesPlan {
        FilesPlan {
            dirs_per_dir: b,
            depth,
            files: FileCount::Total(files),
            sizes: SizeSpec::Fixed(0),
            phases: vec![Phase::Mkdir],
            threads: 2,
            shared_dir: shared,
            engine: FileEngine::Sync,
            fsync: false,
            direct: false,
            drop_caches: false,
            order: crate::order::Order::Sequential,
            seed: 0,
            start: Default::default(),
            mix: None,
        }
    }

    fn text(buf: &[u8]) -> &str {
        std::str::from_utf8(&buf[..buf.len() - 1]).expect("ascii")
    }

    #[test]
    fn paths_follow_the_digits() {
        let tree = Tree::new(&plan(3, 2, 20, false), 1);
        let mut buf = Vec::new();
        tree.dir_path(Side::Source, 0, 0, &mut buf);
        assert_eq!(text(&buf), "t1");
        tree.dir_path(Side::Source, 2, 7, &mut buf);
        assert_eq!(text(&buf), "t1/d2/d1");
        tree.file_path(Side::Copy, 9, true, &mut buf);
        assert_eq!(text(&buf), "ct1/d2/d2/r9");
        let shared = Tree::new(&plan(3, 0, 20, true), 0);
        shared.file_path(Side::Source, 19, false, &mut buf);
        assert_eq!(text(&buf), "s/f19");
    }

    #[test]
    fn a_name_and_its_parent_make_the_path() {
        let tree = Tree::new(&plan(3, 3, 40, false), 2);
        let (mut whole, mut parent, mut name) = (Vec::new(), Vec::new(), Vec::new());
        for level in 0..=3 {
            for index in 0..tree.dirs_at(level) {
                tree.dir_path(Side::Copy, level, index, &mut whole);
                tree.dir_name(Side::Copy, level, index, &mut name);
                let joined = match tree.parent_of(level, index) {
                    None => text(&name).to_string(),
                    Some(up) => {
                        tree.dir_path(Side::Copy, level - 1, up, &mut parent);
                        format!("{}/{}", text(&parent), text(&name))
                    }
                };
                assert_eq!(joined, text(&whole), "level {level} index {index}");
            }
        }
        tree.file_path(Side::Source, 17, true, &mut whole);
        tree.dir_path(Side::Source, 3, tree.leaf_of(17), &mut parent);
        tree.file_name(17, true, &mut name);
        assert_eq!(format!("{}/{}", text(&parent), text(&name)), text(&whole));
    }

    #[test]
    fn files_spread_evenly_over_the_leaves() {
        for (files, leaves) in [(10u64, 4u32), (3, 9), (100, 1), (81, 3)] {
            let tree = Tree::new(&plan(leaves, 1, files * 2, false), 0);
            let mut per_leaf = vec![0u64; leaves as usize];
            let mut last = 0;
            for i in 0..tree.files {
                let leaf = tree.leaf_of(i);
                assert!(leaf >= last, "leaves in order");
                last = leaf;
                per_leaf[leaf as usize] += 1;
            }
            let (lo, hi) = (per_leaf.iter().min(), per_leaf.iter().max());
            assert!(hi.zip(lo).is_some_and(|(h, l)| h - l <= 1), "{per_leaf:?}");
            assert_eq!(per_leaf.iter().sum::<u64>(), files);
        }
    }

    #[test]
    fn our_names_and_no_others() {
        for ours in ["t0", "t12", "s", "cs", "ct3"] {
            assert!(is_our_name(ours.as_bytes(), true), "{ours}");
        }
        for ours in ["d0", "f123", "r7"] {
            assert!(is_our_name(ours.as_bytes(), false), "{ours}");
        }
        for theirs in ["t", "tx", "data", "c", "st0", ".iolab-files"] {
            assert!(!is_our_name(theirs.as_bytes(), true), "{theirs}");
        }
        for theirs in ["d", "f1.txt", "notes", "F1"] {
            assert!(!is_our_name(theirs.as_bytes(), false), "{theirs}");
        }
    }
}
