//! Number formatting for the human lines of `describe()`: capacities in decimal units, as drive
//! vendors print them, memory in binary units, as `free` does. Counts take iolab's one thousands
//! separator, `iolab_stats::format::thousands`.

use iolab_stats::format::thousands;
pub(crate) use iolab_stats::format::{binary_bytes, decimal_bytes};

/// "1 media error", "5 unsafe shutdowns".
pub(crate) fn plural(count: u64, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", thousands(count as f64))
    }
}

/// CPU numbers as ranges: [0, 1, 2, 5] -> "0-2,5".
pub(crate) fn cpu_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_sizes_counts_and_cpu_lists() {
        assert_eq!(decimal_bytes(0), "0 B");
        assert_eq!(decimal_bytes(999), "999 B");
        assert_eq!(decimal_bytes(2_000_398_934_016), "2.0 TB");
        assert_eq!(decimal_bytes(12_300_000_000_000), "12.3 TB");
        assert_eq!(binary_bytes(24 * 1024 * 1024 * 1024), "24.0 GiB");
        assert_eq!(plural(1, "error"), "1 error");
        assert_eq!(plural(1000, "error"), "1,000 errors");
        assert_eq!(cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(cpu_list(&[3]), "3");
    }
}
