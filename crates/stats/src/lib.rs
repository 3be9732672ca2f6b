//! Mergeable latency histograms, per-interval series, CPU accounting and the result types.
