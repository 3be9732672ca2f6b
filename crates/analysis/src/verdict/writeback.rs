//! The kernel's writeback as the verdict sees it: a writeback or journal thread of the job's
//! device at work, or dirty page cache written back in the window, behind an O_DIRECT job's
//! reads and writes.

use iolab_stats::kernel_threads::KernelRole;
use iolab_stats::machine::CpuOwner;

use super::facts::{same_disk, Facts, Load};
use super::words::page_cache_writeback;

/// The kernel's writeback, where an O_DIRECT job's device wrote what the job did not: that
/// writeback is what such reads and writes wait behind, whatever else limited the run. Once,
/// for devices that share it.
pub fn writeback_seen(facts: &Facts<'_>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for load in facts.loads.iter().filter(|l| l.only_direct() && l.foreign_write_bytes() > 0) {
        if let Some(words) = writeback_words(facts, load).filter(|w| !seen.contains(w)) {
            seen.push(words);
        }
    }
    seen
}

/// The kernel's writeback as the evidence shows it: a writeback or journal thread of the device
/// at work, or dirty page cache written back in the window (at least half of what the device
/// wrote that the job did not).
pub fn writeback_words(facts: &Facts<'_>, load: &Load<'_>) -> Option<String> {
    if let Some(owner) = writeback_owner(facts, load) {
        return Some(format!("{}: {}", owner.name, owner.busiest_thread));
    }
    let cache = facts.machine?.page_cache?;
    (cache.written_back_bytes > 0 && cache.written_back_bytes * 2 >= load.foreign_write_bytes())
        .then(|| page_cache_writeback(&cache))
}

/// Kernel threads that write back or journal for the device, the busiest first.
fn writeback_owner<'a>(facts: &Facts<'a>, load: &Load<'_>) -> Option<&'a CpuOwner> {
    facts.outside_owners().find(|o| {
        matches!(o.role, Some(KernelRole::Writeback | KernelRole::Filesystem))
            && o.serves.as_deref().is_none_or(|s| same_disk(s, load.name()))
    })
}
