//! Small formatting helpers the verdict's sentences share.

use iolab_spec::Bytes;
use iolab_stats::machine::{CpuOwner, PageCacheActivity};

/// Outstanding I/Os: whole when they are (they are unless targets split a group unevenly).
pub fn count(value: f64) -> String {
    if (value - value.round()).abs() < 0.05 {
        format!("{:.0}", value)
    } else {
        format!("{value:.1}")
    }
}

pub fn micros(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} us")
    }
}

pub fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole * 100.0
    } else {
        0.0
    }
}

/// "loop0 workers 1.67 core-seconds (2 threads; busiest kworker/u8:2-loop0 at 34% of a core)".
pub fn owner(owner: &CpuOwner) -> String {
    let threads =
        if owner.threads == 1 { "1 thread".to_string() } else { format!("{} threads", owner.threads) };
    let mut line = format!(
        "{} {:.2} core-seconds ({threads}; busiest {} at {:.0}% of a core)",
        owner.name, owner.cpu_s, owner.busiest_thread, owner.busiest_thread_pct
    );
    if let Some(role) = owner.role {
        line.push_str(&format!(", {}", role.words()));
    }
    line
}

/// "the kernel's writeback of dirty page cache: 380 MiB written back in the window, 384 MiB
/// dirty at its start and 4 MiB at its end".
pub fn page_cache_writeback(cache: &PageCacheActivity) -> String {
    format!(
        "the kernel's writeback of dirty page cache: {} written back in the window, {} dirty at its start and {} at its end",
        Bytes(cache.written_back_bytes),
        Bytes(cache.dirty_start_bytes),
        Bytes(cache.dirty_end_bytes)
    )
}
