//! The metric families iolab exposes (their names, units and labels are documented in
//! docs/metrics.md) and their text. The families are prometheus-client's, registered in one
//! registry: the observer sets them, the endpoint encodes them. prometheus-client writes
//! OpenMetrics 1.0 text; `prometheus_text` turns that into the Prometheus text format 0.0.4 for
//! scrapers that do not ask for OpenMetrics.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

/// An I/O direction of a group's target in a job.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IoLabels {
    /// iolab's job (a sweep's point); not `job`, which Prometheus gives each scrape target.
    pub iolab_job: String,
    pub group: String,
    pub target: String,
    /// "read" or "write".
    pub op: String,
}

/// A latency quantile of an I/O direction of a target.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LatencyLabels {
    /// iolab's job (a sweep's point); not `job`, which Prometheus gives each scrape target.
    pub iolab_job: String,
    pub group: String,
    pub target: String,
    pub op: String,
    /// "0.5", "0.99", "0.999" or "0.9999".
    pub quantile: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupLabels {
    /// iolab's job (a sweep's point); not `job`, which Prometheus gives each scrape target.
    pub iolab_job: String,
    pub group: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobLabels {
    /// iolab's job (a sweep's point); not `job`, which Prometheus gives each scrape target.
    pub iolab_job: String,
}

/// What a group of the running job does: a sweep's point is told by these.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupInfoLabels {
    /// iolab's job (a sweep's point); not `job`, which Prometheus gives each scrape target.
    pub iolab_job: String,
    pub group: String,
    pub engine: String,
    pub qd: String,
    pub workers: String,
    /// The block size, or the split ("4k/70,64k/30").
    pub bs: String,
    pub read_pct: String,
    pub random_pct: String,
}

/// A host of a fleet job (on the coordinator).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HostLabels {
    /// iolab's job (a sweep's point); not `job`, which Prometheus gives each scrape target.
    pub iolab_job: String,
    pub host: String,
}

/// The process: which command, on which host, which iolab.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunLabels {
    pub command: String,
    pub host: String,
    pub version: String,
}

type GaugeF64 = Gauge<f64, AtomicU64>;

/// Every family, as the observer sets them (each is a handle on what the registry encodes).
#[derive(Debug, Default, Clone)]
pub struct Families {
    pub ios: Family<IoLabels, Counter>,
    pub bytes: Family<IoLabels, Counter>,
    pub errors: Family<GroupLabels, Counter>,
    pub iops: Family<IoLabels, GaugeF64>,
    pub bytes_per_second: Family<IoLabels, GaugeF64>,
    pub latency: Family<LatencyLabels, GaugeF64>,
    pub measuring: Family<JobLabels, Gauge>,
    pub group_info: Family<GroupInfoLabels, Gauge>,
    pub host_iops: Family<HostLabels, GaugeF64>,
    pub host_failed: Family<HostLabels, Gauge>,
}

impl Families {
    /// The families, and a registry (prefix `iolab_`) that encodes them and the run's info.
    pub fn registered(run: RunLabels) -> (Families, Registry) {
        let families = Families::default();
        let mut registry = Registry::with_prefix("iolab");
        registry.register("run", "The iolab process serving these figures", Info::new(run));
        registry.register(
            "ios",
            "I/Os completed (ramp included), by job, group, target and direction",
            families.ios.clone(),
        );
        registry.register("bytes", "Bytes transferred by the completed I/Os", families.bytes.clone());
        registry.register(
            "errors",
            "I/Os that failed or transferred fewer bytes than asked, by job and group",
            families.errors.clone(),
        );
        registry.register(
            "interval_iops",
            "I/Os per second over the last closed interval (ramp or measured) of the running job",
            families.iops.clone(),
        );
        registry.register(
            "interval_bytes_per_second",
            "Bytes per second over the last closed interval of the running job",
            families.bytes_per_second.clone(),
        );
        registry.register_with_unit(
            "interval_latency",
            "Service-time latency quantiles over the last closed interval of the running job (exact to 3 significant digits)",
            Unit::Seconds,
            families.latency.clone(),
        );
        registry.register(
            "measuring",
            "1 while the job's measured window runs, 0 during its ramp",
            families.measuring.clone(),
        );
        registry.register(
            "group_info",
            "The running job's groups: engine, queue depth, workers, block size and mix (a sweep point's values)",
            families.group_info.clone(),
        );
        registry.register(
            "host_interval_iops",
            "A fleet job's IOPS per host over its last second (on the coordinator)",
            families.host_iops.clone(),
        );
        registry.register(
            "host_failed",
            "1 when a host of a fleet job dropped out of it (on the coordinator)",
            families.host_failed.clone(),
        );
        (families, registry)
    }

    /// Forgets the figures of the job before: a new one's last interval is not the old one's.
    /// Counters stay, as counters do, so rates over a sweep's points keep working.
    pub fn clear_job(&self) {
        self.iops.clear();
        self.bytes_per_second.clear();
        self.latency.clear();
        self.measuring.clear();
        self.group_info.clear();
        self.host_iops.clear();
        self.host_failed.clear();
    }
}

/// The exposition formats a scraper may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text, ending in `# EOF`.
    OpenMetrics,
    /// The Prometheus text format 0.0.4.
    Prometheus,
}

impl Format {
    /// What the scraper's `Accept` header asks for: OpenMetrics when it names it (with a
    /// weight above 0), else the Prometheus text format, which every scraper reads.
    pub fn from_accept(accept: Option<&str>) -> Format {
        let open = accept.unwrap_or_default().split(',').any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default();
            let refused =
                parts.any(|p| p.strip_prefix("q=").and_then(|q| q.parse::<f64>().ok()) == Some(0.0));
            media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
        });
        if open {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// The registry's figures in `format`.
pub fn render(registry: &Registry, format: Format) -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)?;
    Ok(match format {
        Format::OpenMetrics => text,
        Format::Prometheus => prometheus_text(&text),
    })
}

/// OpenMetrics text as the Prometheus text format 0.0.4. The samples and their escaping are the
/// same; the metadata differ: 0.0.4 has no `# UNIT` and no `# EOF`, names a counter family by
/// its `_total` sample, and has no info type (an info metric is a gauge of value 1 there).
fn prometheus_text(open_metrics: &str) -> String {
    // A family's HELP comes before its TYPE: find every family's type first.
    let mut renamed = std::collections::HashMap::new();
    for line in open_metrics.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            match rest.split_once(' ') {
                Some((name, "counter")) => renamed.insert(name, (format!("{name}_total"), "counter")),
                Some((name, "info")) => renamed.insert(name, (format!("{name}_info"), "gauge")),
                _ => None,
            };
        }
    }
    let mut text = String::with_capacity(open_metrics.len());
    for line in open_metrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "].into_iter().find_map(|tag| Some((tag, line.strip_prefix(tag)?)));
        match meta {
            Some((tag, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                match renamed.get(name) {
                    Some((new_name, new_type)) if tag == "# TYPE " => {
                        text.push_str(&format!("{tag}{new_name} {new_type}"));
                    }
                    Some((new_name, _)) => text.push_str(&format!("{tag}{new_name} {tail}")),
                    None => text.push_str(line),
                }
            }
            None => text.push_str(line),
        }
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunLabels {
        RunLabels { command: "run".into(), host: "lab1".into(), version: "0.1.0".into() }
    }

    fn io(group: &str) -> IoLabels {
        IoLabels { iolab_job: "j".into(), group: group.into(), target: "/dev/x".into(), op: "read".into() }
    }

    #[test]
    fn a_group_name_with_quotes_backslashes_and_newlines_is_escaped_in_both_formats() {
        let (families, registry) = Families::registered(run());
        families.ios.get_or_create(&io("a \"quoted\"\\ name\nnext line")).inc_by(3);
        for format in [Format::OpenMetrics, Format::Prometheus] {
            let text = render(&registry, format).expect("encodes");
            let sample = text.lines().find(|l| l.starts_with("iolab_ios_total{")).expect("the sample");
            assert!(sample.contains(r#"group="a \"quoted\"\\ name\nnext line""#), "{format:?}: {sample}");
            assert!(sample.ends_with(" 3"), "{sample}");
        }
    }

    #[test]
    fn openmetrics_ends_in_eof_and_prometheus_text_has_no_openmetrics_metadata() {
        let (families, registry) = Families::registered(run());
        families.ios.get_or_create(&io("g")).inc();
        let latency = LatencyLabels {
            iolab_job: "j".into(),
            group: "g".into(),
            target: "t".into(),
            op: "read".into(),
            quantile: "0.99".into(),
        };
        families.latency.get_or_create(&latency).set(0.000125);
        let open = render(&registry, Format::OpenMetrics).expect("encodes");
        assert!(open.ends_with("# EOF\n"));
        assert!(open.contains("# TYPE iolab_ios counter\n"));
        assert!(open.contains("# UNIT iolab_interval_latency_seconds seconds\n"));
        assert!(open.contains("# TYPE iolab_run info\n"));
        let text = render(&registry, Format::Prometheus).expect("encodes");
        assert!(!text.contains("# EOF") && !text.contains("# UNIT"));
        assert!(text.contains("# TYPE iolab_ios_total counter\n"), "{text}");
        assert!(text.contains("# HELP iolab_ios_total I/Os completed"), "{text}");
        assert!(text.contains("# TYPE iolab_run_info gauge\n"), "{text}");
        assert!(
            text.contains("iolab_run_info{command=\"run\",host=\"lab1\",version=\"0.1.0\"} 1\n"),
            "{text}"
        );
    }

    #[test]
    fn openmetrics_is_served_only_to_scrapers_that_ask_for_it() {
        let prometheus =
            "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert_eq!(Format::from_accept(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::from_accept(Some("text/plain")), Format::Prometheus);
        assert_eq!(Format::from_accept(None), Format::Prometheus);
        assert_eq!(Format::from_accept(Some("application/openmetrics-text; q=0")), Format::Prometheus);
    }
}
