//! Means the tail owns: under a table that shows a mean beside its percentiles, one line for
//! each row whose mean lies above its p99, saying which few I/Os make it up.

use std::fmt::Write;

use iolab_stats::result::{tail_words, LatencySummary, TailShare};

/// A row's mean, its p99 and, where its histogram was kept, the I/Os beyond.
pub struct MeanAndTail<'a> {
    pub name: &'a str,
    pub mean_ns: f64,
    pub p99_ns: Option<u64>,
    pub tail: Option<TailShare>,
}

impl<'a> MeanAndTail<'a> {
    pub fn of(name: &'a str, latency: Option<&LatencySummary>) -> MeanAndTail<'a> {
        MeanAndTail {
            name,
            mean_ns: latency.map_or(0.0, |l| l.mean_ns),
            p99_ns: latency.and_then(|l| l.percentile(99.0)),
            tail: latency.and_then(|l| l.tail),
        }
    }
}

/// "  (the mean of psync is its tail's: 0.1% of I/Os took over 8.20us (p99.9) and make up 91%
/// of the mean)", one line per row whose mean lies above its p99; a result kept without its
/// histogram (older, or an fio summary) says so instead of the shares. Nothing for the others.
pub fn tails_text<'a>(out: &mut String, rows: impl IntoIterator<Item = MeanAndTail<'a>>) {
    for row in rows {
        if let Some(words) = tail_words(row.mean_ns, row.p99_ns, row.tail) {
            let _ = writeln!(out, "  (the mean of {} {words})", row.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, mean_ns: f64, tail: Option<TailShare>) -> MeanAndTail<'_> {
        MeanAndTail { name, mean_ns, p99_ns: Some(6_280), tail }
    }

    #[test]
    fn a_row_whose_mean_its_tail_owns_gets_a_line_and_the_others_none() {
        let tail = TailShare { p: 99.9, above_ns: 8_200, ios_pct: 0.1, mean_pct: 91.4 };
        let mut out = String::new();
        tails_text(
            &mut out,
            [row("qd 1", 700.0, None), row("psync", 57_300.0, Some(tail)), row("qd 4", 13_700.0, None)],
        );
        assert_eq!(
            out,
            "  (the mean of psync is its tail's: 0.1% of I/Os took over 8.20us (p99.9) and make up 91% of the mean)\n  \
             (the mean of qd 4 lies above its p99, 6.28us: the slowest 1% of I/Os pull it there; the result kept no histogram to say by how much)\n"
        );
        let mut none = String::new();
        tails_text(&mut none, [row("qd 1", 700.0, None)]);
        assert!(none.is_empty());
    }
}
