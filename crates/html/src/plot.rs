//! Drawing one chart with plotters' SVG backend from a small description (lines, marks, bands),
//! so each chart of the report says what to draw and this file alone says how (axes: `axis`).
//! The legend gets its own strip under the plot, so it never hides a line however many runs
//! are overlaid.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::axis::Ticked;
pub use crate::axis::{number, sig3, Axis, Scale};
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

/// Colours that stay apart for most colour-blind readers (Tableau 10), then their lighter
/// partners (Tableau 20) for an eleventh run and on.
pub const PALETTE: [RGBColor; 20] = [
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
    RGBColor(120, 165, 222),
    RGBColor(255, 170, 95),
    RGBColor(120, 205, 110),
    RGBColor(250, 125, 122),
    RGBColor(182, 155, 205),
    RGBColor(186, 140, 130),
    RGBColor(240, 160, 200),
    RGBColor(175, 175, 175),
    RGBColor(205, 205, 110),
    RGBColor(120, 205, 220),
];

pub fn color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
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

    /// Whether there is anything to draw: a line's point, or a bar (a band of some height).
    pub fn is_empty(&self) -> bool {
        let bar = |b: &Band| b.y.is_some_and(|(low, high)| self.placed((b.x.0, low)).is_some() && high > low);
        !self.lines.iter().any(|l| l.points.iter().any(|&p| self.placed(p).is_some()))
            && !self.bands.iter().any(bar)
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
        // Rings first, then the labels around them, each placed where it covers no line, ring
        // or other label (two sweet spots at one QD would otherwise print over each other),
        // in its run's colour: the label says whose it is, the colour shows it.
        let mut data: Vec<(i32, i32)> = Vec::new();
        for line in &self.lines {
            for piece in self.pieces(line) {
                let pixels: Vec<(i32, i32)> = piece.iter().map(|p| chart.backend_coord(p)).collect();
                data.extend(along(&pixels));
            }
        }
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
            labels.push((px, py, mark));
        }
        let (top, bottom) = (TITLE_ROOM as i32, PLOT_HEIGHT as i32 - 58);
        let (left, right) = (96, WIDTH as i32 - 28);
        for (px, py, mark) in labels {
            let width = label_width(&mark.label);
            let covered = |b: &[i32; 4]| {
                let hits = data
                    .iter()
                    .filter(|(x, y)| b[0] - 3 <= *x && *x <= b[2] + 3 && b[1] - 3 <= *y && *y <= b[3] + 3);
                hits.count()
                    + 1000
                        * taken
                            .iter()
                            .filter(|t| b[0] < t[2] && t[0] < b[2] && b[1] < t[3] && t[1] < b[3])
                            .count()
            };
            let candidates = [-34, 12, -56, 34, -78, 56, -100, 78, -122, 100, -144, 122]
                .into_iter()
                .flat_map(|dy| [(px + 14, dy), (px - 14 - width, dy)])
                .map(|(x0, dy)| [x0, py + dy, x0 + width, py + dy + 20])
                .filter(|b| b[0] >= left && b[2] <= right && b[1] >= top && b[3] <= bottom);
            // The nearest place that covers nothing, else the one that covers least.
            let label_box =
                candidates.min_by_key(|b| covered(b)).unwrap_or([px + 14, py - 34, px + 14 + width, py - 14]);
            taken.push(label_box);
            // A leader from the ring to its label, so each label plainly belongs to one ring.
            let end_x = if label_box[0] > px { label_box[0] } else { label_box[2] };
            let leader =
                PathElement::new(vec![(px, py), (end_x, label_box[1] + 10)], mark.color.stroke_width(1));
            area.draw(&leader).map_err(draw)?;
            area.draw(&Rectangle::new(
                [(label_box[0], label_box[1]), (label_box[2], label_box[3])],
                WHITE.mix(0.85).filled(),
            ))
            .map_err(draw)?;
            let style = (FONT, TICK_FONT)
                .into_font()
                .style(FontStyle::Bold)
                .color(&darker(mark.color))
                .pos(Pos::new(HPos::Left, VPos::Top));
            area.draw(&Text::new(mark.label.clone(), (label_box[0] + 4, label_box[1] + 2), style))
                .map_err(draw)?;
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

/// Pixels along a line drawn through `pixels`, a few apart: what a label must not cover.
fn along(pixels: &[(i32, i32)]) -> Vec<(i32, i32)> {
    let mut out: Vec<(i32, i32)> = pixels.first().copied().into_iter().collect();
    for pair in pixels.windows(2) {
        let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
        let steps = ((x1 - x0).abs().max((y1 - y0).abs()) / 4).max(1);
        out.extend((1..=steps).map(|i| (x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps)));
    }
    out
}

/// A label's width in pixels at the tick font, bold (an overestimate: browsers' sans-serif
/// averages under 9 px a character at 14 px).
fn label_width(text: &str) -> i32 {
    text.chars().count() as i32 * 9 + 8
}

/// A run's colour, darkened enough to be read as text on white.
fn darker(color: RGBColor) -> RGBColor {
    let channel = |c: u8| (f64::from(c) * 0.75) as u8;
    RGBColor(channel(color.0), channel(color.1), channel(color.2))
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
