//! Charts over time or progress: per-interval series, the cliff log (throughput against bytes
//! written), and steady-state rounds with the window and both SNIA criteria.

use iolab_analysis::rounds::SteadyRounds;
use iolab_analysis::steady::SteadyState;
use plotters::style::RGBColor;

use crate::charts::{chosen_points, latency_unit, named, Chosen, Figure};
use crate::plot::{number, Axis, Band, Chart, Line, Rule};
use crate::studies::{outcome, unit, Study};
use crate::{workload, HtmlError, Subject};

/// Steady-state charts drawn at most (a sweep --until-steady has one per point).
const MAX_STEADY: usize = 12;

/// IOPS and p99 per interval of the points each run is shown by (a sweep's sweet spots, a
/// steady test's last round, else its points: `chosen_points`), one pair of panels per
/// workload, each line in its run's colour.
pub(crate) fn series(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let mut chosen = Vec::new();
    for subject in subjects {
        for Chosen { point, what, color } in chosen_points(subject) {
            if point.series.len() >= 2 {
                chosen.push((workload::of(point), (named(subject, &what), color, point)));
            }
        }
    }
    let mut figures = Vec::new();
    for (workload, chosen) in workload::grouped(chosen) {
        let x = || Axis::linear("time since the measurement started (s)");
        let all = || chosen.iter().flat_map(|c| &c.2.series);
        let iops_axis = Axis::auto("IOPS (I/Os per second)", all().map(|s| s.iops), 20.0);
        let mut iops = Chart::new("IOPS per interval", x(), iops_axis);
        let (scale, unit) = latency_unit(all().map(|s| s.p99_ns as f64).fold(0.0, f64::max));
        let p99_axis =
            Axis::auto(format!("p99 latency ({unit})"), all().map(|s| s.p99_ns as f64 / scale), 30.0);
        let mut p99 = Chart::new("p99 latency per interval", x(), p99_axis);
        let mut interval: f64 = 0.0;
        for (name, color, point) in &chosen {
            let middle = |s: &iolab_stats::result::SeriesPoint| s.t_s + s.duration_s / 2.0;
            interval = point.series.iter().map(|s| s.duration_s).fold(interval, f64::max);
            // Dots only where they can be told apart; a long series is its line.
            let markers = point.series.len() <= 40;
            let points = point.series.iter().map(|s| (middle(s), s.iops)).collect();
            iops.lines.push(Line { name: name.clone(), color: *color, dashed: false, markers, points });
            let points = point.series.iter().map(|s| (middle(s), s.p99_ns as f64 / scale)).collect();
            p99.lines.push(Line { name: name.clone(), color: *color, dashed: false, markers, points });
        }
        let each = format!(
            "one value per interval (up to {} s; a job's last interval may be shorter), drawn at its middle",
            number(interval)
        );
        let caption =
            format!("IOPS of each run's point(s) shown: {each}. A stall shows as a point at zero IOPS.");
        figures.push(Figure::panel("series-iops", iops, &workload, caption)?);
        let caption = format!("The 99th percentile latency of the I/Os completed in each interval, {each}. A spike is an interval whose slowest 1% were slow; compare it with the IOPS chart above.");
        figures.push(Figure::panel("series-p99", p99, &workload, caption)?);
    }
    Ok(figures)
}

/// Throughput against bytes written, every cliff run overlaid, each cliff marked where it began.
pub(crate) fn cliff(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let cliffs: Vec<_> = subjects
        .iter()
        .filter_map(|s| match &s.study {
            Study::Cliff(c) if !c.samples.is_empty() => Some((s, c)),
            _ => None,
        })
        .collect();
    if cliffs.is_empty() {
        return Ok(Vec::new());
    }
    let most = cliffs.iter().flat_map(|(_, c)| &c.samples).map(|s| s.bytes_done).max().unwrap_or(0) as f64;
    let (scale, unit) = if most >= 2.0 * GIB { (GIB, "GiB") } else { (MIB, "MiB") };
    let mut chart = Chart::new(
        "Write throughput against bytes written (cliff)",
        Axis::linear(format!("written ({unit})")),
        Axis::linear("throughput (MB/s, 10^6 bytes per second)"),
    );
    let mut caption = String::from("Each sample is one interval of the sequential fill. A cliff (dashed line) is where throughput fell and stayed down: the bytes written before it are the size of the fast tier (write cache, SLC).");
    for (subject, summary) in &cliffs {
        let (color, found) = (subject.color(0), &summary.found);
        let points = summary.samples.iter().map(|s| (s.bytes_done as f64 / scale, s.mb_s)).collect();
        chart.lines.push(Line { name: subject.name.clone(), color, dashed: false, markers: true, points });
        let mut levels = Vec::new();
        let end = summary.samples.last().map_or(0.0, |s| s.bytes_done as f64 / scale);
        for (index, cliff) in found.cliffs.iter().enumerate() {
            let at = cliff.at_bytes as f64 / scale;
            let from = found.cliffs.get(index.wrapping_sub(1)).map_or(0.0, |c| c.at_bytes as f64 / scale);
            let to = found.cliffs.get(index + 1).map_or(end, |c| c.at_bytes as f64 / scale);
            levels.extend([(from, cliff.before_mb_s), (at, cliff.before_mb_s), (f64::NAN, f64::NAN)]);
            levels.extend([(at, cliff.after_mb_s), (to, cliff.after_mb_s), (f64::NAN, f64::NAN)]);
            chart.rules.push(Rule {
                x: at,
                label: format!("cliff {}: -{:.0}% after {} {unit}", index + 1, cliff.drop_pct, number(at)),
                color,
            });
        }
        if !levels.is_empty() {
            chart.lines.push(Line {
                name: named(subject, "levels (median before and after)"),
                color,
                dashed: true,
                markers: false,
                points: levels,
            });
        }
        let outcome = if !found.judged {
            format!("not judged: {}", found.note.as_deref().unwrap_or("too few samples"))
        } else if found.cliffs.is_empty() {
            "no cliff: throughput never dropped and stayed down".to_string()
        } else {
            let each: Vec<String> = found
                .cliffs
                .iter()
                .map(|c| {
                    format!(
                        "after {} {unit}, {:.0} → {:.0} MB/s (-{:.0}%)",
                        number(c.at_bytes as f64 / scale),
                        c.before_mb_s,
                        c.after_mb_s,
                        c.drop_pct
                    )
                })
                .collect();
            format!("{} cliff(s): {}", found.cliffs.len(), each.join("; "))
        };
        caption.push_str(&format!(" {}: {outcome}.", subject.name));
    }
    Ok(vec![Figure::new("cliff", &chart, caption)?])
}

const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;

/// One chart per steady-state series: each round's tracked value, the window judged, the
/// range band and the least-squares line, each criterion's limit named in the legend.
pub(crate) fn steady(subjects: &[Subject<'_>]) -> Result<Vec<Figure>, HtmlError> {
    let mut figures = Vec::new();
    let all: Vec<_> = subjects
        .iter()
        .flat_map(|s| s.study.steady_rounds().into_iter().map(move |(what, r)| (s, what, r)))
        .filter(|(_, _, r)| !r.values.is_empty())
        .collect();
    let total = all.len();
    for (subject, what, rounds) in all.into_iter().take(MAX_STEADY) {
        let chart = steady_chart(named(subject, &what), subject.color(0), rounds);
        let outcome = outcome(rounds);
        let mut caption = format!(
            "{}{}. The shaded columns are the measurement window (the last {} rounds judged). Steady state needs both: every value of the window inside the band (average ± {}%, a range of at most {}% of the average), and the least-squares line changing by at most {}% of the average across the window (SNIA PTS).",
            outcome.get(..1).unwrap_or_default().to_uppercase(),
            outcome.get(1..).unwrap_or_default(),
            rounds.rule.window,
            number(rounds.rule.max_range_pct / 2.0),
            number(rounds.rule.max_range_pct),
            number(rounds.rule.max_slope_pct)
        );
        if figures.len() + 1 == MAX_STEADY && total > MAX_STEADY {
            caption.push_str(&format!(" {} more steady-state series are not drawn.", total - MAX_STEADY));
        }
        figures.push(Figure::new("steady", &chart, caption)?);
    }
    Ok(figures)
}

fn steady_chart(name: String, color: RGBColor, rounds: &SteadyRounds) -> Chart {
    let unit = unit(rounds.tracked);
    let mut x = Axis::linear("round");
    x.from_zero = false;
    let outcome = match rounds.state {
        SteadyState::Reached { .. } => "reached",
        SteadyState::TooShort { .. } => "not judged",
        SteadyState::NotYet { .. } | SteadyState::GaveUp { .. } => "NOT reached",
    };
    let mut chart = Chart::new(format!("Steady state {outcome}: {name}"), x, Axis::linear(unit));
    if let Some(w) = rounds.state.window() {
        let (first, last) = (w.first_round as f64, w.last_round as f64);
        chart.bands.push(Band {
            name: format!("measurement window: rounds {}-{}", w.first_round, w.last_round),
            x: (first - 0.5, last + 0.5),
            y: None,
            color: RGBColor(120, 120, 120),
            opacity: 0.12,
        });
        let half = w.average.abs() * rounds.rule.max_range_pct / 200.0;
        chart.bands.push(Band {
            name: format!(
                "range band: average ± {}% (range {:.1}%, max {}%: {})",
                number(rounds.rule.max_range_pct / 2.0),
                w.range_pct,
                number(rounds.rule.max_range_pct),
                if w.range_ok { "met" } else { "NOT met" }
            ),
            x: (first - 0.5, last + 0.5),
            y: Some((w.average - half, w.average + half)),
            color: RGBColor(44, 160, 44),
            opacity: 0.22,
        });
        chart.lines.push(Line {
            name: format!("window average {} {unit}", number(w.average)),
            color: RGBColor(130, 130, 130),
            dashed: true,
            markers: false,
            points: vec![(first - 0.5, w.average), (last + 0.5, w.average)],
        });
        let fit = |round: f64| w.slope_per_round * round + w.intercept;
        chart.lines.push(Line {
            name: format!(
                "least-squares line: {:.1}% change across the window (max {}%: {})",
                w.slope_excursion_pct,
                number(rounds.rule.max_slope_pct),
                if w.slope_ok { "met" } else { "NOT met" }
            ),
            color: RGBColor(0, 0, 0),
            dashed: true,
            markers: false,
            points: vec![(first, fit(first)), (last, fit(last))],
        });
    }
    let points = rounds.values.iter().enumerate().map(|(i, v)| ((i + 1) as f64, *v)).collect();
    chart.lines.insert(
        0,
        Line { name: format!("{name} · {unit} per round"), color, dashed: false, markers: true, points },
    );
    chart
}
