//! What a group's writes held, and what a sample of the blocks actually sent proves about it:
//! the achieved dedupe and compression ratios (issue 15). The engine's `content` takes the
//! sample and measures it; this is the mergeable count and the report's form of it.

use serde::{Deserialize, Serialize};

use iolab_spec::DataSpec;

/// A writer's measured sample; sums over writers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataSample {
    /// 4 KiB blocks sampled.
    pub blocks: u64,
    /// Sampled blocks that repeat another block sent (a dedupe-set block, or an earlier one of
    /// the sample).
    pub repeated: u64,
    pub bytes: u64,
    /// The sampled blocks' bytes after zstd compressed each block on its own.
    pub compressed_bytes: u64,
    /// Every 4 KiB block the writer sent, and how many of them were dedupe-set copies.
    pub written: u64,
    pub set_copies: u64,
}

impl DataSample {
    pub fn merge(&mut self, other: &DataSample) {
        self.blocks += other.blocks;
        self.repeated += other.repeated;
        self.bytes += other.bytes;
        self.compressed_bytes += other.compressed_bytes;
        self.written += other.written;
        self.set_copies += other.set_copies;
    }

    /// The distinct blocks among every block written, given the number of distinct dedupe-set
    /// blocks copied (`None`: not counted): the blocks that are not set copies are unique
    /// (stamped), so the distinct ones are those plus the set blocks copied.
    pub fn distinct_blocks(&self, distinct_set_blocks: Option<u64>) -> Option<u64> {
        Some(self.written.checked_sub(self.set_copies)? + distinct_set_blocks?)
    }

    /// Blocks sent per distinct block: 2.0 when half repeat.
    pub fn dedupe_ratio(&self) -> f64 {
        let distinct = self.blocks - self.repeated.min(self.blocks);
        if distinct == 0 {
            return self.blocks as f64;
        }
        self.blocks as f64 / distinct as f64
    }

    /// Bytes sent per byte zstd keeps.
    pub fn compression_ratio(&self) -> f64 {
        if self.compressed_bytes == 0 {
            return 1.0;
        }
        self.bytes as f64 / self.compressed_bytes as f64
    }
}

/// The report's account of a group's data: the settings and, when it wrote, what was sent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DataReport {
    /// In words, e.g. "stamped blocks, 50% of each block zeros (compress-pct), all unique".
    pub description: String,
    pub pattern: String,
    pub dedupe_pct: u32,
    pub dedupe_set_bytes: u64,
    pub compress_pct: u32,
    /// 4 KiB blocks of the sample (0: the group wrote nothing).
    pub sampled_blocks: u64,
    pub repeated_blocks: u64,
    /// Every 4 KiB block written, and the distinct ones among them when they were counted
    /// (stamped data: the blocks that are not dedupe-set copies, plus the set blocks copied).
    #[serde(default)]
    pub written_blocks: u64,
    #[serde(default)]
    pub distinct_blocks: Option<u64>,
    /// Blocks written per distinct block: over every block written when `distinct_blocks` is
    /// known, else over the sample.
    pub dedupe_ratio: f64,
    /// Sampled bytes per byte zstd (level 3, each 4 KiB block alone) keeps.
    pub compression_ratio: f64,
}

impl DataReport {
    /// `distinct_set_blocks`: the dedupe-set blocks the group copied, when they were counted.
    pub fn new(spec: &DataSpec, sample: &DataSample, distinct_set_blocks: Option<u64>) -> Self {
        let all_unique = spec.pattern == iolab_spec::BufferPattern::Random && spec.dedupe_pct == 0;
        // Stamped blocks with no set copies are all distinct.
        let distinct_blocks = match sample.written {
            0 => None,
            written if all_unique => Some(written),
            _ => sample.distinct_blocks(distinct_set_blocks),
        };
        DataReport {
            description: spec.describe(),
            pattern: spec.pattern.to_string(),
            dedupe_pct: spec.dedupe_pct,
            dedupe_set_bytes: spec.dedupe_set.0,
            compress_pct: spec.compress_pct,
            sampled_blocks: sample.blocks,
            repeated_blocks: sample.repeated,
            written_blocks: sample.written,
            distinct_blocks,
            dedupe_ratio: match distinct_blocks {
                Some(distinct) if distinct > 0 => sample.written as f64 / distinct as f64,
                _ => sample.dedupe_ratio(),
            },
            compression_ratio: sample.compression_ratio(),
        }
    }

    /// The reports of the same group on several hosts, as one: samples add up (each ratio is
    /// sampled bytes over kept bytes, so the kept bytes are recovered exactly). Distinct blocks
    /// add up too: each host's set copies are counted as its own, so where hosts copied the
    /// same set block the ratio is a lower bound.
    pub fn merged<'a>(reports: impl IntoIterator<Item = &'a DataReport>) -> Option<DataReport> {
        let mut reports = reports.into_iter();
        let mut out = reports.next()?.clone();
        let kept =
            |r: &DataReport| r.sampled_blocks as f64 * 4096.0 / r.compression_ratio.max(f64::MIN_POSITIVE);
        let mut compressed = kept(&out);
        for other in reports {
            out.sampled_blocks += other.sampled_blocks;
            out.repeated_blocks += other.repeated_blocks;
            out.written_blocks += other.written_blocks;
            out.distinct_blocks = out.distinct_blocks.zip(other.distinct_blocks).map(|(a, b)| a + b);
            compressed += kept(other);
        }
        let sample = DataSample {
            blocks: out.sampled_blocks,
            repeated: out.repeated_blocks,
            bytes: out.sampled_blocks * 4096,
            compressed_bytes: compressed.round() as u64,
            ..DataSample::default()
        };
        out.dedupe_ratio = match out.distinct_blocks {
            Some(distinct) if distinct > 0 => out.written_blocks as f64 / distinct as f64,
            _ => sample.dedupe_ratio(),
        };
        out.compression_ratio = sample.compression_ratio();
        Some(out)
    }

    /// One line for the text report.
    pub fn line(&self) -> String {
        if self.sampled_blocks == 0 && self.written_blocks == 0 {
            return format!("data: {} (no block written)", self.description);
        }
        let dedupe = match self.distinct_blocks {
            Some(distinct) => format!(
                "dedupe {:.2}:1 over all {} blocks written ({} distinct)",
                self.dedupe_ratio, self.written_blocks, distinct
            ),
            None => format!(
                "dedupe {:.2}:1 ({:.1}% of the sample repeat)",
                self.dedupe_ratio,
                100.0 * self.repeated_blocks as f64 / self.sampled_blocks.max(1) as f64
            ),
        };
        format!(
            "data: {}; {dedupe}; compression {:.2}:1 (zstd per 4 KiB, on {} sampled blocks)",
            self.description, self.compression_ratio, self.sampled_blocks
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_of_a_merged_sample() {
        let mut a = DataSample {
            blocks: 10,
            repeated: 5,
            bytes: 40960,
            compressed_bytes: 20480,
            ..DataSample::default()
        };
        a.merge(&DataSample {
            blocks: 10,
            repeated: 5,
            bytes: 40960,
            compressed_bytes: 20480,
            ..DataSample::default()
        });
        assert_eq!((a.dedupe_ratio(), a.compression_ratio()), (2.0, 2.0));
        assert_eq!(DataSample::default().compression_ratio(), 1.0);
        let all =
            DataSample { blocks: 4, repeated: 4, bytes: 1, compressed_bytes: 1, ..DataSample::default() };
        assert_eq!(all.dedupe_ratio(), 4.0);
        let report = DataReport::new(&DataSpec::default(), &a, None);
        assert!(report.line().contains("dedupe 2.00:1"), "{}", report.line());
        let other = DataReport::new(
            &DataSpec::default(),
            &DataSample {
                blocks: 20,
                repeated: 0,
                bytes: 81920,
                compressed_bytes: 81920,
                ..DataSample::default()
            },
            None,
        );
        let both = DataReport::merged([&report, &other]).expect("two reports");
        assert_eq!((both.sampled_blocks, both.repeated_blocks), (40, 10));
        assert!((both.compression_ratio - 163840.0 / 122880.0).abs() < 1e-9, "{both:?}");
    }

    #[test]
    fn the_dedupe_ratio_counts_every_block_written_when_the_set_copies_were_counted() {
        let spec = DataSpec { dedupe_pct: 50, ..DataSpec::default() };
        // 1,000 blocks, 500 of them copies of 20 set blocks: 520 distinct.
        let sample =
            DataSample { blocks: 10, repeated: 5, written: 1000, set_copies: 500, ..DataSample::default() };
        let report = DataReport::new(&spec, &sample, Some(20));
        assert_eq!(report.distinct_blocks, Some(520));
        assert!((report.dedupe_ratio - 1000.0 / 520.0).abs() < 1e-12);
        assert!(report.line().contains("over all 1000 blocks written (520 distinct)"), "{}", report.line());
        // Not counted (a set too large to): the sample's figure, said as such.
        let sampled = DataReport::new(&spec, &sample, None);
        assert_eq!((sampled.distinct_blocks, sampled.dedupe_ratio), (None, 2.0));
        assert!(sampled.line().contains("of the sample repeat"), "{}", sampled.line());
        // Two hosts: written and distinct add up.
        let both = DataReport::merged([&report, &report]).expect("two");
        assert_eq!((both.written_blocks, both.distinct_blocks), (2000, Some(1040)));
        let unique =
            DataReport::new(&DataSpec::default(), &DataSample { written: 64, ..DataSample::default() }, None);
        assert_eq!((unique.distinct_blocks, unique.dedupe_ratio), (Some(64), 1.0));
    }
}
