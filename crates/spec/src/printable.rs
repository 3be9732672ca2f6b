//! Text from users and remote hosts, made safe to show on a terminal.
//!
//! A job name, a path, an fio job name or an agent's host name can hold control characters: an
//! ESC starts a terminal escape sequence (`\u{1b}]0;pwned\u{7}` retitles the terminal, others
//! move the cursor or recolour what follows), a CR or LF makes one line look like two, and the
//! Unicode bidi overrides reorder what is shown. Every place that prints such text for people
//! passes it through here, so it is shown, not obeyed: each such character becomes its Rust
//! escape (`\u{1b}`, `\n`). JSON output needs none of this: serde_json escapes control
//! characters itself, and a program reads it, not a terminal.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// `text` on one line: every control character is escaped, line breaks included. For one-line
/// errors, warnings and notes.
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// `text` over several lines, as a text report is: line feeds are kept, every other control
/// character is escaped.
pub fn lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// Shows `text` on one line (as `line`) inside `format!` without a copy.
pub struct Shown<'a>(pub &'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&line(self.0))
    }
}

/// Whether `c` changes what a terminal shows rather than being shown: C0 controls, DEL, C1
/// controls, and the Unicode marks that reorder or isolate the text around them.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            // LRM, RLM, ALM, and the embeddings, overrides and isolates.
            '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

fn escape(text: &str, keep_line_feeds: bool) -> Cow<'_, str> {
    let shown_as_is = |c: char| !is_unsafe(c) || (keep_line_feeds && c == '\n');
    if text.chars().all(shown_as_is) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if shown_as_is(c) {
            out.push(c);
        } else {
            // Rust's escapes: visible, and what a user would type to reproduce the text.
            let _ = match c {
                '\n' => out.write_str("\\n"),
                '\r' => out.write_str("\\r"),
                '\t' => out.write_str("\\t"),
                other => write!(out, "\\u{{{:x}}}", u32::from(other)),
            };
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(line("job 'seq read' on /dev/zram0"), Cow::Borrowed(_)));
        assert_eq!(line("naïve ü 日本"), "naïve ü 日本");
    }

    #[test]
    fn terminal_title_escape_is_shown_not_obeyed() {
        let shown = line("rw \u{1b}]0;pwned\u{7} x");
        assert_eq!(shown, "rw \\u{1b}]0;pwned\\u{7} x");
        assert!(!shown.chars().any(is_unsafe));
    }

    #[test]
    fn line_breaks_split_only_multi_line_text() {
        assert_eq!(line("a\nb\r\tc"), "a\\nb\\r\\tc");
        assert_eq!(lines("a\nb\rc"), "a\nb\\rc");
    }

    #[test]
    fn del_c1_and_bidi_overrides_are_escaped() {
        assert_eq!(line("a\u{7f}b\u{9b}c"), "a\\u{7f}b\\u{9b}c");
        assert_eq!(line("x\u{202e}y\u{2066}z"), "x\\u{202e}y\\u{2066}z");
        assert_eq!(format!("{}", Shown("q\u{1b}")), "q\\u{1b}");
    }
}
