//! `iolab check`: did a run get worse than its baseline, past the regression the user allows
//! and by more than twice the run-to-run noise ([`NOISE_MARGIN`])? The pairing and the noise rule are `compare`'s own; this
//! module decides, per point and metric, regression, improvement or neither, and whether the two
//! runs can be compared at all (the same workloads at the same loads, on the same kind of
//! target, under the same kernel and engine, unless the user accepts a difference).

use serde::Serialize;

use crate::compare::{compare, CompareInput, Comparison, Measure, Metric, Noise, Outcome};

/// Name and version of the JSON schema of a check.
pub const CHECK_SCHEMA: &str = "iolab.check/1";

/// The metrics a check shows, in the order it reports them.
pub const CHECKED_METRICS: [Metric; 5] =
    [Metric::Iops, Metric::MbS, Metric::P99Ns, Metric::P999Ns, Metric::CpuUsPerIo];

/// The metrics a check gates unless told otherwise. CPU per I/O is shown, and gated only when
/// `--max-regression` names it: it holds the process's fixed costs per second (waking threads,
/// pacing, the sampler) divided by the I/Os, which on a slow target are most of it and grow
/// with what else the machine runs: at 160 reads a second of a FUSE target, a check beside two
/// busy loops and an fio writer read +59% against a spread of 18%, nothing changed.
pub const GATED_BY_DEFAULT: [Metric; 4] = [Metric::Iops, Metric::MbS, Metric::P99Ns, Metric::P999Ns];

/// The regression allowed per metric when the user gives none: 5%.
pub const DEFAULT_MAX_REGRESSION_PCT: f64 = 5.0;

/// How many times the larger side's spread a figure must move by, beyond `compare`'s rule, to
/// fail a check. A side's repeats run back to back and measure the noise within a minute; a
/// baseline kept earlier carries as well the drift between then and now, which on a shared
/// machine was as large again: beside two busy loops and an fio writer, with nothing changed, a
/// check a minute after its baseline read IOPS -7.1% against a spread of 5.5%, and p99 +30.9%
/// against 26.4% (a FUSE target of fixed 30 ms reads, 3 repeats a side). A gate that fails a
/// build must not fail it on that.
pub const NOISE_MARGIN: f64 = 2.0;

/// A difference between the runs that makes them not comparable unless the user accepts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Difference {
    /// The kernel release (a kernel developer's check compares across kernels on purpose).
    Kernel,
    /// The target's kind: the device's model, or its driver, or the filesystem of a file.
    Model,
    /// The I/O engine.
    Engine,
}

impl Difference {
    pub const ALL: [Difference; 3] = [Difference::Kernel, Difference::Model, Difference::Engine];

    pub fn name(self) -> &'static str {
        match self {
            Difference::Kernel => "kernel",
            Difference::Model => "model",
            Difference::Engine => "engine",
        }
    }
}

/// One side of a check: its points (with their repeats) and the environment it ran in.
pub struct CheckSide<'a> {
    pub input: CompareInput,
    /// The run's environment fingerprint (crates/environment), `Null` where none was kept.
    pub environment: &'a serde_json::Value,
}

/// What the user allows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rules {
    /// The regression allowed per gated metric, in percent; a metric not here is shown only.
    pub max_regression_pct: Vec<(Metric, f64)>,
    /// Differences that do not make the runs incomparable.
    pub accept: Vec<Difference>,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            max_regression_pct: GATED_BY_DEFAULT.iter().map(|&m| (m, DEFAULT_MAX_REGRESSION_PCT)).collect(),
            accept: Vec::new(),
        }
    }
}

impl Rules {
    fn limit(&self, metric: Metric) -> Option<f64> {
        self.max_regression_pct.iter().find(|(m, _)| *m == metric).map(|&(_, l)| l)
    }
}

/// `--max-regression`: "5%" for the metrics gated by default, or per metric,
/// "iops=5%,p99=10%,cpu=20%", or both ("5%,cpu=20%": the plain figure for the default ones not
/// named); naming `cpu` gates CPU per I/O too.
pub fn parse_max_regression(text: &str) -> Result<Vec<(Metric, f64)>, String> {
    let pct = |value: &str| -> Result<f64, String> {
        let number = value.trim().trim_end_matches('%').trim();
        match number.parse::<f64>() {
            Ok(v) if v.is_finite() && (0.0..1000.0).contains(&v) => Ok(v),
            _ => Err(format!("'{value}' is not a percentage from 0 to 1000; write e.g. 5% or 5")),
        }
    };
    let mut all = DEFAULT_MAX_REGRESSION_PCT;
    let mut named: Vec<(Metric, f64)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('=') {
            None => all = pct(part)?,
            Some((key, value)) => {
                let metric = metric_named(key.trim()).ok_or_else(|| {
                    format!("'{}' is not a checked metric; use iops, mb_s, p99, p99.9 or cpu", key.trim())
                })?;
                named.retain(|(m, _)| *m != metric);
                named.push((metric, pct(value)?));
            }
        }
    }
    if text.trim().is_empty() {
        return Err("--max-regression is empty; write e.g. 5% or iops=5%,p99=10%".into());
    }
    Ok(CHECKED_METRICS
        .iter()
        .filter_map(|&m| match named.iter().find(|(n, _)| *n == m) {
            Some(&(_, v)) => Some((m, v)),
            None => GATED_BY_DEFAULT.contains(&m).then_some((m, all)),
        })
        .collect())
}

fn metric_named(key: &str) -> Option<Metric> {
    match key.to_ascii_lowercase().as_str() {
        "iops" => Some(Metric::Iops),
        "mb_s" | "mbs" | "mb/s" | "bw" => Some(Metric::MbS),
        "p99" => Some(Metric::P99Ns),
        "p99.9" | "p999" => Some(Metric::P999Ns),
        "cpu" | "cpu_us_per_io" | "cpu/io" => Some(Metric::CpuUsPerIo),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No checked metric got worse past its limit and beyond the noise: exit 0.
    Pass,
    /// At least one did: exit 1.
    Regression,
    /// The runs measured different things: exit 2.
    NotComparable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not worse past the limit and beyond the noise.
    Held,
    Regression,
    /// Better beyond noise and by more than the limit: said, never a failure.
    Improvement,
    /// Shown, not gated: `--max-regression` gives it no limit.
    Shown,
    /// One side did not measure it (fio's JSON has no CPU per I/O).
    NotMeasured,
}

/// One metric of one point.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub point: String,
    pub metric: Metric,
    pub baseline: Option<f64>,
    pub candidate: Option<f64>,
    /// (candidate - baseline) / baseline x 100.
    pub pct: Option<f64>,
    pub noise: Option<Noise>,
    /// The larger side's spread the difference was judged against.
    pub noise_pct: Option<f64>,
    /// `None`: not gated.
    pub max_regression_pct: Option<f64>,
    pub status: Status,
    /// "-31.2%, worse beyond noise (2.0%) and past the 5% allowed".
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub schema: &'static str,
    pub verdict: Verdict,
    pub baseline: String,
    pub candidate: String,
    pub rules: Rules,
    pub findings: Vec<Finding>,
    /// Why the runs cannot be compared (empty when they can).
    pub not_comparable: Vec<String>,
    /// Differences the user accepted, and other things worth saying.
    pub notes: Vec<String>,
    /// One line: "PASS: ...", "REGRESSION: ...", "NOT COMPARABLE: ...".
    pub summary: String,
}

impl Check {
    /// The exit code the issue of a CI gate asks for: 0 pass, 1 regression, 2 not comparable.
    pub fn exit_code(&self) -> u8 {
        match self.verdict {
            Verdict::Pass => 0,
            Verdict::Regression => 1,
            Verdict::NotComparable => 2,
        }
    }
}

/// Judges `candidate` against `baseline` under `rules`.
pub fn check(baseline: CheckSide, candidate: CheckSide, rules: &Rules) -> Check {
    let (base_env, cand_env) = (baseline.environment, candidate.environment);
    let labels = (baseline.input.label.clone(), candidate.input.label.clone());
    let comparison = compare(&[baseline.input, candidate.input]);
    let mut not_comparable: Vec<String> =
        comparison.unmatched.iter().map(|u| format!("{} '{}': {}", u.side, u.point, u.why)).collect();
    if comparison.rows.is_empty() && not_comparable.is_empty() {
        not_comparable.push("no point to compare".into());
    }
    let mut notes = Vec::new();
    for (difference, said) in environment_differences(&comparison, base_env, cand_env) {
        if rules.accept.contains(&difference) {
            notes.push(format!("accepted: {said}"));
        } else {
            not_comparable.push(format!("{said} (--accept {} to check anyway)", difference.name()));
        }
    }
    for row in &comparison.rows {
        for (member, label) in row.members.iter().zip([&labels.0, &labels.1]) {
            if member.as_ref().is_some_and(|m| m.disturbed) {
                notes.push(format!(
                    "{label} '{}' was disturbed by another load or a stolen CPU: its figures are not the target's alone",
                    row.name
                ));
            }
        }
    }
    let findings: Vec<Finding> = comparison
        .rows
        .iter()
        .flat_map(|row| CHECKED_METRICS.iter().filter_map(move |&metric| finding(row, metric, rules)))
        .collect();
    let verdict = if !not_comparable.is_empty() {
        Verdict::NotComparable
    } else if findings.iter().any(|f| f.status == Status::Regression) {
        Verdict::Regression
    } else {
        Verdict::Pass
    };
    if findings.iter().any(|f| f.noise == Some(Noise::Unknown)) {
        notes.push(
            "single runs on both sides: the noise is unknown, so a difference past the limit counts; \
             --repeat 3 (and a baseline kept with --repeat 3) judges it against the noise"
                .into(),
        );
    }
    let summary = summary(verdict, &findings, &not_comparable);
    Check {
        schema: CHECK_SCHEMA,
        verdict,
        baseline: labels.0,
        candidate: labels.1,
        rules: rules.clone(),
        findings,
        not_comparable,
        notes,
        summary,
    }
}

fn finding(row: &crate::compare::Row, metric: Metric, rules: &Rules) -> Option<Finding> {
    let metric_row = row.metrics.iter().find(|m| m.metric == metric)?;
    let value = |k: usize| metric_row.values.get(k).cloned().flatten().map(|m: Measure| m.value);
    let limit = rules.limit(metric);
    let (status, why, pct, noise, noise_pct) = match metric_row.vs_baseline.get(1).cloned().flatten() {
        None => (Status::NotMeasured, "not measured on both sides".to_string(), None, None, None),
        Some(d) => {
            let (status, judged) = judged(&d, limit);
            (status, format!("{:+.1}%, {judged}", d.pct), Some(d.pct), Some(d.noise), d.noise_pct)
        }
    };
    Some(Finding {
        point: row.name.clone(),
        metric,
        baseline: value(0),
        candidate: value(1),
        pct,
        noise,
        noise_pct,
        max_regression_pct: limit,
        status,
        why,
    })
}

/// A difference's status under `limit` (`None`: not gated), and the words that say why.
fn judged(d: &crate::compare::Difference, limit: Option<f64>) -> (Status, String) {
    let noise_words = match (d.noise, d.noise_pct) {
        (Noise::Beyond, Some(n)) => format!("beyond noise ({n:.1}%)"),
        (Noise::Within, Some(n)) => format!("within noise ({n:.1}%)"),
        (Noise::Beyond, None) => "beyond noise".into(),
        (Noise::Within, None) => "within noise".into(),
        (Noise::Unknown, _) => "noise unknown".into(),
    };
    let Some(limit) = limit else {
        let outcome = match d.outcome {
            Outcome::Worse => "worse",
            Outcome::Better => "better",
            Outcome::Equal => "equal",
        };
        return (
            Status::Shown,
            format!("{outcome}, {noise_words}; not gated (give it a limit in --max-regression)"),
        );
    };
    let past = d.pct.abs() > limit;
    let clear = d.noise_pct.is_none_or(|n| d.pct.abs() > NOISE_MARGIN * n);
    let counts = d.noise != Noise::Within && past && clear;
    match d.outcome {
        Outcome::Worse if counts => {
            (Status::Regression, format!("worse, {noise_words}, past the {limit}% allowed"))
        }
        Outcome::Worse if !past => (Status::Held, format!("worse, within the {limit}% allowed")),
        Outcome::Worse if d.noise == Noise::Beyond => {
            (Status::Held, format!("worse, {noise_words} but not by twice the noise"))
        }
        Outcome::Worse => (Status::Held, format!("worse, {noise_words}")),
        Outcome::Better if counts => (Status::Improvement, format!("better, {noise_words}, past {limit}%")),
        Outcome::Better => (Status::Held, format!("better, {noise_words}")),
        Outcome::Equal => (Status::Held, "equal".to_string()),
    }
}

/// Kernel, target kind and engine, where both runs say them and they differ.
fn environment_differences(
    comparison: &Comparison,
    base: &serde_json::Value,
    cand: &serde_json::Value,
) -> Vec<(Difference, String)> {
    let mut out = Vec::new();
    let kernel = |env: &serde_json::Value| env.pointer("/host/kernel_release")?.as_str().map(str::to_string);
    if let (Some(a), Some(b)) = (kernel(base), kernel(cand)) {
        if a != b {
            out.push((Difference::Kernel, format!("the kernel differs: {a} vs {b}")));
        }
    }
    let (a, b) = (target_kinds(base), target_kinds(cand));
    if !a.is_empty() && !b.is_empty() && a != b {
        out.push((Difference::Model, format!("the target differs: {} vs {}", a.join(" + "), b.join(" + "))));
    }
    let engines = |k: usize| {
        crate::compare::distinct(
            comparison.rows.iter().filter_map(|r| r.members.get(k)?.as_ref().map(|m| m.engine.clone())),
        )
    };
    let (a, b) = (engines(0), engines(1));
    if a != b {
        out.push((Difference::Engine, format!("the engine differs: {} vs {}", a.join(" + "), b.join(" + "))));
    }
    out
}

/// Each target's kind: its device's model, else the device's driver ("virtio_blk", "loop"),
/// else the filesystem a file lives on ("tmpfs", "fuse").
fn target_kinds(env: &serde_json::Value) -> Vec<String> {
    let targets = env.get("targets").and_then(|t| t.as_array()).cloned().unwrap_or_default();
    targets
        .iter()
        .filter_map(|t| {
            let text = |pointer: &str| t.pointer(pointer).and_then(|v| v.as_str()).map(str::to_string);
            text("/device/model").or_else(|| text("/device/driver")).or_else(|| text("/filesystem"))
        })
        .collect()
}

fn summary(verdict: Verdict, findings: &[Finding], not_comparable: &[String]) -> String {
    match verdict {
        Verdict::NotComparable => format!("NOT COMPARABLE: {}", not_comparable.join("; ")),
        Verdict::Regression => {
            let regressions: Vec<String> = findings
                .iter()
                .filter(|f| f.status == Status::Regression)
                .map(|f| format!("{} at '{}' {}", f.metric.label(), f.point, f.why))
                .collect();
            format!("REGRESSION: {}", regressions.join("; "))
        }
        Verdict::Pass => {
            let points = crate::compare::distinct(findings.iter().map(|f| f.point.as_str())).len();
            let judged = findings
                .iter()
                .filter(|f| f.max_regression_pct.is_some() && f.status != Status::NotMeasured)
                .count();
            format!(
                "PASS: {judged} gated figure{} over {points} point{}, none worse past its limit and beyond the noise",
                if judged == 1 { "" } else { "s" },
                if points == 1 { "" } else { "s" }
            )
        }
    }
}
