//! Number formatting for tables and verdicts: latencies in the unit that reads best, counts with separators.

/// "850ns", "12.3us", "1.23ms", "2.50s": three significant figures.
pub fn latency(ns: f64) -> String {
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "us")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let decimals = if value >= 100.0 || unit == "ns" {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$}{unit}")
}

/// 1234567.8 -> "1,234,568".
pub fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// "2026-11-22 14:03:07" for seconds since the Unix epoch (UTC; the civil-from-days algorithm).
pub fn utc(unix_s: i64) -> String {
    let days = unix_s.div_euclid(86_400);
    let seconds = unix_s.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        seconds / 3600,
        seconds % 3600 / 60,
        seconds % 60
    )
}

/// Bytes in decimal units with one decimal, as drive vendors count them: "2.0 TB", "512.0 kB", "0 B".
pub fn decimal_bytes(bytes: u64) -> String {
    scaled_bytes(bytes, 1000.0, &["B", "kB", "MB", "GB", "TB", "PB", "EB"])
}

/// Bytes in binary units with one decimal, as `free` counts memory: "24.0 GiB".
pub fn binary_bytes(bytes: u64) -> String {
    scaled_bytes(bytes, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"])
}

fn scaled_bytes(bytes: u64, step: f64, units: &[&str]) -> String {
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= step && unit + 1 < units.len() {
        value /= step;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

/// Text made safe inside HTML and XML, in content and in attribute values; control characters
/// XML 1.0 cannot hold become U+FFFD.
pub fn markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && !matches!(c, '\n' | '\t' | '\r') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_read_well() {
        assert_eq!(latency(850.0), "850ns");
        assert_eq!(latency(12_345.0), "12.3us");
        assert_eq!(latency(1_234_567.0), "1.23ms");
        assert_eq!(latency(2.5e9), "2.50s");
        assert_eq!(latency(999_500.0), "1000us");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1234567.8), "1,234,568");
    }

    #[test]
    fn markup_escapes_what_html_and_xml_reserve() {
        assert_eq!(markup("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert_eq!(markup("bell\u{7}tab\t"), "bell\u{FFFD}tab\t");
    }
}
