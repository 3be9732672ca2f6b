//! Latency histograms in a form that lasts: what the store keeps and exports carry, so a result
//! can be merged exactly with others long after the run. Each histogram is HdrHistogram's
//! compressed V2 encoding in base64 (the "HISTF..." strings HdrHistogram's own tools read),
//! beside the exact count, bytes, sums and extremes that the histogram alone cannot give back.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::interval::IntervalStats;
use crate::op_stats::{Moments, OpStats};

/// Name and version of the encoding.
pub const HISTOGRAMS_FORMAT: &str = "iolab.histograms/1";

/// A job's reads, writes and (open loop) response times; `None` where there were none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncodedHistograms {
    pub format: String,
    pub read: Option<EncodedOpStats>,
    pub write: Option<EncodedOpStats>,
    pub response: Option<EncodedOpStats>,
    /// A replay's lags behind its schedule (`IntervalStats::lag`); absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag: Option<EncodedOpStats>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncodedOpStats {
    pub ios: u64,
    pub bytes: u64,
    /// Sum of the latencies and of their squares, in ns and ns², as decimal strings: they
    /// outgrow the 2^53 a JSON reader keeps exact.
    pub sum_ns: String,
    pub sum_sq_ns: String,
    pub min_ns: u64,
    pub max_ns: u64,
    /// base64 of the histogram's V2 deflate encoding.
    pub hdr: String,
}

/// A histogram that HdrHistogram's encoding cannot hold: a bucket counting more than 2^63
/// (only an imported histogram can; a recording never counts that many I/Os).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a latency histogram cannot be kept: {0}")]
pub struct EncodeError(pub String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("histograms in format '{0}', this iolab reads {HISTOGRAMS_FORMAT}")]
    Format(String),
    #[error("a histogram is damaged: {0}")]
    Damaged(String),
}

impl EncodedHistograms {
    /// Encodes what iolab recorded itself; histograms from elsewhere (an import) go through
    /// `try_encode`, which says what it cannot hold instead of panicking.
    pub fn encode(stats: &IntervalStats) -> EncodedHistograms {
        Self::try_encode(stats).expect("a recording counts fewer than 2^63 I/Os per bucket")
    }

    pub fn try_encode(stats: &IntervalStats) -> Result<EncodedHistograms, EncodeError> {
        let some = |op: &OpStats| (op.ios() > 0).then(|| EncodedOpStats::try_encode(op)).transpose();
        Ok(EncodedHistograms {
            format: HISTOGRAMS_FORMAT.to_string(),
            read: some(&stats.read)?,
            write: some(&stats.write)?,
            response: stats.response.as_ref().map(some).transpose()?.flatten(),
            lag: stats.lag.as_ref().map(some).transpose()?.flatten(),
        })
    }

    pub fn decode(&self) -> Result<IntervalStats, DecodeError> {
        if self.format != HISTOGRAMS_FORMAT {
            return Err(DecodeError::Format(self.format.clone()));
        }
        let decode = |op: &Option<EncodedOpStats>| op.as_ref().map(EncodedOpStats::decode).transpose();
        Ok(IntervalStats {
            read: decode(&self.read)?.unwrap_or_default(),
            write: decode(&self.write)?.unwrap_or_default(),
            response: decode(&self.response)?,
            lag: decode(&self.lag)?,
            ..Default::default()
        })
    }
}

impl EncodedOpStats {
    /// See `EncodedHistograms::encode`.
    pub fn encode(op: &OpStats) -> EncodedOpStats {
        Self::try_encode(op).expect("a recording counts fewer than 2^63 I/Os per bucket")
    }

    /// The encoding, or why the histogram cannot have one (a count beyond 2^63).
    pub fn try_encode(op: &OpStats) -> Result<EncodedOpStats, EncodeError> {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(op.histogram(), &mut bytes)
            .map_err(|e| EncodeError(format!("{e:?}")))?;
        let moments = op.moments();
        Ok(EncodedOpStats {
            ios: moments.ios,
            bytes: moments.bytes,
            sum_ns: moments.sum_ns.to_string(),
            sum_sq_ns: moments.sum_sq_ns.to_string(),
            min_ns: moments.min_ns,
            max_ns: moments.max_ns,
            hdr: base64::engine::general_purpose::STANDARD.encode(bytes),
        })
    }

    pub fn decode(&self) -> Result<OpStats, DecodeError> {
        let damaged = |what: String| DecodeError::Damaged(what);
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&self.hdr)
            .map_err(|e| damaged(format!("not base64: {e}")))?;
        let histogram: Histogram<u64> =
            Deserializer::new().deserialize(&mut raw.as_slice()).map_err(|e| damaged(format!("{e:?}")))?;
        if histogram.len() != self.ios {
            return Err(damaged(format!(
                "it counts {} I/Os where {} were recorded",
                histogram.len(),
                self.ios
            )));
        }
        let sum = |text: &str, name: &str| {
            text.parse::<u128>().map_err(|_| damaged(format!("{name} '{text}' is not a whole number")))
        };
        let moments = Moments {
            ios: self.ios,
            bytes: self.bytes,
            sum_ns: sum(&self.sum_ns, "sum_ns")?,
            sum_sq_ns: sum(&self.sum_sq_ns, "sum_sq_ns")?,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
        };
        Ok(OpStats::from_parts(histogram, moments))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PERCENTILES;

    fn sample(seed: u64, count: u64) -> OpStats {
        let mut state = seed;
        let mut stats = OpStats::default();
        for _ in 0..count {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            stats.record(2_000 + (state >> 33) % 3_000_000, 4096);
        }
        stats
    }

    /// Decoded statistics are the recorded ones: the same histogram, moments and summary.
    #[test]
    fn round_trip_is_exact() {
        let stats = IntervalStats {
            read: sample(1, 20_000),
            write: sample(2, 500),
            response: None,
            lag: Some(sample(3, 700)),
            ..Default::default()
        };
        let encoded = EncodedHistograms::encode(&stats);
        assert!(encoded.response.is_none());
        let json = serde_json::to_string(&encoded).expect("serializes");
        let back: EncodedHistograms = serde_json::from_str(&json).expect("parses");
        let decoded = back.decode().expect("decodes");
        assert_eq!(decoded.read.histogram(), stats.read.histogram());
        assert_eq!(decoded.read.moments(), stats.read.moments());
        assert_eq!(decoded.write.latency_summary(&[]), stats.write.latency_summary(&[]));
        let (lag, sent) = (decoded.lag.expect("the lag travels"), stats.lag.as_ref().expect("recorded"));
        assert_eq!((lag.histogram(), lag.moments()), (sent.histogram(), sent.moments()));
    }

    /// Merging decoded parts gives what one recorder of every I/O gives.
    #[test]
    fn decoded_parts_merge_exactly() {
        let (a, b) = (sample(3, 10_000), sample(4, 7_000));
        let mut whole = a.clone();
        whole.merge(&b);
        let mut merged = EncodedOpStats::encode(&a).decode().expect("decodes");
        merged.merge(&EncodedOpStats::encode(&b).decode().expect("decodes"));
        for p in PERCENTILES {
            assert_eq!(merged.percentile_ns(p), whole.percentile_ns(p));
        }
        assert_eq!(merged.moments(), whole.moments());
    }

    /// Regression (issue 19): a bin count of u64::MAX made `encode` panic (HdrHistogram's V2
    /// encoding holds counts up to 2^63); `try_encode` says so instead.
    #[test]
    fn bin_counts_of_u64_max_are_an_error_not_a_panic() {
        let mut histogram = Histogram::<u64>::new(3).expect("valid precision");
        histogram.record_n(1_000, u64::MAX).expect("in range");
        let moments =
            Moments { ios: u64::MAX, bytes: 0, sum_ns: 0, sum_sq_ns: 0, min_ns: 1_000, max_ns: 1_000 };
        let op = OpStats::from_parts(histogram, moments);
        assert!(EncodedOpStats::try_encode(&op).is_err());
        let stats =
            IntervalStats { read: op, write: OpStats::default(), response: None, ..Default::default() };
        assert!(EncodedHistograms::try_encode(&stats).is_err());
    }

    #[test]
    fn damage_is_reported() {
        let mut encoded = EncodedOpStats::encode(&sample(5, 100));
        encoded.ios += 1;
        assert!(matches!(encoded.decode(), Err(DecodeError::Damaged(_))));
        let mut encoded = EncodedOpStats::encode(&sample(5, 100));
        encoded.hdr = "not base64!".into();
        assert!(matches!(encoded.decode(), Err(DecodeError::Damaged(_))));
        let other = EncodedHistograms {
            format: "other/9".into(),
            read: None,
            write: None,
            response: None,
            lag: None,
        };
        assert_eq!(other.decode().err(), Some(DecodeError::Format("other/9".into())));
    }
}
