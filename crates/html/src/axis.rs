//! Axes: linear, log and "nines" scales drawn as linear axes over transformed values (log10 of
//! the value, or -log10 of the share of I/Os beyond a percentile), with ticks placed and
//! labelled here, so tick labels read as the values, not as exponents, and every chart has one
//! coordinate type.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Linear,
    /// Decades; values at or below 0 are left out.
    Log,
    /// Percentiles spread by their nines: 90, 99, 99.9 ... an equal step apart.
    Nines,
}

#[derive(Debug, Clone)]
pub struct Axis {
    /// What and in which unit: "IOPS (I/Os per second)", "latency (µs)".
    pub label: String,
    pub scale: Scale,
    /// A linear axis starts at 0 (throughput, IOPS), not at the smallest value.
    pub from_zero: bool,
    /// A log axis ticks at powers of two (queue depths, worker counts), not 1-2-5.
    pub binary: bool,
    /// A linear axis ticks at whole numbers only (hosts numbered 1, 2, 3), never at 1.5.
    pub whole: bool,
}

impl Axis {
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis { label: label.into(), scale: Scale::Linear, from_zero: true, binary: false, whole: false }
    }

    pub fn log(label: impl Into<String>) -> Axis {
        Axis { label: label.into(), scale: Scale::Log, from_zero: false, binary: false, whole: false }
    }

    /// Log when the values span more than `ratio` (max / min), else linear from 0.
    pub fn auto(label: impl Into<String>, values: impl IntoIterator<Item = f64>, ratio: f64) -> Axis {
        let (low, high) = values
            .into_iter()
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold((f64::INFINITY, 0.0_f64), |(l, h), v| (l.min(v), h.max(v)));
        let label = label.into();
        if high > 0.0 && high / low > ratio {
            Axis {
                label: format!("{label}, log scale"),
                scale: Scale::Log,
                from_zero: false,
                binary: false,
                whole: false,
            }
        } else {
            Axis::linear(label)
        }
    }

    /// Where `value` is drawn along the axis; `None` when it cannot be (log of 0, NaN).
    pub(crate) fn place(&self, value: f64) -> Option<f64> {
        let placed = match self.scale {
            Scale::Linear => value,
            Scale::Log if value > 0.0 => value.log10(),
            Scale::Nines if value < 100.0 => -(1.0 - value / 100.0).log10(),
            _ => return None,
        };
        placed.is_finite().then_some(placed)
    }

    /// The value drawn at `placed`, as a tick label.
    pub(crate) fn label_at(&self, placed: f64) -> String {
        match self.scale {
            Scale::Linear => number(placed),
            Scale::Log => number(10f64.powf(placed)),
            Scale::Nines => trim(&format!("{:.4}", 100.0 * (1.0 - 10f64.powf(-placed)))),
        }
    }

    /// The placed range to show, around the placed values.
    pub(crate) fn span(&self, placed: &[f64]) -> (f64, f64) {
        let (mut low, mut high) =
            placed.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
        if !low.is_finite() {
            (low, high) = (0.0, 1.0);
        }
        match self.scale {
            Scale::Linear => {
                if self.from_zero {
                    low = low.min(0.0);
                }
                if high - low < 1e-9 * high.abs().max(1.0) {
                    high = low + high.abs().max(1.0);
                }
                let pad = (high - low) * 0.06;
                (if self.from_zero && low >= 0.0 { low } else { low - pad }, high + pad)
            }
            Scale::Log if self.binary => {
                let pad = ((high - low) * 0.06).max(0.08);
                (low - pad, high + pad)
            }
            Scale::Log => {
                // Out to the next 1-2-5 value each side, so the lowest and highest points have a
                // labelled tick beyond them to be read against (a binary axis is ticked at its
                // points' own powers of two).
                (snap(low - 0.02, false), snap(high + 0.02, true))
            }
            Scale::Nines => (0.2, high.max(2.0) + 0.2),
        }
    }

    /// Bold ticks (labelled) and light grid lines within `low..high`, as placed values.
    pub(crate) fn ticks(&self, low: f64, high: f64) -> (Vec<f64>, Vec<f64>) {
        match self.scale {
            Scale::Linear => {
                let step = nice_step((high - low) / 7.0);
                let step = if self.whole { step.max(1.0) } else { step };
                let first = (low / step).ceil() as i64;
                let last = (high / step).floor() as i64;
                let bold: Vec<f64> = (first..=last).map(|i| i as f64 * step).collect();
                let light = (first * 2 - 1..=last * 2 + 1)
                    .map(|i| i as f64 * step / 2.0)
                    .filter(|v| (low..=high).contains(v))
                    .collect();
                (bold, light)
            }
            Scale::Log if self.binary => {
                let doublings = (low / 2f64.log10()).ceil() as i32..=(high / 2f64.log10()).floor() as i32;
                let bold: Vec<f64> = doublings.map(|d| f64::from(d) * 2f64.log10()).collect();
                (bold.clone(), bold)
            }
            Scale::Log => {
                let decades = high - low;
                let mantissas: &[f64] = if decades <= 1.2 {
                    &[1.0, 2.0, 3.0, 5.0]
                } else if decades <= 3.5 {
                    &[1.0, 2.0, 5.0]
                } else {
                    &[1.0]
                };
                let in_range = |m: &[f64]| {
                    (low.floor() as i64..=high.ceil() as i64)
                        .flat_map(|d| m.iter().map(move |x| (x * 10f64.powi(d as i32)).log10()))
                        .filter(|v| (low..=high).contains(v))
                        .collect::<Vec<f64>>()
                };
                let all: Vec<f64> = (1..10).map(f64::from).collect();
                (in_range(mantissas), in_range(&all))
            }
            Scale::Nines => {
                let bold: Vec<f64> = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999]
                    .iter()
                    .filter_map(|&p| self.place(p))
                    .filter(|v| (low..=high).contains(v))
                    .collect();
                (bold.clone(), bold)
            }
        }
    }
}

/// `placed` (a log10) moved down (or `up`) to the nearest log10 of 1, 2 or 5 times a power of ten.
fn snap(placed: f64, up: bool) -> f64 {
    let grid = [0.0, 2f64.log10(), 5f64.log10(), 1.0];
    let decade = placed.floor();
    let within = placed - decade;
    let step = if up {
        grid.iter().copied().find(|g| *g >= within - 1e-9)
    } else {
        grid.iter().rev().copied().find(|g| *g <= within + 1e-9)
    };
    decade + step.unwrap_or(within)
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|s| *s >= raw).unwrap_or(10.0 * power)
}

/// A tick label: "0.25", "40", "12,500", "2.5M".
pub fn number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e6 {
        format!("{}M", trim(&format!("{:.2}", value / 1e6)))
    } else if magnitude >= 1e4 {
        format!("{}k", trim(&format!("{:.1}", value / 1e3)))
    } else if magnitude >= 100.0 || magnitude == 0.0 {
        format!("{value:.0}")
    } else if magnitude >= 1.0 {
        trim(&format!("{value:.1}"))
    } else {
        trim(&format!("{value:.3}"))
    }
}

/// A figure of a table, to three significant figures whatever its size, so figures of one
/// column read alike: "85.0k" beside "104k", "1.23M", "950", "0.0123".
pub fn sig3(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return "0".to_string();
    }
    // Rounded first, so 9,999.7 reads "10.0k", not "10.00k".
    let step = 10f64.powi(value.abs().log10().floor() as i32 - 2);
    let rounded = (value / step).round() * step;
    let (scaled, suffix) = if rounded.abs() >= 1e6 {
        (rounded / 1e6, "M")
    } else if rounded.abs() >= 1e4 {
        (rounded / 1e3, "k")
    } else {
        (rounded, "")
    };
    let decimals = (2 - scaled.abs().log10().floor() as i32).max(0) as usize;
    format!("{scaled:.decimals$}{suffix}")
}

fn trim(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text.to_string()
    }
}

/// A linear axis with the ticks given (plotters' own `WithKeyPoints` over f64 has no default
/// label formatting, so the mesh would not take our formatter).
pub(crate) struct Ticked {
    pub inner: RangedCoordf64,
    pub bold: Vec<f64>,
    pub light: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_read_as_values() {
        let axis = Axis::log("latency (µs)");
        let (low, high) = axis.span(&[1.0_f64.log10(), 2000.0_f64.log10()]);
        let (bold, _) = axis.ticks(low, high);
        let labels: Vec<String> = bold.iter().map(|&v| axis.label_at(v)).collect();
        assert!(labels.contains(&"1".to_string()) && labels.contains(&"1000".to_string()), "{labels:?}");
    }

    #[test]
    fn log_axes_reach_a_tick_beyond_each_end() {
        let axis = Axis::log("latency (ms)");
        let (low, high) = axis.span(&[0.03_f64.log10(), 8.0_f64.log10()]);
        assert!(
            (10f64.powf(low) - 0.02).abs() < 1e-9 && (10f64.powf(high) - 10.0).abs() < 1e-9,
            "{low} {high}"
        );
    }

    #[test]
    fn binary_ticks_are_powers_of_two() {
        let axis = Axis { binary: true, ..Axis::log("outstanding I/Os") };
        let (low, high) = axis.span(&[1.0_f64.log10(), 64.0_f64.log10()]);
        let labels: Vec<String> = axis.ticks(low, high).0.iter().map(|&v| axis.label_at(v)).collect();
        assert_eq!(labels, ["1", "2", "4", "8", "16", "32", "64"]);
    }

    #[test]
    fn nines_ticks_are_the_report_percentiles() {
        let axis = Axis {
            label: "percentile".into(),
            scale: Scale::Nines,
            from_zero: false,
            binary: false,
            whole: false,
        };
        let placed = axis.place(99.9999).expect("below 100");
        let (low, high) = axis.span(&[placed]);
        let (bold, _) = axis.ticks(low, high);
        let labels: Vec<String> = bold.iter().map(|&v| axis.label_at(v)).collect();
        assert_eq!(labels, ["50", "90", "99", "99.9", "99.99", "99.999", "99.9999"]);
        assert_eq!(axis.place(100.0), None);
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(12_500.0), "12.5k");
        assert_eq!(number(2_500_000.0), "2.5M");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(40.0), "40");
        assert_eq!(nice_step(13.0), 20.0);
    }

    #[test]
    fn table_figures_have_three_significant_figures() {
        let shown: Vec<String> = [85_000.0, 104_200.0, 1_234_567.0, 950.0, 12.345, 0.012_34, 9_999.7, 0.0]
            .iter()
            .map(|&v| sig3(v))
            .collect();
        assert_eq!(shown, ["85.0k", "104k", "1.23M", "950", "12.3", "0.0123", "10.0k", "0"]);
    }

    #[test]
    fn whole_ticks_skip_halves() {
        let axis = Axis { from_zero: false, whole: true, ..Axis::linear("host") };
        let (low, high) = axis.span(&[0.65, 3.35]);
        let labels: Vec<String> = axis.ticks(low, high).0.iter().map(|&v| axis.label_at(v)).collect();
        assert_eq!(labels, ["1", "2", "3"]);
    }
}
