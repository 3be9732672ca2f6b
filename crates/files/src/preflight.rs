//! Before the tree is made: the inodes and the space it will hold at its largest, against what
//! its filesystem has free (fstatvfs). A tree that cannot fit is refused with both figures, so a
//! 200,000-file run on a filesystem of 196,608 inodes stops before its first mkdir, not at file
//! 196,000 with "No space left on device". And `--drop-caches`: that the kernel will take it,
//! checked before anything is made, and the drop itself.

use std::os::fd::BorrowedFd;
use std::path::Path;

use iolab_spec::Bytes;
use iolab_stats::format::thousands;

use crate::error::FilesError;
use crate::mix::MixOp;
use crate::plan::{FilesPlan, Phase};
use crate::sizes::file_hash;

/// Up to this many files the data is summed file by file; past it, from a sample of this many
/// spread over every tree, scaled (a size is a hash of the file's place: the sample is fair).
const EXACT_UP_TO: u64 = 4_000_000;

/// What the tree holds at its largest over the phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Needs {
    pub inodes: u64,
    pub files: u64,
    pub dirs: u64,
    /// File data in whole filesystem blocks.
    pub bytes: u64,
}

/// What the filesystem has free for this process (root's reserve counted for root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Free {
    /// `None`: the filesystem sets no inode limit (tmpfs with nr_inodes=0, btrfs).
    pub inodes: Option<u64>,
    pub bytes: u64,
    pub block: u64,
}

/// The kernel's knob that drops clean caches: 1 the page cache, 2 dentries and inodes, 3 both.
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Refuses a plan whose tree cannot fit in the filesystem of the open directory `top`, or that
/// asks to drop the caches where this process may not.
pub(crate) fn check_fits(plan: &FilesPlan, top: BorrowedFd<'_>, shown: &Path) -> Result<(), FilesError> {
    if plan.drop_caches {
        may_drop_caches()?;
    }
    let stat = nix::sys::statvfs::fstatvfs(top)
        .map_err(|e| FilesError::io("cannot read the free space of", shown, std::io::Error::from(e)))?;
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let (inodes_free, blocks_free) = if root {
        (stat.files_free(), stat.blocks_free())
    } else {
        (stat.files_available(), stat.blocks_available())
    };
    let block = stat.fragment_size().max(1);
    let free = Free {
        inodes: (stat.files() > 0).then_some(inodes_free),
        bytes: blocks_free.saturating_mul(block),
        block,
    };
    refusal(&needs(plan, block), &free, shown).map_or(Ok(()), |why| Err(FilesError::Refused(why)))
}

/// Whether this process may drop the caches: root, and the knob open for writing (a container
/// sees /proc/sys read-only).
fn may_drop_caches() -> Result<(), FilesError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(FilesError::Refused(format!(
            "--drop-caches needs root: it writes {DROP_CACHES}, which drops the caches of the whole machine; run as root or without it"
        )));
    }
    std::fs::OpenOptions::new().write(true).open(DROP_CACHES).map(drop).map_err(|e| {
        FilesError::Refused(format!(
            "--drop-caches: {DROP_CACHES} cannot be written here ({e}); nothing was made"
        ))
    })
}

/// Writes dirty data back (sync), then drops the page cache, dentries and inodes.
pub(crate) fn drop_caches() -> std::io::Result<()> {
    nix::unistd::sync();
    std::fs::write(DROP_CACHES, "3")
}

/// The tree at its largest: directories and files after mkdir and create, twice both after a
/// copy, until unlink and rmdir take them away.
/// A kept tree's own (`plan.start`) exists already: only what the phases add is needed.
pub(crate) fn needs(plan: &FilesPlan, block: u64) -> Needs {
    let (all_dirs, all_files) = (plan.total_dirs(), plan.total_files());
    let start = plan.start;
    let data = if start.files || plan.phases.contains(&Phase::Create) { data_bytes(plan, block) } else { 0 };
    let copies = if start.copied { 2 } else { 1 };
    let (mut dirs, mut files, mut bytes) = (
        if start.dirs { all_dirs * copies } else { 0 },
        if start.files { all_files * copies } else { 0 },
        if start.files { data * copies } else { 0 },
    );
    // A symbolic link is an inode of its own (its target held inline); a hard link is not.
    let mut symlinks = if start.symlinked { all_files } else { 0 };
    let existing = Needs { inodes: dirs + files + symlinks, files: files + symlinks, dirs, bytes };
    let mut peak = Needs { inodes: existing.inodes, files: existing.files, dirs, bytes };
    for phase in &plan.phases {
        match phase {
            Phase::Mkdir => dirs = all_dirs,
            Phase::Create => (files, bytes) = (all_files, data),
            Phase::Copy => (dirs, files, bytes) = (dirs * 2, files * 2, bytes * 2),
            Phase::Symlink => symlinks = all_files,
            Phase::Unlink => (files, bytes, symlinks) = (0, 0, 0),
            Phase::Rmdir => dirs = 0,
            // At most every name a file (a link beside each), the mix's directory in every
            // leaf and the log; what appends add is not known before.
            Phase::Mix => {
                let mix = plan.mix.as_ref();
                let weighs = |op| mix.is_some_and(|m| m.weight(op) > 0);
                (files, bytes) = (all_files + 1, data);
                if weighs(MixOp::Symlink) {
                    symlinks = all_files;
                }
                if weighs(MixOp::Mkdir) {
                    dirs += plan.leaves();
                }
            }
            Phase::Stat
            | Phase::StatDir
            | Phase::Readdir
            | Phase::Read
            | Phase::Setattr
            | Phase::Xattr
            | Phase::Link
            | Phase::Rename => {}
        }
        if dirs + files + symlinks > peak.inodes {
            (peak.inodes, peak.files, peak.dirs) = (dirs + files + symlinks, files + symlinks, dirs);
        }
        peak.bytes = peak.bytes.max(bytes);
    }
    Needs {
        inodes: peak.inodes - existing.inodes,
        files: peak.files.saturating_sub(existing.files),
        dirs: peak.dirs.saturating_sub(existing.dirs),
        bytes: peak.bytes - existing.bytes,
    }
}

/// The files' data in whole blocks of `block` bytes: summed, or estimated from a sample.
fn data_bytes(plan: &FilesPlan, block: u64) -> u64 {
    let align = if plan.direct { 4096 } else { 1 };
    let on_disk = |tree: u32, index: u64| {
        plan.sizes.size(file_hash(plan.seed, tree, index), align).div_ceil(block) * block
    };
    let total = plan.total_files();
    if total <= EXACT_UP_TO {
        return (0..plan.trees())
            .map(|t| (0..plan.files_in_tree(t)).map(|i| on_disk(t, i)).sum::<u64>())
            .sum();
    }
    let per_tree = (EXACT_UP_TO / u64::from(plan.trees())).max(1);
    let mut sampled: u128 = 0;
    let mut count: u64 = 0;
    for tree in 0..plan.trees() {
        let files = plan.files_in_tree(tree);
        let step = (files / per_tree).max(1);
        for index in (0..files).step_by(step as usize) {
            sampled += u128::from(on_disk(tree, index));
            count += 1;
        }
    }
    (sampled * u128::from(total) / u128::from(count.max(1))).min(u128::from(u64::MAX)) as u64
}

/// Why the tree cannot fit, or `None` when it can.
pub(crate) fn refusal(needs: &Needs, free: &Free, shown: &Path) -> Option<String> {
    if let Some(inodes) = free.inodes.filter(|&f| needs.inodes > f) {
        return Some(format!(
            "the tree needs {} inodes ({} files and {} directories at its largest) and the filesystem of {} has {} free; nothing was made: fewer files, or a filesystem with more inodes (mkfs.ext4 -N, -i)",
            thousands(needs.inodes as f64),
            thousands(needs.files as f64),
            thousands(needs.dirs as f64),
            shown.display(),
            thousands(inodes as f64)
        ));
    }
    (needs.bytes > free.bytes).then(|| {
        format!(
            "the tree's files need {} (in blocks of {}, at its largest) and the filesystem of {} has {} free; nothing was made: fewer or smaller files, or more space",
            Bytes(needs.bytes),
            Bytes(free.block),
            shown.display(),
            Bytes(free.bytes)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizes::SizeSpec;

    /// Two threads' trees of 10 directories of 10 each (the defaults), as the flags make it.
    fn plan(files: u64, sizes: SizeSpec, phases: &[Phase]) -> FilesPlan {
        let options = crate::job::FilesOptions {
            files: Some(files),
            sizes: Some(sizes),
            phases: Some(phases.to_vec()),
            threads: Some(2),
            seed: Some(7),
            ..Default::default()
        };
        options.plan().expect("a valid plan")
    }

    const ALL: [Phase; 5] = [Phase::Mkdir, Phase::Create, Phase::Copy, Phase::Unlink, Phase::Rmdir];

    #[test]
    fn the_tree_at_its_largest_counts_a_copy_twice() {
        let needs = needs(&plan(1000, SizeSpec::Fixed(5000), &ALL), 4096);
        // Two trees of 11 directories each; 1000 files of two 4 KiB blocks; a copy doubles all.
        assert_eq!((needs.dirs, needs.files, needs.inodes), (44, 2000, 2044));
        assert_eq!(needs.bytes, 2 * 1000 * 8192);
        let created = needs_of(&[Phase::Mkdir, Phase::Create, Phase::Unlink, Phase::Rmdir]);
        assert_eq!((created.inodes, created.bytes), (1022, 1000 * 8192));
    }

    /// A kept tree's own directories and files exist: only a copy of them is needed.
    #[test]
    fn a_kept_tree_needs_only_what_its_phases_add() {
        let start = crate::plan::TreeState { dirs: true, files: true, ..Default::default() };
        let options = crate::job::FilesOptions {
            files: Some(1000),
            sizes: Some(SizeSpec::Fixed(5000)),
            threads: Some(2),
            seed: Some(7),
            ..Default::default()
        };
        let over = |phases: &[Phase]| {
            let options = crate::job::FilesOptions { phases: Some(phases.to_vec()), ..options.clone() };
            needs(&options.plan_from(start).expect("a plan over a kept tree"), 4096)
        };
        let copied = over(&[Phase::Stat, Phase::Copy, Phase::Unlink, Phase::Rmdir]);
        assert_eq!((copied.dirs, copied.files, copied.inodes, copied.bytes), (22, 1000, 1022, 1000 * 8192));
        let read = over(&[Phase::Stat, Phase::Read, Phase::Unlink]);
        assert_eq!((read.inodes, read.bytes), (0, 0));
    }

    fn needs_of(phases: &[Phase]) -> Needs {
        needs(&plan(1000, SizeSpec::Fixed(5000), phases), 4096)
    }

    #[test]
    fn a_sampled_sum_lands_near_the_exact_one() {
        let sizes = SizeSpec::Lognormal { median: 16 << 10, p99: 1 << 20 };
        let p = plan(EXACT_UP_TO, sizes.clone(), &ALL);
        let exact = data_bytes(&p, 4096);
        let mut big = plan(EXACT_UP_TO * 3, sizes, &ALL);
        big.seed = p.seed;
        let sampled = data_bytes(&big, 4096) as f64 / 3.0;
        assert!((sampled / exact as f64 - 1.0).abs() < 0.02, "{sampled} against {exact}");
    }

    #[test]
    fn too_few_inodes_or_too_little_space_is_said_with_both_figures() {
        let needs = Needs { inodes: 200_002, files: 200_000, dirs: 2, bytes: 0 };
        let free = Free { inodes: Some(196_597), bytes: 1 << 30, block: 4096 };
        let why = refusal(&needs, &free, Path::new("/mnt/x")).expect("refused");
        assert!(
            why.starts_with("the tree needs 200,002 inodes (200,000 files and 2 directories at its largest) and the filesystem of /mnt/x has 196,597 free"),
            "{why}"
        );
        assert!(refusal(&needs, &Free { inodes: None, ..free }, Path::new("/t")).is_none(), "no inode limit");
        let large = Needs { bytes: 3 << 30, ..needs };
        let why = refusal(&large, &Free { inodes: None, ..free }, Path::new("/t")).expect("refused");
        assert!(why.starts_with("the tree's files need 3GiB (in blocks of 4KiB, at its largest)"), "{why}");
    }
}
