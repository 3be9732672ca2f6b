//! The observer that keeps the metric families up to date: it hears each closed interval of a
//! local job per group and target (ramp ones too, so a long ramp is not a blank), and a fleet
//! job's per-host progress on the coordinator.

use std::sync::Arc;

use iolab_runner::{IntervalDetail, Observer, Phase, ProgressUpdate};
use iolab_spec::JobSpec;
use iolab_stats::OpStats;

use crate::families::{
    Families, GroupInfoLabels, GroupLabels, HostLabels, IoLabels, JobLabels, LatencyLabels,
};

/// The quantiles exported, as label values and as the histogram's percentiles.
const QUANTILES: [(&str, f64); 4] = [("0.5", 50.0), ("0.99", 99.0), ("0.999", 99.9), ("0.9999", 99.99)];

/// Keeps the families of a `Metrics` up to date with the jobs it hears of. Cheap to clone: each
/// clone follows its own jobs into the same families.
#[derive(Debug, Clone)]
pub struct MetricsObserver {
    families: Arc<Families>,
    job: Option<Running>,
}

/// The running job's names, and the errors already counted.
#[derive(Debug, Clone)]
struct Running {
    name: String,
    /// Per group: its name and its targets' names.
    groups: Vec<(String, Vec<String>)>,
    errors_counted: Vec<u64>,
}

impl MetricsObserver {
    pub(crate) fn new(families: Arc<Families>) -> Self {
        MetricsObserver { families, job: None }
    }

    fn record(&self, labels: IoLabels, op: &OpStats, seconds: f64) {
        let rate = |n: u64| if seconds > 0.0 { n as f64 / seconds } else { 0.0 };
        self.families.ios.get_or_create(&labels).inc_by(op.ios());
        self.families.bytes.get_or_create(&labels).inc_by(op.bytes());
        self.families.iops.get_or_create(&labels).set(rate(op.ios()));
        self.families.bytes_per_second.get_or_create(&labels).set(rate(op.bytes()));
        for (quantile, percentile) in QUANTILES {
            let labels = LatencyLabels {
                iolab_job: labels.iolab_job.clone(),
                group: labels.group.clone(),
                target: labels.target.clone(),
                op: labels.op.clone(),
                quantile: quantile.to_string(),
            };
            // An interval without I/Os of this direction has no latency: no figure, rather
            // than the last one standing as if it were current.
            if op.ios() == 0 {
                self.families.latency.remove(&labels);
            } else {
                self.families.latency.get_or_create(&labels).set(op.percentile_ns(percentile) as f64 / 1e9);
            }
        }
    }
}

impl Observer for MetricsObserver {
    fn progress(&mut self, update: &ProgressUpdate<'_>) {
        let job = JobLabels { iolab_job: update.job.to_string() };
        self.families.measuring.get_or_create(&job).set(i64::from(update.phase == Phase::Measure));
        for host in update.hosts {
            let labels = HostLabels { iolab_job: update.job.to_string(), host: host.host.clone() };
            self.families.host_iops.get_or_create(&labels).set(host.iops);
            self.families.host_failed.get_or_create(&labels).set(i64::from(host.failed));
        }
    }

    fn note(&mut self, _message: &str) {}

    fn starting(&mut self, job: &JobSpec, targets: &[Vec<String>]) {
        self.families.clear_job();
        let groups: Vec<(String, Vec<String>)> = job
            .groups
            .iter()
            .enumerate()
            .map(|(g, group)| {
                // A fleet job's targets are opened by its hosts: named as the job names them.
                let opened = targets.get(g).filter(|paths| !paths.is_empty()).cloned();
                let named = || group.target.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>();
                let names = opened.unwrap_or_else(named);
                let names = if names.is_empty() { vec!["scratch".to_string()] } else { names };
                (group.name.clone(), names)
            })
            .collect();
        for (group, (name, _)) in job.groups.iter().zip(&groups) {
            let access = &group.access;
            let bs = match access.bs_split.as_slice() {
                [one] => one.bs.to_string(),
                mix => mix.iter().map(|w| format!("{}/{}", w.bs, w.weight)).collect::<Vec<_>>().join(","),
            };
            let info = GroupInfoLabels {
                iolab_job: job.name.clone(),
                group: name.clone(),
                engine: group.engine.name().to_string(),
                qd: group.qd.to_string(),
                workers: group.workers.to_string(),
                bs,
                read_pct: access.read_pct.to_string(),
                random_pct: access.random_pct.to_string(),
            };
            self.families.group_info.get_or_create(&info).set(1);
            // At 0 from the start, so an alert on its rate sees the series before the first error.
            self.families
                .errors
                .get_or_create(&GroupLabels { iolab_job: job.name.clone(), group: name.clone() })
                .inc_by(0);
        }
        self.families.measuring.get_or_create(&JobLabels { iolab_job: job.name.clone() }).set(0);
        let errors_counted = vec![0; groups.len()];
        self.job = Some(Running { name: job.name.clone(), groups, errors_counted });
    }

    fn interval_detail(&mut self, detail: &IntervalDetail<'_>) {
        let Some(mut job) = self.job.take() else { return };
        let seconds = detail.duration.as_secs_f64();
        let measuring = i64::from(detail.phase == Phase::Measure);
        self.families.measuring.get_or_create(&JobLabels { iolab_job: job.name.clone() }).set(measuring);
        for (g, per_target) in detail.stats.iter().enumerate() {
            let (group, targets) =
                job.groups.get(g).cloned().unwrap_or_else(|| (format!("group{g}"), Vec::new()));
            for (t, stats) in per_target.iter().enumerate() {
                let target = targets.get(t).cloned().unwrap_or_else(|| format!("target{t}"));
                for (op, op_stats) in [("read", &stats.read), ("write", &stats.write)] {
                    let labels = IoLabels {
                        iolab_job: job.name.clone(),
                        group: group.clone(),
                        target: target.clone(),
                        op: op.to_string(),
                    };
                    self.record(labels, op_stats, seconds);
                }
            }
            let errors = detail.errors.get(g).copied().unwrap_or(0);
            if let Some(counted) = job.errors_counted.get_mut(g) {
                let labels = GroupLabels { iolab_job: job.name.clone(), group };
                self.families.errors.get_or_create(&labels).inc_by(errors.saturating_sub(*counted));
                *counted = errors.max(*counted);
            }
        }
        self.job = Some(job);
    }
}

#[cfg(test)]
mod tests {
    use iolab_spec::{resolve, Nanos, Options};
    use iolab_stats::IntervalStats;

    use super::*;
    use crate::{Format, Metrics, RunLabels};

    fn metrics() -> Metrics {
        Metrics::with_run(RunLabels { command: "sweep".into(), host: "h".into(), version: "0".into() })
    }

    fn job(name: &str) -> JobSpec {
        let plan = resolve(None, &Options::default()).expect("the defaults resolve");
        JobSpec { name: name.to_string(), ..plan.jobs[0].clone() }
    }

    fn reads(n: u64, latency_ns: u64) -> Vec<Vec<IntervalStats>> {
        let mut stats = IntervalStats::default();
        (0..n).for_each(|_| stats.read.record(latency_ns, 4096));
        vec![vec![stats]]
    }

    fn tell(observer: &mut MetricsObserver, stats: &[Vec<IntervalStats>], errors: u64) {
        let detail = IntervalDetail {
            phase: Phase::Measure,
            duration: Nanos(1_000_000_000),
            stats,
            errors: &[errors],
        };
        observer.interval_detail(&detail);
    }

    #[test]
    fn a_new_job_drops_the_last_jobs_interval_figures_but_not_its_counters() {
        let metrics = metrics();
        let mut observer = metrics.observer();
        observer.starting(&job("qd 1"), &[vec!["/dev/x".into()]]);
        tell(&mut observer, &reads(10, 50_000), 0);
        tell(&mut observer, &reads(5, 50_000), 2);
        tell(&mut observer, &reads(5, 50_000), 3);
        let text = metrics.render(Format::Prometheus);
        let line = |prefix: &str| text.lines().find(|l| l.starts_with(prefix)).map(str::to_string);
        let ios = r#"iolab_ios_total{iolab_job="qd 1",group="main",target="/dev/x",op="read"}"#;
        assert_eq!(line(ios).as_deref(), Some(format!("{ios} 20").as_str()));
        let errors = r#"iolab_errors_total{iolab_job="qd 1",group="main"}"#;
        assert_eq!(line(errors).as_deref(), Some(format!("{errors} 3").as_str()), "errors counted once each");
        assert!(line(r#"iolab_interval_latency_seconds{iolab_job="qd 1""#)
            .is_some_and(|l| l.ends_with(" 0.00005")));

        observer.starting(&job("qd 8"), &[vec!["/dev/x".into()]]);
        let text = metrics.render(Format::Prometheus);
        assert!(text.contains(ios), "counters stay");
        assert!(!text.contains(r#"iolab_interval_iops{iolab_job="qd 1""#), "{text}");
        assert!(!text.contains(r#"iolab_group_info{iolab_job="qd 1""#), "{text}");
        assert!(
            text.contains(r#"iolab_group_info{iolab_job="qd 8",group="main",engine="uring",qd="32""#),
            "{text}"
        );
    }

    #[test]
    fn an_interval_without_reads_has_no_read_latency_rather_than_an_old_one() {
        let metrics = metrics();
        let mut observer = metrics.observer();
        observer.starting(&job("j"), &[Vec::new()]);
        tell(&mut observer, &reads(3, 1_000), 0);
        assert!(metrics.render(Format::OpenMetrics).contains("iolab_interval_latency_seconds{"));
        tell(&mut observer, &reads(0, 1_000), 0);
        let text = metrics.render(Format::OpenMetrics);
        assert!(!text.contains("iolab_interval_latency_seconds{"), "{text}");
        // A job whose targets are not known here (a fleet's) is labelled with the job's own.
        assert!(text.contains(r#"target="scratch""#), "{text}");
    }
}
