//! What `--verify` found: blocks checked, bad blocks counted per kind, and the first few in full
//! (docs/verify.md). Filled by the runner's lanes and by `iolab verify`.

use serde::{Deserialize, Serialize};

/// Bad blocks a summary lists in full; later ones are only counted.
pub const KEPT_BAD_BLOCKS: usize = 64;

/// What is wrong with a block read back (how each is told: `iolab_engine::blockcheck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataErrorKind {
    /// A write was recorded, and the block holds nothing iolab wrote: the write never landed.
    LostWrite,
    /// An intact write of this offset, but not the one recorded last: an older version.
    StaleData,
    /// An intact write of another offset.
    MisdirectedWrite,
    /// Header sector intact, a run of two or more sectors at the block's end fails: the write
    /// landed only in part.
    TornWrite,
    /// A sector fails its checksum otherwise.
    CorruptedBytes,
}

impl DataErrorKind {
    pub const ALL: [DataErrorKind; 5] = [
        DataErrorKind::LostWrite,
        DataErrorKind::StaleData,
        DataErrorKind::MisdirectedWrite,
        DataErrorKind::TornWrite,
        DataErrorKind::CorruptedBytes,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DataErrorKind::LostWrite => "lost write",
            DataErrorKind::StaleData => "stale data",
            DataErrorKind::MisdirectedWrite => "misdirected write",
            DataErrorKind::TornWrite => "torn write",
            DataErrorKind::CorruptedBytes => "corrupted bytes",
        }
    }
}

/// A block's stamp: the writer, its write's sequence number, and the offset it was written at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockStamp {
    pub origin: u64,
    pub seq: u64,
    pub offset: u64,
}

/// One bad block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadBlock {
    /// The target it was read from (its index in the group's --target list, as given).
    pub target: String,
    /// Where it was read, in bytes from the start of the target.
    pub offset: u64,
    pub kind: DataErrorKind,
    /// The record of the write that should be there (a hash of its origin and sequence); 0 when
    /// overlapping writes left either possible.
    pub expected_record: u64,
    /// The stamp found, when the block carries one.
    pub found: Option<BlockStamp>,
}

/// Per-kind counts of bad blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCounts {
    pub lost_write: u64,
    pub stale_data: u64,
    pub misdirected_write: u64,
    pub torn_write: u64,
    pub corrupted_bytes: u64,
}

impl KindCounts {
    pub fn get(&self, kind: DataErrorKind) -> u64 {
        match kind {
            DataErrorKind::LostWrite => self.lost_write,
            DataErrorKind::StaleData => self.stale_data,
            DataErrorKind::MisdirectedWrite => self.misdirected_write,
            DataErrorKind::TornWrite => self.torn_write,
            DataErrorKind::CorruptedBytes => self.corrupted_bytes,
        }
    }

    pub fn add(&mut self, kind: DataErrorKind, n: u64) {
        let slot = match kind {
            DataErrorKind::LostWrite => &mut self.lost_write,
            DataErrorKind::StaleData => &mut self.stale_data,
            DataErrorKind::MisdirectedWrite => &mut self.misdirected_write,
            DataErrorKind::TornWrite => &mut self.torn_write,
            DataErrorKind::CorruptedBytes => &mut self.corrupted_bytes,
        };
        *slot += n;
    }

    pub fn total(&self) -> u64 {
        DataErrorKind::ALL.iter().map(|&k| self.get(k)).sum()
    }
}

/// What verification of a job (or of `iolab verify`) found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifySummary {
    /// Blocks read and checked against their record.
    pub blocks_checked: u64,
    /// Blocks read whose record says no write reached them: not checked, not errors.
    pub never_written: u64,
    /// Blocks read while a write of them was in flight: not checked.
    pub skipped_in_flight: u64,
    /// Blocks written and recorded.
    pub blocks_recorded: u64,
    pub bad: KindCounts,
    /// The first `KEPT_BAD_BLOCKS` bad blocks, in the order found.
    pub bad_blocks: Vec<BadBlock>,
    /// The state files read and written.
    pub state_files: Vec<String>,
}

impl VerifySummary {
    /// Counts `block` and keeps it if there is room.
    pub fn add_bad(&mut self, block: BadBlock) {
        self.bad.add(block.kind, 1);
        if self.bad_blocks.len() < KEPT_BAD_BLOCKS {
            self.bad_blocks.push(block);
        }
    }

    /// Folds another lane's (or target's) summary into this one.
    pub fn merge(&mut self, other: &VerifySummary) {
        self.blocks_checked += other.blocks_checked;
        self.never_written += other.never_written;
        self.skipped_in_flight += other.skipped_in_flight;
        self.blocks_recorded += other.blocks_recorded;
        for kind in DataErrorKind::ALL {
            self.bad.add(kind, other.bad.get(kind));
        }
        let room = KEPT_BAD_BLOCKS.saturating_sub(self.bad_blocks.len());
        self.bad_blocks.extend(other.bad_blocks.iter().take(room).cloned());
        for file in &other.state_files {
            if !self.state_files.contains(file) {
                self.state_files.push(file.clone());
            }
        }
    }

    /// Bad blocks of every kind.
    pub fn data_errors(&self) -> u64 {
        self.bad.total()
    }

    /// The summary as text lines, for the terminal.
    pub fn text(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "verify: {} blocks checked, {} bad, {} never written, {} skipped (write in flight), {} recorded",
            self.blocks_checked,
            self.data_errors(),
            self.never_written,
            self.skipped_in_flight,
            self.blocks_recorded
        )];
        for kind in DataErrorKind::ALL {
            let n = self.bad.get(kind);
            if n > 0 {
                lines.push(format!("  {}: {n}", kind.name()));
            }
        }
        for block in &self.bad_blocks {
            let found = match block.found {
                Some(s) => format!("origin {:016x} seq {} offset {}", s.origin, s.seq, s.offset),
                None => "no stamp".into(),
            };
            lines.push(format!(
                "  {} offset {}: {} (expected record {:016x}, found {found})",
                block.target,
                block.offset,
                block.kind.name(),
                block.expected_record
            ));
        }
        let listed = self.bad_blocks.len() as u64;
        if self.data_errors() > listed {
            lines.push(format!("  ... and {} more", self.data_errors() - listed));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_adds_counts_and_keeps_the_first_blocks() {
        let bad = |offset| BadBlock {
            target: "t".into(),
            offset,
            kind: DataErrorKind::TornWrite,
            expected_record: 1,
            found: None,
        };
        let mut a = VerifySummary { blocks_checked: 3, ..Default::default() };
        a.add_bad(bad(0));
        let mut b = VerifySummary { blocks_checked: 4, never_written: 2, ..Default::default() };
        for i in 0..KEPT_BAD_BLOCKS as u64 {
            b.add_bad(bad(4096 * (i + 1)));
        }
        a.merge(&b);
        assert_eq!(a.blocks_checked, 7);
        assert_eq!(a.never_written, 2);
        assert_eq!(a.data_errors(), 1 + KEPT_BAD_BLOCKS as u64);
        assert_eq!(a.bad.torn_write, a.data_errors());
        assert_eq!(a.bad_blocks.len(), KEPT_BAD_BLOCKS);
        assert_eq!(a.bad_blocks[0].offset, 0);
        assert!(a.text().iter().any(|l| l.contains("and 1 more")));
    }
}
