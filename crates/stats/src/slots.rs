//! Where the outstanding I/Os were: each slot (QD x workers of them) cycles from the hand-over
//! of an I/O to its reap (the latency figures cover that) and from the reap to the hand-over of
//! the next (iolab's own time: recording, preparing, batching; in open loop also waiting for
//! the next due time). Little's law then closes: slots = IOPS x mean cycle. The devices' own
//! counters tell how much of the in-flight part the device itself held.

use serde::{Deserialize, Serialize};

use crate::interval::IntervalStats;

/// The job's or a group's outstanding I/Os over the measured window, by where they were.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SlotSplit {
    /// The outstanding I/Os asked for: QD x workers (psync: its threads, one I/O each).
    pub slots: f64,
    /// I/Os completed in the window, and the mean slot time of each in ns: from its hand-over
    /// to the hand-over of the next I/O on its slot.
    pub ios: u64,
    pub mean_cycle_ns: f64,
    /// Mean I/Os from hand-over to reap over the window (the time in flight inside it: IOPS x
    /// mean latency, corrected at the window's edges): what the latency figures cover, the
    /// submission system call, the device and the time completed but not yet reaped.
    pub in_flight: f64,
    /// Mean I/Os reaped and not yet handed over again (IOPS x mean gap): iolab's own time, in no
    /// latency figure (closed loop), or a slot waiting for its next due time (open loop).
    pub awaiting_resubmission: f64,
    pub mean_gap_ns: f64,
    /// in_flight + awaiting_resubmission: Little's law's count of outstanding I/Os, equal to
    /// `slots` when every slot was always in use (closed loop).
    pub littles_law_slots: f64,
    /// Waits for completions begun with a slot free and I/O due (the engine's queue was full):
    /// 0 when every freed slot went back before its lane waited, so that its gap was the work
    /// of the batch it was reaped in and the asked QD was the QD in flight.
    #[serde(default)]
    pub waits_with_free_slots: u64,
    /// The mean cycle in the spans fio reports, so a run compares with an fio run like with
    /// like (absent from results kept before they were).
    #[serde(default)]
    pub fio_spans: FioSpans,
}

/// An I/O's mean time in fio's names. fio's `clat` runs from the submission to the completion
/// and its `slat` is the submission itself; its `lat` is both. iolab's latency runs from the
/// hand-over (just before the submitting call) to the reap, which is fio's `clat` with the
/// call; its gap, from a reap to the slot's next hand-over, is where fio's `slat` and the
/// time an I/O waits on its free list fall (fio counts that time in no span).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FioSpans {
    /// iolab's latency, hand-over to reap.
    pub clat_mean_ns: f64,
    /// iolab's gap, reap to the next hand-over.
    pub slat_mean_ns: f64,
    /// Their sum: the whole cycle, as fio's `lat` counts an I/O from its creation to its end.
    pub lat_mean_ns: f64,
}

impl FioSpans {
    fn of(latency_mean_ns: f64, gap_mean_ns: f64) -> FioSpans {
        FioSpans {
            clat_mean_ns: latency_mean_ns,
            slat_mean_ns: gap_mean_ns,
            lat_mean_ns: latency_mean_ns + gap_mean_ns,
        }
    }
}

impl SlotSplit {
    /// The split of `stats` (everything completed in a window of `window_s`) for `slots` slots.
    pub fn of(stats: &IntervalStats, slots: f64, window_s: f64) -> SlotSplit {
        let all = stats.combined();
        let ios = all.ios();
        let latency_ns = all.mean_ns() * ios as f64;
        // The time I/Os were in flight inside the window: their latencies, less what came before
        // it, plus what the I/Os still in flight at its end spent in it.
        let in_window_ns =
            (latency_ns - stats.before_window_ns as f64 + stats.outstanding_ns as f64).max(0.0);
        let gap_ns = stats.gap_ns as f64;
        let window_ns = window_s * 1e9;
        let per_window = |ns: f64| if window_ns > 0.0 { ns / window_ns } else { 0.0 };
        let per_io = |ns: f64| if ios > 0 { ns / ios as f64 } else { 0.0 };
        // The gap is measured per hand-over, the latency per completion: in a window both count
        // the same I/Os but for its edges, so the mean gap is taken over the hand-overs.
        let mean_gap_ns = if stats.gaps > 0 { gap_ns / stats.gaps as f64 } else { 0.0 };
        SlotSplit {
            slots,
            ios,
            mean_cycle_ns: per_io(latency_ns) + mean_gap_ns,
            in_flight: per_window(in_window_ns),
            awaiting_resubmission: per_window(mean_gap_ns * ios as f64),
            mean_gap_ns,
            littles_law_slots: per_window(in_window_ns + mean_gap_ns * ios as f64),
            waits_with_free_slots: stats.waits_with_free_slots,
            fio_spans: FioSpans::of(per_io(latency_ns), mean_gap_ns),
        }
    }

    /// Several groups' or hosts' splits together.
    pub fn sum(parts: &[SlotSplit]) -> SlotSplit {
        let ios: u64 = parts.iter().map(|p| p.ios).sum();
        let weighted = |f: fn(&SlotSplit) -> f64| {
            if ios > 0 {
                parts.iter().map(|p| f(p) * p.ios as f64).sum::<f64>() / ios as f64
            } else {
                0.0
            }
        };
        SlotSplit {
            slots: parts.iter().map(|p| p.slots).sum(),
            ios,
            mean_cycle_ns: weighted(|p| p.mean_cycle_ns),
            in_flight: parts.iter().map(|p| p.in_flight).sum(),
            awaiting_resubmission: parts.iter().map(|p| p.awaiting_resubmission).sum(),
            mean_gap_ns: weighted(|p| p.mean_gap_ns),
            littles_law_slots: parts.iter().map(|p| p.littles_law_slots).sum(),
            waits_with_free_slots: parts.iter().map(|p| p.waits_with_free_slots).sum(),
            fio_spans: FioSpans::of(weighted(|p| p.fio_spans.clat_mean_ns), weighted(|p| p.mean_gap_ns)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OpStats;

    #[test]
    fn littles_law_closes_over_latency_and_gaps() {
        // 8 slots, 1 s: each cycle is 40 us in flight and 10 us in iolab, so 160,000 I/Os.
        let mut read = OpStats::default();
        for _ in 0..160_000 {
            read.record(40_000, 4096);
        }
        let stats = IntervalStats { read, gap_ns: 160_000 * 10_000, gaps: 160_000, ..Default::default() };
        let split = SlotSplit::of(&stats, 8.0, 1.0);
        assert_eq!(split.ios, 160_000);
        assert!((split.in_flight - 6.4).abs() < 1e-9, "{split:?}");
        assert!((split.awaiting_resubmission - 1.6).abs() < 1e-9, "{split:?}");
        assert!((split.littles_law_slots - 8.0).abs() < 1e-9, "{split:?}");
        assert!((split.mean_cycle_ns - 50_000.0).abs() < 1e-9, "{split:?}");
        let both = SlotSplit::sum(&[split, split]);
        assert_eq!((both.slots, both.ios), (16.0, 320_000));
        assert!((both.littles_law_slots - 16.0).abs() < 1e-9 && (both.mean_gap_ns - 10_000.0).abs() < 1e-9);
        // In fio's names: clat is the latency, slat the gap, lat the whole cycle.
        for spans in [split.fio_spans, both.fio_spans] {
            assert_eq!(
                spans,
                FioSpans { clat_mean_ns: 40_000.0, slat_mean_ns: 10_000.0, lat_mean_ns: 50_000.0 }
            );
        }
    }

    #[test]
    fn the_windows_edges_count_only_the_time_inside_it() {
        // 4 slots, 1 s, 100 ms latencies: 36 I/Os completed in the window, 4 of them handed over
        // 40 ms before it began, and 4 more in flight for its last 60 ms.
        let mut read = OpStats::default();
        for _ in 0..36 {
            read.record(100_000_000, 4096);
        }
        let stats = IntervalStats {
            read,
            before_window_ns: 4 * 40_000_000,
            outstanding_ns: 4 * 60_000_000,
            ..Default::default()
        };
        let split = SlotSplit::of(&stats, 4.0, 1.0);
        // 3.6 slots by latencies alone; 3.6 - 0.16 + 0.24 inside the window.
        assert!((split.in_flight - 3.68).abs() < 1e-9, "{split:?}");
        assert!(
            (split.fio_spans.clat_mean_ns - 100_000_000.0).abs() < 1e-6,
            "the mean is the I/Os' own: {split:?}"
        );
    }

    #[test]
    fn an_empty_window_splits_nothing() {
        let split = SlotSplit::of(&IntervalStats::default(), 4.0, 0.0);
        assert_eq!((split.in_flight, split.littles_law_slots, split.mean_cycle_ns), (0.0, 0.0, 0.0));
        assert_eq!(SlotSplit::sum(&[]).ios, 0);
    }
}
