//! Means the tail owns: under a table that shows a mean beside its percentiles, one line for
//! each row whose mean lies above p99 or higher, saying which few I/Os make it up.

use std::fmt::Write;

use iolab_stats::result::TailShare;

/// "  (the mean of qd 4 is its tail's: 0.1% of I/Os took over 8.20us (p99.9) and make up 91% of
/// the mean)", one line per row with such a tail; nothing when no row has one.
pub fn tails_text<'a>(out: &mut String, rows: impl IntoIterator<Item = (&'a str, Option<TailShare>)>) {
    for (name, tail) in rows.into_iter().filter_map(|(n, t)| t.map(|t| (n, t))) {
        let _ = writeln!(out, "  (the mean of {name} is its tail's: {})", tail.sentence());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_whose_mean_its_tail_owns_gets_a_line_and_the_others_none() {
        let tail = TailShare { p: 99.9, above_ns: 8_200, ios_pct: 0.1, mean_pct: 91.4 };
        let mut out = String::new();
        tails_text(&mut out, [("qd 1", None), ("psync", Some(tail)), ("qd 4", None)]);
        assert_eq!(
            out,
            "  (the mean of psync is its tail's: 0.1% of I/Os took over 8.20us (p99.9) and make up 91% of the mean)\n"
        );
        let mut none = String::new();
        tails_text(&mut none, [("qd 1", None)]);
        assert!(none.is_empty());
    }
}
