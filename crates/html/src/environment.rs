//! A run's environment as the store keeps it (free-form JSON: host, targets, governors, SMART
//! health), as tables a reader can scan: the host's facts with units, one row per target, and
//! after the run only what changed (temperature, SMART counters), before beside after.

use std::fmt::Write;

use serde_json::{Map, Value};

use crate::escape::esc;
use crate::plot::{number, sig3};

/// The host's facts (nested objects one level down, "host.kernel"), for the run's fact boxes.
pub(crate) fn facts(out: &mut String, environment: &Value) {
    let Value::Object(map) = environment else { return };
    let mut map = map.clone();
    map.remove("targets");
    let rows = flat(&map);
    if rows.is_empty() {
        return;
    }
    out.push_str("<div>\n<h3>Environment</h3>\n<table class=\"environment\">\n");
    for (key, value) in rows {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(&words(&key)), esc(&value));
    }
    out.push_str("</table>\n</div>\n");
}

/// The targets, one column each (they are few; their facts are many), a row per fact some
/// target has.
pub(crate) fn targets(out: &mut String, environment: &Value) {
    let Some(Value::Array(targets)) = environment.get("targets") else { return };
    let columns: Vec<Vec<(String, String)>> = targets.iter().filter_map(Value::as_object).map(flat).collect();
    let mut facts: Vec<String> = Vec::new();
    for (key, value) in columns.iter().flatten() {
        if value != "—" && key != "path" && !facts.contains(key) {
            facts.push(key.clone());
        }
    }
    if columns.is_empty() {
        return;
    }
    let fact = |column: &[(String, String)], key: &str| {
        column.iter().find(|(k, _)| k == key).map_or("—".to_string(), |(_, v)| v.clone())
    };
    out.push_str("<h3>Targets</h3>\n<table class=\"targets\">\n<tr><th>target</th>");
    for column in &columns {
        let _ = write!(out, "<th><code>{}</code></th>", esc(&fact(column, "path")));
    }
    out.push_str("</tr>\n");
    for key in &facts {
        let _ = write!(out, "<tr><th>{}</th>", esc(&words(key)));
        for column in &columns {
            let _ = write!(out, "<td>{}</td>", esc(&fact(column, key)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

/// What changed between `before` and `after` the run: one row per fact that differs.
pub(crate) fn changes(out: &mut String, before: &Value, after: &Value) {
    let (before, after) = (leaves(before), leaves(after));
    let mut rows = Vec::new();
    for (key, value) in &after {
        let old = before.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        if old != Some(value) {
            rows.push((key.clone(), old.cloned().unwrap_or(Value::Null), value.clone()));
        }
    }
    for (key, value) in before.iter().filter(|(k, _)| !after.iter().any(|(a, _)| a == k)) {
        rows.push((key.clone(), value.clone(), Value::Null));
    }
    out.push_str("<h3>Changed during the run</h3>\n");
    if rows.is_empty() {
        out.push_str("<p class=\"note\">Nothing the environment records (temperatures, SMART counters, governors) changed.</p>\n");
        return;
    }
    out.push_str("<table class=\"changes\">\n<tr><th>what</th><th class=\"num\">before</th><th class=\"num\">after</th><th class=\"num\">change</th></tr>\n");
    for (key, old, new) in rows {
        let leaf = key.rsplit('.').next().unwrap_or(&key).to_string();
        let change = match (old.as_f64(), new.as_f64()) {
            (Some(a), Some(b)) => {
                let delta = b - a;
                let text = if leaf.ends_with("bytes") { bytes(delta.abs()) } else { number(delta.abs()) };
                format!("{}{text}", if delta < 0.0 { "−" } else { "+" })
            }
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&words(&key)),
            esc(&shown(&leaf, &old)),
            esc(&shown(&leaf, &new)),
            esc(&change)
        );
    }
    out.push_str("</table>\n");
}

/// An object's facts one level down: "device.model".
fn flat(map: &Map<String, Value>) -> Vec<(String, String)> {
    map.iter()
        .flat_map(|(key, value)| match value {
            Value::Object(inner) if !inner.is_empty() => {
                inner.iter().map(|(k, v)| (format!("{key}.{k}"), shown(k, v))).collect::<Vec<_>>()
            }
            other => vec![(key.clone(), shown(key, other))],
        })
        .collect()
}

/// Every scalar of `value` by its path; a target (an object with a "path") by its path.
fn leaves(value: &Value) -> Vec<(String, Value)> {
    fn walk(prefix: &str, value: &Value, out: &mut Vec<(String, Value)>) {
        let join = |key: &str| if prefix.is_empty() { key.to_string() } else { format!("{prefix}.{key}") };
        match value {
            Value::Object(map) => map.iter().for_each(|(k, v)| walk(&join(k), v, out)),
            Value::Array(items) if items.iter().all(Value::is_object) && !items.is_empty() => {
                for (index, item) in items.iter().enumerate() {
                    let name =
                        item.get("path").and_then(Value::as_str).map_or(index.to_string(), String::from);
                    walk(&format!("{prefix}[{name}]"), item, out);
                }
            }
            other => out.push((prefix.to_string(), other.clone())),
        }
    }
    let mut out = Vec::new();
    walk("", value, &mut out);
    out
}

/// A fact as text, with its unit where its name says it: bytes in KiB/MiB/GiB.
fn shown(key: &str, value: &Value) -> String {
    match value {
        Value::Number(n) if key.ends_with("bytes") => n.as_f64().map_or_else(|| n.to_string(), bytes),
        Value::String(text) => text.clone(),
        Value::Null => "—".to_string(),
        Value::Bool(true) => "yes".to_string(),
        Value::Bool(false) => "no".to_string(),
        Value::Array(items) if items.is_empty() => "none".to_string(),
        Value::Array(items) => items.iter().map(|v| shown(key, v)).collect::<Vec<_>>().join(", "),
        Value::Object(map) => {
            flat(map).iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
        }
        other => other.to_string(),
    }
}

/// A fact's key as words, with its unit where its name holds one (a value in bytes is shown with
/// its own): "host.kernel_release" is "kernel release", "device.max_sectors_kb" "device largest
/// request (KiB)", "nvme_health.temperature_c" "NVMe health temperature (°C)".
fn words(key: &str) -> String {
    const UNITS: [(&str, &str); 7] = [
        ("_bytes", ""),
        ("_kb", " (KiB)"),
        ("_pct", " (%)"),
        ("_c", " (°C)"),
        ("_ns", " (ns)"),
        ("_us", " (µs)"),
        ("_s", " (s)"),
    ];
    // Whole names whose words alone would mislead, then single words.
    const FIELDS: [(&str, &str); 4] = [
        ("max_sectors_kb", "largest request (KiB)"),
        ("max_segments", "most segments per request"),
        ("max_segment_size", "largest segment"),
        ("nr_requests", "requests per queue"),
    ];
    const NAMES: [(&str, &str); 8] = [
        ("cpu", "CPU"),
        ("cpus", "CPUs"),
        ("hw", "hardware"),
        ("nvme", "NVMe"),
        ("io", "I/O"),
        ("rev", "revision"),
        ("smart", "SMART"),
        ("id", "ID"),
    ];
    let key = key.strip_prefix("host.").unwrap_or(key);
    key.split('.')
        .map(|part| {
            if let Some((_, said)) = FIELDS.iter().find(|(raw, _)| *raw == part) {
                return said.to_string();
            }
            let (stem, unit) = UNITS
                .iter()
                .find_map(|(suffix, unit)| part.strip_suffix(suffix).map(|stem| (stem, *unit)))
                .unwrap_or((part, ""));
            let stem: Vec<&str> = stem
                .split('_')
                .map(|w| NAMES.iter().find(|(raw, _)| *raw == w).map_or(w, |(_, said)| said))
                .collect();
            format!("{}{unit}", stem.join(" "))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// "23.5 GiB".
fn bytes(value: f64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut scaled = value;
    let mut unit = 0;
    while scaled.abs() >= 1024.0 && unit + 1 < units.len() {
        scaled /= 1024.0;
        unit += 1;
    }
    format!("{} {}", if unit == 0 { format!("{scaled:.0}") } else { sig3(scaled) }, units[unit])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn memory_reads_in_gib() {
        assert_eq!(shown("memory_bytes", &json!(25_276_514_304u64)), "23.5 GiB");
        assert_eq!(shown("logical_cpus", &json!(2)), "2");
    }

    /// Issue 36: the report showed raw field names ("device.capacity bytes").
    #[test]
    fn keys_read_as_words_with_their_units() {
        assert_eq!(words("host.kernel_release"), "kernel release");
        assert_eq!(words("device.capacity_bytes"), "device capacity");
        assert_eq!(words("device.max_sectors_kb"), "device largest request (KiB)");
        assert_eq!(words("device.hw_queue_depth"), "device hardware queue depth");
        assert_eq!(words("device.nr_requests"), "device requests per queue");
        assert_eq!(words("device.max_segments"), "device most segments per request");
        assert_eq!(words("host.logical_cpus"), "logical CPUs");
        assert_eq!(words("nvme_health.temperature_c"), "NVMe health temperature (°C)");
    }

    #[test]
    fn after_the_run_only_changes_are_listed() {
        let before = json!({ "host": { "kernel": "6.1" }, "targets": [{ "path": "/dev/sda", "nvme_health": { "temperature_c": 40, "media_errors": 0 } }] });
        let after = json!({ "host": { "kernel": "6.1" }, "targets": [{ "path": "/dev/sda", "nvme_health": { "temperature_c": 47, "media_errors": 0 } }] });
        let mut out = String::new();
        changes(&mut out, &before, &after);
        assert!(out.contains("<th>targets[/dev/sda] NVMe health temperature (°C)</th><td class=\"num\">40</td><td class=\"num\">47</td><td class=\"num\">+7</td>"), "{out}");
        assert!(!out.contains("kernel") && !out.contains("media_errors"), "{out}");
        let mut same = String::new();
        changes(&mut same, &before, &before);
        assert!(same.contains("changed.</p>"), "{same}");
    }
}
