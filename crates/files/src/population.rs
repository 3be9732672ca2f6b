//! What a mix's tree holds while it runs: per file name, whether the file is there, renamed,
//! linked, or being worked by a thread right now; per leaf directory, whether the mix's own
//! directory stands in it. A byte per name (a million names cost a megabyte), claimed by
//! compare-and-swap so that no two threads work one file at once.
//!
//! The population is held steady: a create that would lift it past the band around the files
//! made before the mix removes a file instead, and an unlink that would take it below the band
//! makes one (a create replaces a delete), each such swap counted.

use std::sync::atomic::{AtomicI64, AtomicU8, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed};

/// The file is there.
pub(crate) const PRESENT: u8 = 1;
/// It is named r<N>, not f<N>.
pub(crate) const RENAMED: u8 = 2;
/// A hard link h<N> stands beside it.
pub(crate) const LINKED: u8 = 4;
/// A symbolic link l<N> stands beside it.
pub(crate) const SYMLINKED: u8 = 8;
/// A thread is working it.
const BUSY: u8 = 128;

/// Names looked at past the drawn one for one in the state an operation needs.
pub(crate) const PROBE: u64 = 4096;

pub(crate) struct Population {
    files: Box<[AtomicU8]>,
    /// Per leaf directory: the mix's directory stands in it.
    dirs: Box<[AtomicU8]>,
    present: AtomicI64,
    /// The band the population is kept in.
    floor: i64,
    ceiling: i64,
}

/// What an operation needs of the file it works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// A name with no file (create).
    Absent,
    /// A file, whatever it has beside it.
    Present,
    /// A file with no link of this kind (`LINKED` or `SYMLINKED`) beside it.
    Without(u8),
}

impl Need {
    fn fits(self, flags: u8) -> bool {
        match self {
            Need::Absent => flags & PRESENT == 0,
            Need::Present => flags & PRESENT != 0,
            Need::Without(link) => flags & PRESENT != 0 && flags & link == 0,
        }
    }
}

impl Population {
    /// `files` names, those `made` says made with `start` flags; `leaves` leaf directories; the
    /// band `slack` names either side of the population made.
    pub(crate) fn new(
        files: u64,
        made: impl Fn(u64) -> bool,
        start: u8,
        leaves: u64,
        slack: u64,
    ) -> Population {
        let files: Box<[AtomicU8]> =
            (0..files).map(|i| AtomicU8::new(if made(i) { PRESENT | start } else { 0 })).collect();
        let present = files.iter().filter(|f| f.load(Relaxed) & PRESENT != 0).count() as i64;
        let total = files.len() as i64;
        let slack = slack as i64;
        Population {
            dirs: (0..leaves).map(|_| AtomicU8::new(0)).collect(),
            files,
            present: AtomicI64::new(present),
            floor: (present - slack).max(0),
            ceiling: (present + slack).min(total),
        }
    }

    pub(crate) fn names(&self) -> u64 {
        self.files.len() as u64
    }

    /// Files there now.
    pub(crate) fn present(&self) -> u64 {
        self.present.load(Relaxed).max(0) as u64
    }

    /// Whether a create now would lift the population past its band.
    pub(crate) fn full(&self) -> bool {
        self.present.load(Relaxed) >= self.ceiling
    }

    /// Whether an unlink now would take the population below its band.
    pub(crate) fn short(&self) -> bool {
        self.present.load(Relaxed) <= self.floor
    }

    /// Claims the first name from `drawn` on (wrapping, at most `PROBE`) whose file is as
    /// `need` says: its index and flags, the name held by this thread until `release`.
    pub(crate) fn claim(&self, drawn: u64, need: Need) -> Option<(u64, u8)> {
        claim_in(&self.files, drawn, need)
    }

    /// Gives the claimed name back with its file's flags now; counts a file made or removed.
    pub(crate) fn release(&self, index: u64, was: u8, now: u8) {
        match (was & PRESENT != 0, now & PRESENT != 0) {
            (false, true) => {
                self.present.fetch_add(1, Relaxed);
            }
            (true, false) => {
                self.present.fetch_sub(1, Relaxed);
            }
            _ => {}
        }
        self.files[index as usize].store(now, std::sync::atomic::Ordering::Release);
    }

    /// Claims leaf directory `leaf` (or the next ones) in the state `present` asks: whether the
    /// mix's directory stands there.
    pub(crate) fn claim_dir(&self, leaf: u64, present: bool) -> Option<(u64, u8)> {
        claim_in(&self.dirs, leaf, if present { Need::Present } else { Need::Absent })
    }

    pub(crate) fn release_dir(&self, leaf: u64, now: u8) {
        self.dirs[leaf as usize].store(now, std::sync::atomic::Ordering::Release);
    }
}

fn claim_in(slots: &[AtomicU8], drawn: u64, need: Need) -> Option<(u64, u8)> {
    let n = slots.len() as u64;
    for step in 0..PROBE.min(n) {
        let index = (drawn + step) % n;
        let slot = &slots[index as usize];
        let flags = slot.load(Acquire);
        if flags & BUSY == 0
            && need.fits(flags)
            && slot.compare_exchange(flags, flags | BUSY, AcqRel, Relaxed).is_ok()
        {
            return Some((index, flags));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_name_is_no_one_elses_until_released() {
        let pop = Population::new(10, |i| i % 2 == 0, 0, 2, 1);
        assert_eq!(pop.present(), 5);
        let (i, flags) = pop.claim(0, Need::Present).expect("file 0");
        assert_eq!((i, flags), (0, PRESENT));
        assert_eq!(pop.claim(0, Need::Present).map(|c| c.0), Some(2), "0 is held: the next file");
        pop.release(0, flags, 0);
        assert_eq!(pop.present(), 4);
        assert_eq!(pop.claim(9, Need::Absent).map(|c| c.0), Some(9));
        assert_eq!(pop.claim(9, Need::Absent).map(|c| c.0), Some(0), "wraps to the freed name");
    }

    #[test]
    fn the_band_says_full_and_short() {
        let pop = Population::new(100, |i| i < 50, 0, 1, 2);
        assert!(!pop.full() && !pop.short());
        for i in 50..52 {
            let (_, was) = pop.claim(i, Need::Absent).expect("absent");
            pop.release(i, was, PRESENT);
        }
        assert!(pop.full());
        for i in 0..4 {
            let (_, was) = pop.claim(i, Need::Present).expect("present");
            pop.release(i, was, 0);
        }
        assert!(pop.short());
    }

    #[test]
    fn a_link_needs_a_file_without_one() {
        let pop = Population::new(4, |_| true, LINKED, 1, 1);
        assert!(pop.claim(0, Need::Without(LINKED)).is_none());
        assert_eq!(pop.claim(0, Need::Without(SYMLINKED)).map(|c| c.1), Some(PRESENT | LINKED));
        assert!(pop.claim_dir(0, true).is_none());
        assert_eq!(pop.claim_dir(0, false), Some((0, 0)));
    }
}
