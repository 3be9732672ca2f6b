//! Drawing one chart with plotters' SVG backend from a small description (lines, marks, bands),
//! so each chart of the report says what to draw and this file alone says how.
//!
//! Log and "nines" axes are drawn as linear axes over transformed values (log10 of the value,
//! or -log10 of the share of I/Os beyond a percentile) with ticks placed and labelled here: one
//! coordinate type for every chart, and tick labels that read as the values, not as exponents.
//! The legend gets its own strip under the plot, so it never hides a line however many runs
//! are overlaid.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::HtmlError;

/// Width of every chart in CSS pixels: fits a laptop screen beside nothing else.
pub const WIDTH: u32 = 960;
/// Height of the plot (title, axes and lines), without the legend strip.
const PLOT_HEIGHT: u32 = 420;
const LEGEND_ROW: u32 = 24;
/// plotters writes `font-size = size / 1.24` into the SVG; these give 14, 15 and 18 px.
const TICK_FONT: f64 = 17.4;
const AXIS_FONT: f64 = 18.6;
const TITLE_FONT: f64 = 22.3;
/// Room above the plot for the title: plotters' own caption area is sized from a guess of the
/// font's height that falls short of what browsers draw.
const TITLE_ROOM: u32 = 44;
const FONT: &str = "sans-serif";

/// Colours that stay apart for most colour-blind readers (Tableau 10).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

pub fn color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

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
}

impl Axis {
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis { label: label.into(), scale: Scale::Linear, from_zero: true, binary: false }
    }

    pub fn log(label: impl Into<String>) -> Axis {
        Axis { label: label.into(), scale: Scale::Log, from_zero: false, binary: false }
    }

    /// Log when the values span more than `ratio` (max / min), else linear from 0.
    pub fn auto(label: impl Into<String>, values: impl IntoIterator<Item = f64>, ratio: f64) -> Axis {
        let (low, high) = values
            .into_iter()
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold((f64::INFINITY, 0.0_f64), |(l, h), v| (l.min(v), h.max(v)));
        let label = label.into();
        if high > 0.0 && high / low > ratio {
            Axis { label: format!("{label}, log scale"), scale: Scale::Log, from_zero: false, binary: false }
        } else {
            Axis::linear(label)
        }
    }

    /// Where `value` is drawn along the axis; `None` when it cannot be (log of 0, NaN).
    fn place(&self, value: f64) -> Option<f64> {
        let placed = match self.scale {
            Scale::Linear => value,
            Scale::Log if value > 0.0 => value.log10(),
            Scale::Nines if value < 100.0 => -(1.0 - value / 100.0).log10(),
            _ => return None,
        };
        placed.is_finite().then_some(placed)
    }

    /// The value drawn at `placed`, as a tick label.
    fn label_at(&self, placed: f64) -> String {
        match self.scale {
            Scale::Linear => number(placed),
            Scale::Log => number(10f64.powf(placed)),
            Scale::Nines => trim(&format!("{:.4}", 100.0 * (1.0 - 10f64.powf(-placed)))),
        }
    }

    /// The placed range to show, around the placed values.
    fn span(&self, placed: &[f64]) -> (f64, f64) {
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
            Scale::Log => {
                let pad = ((high - low) * 0.06).max(0.08);
                (low - pad, high + pad)
            }
            Scale::Nines => (0.2, high.max(2.0) + 0.2),
        }
    }

    /// Bold ticks (labelled) and light grid lines within `low..high`, as placed values.
    fn ticks(&self, low: f64, high: f64) -> (Vec<f64>, Vec<f64>) {
        match self.scale {
            Scale::Linear => {
                let step = nice_step((high - low) / 7.0);
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

fn trim(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text.to_string()
    }
}

/// One line of a chart; a NaN point breaks it into pieces (a bucket with no I/Os).
#[derive(Debug, Clone)]
pub struct Line {
    /// The legend entry; lines of one name share one entry.
    pub name: String,
    pub color: RGBColor,
    pub dashed: bool,
    pub markers: bool,
    pub points: Vec<(f64, f64)>,
}

/// A labelled point: the sweet spot, a cliff.
#[derive(Debug, Clone)]
pub struct Mark {
    pub at: (f64, f64),
    pub label: String,
    pub color: RGBColor,
}

/// A shaded area; `y: None` spans the whole height.
#[derive(Debug, Clone)]
pub struct Band {
    pub name: String,
    pub x: (f64, f64),
    pub y: Option<(f64, f64)>,
    pub color: RGBColor,
    pub opacity: f64,
}

/// A vertical line across the plot at `x`, labelled at its top.
#[derive(Debug, Clone)]
pub struct Rule {
    pub x: f64,
    pub label: String,
    pub color: RGBColor,
}

#[derive(Debug, Clone)]
pub struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Line>,
    pub marks: Vec<Mark>,
    pub bands: Vec<Band>,
    pub rules: Vec<Rule>,
}

/// A legend entry: a line sample or a swatch.
struct Entry {
    name: String,
    color: RGBColor,
    dashed: bool,
    markers: bool,
    swatch: Option<f64>,
}

impl Chart {
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Chart {
        Chart {
            title: title.into(),
            x,
            y,
            lines: Vec::new(),
            marks: Vec::new(),
            bands: Vec::new(),
            rules: Vec::new(),
        }
    }

    /// Whether there is anything to draw.
    pub fn is_empty(&self) -> bool {
        !self.lines.iter().any(|l| l.points.iter().any(|&p| self.placed(p).is_some()))
    }

    fn placed(&self, (x, y): (f64, f64)) -> Option<(f64, f64)> {
        Some((self.x.place(x)?, self.y.place(y)?))
    }

    fn legend(&self) -> Vec<Entry> {
        let mut entries: Vec<Entry> = Vec::new();
        for band in self.bands.iter().filter(|b| !b.name.is_empty()) {
            entries.push(Entry {
                name: band.name.clone(),
                color: band.color,
                dashed: false,
                markers: false,
                swatch: Some(band.opacity),
            });
        }
        for line in &self.lines {
            if !line.name.is_empty() && !entries.iter().any(|e| e.name == line.name) {
                entries.push(Entry {
                    name: line.name.clone(),
                    color: line.color,
                    dashed: line.dashed,
                    markers: line.markers,
                    swatch: None,
                });
            }
        }
        entries
    }

    /// The chart as one `<svg>` element.
    pub fn svg(&self) -> Result<String, HtmlError> {
        let legend = self.legend();
        let columns = legend_columns(&legend);
        let rows = legend.len().div_ceil(columns) as u32;
        let legend_height = if rows == 0 { 0 } else { rows * LEGEND_ROW + 14 };
        let mut out = String::new();
        {
            let root =
                SVGBackend::with_string(&mut out, (WIDTH, PLOT_HEIGHT + legend_height)).into_drawing_area();
            root.fill(&WHITE).map_err(draw)?;
            let (plot, strip) = root.split_vertically(PLOT_HEIGHT);
            self.draw_plot(&plot)?;
            draw_legend(&strip, &legend, columns)?;
            root.present().map_err(draw)?;
        }
        Ok(out)
    }

    fn draw_plot<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), HtmlError> {
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for (x, y) in self.lines.iter().flat_map(|l| &l.points).chain(self.marks.iter().map(|m| &m.at)) {
            if let Some((px, py)) = self.placed((*x, *y)) {
                xs.push(px);
                ys.push(py);
            }
        }
        for band in &self.bands {
            xs.extend([band.x.0, band.x.1].iter().filter_map(|&v| self.x.place(v)));
            if let Some((low, high)) = band.y {
                ys.extend([low, high].iter().filter_map(|&v| self.y.place(v)));
            }
        }
        xs.extend(self.rules.iter().filter_map(|r| self.x.place(r.x)));
        let (x_low, x_high) = self.x.span(&xs);
        let (y_low, y_high) = self.y.span(&ys);
        let (x_bold, x_light) = self.x.ticks(x_low, x_high);
        let (y_bold, y_light) = self.y.ticks(y_low, y_high);
        let x_range = Ticked { inner: (x_low..x_high).into(), bold: x_bold, light: x_light };
        let y_range = Ticked { inner: (y_low..y_high).into(), bold: y_bold, light: y_light };

        let title = (FONT, TITLE_FONT)
            .into_font()
            .style(FontStyle::Bold)
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        area.draw(&Text::new(self.title.clone(), (WIDTH as i32 / 2, 10), title)).map_err(draw)?;
        let mut chart = ChartBuilder::on(area)
            .margin_top(TITLE_ROOM)
            .margin_left(12)
            .margin_right(28)
            .x_label_area_size(58)
            .y_label_area_size(84)
            .build_cartesian_2d(x_range, y_range)
            .map_err(draw)?;
        let x_label = |v: &f64| self.x.label_at(*v);
        let y_label = |v: &f64| self.y.label_at(*v);
        chart
            .configure_mesh()
            .x_desc(self.x.label.as_str())
            .y_desc(self.y.label.as_str())
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .label_style((FONT, TICK_FONT))
            .axis_desc_style((FONT, AXIS_FONT))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(draw)?;

        for band in &self.bands {
            let (Some(x0), Some(x1)) = (self.x.place(band.x.0), self.x.place(band.x.1)) else { continue };
            let (y0, y1) = match band.y {
                Some((low, high)) => match (self.y.place(low), self.y.place(high)) {
                    (Some(a), Some(b)) => (a.max(y_low), b.min(y_high)),
                    _ => continue,
                },
                None => (y_low, y_high),
            };
            let style = band.color.mix(band.opacity).filled();
            chart.draw_series(std::iter::once(Rectangle::new([(x0, y0), (x1, y1)], style))).map_err(draw)?;
        }
        for rule in &self.rules {
            let Some(x) = self.x.place(rule.x) else { continue };
            let style = rule.color.stroke_width(2);
            chart
                .draw_series(DashedLineSeries::new(vec![(x, y_low), (x, y_high)], 8, 5, style))
                .map_err(draw)?;
            let text = (FONT, TICK_FONT).into_font().color(&rule.color).pos(Pos::new(HPos::Left, VPos::Top));
            chart
                .draw_series(std::iter::once(Text::new(rule.label.clone(), (x, y_high), text)))
                .map_err(draw)?;
        }
        for line in &self.lines {
            for piece in self.pieces(line) {
                let style = line.color.stroke_width(if line.dashed { 2 } else { 3 });
                if line.dashed {
                    chart.draw_series(DashedLineSeries::new(piece.clone(), 9, 6, style)).map_err(draw)?;
                } else {
                    chart.draw_series(LineSeries::new(piece.clone(), style)).map_err(draw)?;
                }
                if line.markers {
                    let fill = line.color.filled();
                    let hollow = ShapeStyle { color: WHITE.to_rgba(), filled: true, stroke_width: 1 };
                    let points = piece.iter().map(|&p| {
                        if line.dashed {
                            EmptyElement::at(p)
                                + Circle::new((0, 0), 4, hollow)
                                + Circle::new((0, 0), 4, line.color.stroke_width(2))
                        } else {
                            EmptyElement::at(p) + Circle::new((0, 0), 4, fill) + Circle::new((0, 0), 4, fill)
                        }
                    });
                    chart.draw_series(points).map_err(draw)?;
                }
            }
        }
        // Rings first, then the labels around them, each placed where it covers no other
        // label or ring (two sweet spots at one QD would otherwise print over each other).
        let mut taken: Vec<[i32; 4]> = Vec::new();
        let mut labels = Vec::new();
        for mark in &self.marks {
            let Some(at) = self.placed(mark.at) else { continue };
            let ring = EmptyElement::at(at)
                + Circle::new((0, 0), 11, BLACK.stroke_width(3))
                + Circle::new((0, 0), 6, mark.color.filled());
            chart.draw_series(std::iter::once(ring)).map_err(draw)?;
            let (px, py) = chart.backend_coord(&at);
            taken.push([px - 12, py - 12, px + 12, py + 12]);
            labels.push((px, py, mark.label.clone()));
        }
        let (top, bottom) = (TITLE_ROOM as i32, PLOT_HEIGHT as i32 - 58);
        for (px, py, text) in labels {
            let width = text.chars().count() as i32 * 8 + 8;
            let x0 = if px + 16 + width < WIDTH as i32 - 24 { px + 14 } else { px - 14 - width };
            let fits = |dy: &i32| {
                let b = [x0, py + dy, x0 + width, py + dy + 20];
                b[1] >= top
                    && b[3] <= bottom
                    && !taken.iter().any(|t| b[0] < t[2] && t[0] < b[2] && b[1] < t[3] && t[1] < b[3])
            };
            let dy = [-34, 12, -56, 34, -78, 56, -100, 78].into_iter().find(fits).unwrap_or(-34);
            let label_box = [x0, py + dy, x0 + width, py + dy + 20];
            taken.push(label_box);
            // A leader from the ring to its label, so each label plainly belongs to one ring.
            let end_x = if x0 > px { label_box[0] } else { label_box[2] };
            let leader =
                PathElement::new(vec![(px, py), (end_x, py + dy + 10)], RGBColor(90, 90, 90).stroke_width(1));
            area.draw(&leader).map_err(draw)?;
            area.draw(&Rectangle::new(
                [(label_box[0], label_box[1]), (label_box[2], label_box[3])],
                WHITE.mix(0.85).filled(),
            ))
            .map_err(draw)?;
            let style = (FONT, TICK_FONT)
                .into_font()
                .style(FontStyle::Bold)
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Top));
            area.draw(&Text::new(text, (x0 + 4, py + dy + 2), style)).map_err(draw)?;
        }
        Ok(())
    }

    /// The line's drawable points, in pieces between the ones that cannot be drawn.
    fn pieces(&self, line: &Line) -> Vec<Vec<(f64, f64)>> {
        let mut pieces = vec![Vec::new()];
        for &point in &line.points {
            match self.placed(point) {
                Some(p) => pieces.last_mut().expect("never empty").push(p),
                None if pieces.last().is_some_and(|p| !p.is_empty()) => pieces.push(Vec::new()),
                None => {}
            }
        }
        pieces.retain(|p| !p.is_empty());
        pieces
    }
}

/// A linear axis with the ticks given (plotters' own `WithKeyPoints` over f64 has no default
/// label formatting, so the mesh would not take our formatter).
struct Ticked {
    inner: RangedCoordf64,
    bold: Vec<f64>,
    light: Vec<f64>,
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

/// As many columns as the longest entry allows, at most 3.
fn legend_columns(entries: &[Entry]) -> usize {
    let longest = entries.iter().map(|e| e.name.chars().count()).max().unwrap_or(0);
    let width = 60 + longest * 8;
    ((WIDTH as usize - 40) / width).clamp(1, 3)
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[Entry],
    columns: usize,
) -> Result<(), HtmlError> {
    let column_width = (WIDTH as i32 - 80) / columns as i32;
    for (index, entry) in entries.iter().enumerate() {
        let x = 80 + (index % columns) as i32 * column_width;
        let y = 8 + (index / columns) as i32 * LEGEND_ROW as i32 + LEGEND_ROW as i32 / 2;
        match entry.swatch {
            Some(opacity) => {
                let style = entry.color.mix(opacity.max(0.25)).filled();
                area.draw(&Rectangle::new([(x, y - 7), (x + 32, y + 7)], style)).map_err(draw)?;
            }
            None if entry.dashed => {
                let style = entry.color.stroke_width(2);
                for start in [x, x + 13, x + 26] {
                    area.draw(&PathElement::new(vec![(start, y), (start + 7, y)], style)).map_err(draw)?;
                }
            }
            None => {
                area.draw(&PathElement::new(vec![(x, y), (x + 32, y)], entry.color.stroke_width(3)))
                    .map_err(draw)?;
            }
        }
        if entry.markers {
            area.draw(&Circle::new((x + 16, y), 4, entry.color.filled())).map_err(draw)?;
        }
        let text = (FONT, TICK_FONT).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(entry.name.clone(), (x + 40, y), text)).map_err(draw)?;
    }
    Ok(())
}

fn draw<E: std::error::Error + Send + Sync>(error: plotters::drawing::DrawingAreaErrorKind<E>) -> HtmlError {
    HtmlError::Draw(error.to_string())
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
    fn binary_ticks_are_powers_of_two() {
        let axis = Axis { binary: true, ..Axis::log("outstanding I/Os") };
        let (low, high) = axis.span(&[1.0_f64.log10(), 64.0_f64.log10()]);
        let labels: Vec<String> = axis.ticks(low, high).0.iter().map(|&v| axis.label_at(v)).collect();
        assert_eq!(labels, ["1", "2", "4", "8", "16", "32", "64"]);
    }

    #[test]
    fn nines_ticks_are_the_report_percentiles() {
        let axis = Axis { label: "percentile".into(), scale: Scale::Nines, from_zero: false, binary: false };
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
}
