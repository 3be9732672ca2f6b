//! Starting a job at a wall-clock instant (a fleet's hosts all at once): the lanes open their
//! engines first, then wait here, so the instant is when I/O begins, not when setup does.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant, SystemTime};

/// The last stretch is spun rather than slept: a sleep can overshoot by a timer slack.
const SPIN: Duration = Duration::from_millis(1);

/// Returns at `at` (at once if it is past), or when `interrupt` is set.
pub fn wait_until(at: SystemTime, interrupt: &AtomicBool) {
    let deadline = Instant::now() + at.duration_since(SystemTime::now()).unwrap_or_default();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left <= SPIN || interrupt.load(Relaxed) {
            break;
        }
        std::thread::sleep((left - SPIN).min(Duration::from_millis(50)));
    }
    while Instant::now() < deadline && !interrupt.load(Relaxed) {
        std::hint::spin_loop();
    }
}
