//! fio's JSON as it changed from 2.x to today, read into today's shape, so the rest of the
//! import reads one form. Each generation is told by the fields themselves, never by the
//! version string (builds from git print other strings):
//!
//! - fio 2.x: latencies as `slat`, `clat`, `lat` in microseconds (percentile values and json+
//!   bin keys too), `io_bytes` in KiB, `bw` in KiB/s, no `bw_bytes`, no `N` per latency, no
//!   `job_runtime`; the earliest json+ keyed its bins by bucket index beside
//!   `FIO_IO_U_PLAT_BITS` and `FIO_IO_U_PLAT_VAL`, later ones by latency.
//! - fio 3.0 to about 3.4: `slat_ns`, `clat_ns`, `lat_ns` in nanoseconds, `io_bytes` in bytes
//!   beside `io_kbytes`, but no `bw_bytes` yet (and no `N` or `job_runtime` until later 3.x).
//! - today's: all of the above in bytes and nanoseconds.
//!
//! What an older file lacks is derived from what it has (bandwidth from io_bytes and runtime,
//! `N` from total_ios, the job's runtime from its directions'), and each derivation is said
//! once in the run's notes. The job's own object is stored unchanged beside the point.

use serde_json::{Map, Value};

use crate::Notes;

const DIRECTIONS: [&str; 3] = ["read", "write", "trim"];
const LATENCIES: [(&str, &str); 3] = [("slat", "slat_ns"), ("clat", "clat_ns"), ("lat", "lat_ns")];

/// `job` in today's shape; what had to be converted or derived goes to `notes`.
pub(crate) fn normalize(job: &Value, notes: &mut Notes) -> Value {
    let mut job = job.clone();
    let Some(map) = job.as_object_mut() else { return job };
    let mut longest_runtime = None;
    for ddir in DIRECTIONS {
        let Some(dir) = map.get_mut(ddir).and_then(Value::as_object_mut) else { continue };
        direction(ddir, dir, notes);
        let runtime = dir.get("runtime").and_then(Value::as_u64);
        longest_runtime = longest_runtime.max(runtime);
    }
    if !map.contains_key("job_runtime") {
        if let Some(runtime) = longest_runtime {
            map.insert("job_runtime".into(), Value::from(runtime));
            notes.push(
                "job_runtime (fio 3.x from about 3.15) is missing: CPU per I/O uses the longest direction's \
                 runtime instead"
                    .into(),
            );
        }
    }
    job
}

fn direction(ddir: &str, dir: &mut Map<String, Value>, notes: &mut Notes) {
    let microseconds = !LATENCIES.iter().any(|(_, ns)| dir.contains_key(*ns))
        && LATENCIES.iter().any(|(us, _)| dir.contains_key(*us));
    if microseconds {
        for (us, ns) in LATENCIES {
            if let Some(section) = dir.get(us) {
                let converted = to_nanoseconds(section, notes);
                dir.insert(ns.to_string(), converted);
            }
        }
        notes.push(
            "fio 2.x output: its latencies (slat, clat, lat, their percentiles and bins) are in microseconds \
             and are converted to nanoseconds (x1000)"
                .into(),
        );
        // fio 2.x printed io_bytes in KiB; 3.x prints bytes and adds io_kbytes.
        if !dir.contains_key("io_kbytes") {
            if let Some(kib) = dir.get("io_bytes").and_then(Value::as_u64) {
                dir.insert("io_bytes".into(), Value::from(kib.saturating_mul(1024)));
                notes.push(
                    "fio 2.x output: io_bytes is in KiB there and is converted to bytes (x1024)".into(),
                );
            }
        }
    }
    let runtime_ms = dir.get("runtime").and_then(Value::as_u64);
    // Only fio 2.x lacks total_ios (before about 2.1); a later file without it is damaged.
    if microseconds && !dir.contains_key("total_ios") {
        if let (Some(iops), Some(ms)) = (dir.get("iops").and_then(Value::as_f64), runtime_ms) {
            dir.insert("total_ios".into(), Value::from((iops * ms as f64 / 1000.0).round().max(0.0) as u64));
            notes.push(format!(
                "{ddir}.total_ios (fio 2.x from about 2.1) is missing: derived from iops x runtime"
            ));
        }
    }
    if !dir.contains_key("iops") {
        if let (Some(ios), Some(ms)) = (dir.get("total_ios").and_then(Value::as_u64), runtime_ms) {
            let iops = if ms > 0 { ios as f64 * 1000.0 / ms as f64 } else { 0.0 };
            dir.insert("iops".into(), Value::from(iops));
            notes.push(format!("{ddir}.iops is missing: derived from total_ios / runtime"));
        }
    }
    if !dir.contains_key("bw_bytes") {
        if let (Some(bytes), Some(ms)) = (dir.get("io_bytes").and_then(Value::as_u64), runtime_ms) {
            // fio's own formula, without its rounding down to whole bytes per second.
            let bw = if ms > 0 { bytes as f64 * 1000.0 / ms as f64 } else { 0.0 };
            dir.insert("bw_bytes".into(), Value::from(bw));
            notes.push(
                "bw_bytes (fio 3.x from about 3.5) is missing: bandwidth is derived from io_bytes / runtime \
                 (fio's bw, in KiB/s, is rounded down)"
                    .into(),
            );
        }
    }
    // fio added N (the latency's sample count) in 3.x; before, every completed I/O is one.
    let ios = dir.get("total_ios").cloned();
    for (_, ns) in LATENCIES {
        let Some(section) = dir.get_mut(ns).and_then(Value::as_object_mut) else { continue };
        if !section.contains_key("N") {
            if let Some(ios) = &ios {
                section.insert("N".into(), ios.clone());
                if ns == "clat_ns" && ios.as_u64().is_some_and(|n| n > 0) {
                    notes.push(
                        "the latencies' N (fio 3.x from about 3.12) is missing: total_ios is taken".into(),
                    );
                }
            }
        }
    }
}

/// A 2.x latency object in microseconds as a 3.x one in nanoseconds.
fn to_nanoseconds(section: &Value, notes: &mut Notes) -> Value {
    let Some(map) = section.as_object() else { return section.clone() };
    let mut out = Map::new();
    for (key, value) in map {
        let converted = match key.as_str() {
            "min" | "max" => times_1000(value),
            "mean" | "stddev" => value.as_f64().map_or_else(|| value.clone(), |f| Value::from(f * 1000.0)),
            "percentile" => value.as_object().map_or_else(
                || value.clone(),
                |list| Value::Object(list.iter().map(|(p, v)| (p.clone(), times_1000(v))).collect()),
            ),
            "bins" => value.as_object().map_or_else(|| value.clone(), |bins| bins_to_ns(bins, notes)),
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
    }
    Value::Object(out)
}

/// A whole number of microseconds as nanoseconds; anything else is left for the checks to
/// refuse with the field's name.
fn times_1000(value: &Value) -> Value {
    match value.as_u64() {
        Some(us) => Value::from(us.saturating_mul(1000)),
        None => value.clone(),
    }
}

/// fio 2.x json+ bins, keyed by latency in µs or (the earliest) by bucket index, as today's
/// bins keyed by latency in ns.
fn bins_to_ns(bins: &Map<String, Value>, notes: &mut Notes) -> Value {
    let plat = |key: &str| bins.get(key).and_then(Value::as_u64);
    let by_index = plat("FIO_IO_U_PLAT_BITS").zip(plat("FIO_IO_U_PLAT_VAL"));
    if by_index.is_some() {
        notes.push(
            "fio 2.x json+ bins are keyed by bucket index: each bucket is read at its middle latency".into(),
        );
    }
    let mut out = Map::new();
    for (key, count) in bins {
        if key.starts_with("FIO_") {
            continue;
        }
        let Ok(number) = key.parse::<u64>() else {
            // Left as it is: the bins check names it.
            out.insert(key.clone(), count.clone());
            continue;
        };
        let us = match by_index {
            Some((bits, val)) => index_to_us(number, bits, val),
            None => Some(number),
        };
        match us {
            Some(us) => out.insert(us.saturating_mul(1000).to_string(), count.clone()),
            None => out.insert(key.clone(), count.clone()),
        };
    }
    Value::Object(out)
}

/// The middle latency (µs) of bucket `index` of fio's histogram of `bits` index bits and
/// `val` = 2^bits buckets per group: the first two groups hold one value each; group g after
/// them spans 2^(g+bits) to twice that in `val` steps of 2^g.
fn index_to_us(index: u64, bits: u64, val: u64) -> Option<u64> {
    if bits == 0 || bits > 16 || val != 1u64 << bits {
        return None;
    }
    if index < val << 1 {
        return Some(index);
    }
    let error_bits = (index >> bits).checked_sub(1)?;
    let base = 1u64.checked_shl(u32::try_from(error_bits + bits).ok()?)?;
    let step = 1u64.checked_shl(u32::try_from(error_bits).ok()?)?;
    let offset = index % val;
    base.checked_add(offset.checked_mul(step)?)?.checked_add(step / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_indices_read_as_fio_lays_them_out() {
        // 6 bits, 64 per group: indices below 128 are the value itself.
        assert_eq!(index_to_us(100, 6, 64), Some(100));
        // 128 starts the group of 128..256 in steps of 2.
        assert_eq!(index_to_us(128, 6, 64), Some(129));
        assert_eq!(index_to_us(191, 6, 64), Some(128 + 63 * 2 + 1));
        assert_eq!(index_to_us(192, 6, 64), Some(256 + 2));
        assert_eq!(index_to_us(5, 6, 63), None);
    }

    #[test]
    fn a_2x_direction_is_read_in_bytes_and_nanoseconds() {
        let mut notes = Notes::default();
        let job = serde_json::json!({"read": {
            "io_bytes": 4, "bw": 2, "iops": 500.0, "runtime": 2000, "total_ios": 1000,
            "clat": {"min": 10, "max": 90, "mean": 20.5, "stddev": 3.25,
                     "percentile": {"50.000000": 20, "0.00": 0}}
        }});
        let read = &normalize(&job, &mut notes)["read"];
        assert_eq!(read["io_bytes"], 4096);
        assert_eq!(read["bw_bytes"], 2048.0);
        assert_eq!(read["clat_ns"]["min"], 10_000);
        assert_eq!(read["clat_ns"]["mean"], 20_500.0);
        assert_eq!(read["clat_ns"]["percentile"]["50.000000"], 20_000);
        assert_eq!(read["clat_ns"]["N"], 1000);
        assert!(notes.0.iter().any(|n| n.contains("microseconds")));
    }
}
