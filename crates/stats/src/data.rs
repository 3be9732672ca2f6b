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
}

impl DataSample {
    pub fn merge(&mut self, other: &DataSample) {
        self.blocks += other.blocks;
        self.repeated += other.repeated;
        self.bytes += other.bytes;
        self.compressed_bytes += other.compressed_bytes;
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

/// The report's account of a group's data: the settings and, when it wrote, the measured sample.
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
    /// Sampled blocks per distinct sampled block.
    pub dedupe_ratio: f64,
    /// Sampled bytes per byte zstd (level 3, each 4 KiB block alone) keeps.
    pub compression_ratio: f64,
}

impl DataReport {
    pub fn new(spec: &DataSpec, sample: &DataSample) -> Self {
        DataReport {
            description: spec.describe(),
            pattern: spec.pattern.to_string(),
            dedupe_pct: spec.dedupe_pct,
            dedupe_set_bytes: spec.dedupe_set.0,
            compress_pct: spec.compress_pct,
            sampled_blocks: sample.blocks,
            repeated_blocks: sample.repeated,
            dedupe_ratio: sample.dedupe_ratio(),
            compression_ratio: sample.compression_ratio(),
        }
    }

    /// The reports of the same group on several hosts, as one: samples add up (each ratio is
    /// sampled bytes over kept bytes, so the kept bytes are recovered exactly).
    pub fn merged<'a>(reports: impl IntoIterator<Item = &'a DataReport>) -> Option<DataReport> {
        let mut reports = reports.into_iter();
        let mut out = reports.next()?.clone();
        let kept =
            |r: &DataReport| r.sampled_blocks as f64 * 4096.0 / r.compression_ratio.max(f64::MIN_POSITIVE);
        let mut compressed = kept(&out);
        for other in reports {
            out.sampled_blocks += other.sampled_blocks;
            out.repeated_blocks += other.repeated_blocks;
            compressed += kept(other);
        }
        let sample = DataSample {
            blocks: out.sampled_blocks,
            repeated: out.repeated_blocks,
            bytes: out.sampled_blocks * 4096,
            compressed_bytes: compressed.round() as u64,
        };
        out.dedupe_ratio = sample.dedupe_ratio();
        out.compression_ratio = sample.compression_ratio();
        Some(out)
    }

    /// One line for the text report.
    pub fn line(&self) -> String {
        if self.sampled_blocks == 0 {
            return format!("data: {} (no block written)", self.description);
        }
        format!(
            "data: {}; measured on {} sampled blocks: dedupe {:.2}:1 ({:.1}% repeat), compression {:.2}:1 (zstd per 4 KiB)",
            self.description,
            self.sampled_blocks,
            self.dedupe_ratio,
            100.0 * self.repeated_blocks as f64 / self.sampled_blocks as f64,
            self.compression_ratio
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_of_a_merged_sample() {
        let mut a = DataSample { blocks: 10, repeated: 5, bytes: 40960, compressed_bytes: 20480 };
        a.merge(&DataSample { blocks: 10, repeated: 5, bytes: 40960, compressed_bytes: 20480 });
        assert_eq!((a.dedupe_ratio(), a.compression_ratio()), (2.0, 2.0));
        assert_eq!(DataSample::default().compression_ratio(), 1.0);
        let all = DataSample { blocks: 4, repeated: 4, bytes: 1, compressed_bytes: 1 };
        assert_eq!(all.dedupe_ratio(), 4.0);
        let report = DataReport::new(&DataSpec::default(), &a);
        assert!(report.line().contains("dedupe 2.00:1"), "{}", report.line());
        let other = DataReport::new(
            &DataSpec::default(),
            &DataSample { blocks: 20, repeated: 0, bytes: 81920, compressed_bytes: 81920 },
        );
        let both = DataReport::merged([&report, &other]).expect("two reports");
        assert_eq!((both.sampled_blocks, both.repeated_blocks), (40, 10));
        assert!((both.compression_ratio - 163840.0 / 122880.0).abs() < 1e-9, "{both:?}");
    }
}
