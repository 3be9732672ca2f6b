//! The datasheet check: a drive's rated figures (`--rated iops=540k,mb_s=2100,p99=200us`, or a
//! small TOML file of them) against what was measured, each with its difference in percent and
//! which way it goes, as the field reports set engineering samples beside the spec sheet.
//!
//! IOPS and throughput are better higher, latency lower: "5.1% below rated" is a shortfall for
//! IOPS and "5.0% above rated (slower)" one for a p99. Pure: the caller reads the file.

use iolab_spec::Nanos;
use iolab_stats::format::thousands;
use iolab_stats::result::OpSummary;
use iolab_stats::PERCENTILES;
use serde::{Deserialize, Serialize};

/// Which I/Os a rated figure is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Read,
    Write,
    /// Reads and writes together (no prefix).
    All,
}

/// What a rated figure measures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    Iops,
    /// 10^6 bytes per second, as datasheets count.
    MbS,
    /// The latency at this percentile, in ns.
    Percentile(f64),
    /// The mean latency, in ns.
    Mean,
}

/// One figure of a datasheet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatedFigure {
    pub side: Side,
    pub measure: Measure,
    /// IOPS, MB/s or ns, as `measure` says.
    pub value: f64,
}

/// A drive's rated figures, in the order given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rated {
    /// What the figures are of ("Samsung PM9A3 3.84TB"), from the TOML's `model`.
    pub model: Option<String>,
    pub figures: Vec<RatedFigure>,
}

/// One line of the check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatedLine {
    /// "IOPS", "read MB/s", "p99 latency".
    pub figure: String,
    pub rated: f64,
    /// `None` when the run measured no I/O of that side.
    pub measured: Option<f64>,
    /// (measured − rated) / rated × 100.
    pub difference_pct: Option<f64>,
    /// Whether the measurement is at least as good as the datasheet.
    pub meets: Option<bool>,
    /// "measured 512,300 vs rated 540,000: 5.1% below rated".
    pub wording: String,
}

impl Rated {
    /// `iops=540k,mb_s=2100,p99=200us`: keys [read_|write_](iops|mb_s|pNN|mean), each once.
    pub fn parse_list(text: &str) -> Result<Rated, String> {
        let mut rated = Rated::default();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').ok_or_else(|| {
                format!("--rated: '{pair}' is not KEY=VALUE (e.g. iops=540k, mb_s=2100, p99=200us)")
            })?;
            rated.add(key.trim(), value.trim())?;
        }
        if rated.figures.is_empty() {
            return Err(
                "--rated names no figure; give e.g. iops=540k,mb_s=2100,p99=200us or a TOML file".into()
            );
        }
        Ok(rated)
    }

    /// A TOML file of the same keys (`iops = "540k"`, `mb_s = 2100`, `p99 = "200us"`) and an
    /// optional `model = "..."`.
    pub fn parse_toml(text: &str) -> Result<Rated, String> {
        let table: toml::Table = text.parse().map_err(|e| format!("the rated figures are not TOML: {e}"))?;
        let mut rated = Rated::default();
        for (key, value) in &table {
            let value = match value {
                toml::Value::String(s) if key == "model" => {
                    rated.model = Some(s.clone());
                    continue;
                }
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(x) => x.to_string(),
                other => {
                    return Err(format!("rated figure '{key}' = {other} is neither a number nor a string"))
                }
            };
            rated.add(key, &value)?;
        }
        if rated.figures.is_empty() {
            return Err(
                "the rated figures file names no figure (keys: iops, mb_s, p99, read_iops, ...)".into()
            );
        }
        Ok(rated)
    }

    fn add(&mut self, key: &str, value: &str) -> Result<(), String> {
        let (side, measure) = parse_key(key)?;
        if self.figures.iter().any(|f| f.side == side && f.measure == measure) {
            return Err(format!("rated figure '{key}' is given twice"));
        }
        let value = match measure {
            Measure::Iops => parse_count(value),
            Measure::MbS => parse_mb_s(value),
            Measure::Percentile(_) | Measure::Mean => parse_latency_ns(value),
        }
        .map_err(|e| format!("rated {key}: {e}"))?;
        self.figures.push(RatedFigure { side, measure, value });
        Ok(())
    }

    /// Each rated figure against the measured `read`, `write` and `total`.
    pub fn check(&self, read: &OpSummary, write: &OpSummary, total: &OpSummary) -> Vec<RatedLine> {
        self.figures
            .iter()
            .map(|figure| {
                let op = match figure.side {
                    Side::Read => read,
                    Side::Write => write,
                    Side::All => total,
                };
                let measured = (op.ios > 0)
                    .then(|| match figure.measure {
                        Measure::Iops => Some(op.iops),
                        Measure::MbS => Some(op.mb_s),
                        Measure::Percentile(p) => op.percentile(p).map(|ns| ns as f64),
                        Measure::Mean => op.latency.as_ref().map(|l| l.mean_ns),
                    })
                    .flatten();
                line(figure, measured)
            })
            .collect()
    }
}

/// The line of one figure, measured or not.
pub fn line(figure: &RatedFigure, measured: Option<f64>) -> RatedLine {
    let name = figure_name(figure);
    let show = |v: f64| show_value(figure.measure, v);
    let Some(measured) = measured else {
        return RatedLine {
            figure: name,
            rated: figure.value,
            measured: None,
            difference_pct: None,
            meets: None,
            wording: format!("not measured (the run did no such I/O) vs rated {}", show(figure.value)),
        };
    };
    let difference_pct =
        if figure.value > 0.0 { (measured - figure.value) / figure.value * 100.0 } else { 0.0 };
    let lower_is_better = matches!(figure.measure, Measure::Percentile(_) | Measure::Mean);
    let meets = if lower_is_better { measured <= figure.value } else { measured >= figure.value };
    let how = if difference_pct.abs() < 0.05 {
        "at rated".to_string()
    } else {
        let way = if difference_pct > 0.0 { "above" } else { "below" };
        let meaning = match (lower_is_better, difference_pct > 0.0) {
            (false, _) => "",
            (true, true) => " (slower)",
            (true, false) => " (faster)",
        };
        format!("{:.1}% {way} rated{meaning}", difference_pct.abs())
    };
    RatedLine {
        figure: name,
        rated: figure.value,
        measured: Some(measured),
        difference_pct: Some(difference_pct),
        meets: Some(meets),
        wording: format!("measured {} vs rated {}: {how}", show(measured), show(figure.value)),
    }
}

/// "IOPS", "read MB/s", "write p99.9 latency".
fn figure_name(figure: &RatedFigure) -> String {
    let side = match figure.side {
        Side::Read => "read ",
        Side::Write => "write ",
        Side::All => "",
    };
    let measure = match figure.measure {
        Measure::Iops => "IOPS".to_string(),
        Measure::MbS => "MB/s".to_string(),
        Measure::Percentile(p) => format!("p{p} latency"),
        Measure::Mean => "mean latency".to_string(),
    };
    format!("{side}{measure}")
}

fn show_value(measure: Measure, value: f64) -> String {
    match measure {
        Measure::Iops => thousands(value),
        Measure::MbS => format!("{} MB/s", thousands(value)),
        Measure::Percentile(_) | Measure::Mean if value >= 1e6 => format!("{:.2} ms", value / 1e6),
        Measure::Percentile(_) | Measure::Mean => format!("{:.1} µs", value / 1e3),
    }
}

/// `iops`, `read_mb_s`, `p99`, `write_p99.9`, `p999` (fio's spelling of 99.9), `mean`.
fn parse_key(key: &str) -> Result<(Side, Measure), String> {
    let lower = key.to_ascii_lowercase();
    let (side, rest) = match (lower.strip_prefix("read_"), lower.strip_prefix("write_")) {
        (Some(rest), _) => (Side::Read, rest),
        (_, Some(rest)) => (Side::Write, rest),
        _ => (Side::All, lower.as_str()),
    };
    let measure = match rest {
        "iops" => Measure::Iops,
        "mb_s" | "mbs" | "mbps" | "bw" | "throughput" => Measure::MbS,
        "mean" | "mean_latency" | "latency" => Measure::Mean,
        p if p.starts_with('p') => {
            let p = parse_percentile(&p[1..]).ok_or_else(|| unknown(key))?;
            // Only the percentiles every result reports can be checked against.
            if !PERCENTILES.iter().any(|q| (q - p).abs() < 1e-9) {
                let supported = PERCENTILES.iter().map(|q| format!("p{q}")).collect::<Vec<_>>();
                return Err(format!(
                    "rated figure '{key}': iolab reports only the percentiles {}; give one of those",
                    supported.join(", ")
                ));
            }
            Measure::Percentile(p)
        }
        _ => return Err(unknown(key)),
    };
    Ok((side, measure))
}

fn unknown(key: &str) -> String {
    format!(
        "unknown rated figure '{key}'; use iops, mb_s, mean or a percentile (p50, p99, p99.9 or p999), \
         each optionally read_ or write_"
    )
}

/// "99" → 99, "99.9" → 99.9, "999" → 99.9, "9999" → 99.99 (fio's and datasheets' spellings).
fn parse_percentile(text: &str) -> Option<f64> {
    let p: f64 = text.parse().ok()?;
    // "999": the digits after the first two are decimals.
    let p = if !text.contains('.') && text.len() > 2 && text.starts_with("99") {
        p / 10f64.powi(text.len() as i32 - 2)
    } else {
        p
    };
    (p > 0.0 && p < 100.0).then_some(p)
}

/// A count with decimal suffixes: 540000, 540k, 1.2M, "540k IOPS".
fn parse_count(text: &str) -> Result<f64, String> {
    let lower = text.to_ascii_lowercase();
    let lower = lower.trim().trim_end_matches("iops").trim();
    let (number, suffix) =
        split(lower).ok_or_else(|| format!("'{text}' is not a count; write e.g. 540000 or 540k"))?;
    let scale = match suffix {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        _ => return Err(format!("'{text}' is not a count; write e.g. 540000 or 540k")),
    };
    Ok(number * scale)
}

/// Throughput in MB/s: 2100, 2100MB/s, 2.1GB/s, 1800MiB/s, 2GiB/s (binary units converted).
fn parse_mb_s(text: &str) -> Result<f64, String> {
    let bad = || format!("'{text}' is not a throughput; write e.g. 2100 (MB/s), 2100MB/s or 2.1GB/s");
    let lower = text.to_ascii_lowercase();
    let lower = lower.trim().trim_end_matches("/s").trim_end_matches("ps").trim();
    let (number, suffix) = split(lower).ok_or_else(bad)?;
    let bytes_per_unit = match suffix {
        "" | "mb" | "m" => 1e6,
        "kb" | "k" => 1e3,
        "gb" | "g" => 1e9,
        "tb" | "t" => 1e12,
        "kib" => 1024.0,
        "mib" => 1_048_576.0,
        "gib" => 1_073_741_824.0,
        _ => return Err(bad()),
    };
    Ok(number * bytes_per_unit / 1e6)
}

/// A latency with its unit (200us, 1.5ms): a bare number is refused, since a datasheet's
/// "200" is never seconds.
fn parse_latency_ns(text: &str) -> Result<f64, String> {
    if text.trim().chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!("'{text}' has no unit; write e.g. 200us or 1.5ms"));
    }
    text.trim().parse::<Nanos>().map(|n| n.0 as f64).map_err(|e| e.to_string())
}

/// "2.1gb" → (2.1, "gb").
fn split(text: &str) -> Option<(f64, &str)> {
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let number: f64 = text[..end].parse().ok()?;
    (number.is_finite() && number >= 0.0).then_some((number, text[end..].trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_stats::result::{LatencySummary, Percentile};

    fn all(measure: Measure, value: f64) -> RatedFigure {
        RatedFigure { side: Side::All, measure, value }
    }

    #[test]
    fn a_list_parses_with_units() {
        let rated =
            Rated::parse_list("iops=540k, mb_s=2.1GB/s, p99=200us, read_p99.9=1.5ms, write_iops=1.2M")
                .expect("parses");
        assert_eq!(
            rated.figures,
            [
                all(Measure::Iops, 540_000.0),
                all(Measure::MbS, 2100.0),
                all(Measure::Percentile(99.0), 200_000.0),
                RatedFigure { side: Side::Read, measure: Measure::Percentile(99.9), value: 1_500_000.0 },
                RatedFigure { side: Side::Write, measure: Measure::Iops, value: 1_200_000.0 },
            ]
        );
    }

    #[test]
    fn throughput_units_convert_to_mb_s() {
        for (text, mb_s) in [
            ("2100", 2100.0),
            ("2100MB/s", 2100.0),
            ("2.1GB/s", 2100.0),
            ("2.1 GB/s", 2100.0),
            ("500KB/s", 0.5),
            ("1000MiB/s", 1048.576),
            ("3500MBps", 3500.0),
        ] {
            let got = parse_mb_s(text).expect(text);
            assert!((got - mb_s).abs() < 1e-9, "{text}: {got}");
        }
        assert!(parse_mb_s("fast").is_err());
    }

    #[test]
    fn a_percentile_no_result_reports_is_refused_naming_those_it_does() {
        let error = Rated::parse_list("p95=1ms").expect_err("p95 is not reported");
        assert!(error.contains("'p95'") && error.contains("p50, p90, p99, p99.9, p99.99"), "{error}");
        assert!(Rated::parse_list("write_p99.99=2ms").is_ok());
        assert!(Rated::parse_list("p9999=2ms").is_ok());
    }

    #[test]
    fn percentiles_in_fio_spelling() {
        assert_eq!(parse_percentile("99"), Some(99.0));
        assert_eq!(parse_percentile("99.9"), Some(99.9));
        assert_eq!(parse_percentile("999"), Some(99.9));
        assert_eq!(parse_percentile("9999"), Some(99.99));
        assert_eq!(parse_percentile("50"), Some(50.0));
        assert_eq!(parse_percentile("100"), None);
    }

    #[test]
    fn bad_figures_say_what_to_write() {
        assert!(Rated::parse_list("iops").unwrap_err().contains("KEY=VALUE"));
        assert!(Rated::parse_list("speed=9").unwrap_err().contains("unknown rated figure 'speed'"));
        assert!(Rated::parse_list("p99=200").unwrap_err().contains("no unit"));
        assert!(Rated::parse_list("iops=1,iops=2").unwrap_err().contains("twice"));
        assert!(Rated::parse_list("iops=lots").unwrap_err().contains("not a count"));
        assert!(Rated::parse_list("").unwrap_err().contains("names no figure"));
    }

    #[test]
    fn a_toml_datasheet_parses() {
        let rated = Rated::parse_toml(
            "model = \"Example 3.84TB\"\niops = \"540k\"\nmb_s = 2100\nread_mb_s = 6.8e3\n\
             \"p99.9\" = \"1ms\"\n",
        )
        .expect("parses");
        assert_eq!(rated.model.as_deref(), Some("Example 3.84TB"));
        assert!(rated.figures.contains(&all(Measure::Iops, 540_000.0)));
        assert!(rated.figures.contains(&all(Measure::MbS, 2100.0)));
        assert!(rated.figures.contains(&RatedFigure {
            side: Side::Read,
            measure: Measure::MbS,
            value: 6800.0
        }));
        assert!(rated.figures.contains(&all(Measure::Percentile(99.9), 1e6)));
        assert!(Rated::parse_toml("iops = [1]").unwrap_err().contains("neither a number nor a string"));
    }

    #[test]
    fn the_difference_has_its_sign_and_wording() {
        let below = line(&all(Measure::Iops, 540_000.0), Some(512_460.0));
        assert_eq!(below.wording, "measured 512,460 vs rated 540,000: 5.1% below rated");
        assert_eq!(below.meets, Some(false));
        assert!(below.difference_pct.expect("measured") < 0.0);

        let above = line(&all(Measure::MbS, 2100.0), Some(2205.0));
        assert_eq!(above.wording, "measured 2,205 MB/s vs rated 2,100 MB/s: 5.0% above rated");
        assert_eq!(above.meets, Some(true));

        // Latency is better lower: above rated is slower and misses.
        let slow = line(&all(Measure::Percentile(99.0), 200_000.0), Some(210_000.0));
        assert_eq!(slow.wording, "measured 210.0 µs vs rated 200.0 µs: 5.0% above rated (slower)");
        assert_eq!((slow.meets, slow.figure.as_str()), (Some(false), "p99 latency"));
        let fast = line(&all(Measure::Percentile(99.0), 2_000_000.0), Some(1_500_000.0));
        assert_eq!(fast.wording, "measured 1.50 ms vs rated 2.00 ms: 25.0% below rated (faster)");
        assert_eq!(fast.meets, Some(true));

        let equal = line(&all(Measure::Iops, 1000.0), Some(1000.2));
        assert!(equal.wording.ends_with("at rated"), "{}", equal.wording);
        let none = line(&RatedFigure { side: Side::Write, measure: Measure::Iops, value: 1.0 }, None);
        assert_eq!((none.figure.as_str(), none.meets), ("write IOPS", None));
    }

    fn op(ios: u64, iops: f64, mb_s: f64, p99_ns: u64) -> OpSummary {
        OpSummary {
            ios,
            bytes: 0,
            iops,
            mb_s,
            mib_s: 0.0,
            latency: (ios > 0).then(|| LatencySummary {
                min_ns: 0,
                mean_ns: p99_ns as f64 / 2.0,
                stdev_ns: 0.0,
                max_ns: p99_ns,
                percentiles: vec![Percentile { p: 99.0, ns: p99_ns }],
                within: Vec::new(),
                tail: None,
            }),
        }
    }

    #[test]
    fn the_check_takes_each_side_s_figure() {
        let rated = Rated::parse_list("iops=100k,read_iops=60k,write_p99=1ms,mean=100us").expect("parses");
        let (read, write) = (op(10, 70_000.0, 0.0, 500_000), op(0, 0.0, 0.0, 0));
        let total = op(10, 70_000.0, 0.0, 500_000);
        let lines = rated.check(&read, &write, &total);
        let measured: Vec<Option<f64>> = lines.iter().map(|l| l.measured).collect();
        assert_eq!(measured, [Some(70_000.0), Some(70_000.0), None, Some(250_000.0)]);
        let meets: Vec<Option<bool>> = lines.iter().map(|l| l.meets).collect();
        assert_eq!(meets, [Some(false), Some(true), None, Some(false)]);
    }
}
