//! The agent's log on stderr: one line per event, with what coordinators and peers sent (a
//! coordinator's name, a refused request) escaped (`iolab_spec::printable::line`), so nothing
//! from the network reaches the operator's terminal as a control sequence. A stderr that
//! cannot be written loses the line; the agent goes on (`eprintln!` would panic).

use std::io::Write;

/// Writes `args` as one escaped line to stderr.
pub(crate) fn line(args: std::fmt::Arguments<'_>) {
    let text = args.to_string();
    let mut shown = iolab_spec::printable::line(&text).into_owned();
    shown.push('\n');
    let _ = std::io::stderr().lock().write_all(shown.as_bytes());
}

/// `eprintln!` for the agent's log: see the module.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::agent::log::line(format_args!($($arg)*))
    };
}
pub(crate) use say;
