//! Tests of the ladder and scale verdicts on synthetic results.
