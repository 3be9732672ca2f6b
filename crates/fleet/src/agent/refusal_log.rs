//! The log of refused requests and connections, bounded: a flood of bad requests (2,000 wrong
//! tokens, a thousand slow connections) must not become a flood of log lines, and no field a
//! peer sends is logged whole. The first `LINES_PER_WINDOW` refusals of each window are
//! logged one per line; the rest are counted and summed up in one line when the window ends.

use std::borrow::Cow;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use iolab_stats::format::thousands;

use super::lock;
use super::log::say;

/// How many refusals per window get a line of their own.
pub const LINES_PER_WINDOW: u64 = 20;
/// The window over which refusals are counted.
pub const WINDOW: Duration = Duration::from_secs(10);
/// The longest a field a peer chose (a path, a name, a reason quoting them) is logged.
pub const MAX_LOGGED_FIELD: usize = 200;

#[derive(Debug)]
pub struct RefusalLog {
    state: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    started: Instant,
    logged: u64,
    unlogged: u64,
}

impl Default for RefusalLog {
    fn default() -> Self {
        RefusalLog { state: Mutex::new(Window { started: Instant::now(), logged: 0, unlogged: 0 }) }
    }
}

impl RefusalLog {
    /// Logs one refusal (the line made only if it is printed), at most `LINES_PER_WINDOW` a
    /// window, each one `iolab agent: refused ...`.
    pub fn refused(&self, line: impl FnOnce() -> String) {
        for printed in self.admit(Instant::now(), line) {
            say!("iolab agent: {printed}");
        }
    }

    /// Prints the summary of a window that has ended (called now and then, so that the last
    /// burst is summed up even when no refusal follows it).
    pub fn flush(&self) {
        if let Some(summary) = self.roll(Instant::now()) {
            say!("iolab agent: {summary}");
        }
    }

    /// The lines to print for a refusal at `now`: the summary of the window just ended, if
    /// any, then this refusal's own line unless this window has had its share.
    fn admit(&self, now: Instant, line: impl FnOnce() -> String) -> Vec<String> {
        let mut printed: Vec<String> = self.roll(now).into_iter().collect();
        let mut window = lock(&self.state);
        if window.logged < LINES_PER_WINDOW {
            window.logged += 1;
            printed.push(format!("refused {}", line()));
        } else {
            window.unlogged += 1;
        }
        printed
    }

    /// Starts a new window when the current one has ended, with the summary of its unlogged
    /// refusals.
    fn roll(&self, now: Instant) -> Option<String> {
        let mut window = lock(&self.state);
        if now.duration_since(window.started) < WINDOW {
            return None;
        }
        let unlogged = window.unlogged;
        *window = Window { started: now, logged: 0, unlogged: 0 };
        (unlogged > 0).then(|| {
            format!(
                "... and {} more refused requests in the last {} s (not logged one by one)",
                thousands(unlogged as f64),
                WINDOW.as_secs()
            )
        })
    }
}

/// `text` cut to `max` bytes (at a character boundary) with a visible ellipsis and the count
/// of what was cut, and control characters shown escaped: a peer's field never spans lines or
/// floods the log.
pub fn capped(text: &str, max: usize) -> Cow<'_, str> {
    let clean = !text.chars().any(char::is_control);
    if text.len() <= max && clean {
        return Cow::Borrowed(text);
    }
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut head = String::with_capacity(end);
    for c in text[..end].chars() {
        if c.is_control() {
            head.extend(c.escape_default());
        } else {
            head.push(c);
        }
    }
    if end == text.len() {
        return Cow::Owned(head);
    }
    Cow::Owned(format!("{head}… ({} more bytes)", thousands((text.len() - end) as f64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defect: 2,000 refused requests wrote 2,000 log lines. Now a window logs its first
    /// lines, then one summary of the rest.
    #[test]
    fn refusal_log_is_rate_limited() {
        let log = RefusalLog::default();
        let start = lock(&log.state).started;
        let mut lines = Vec::new();
        for i in 0..2_000 {
            lines.extend(log.admit(start + Duration::from_millis(i), || format!("request {i}")));
        }
        assert_eq!(lines.len() as u64, LINES_PER_WINDOW);
        let later = log.admit(start + WINDOW + Duration::from_secs(1), || "request after".to_string());
        assert_eq!(later.len(), 2, "{later:?}");
        assert!(later[0].contains("1,980 more refused requests in the last 10 s"), "{later:?}");
        assert_eq!(later[1], "refused request after");
        assert_eq!(log.roll(start + 3 * WINDOW), None, "nothing unlogged: no summary");
    }

    #[test]
    fn long_or_multiline_fields_are_capped_with_an_ellipsis() {
        assert_eq!(capped("short", 10), "short");
        let long = "x".repeat(300 * 1024);
        let cut = capped(&long, MAX_LOGGED_FIELD);
        assert!(cut.len() < 300, "{}", cut.len());
        assert!(cut.ends_with("… (307,000 more bytes)"), "{cut}");
        assert_eq!(capped("a\nb", 10), "a\\nb");
        assert_eq!(capped("ééé", 3), "é… (4 more bytes)");
    }
}
