//! Which span of an I/O's time each side's latency covers, so an iolab run and an imported fio
//! run compare like with like. iolab's latency runs from the hand-over (just before the
//! submitting call) to the reap: fio's `clat` span, with the call. fio's import keeps `clat`,
//! or `lat` (submission included) where fio gave only that distribution. `mean lat` is the
//! whole cycle on both sides: fio's own `lat`, and iolab's latency plus its gap.

use iolab_store::Point;
use serde_json::Value;

/// One stored point's mean `lat` in ns: iolab's mean cycle (latency + gap), fio's `lat_ns`
/// mean over reads and writes; `None` where the point has no such figure.
pub fn lat_mean_ns(point: &Point) -> Option<f64> {
    match point.source.as_str() {
        "iolab" => {
            let slots = point.result.get("slots")?;
            (slots.get("ios")?.as_u64()? > 0).then(|| slots.get("mean_cycle_ns")?.as_f64())?
        }
        "fio" => pooled_mean(&point.result, "lat_ns"),
        _ => None,
    }
}

/// What the latency figures of `point` cover, in a few words.
pub fn latency_span(point: &Point) -> &'static str {
    match point.source.as_str() {
        "fio" if fio_gave_lat_only(&point.result) => "fio's lat (its submission included)",
        "fio" => "fio's clat (submission to completion)",
        _ => "iolab's latency (hand-over to reap: fio's clat span)",
    }
}

/// The note a comparison of an fio import with iolab gets: what each side's latency rows
/// compare, and the row that compares the same span on both.
pub fn note<'a>(sides: impl Iterator<Item = (&'a str, &'a [Point])>) -> Option<String> {
    let mut spans: Vec<String> = Vec::new();
    let mut sources: Vec<&str> = Vec::new();
    for (label, points) in sides {
        let mut kinds: Vec<&str> = points.iter().map(latency_span).collect();
        kinds.dedup();
        sources.extend(points.iter().map(|p| p.source.as_str()));
        spans.push(format!("{label}: {}", kinds.join(" and ")));
    }
    sources.sort_unstable();
    sources.dedup();
    (sources.len() > 1).then(|| {
        format!(
            "latency rows compare each side's latency as it measured it ({}); `mean lat` compares an I/O's whole cycle on both sides (fio's lat; iolab's latency plus its gap, where fio's slat and free-list time fall)",
            spans.join("; ")
        )
    })
}

/// fio gave a direction's distribution as lat only (`lat_percentiles=1`): its import keeps lat.
fn fio_gave_lat_only(job: &Value) -> bool {
    let has = |ddir: &str, name: &str| {
        job.pointer(&format!("/{ddir}/{name}"))
            .is_some_and(|s| s.get("percentile").is_some() || s.get("bins").is_some())
    };
    ["read", "write"].iter().any(|d| !has(d, "clat_ns") && has(d, "lat_ns"))
}

/// The mean of fio's `name` latency over reads and writes, weighted by their I/Os.
fn pooled_mean(job: &Value, name: &str) -> Option<f64> {
    let (mut ios, mut total) = (0u64, 0.0);
    for ddir in ["read", "write"] {
        let n = job.pointer(&format!("/{ddir}/total_ios")).and_then(Value::as_u64).unwrap_or(0);
        let mean = job.pointer(&format!("/{ddir}/{name}/mean")).and_then(Value::as_f64);
        if let (true, Some(mean)) = (n > 0, mean) {
            ios += n;
            total += mean * n as f64;
        }
    }
    (ios > 0).then(|| total / ios as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_store::PointSummary;

    fn nothing() -> iolab_stats::result::OpSummary {
        iolab_stats::result::OpSummary { ios: 0, bytes: 0, iops: 0.0, mb_s: 0.0, mib_s: 0.0, latency: None }
    }

    fn point(source: &str, result: Value) -> Point {
        Point {
            seq: 0,
            name: "x".into(),
            source: source.into(),
            completed_at_unix_s: 0,
            spec: Value::Null,
            summary: PointSummary {
                engine: String::new(),
                access: String::new(),
                qd: 1,
                workers: 1,
                targets: Vec::new(),
                measured_s: 1.0,
                read: nothing(),
                write: nothing(),
                total: nothing(),
                cpu_us_per_io: None,
                stop_reason: "runtime".into(),
            },
            series: Vec::new(),
            verdict: None,
            histograms: None,
            result,
        }
    }

    #[test]
    fn lat_is_iolabs_cycle_and_fios_pooled_lat() {
        let iolab = point("iolab", serde_json::json!({"slots": {"ios": 10, "mean_cycle_ns": 84_700.0}}));
        assert_eq!(lat_mean_ns(&iolab), Some(84_700.0));
        let fio = point(
            "fio",
            serde_json::json!({
                "read": {"total_ios": 300, "lat_ns": {"mean": 80_000.0}, "clat_ns": {"percentile": {}}},
                "write": {"total_ios": 100, "lat_ns": {"mean": 120_000.0}, "clat_ns": {"percentile": {}}},
            }),
        );
        assert_eq!(lat_mean_ns(&fio), Some(90_000.0));
        assert_eq!(latency_span(&fio), "fio's clat (submission to completion)");
        let said =
            note([("#1", std::slice::from_ref(&iolab)), ("#2", std::slice::from_ref(&fio))].into_iter())
                .expect("a note for mixed sources");
        assert!(
            said.contains("#1: iolab's latency (hand-over to reap: fio's clat span); #2: fio's clat"),
            "{said}"
        );
        assert_eq!(note([("#1", std::slice::from_ref(&iolab))].into_iter()), None);
    }

    #[test]
    fn an_import_of_lat_percentiles_says_its_latency_is_lat() {
        let fio = point(
            "fio",
            serde_json::json!({"read": {"total_ios": 5, "lat_ns": {"mean": 1.0, "percentile": {}}}}),
        );
        assert_eq!(latency_span(&fio), "fio's lat (its submission included)");
    }
}
