//! The rules about limits the machine's configuration sets, not its hardware: a cgroup CPU
//! quota that throttled the job, an affinity mask that put more submitting threads than it
//! allows CPUs on the same cores, a cgroup I/O throttle the device ran at, the kernel's dirty
//! page limits, and a memory limit that evicted the pages a buffered job read again. Each names
//! the limit and its own figure; none gives advice it has not tested.

use iolab_stats::lane_waits::{DIRTY_THROTTLE_WCHAN, FILE_LOCK_WCHANS, IO_WQ_IDLE_WCHAN, MEMORY_HIGH_WCHAN};
use iolab_stats::result::Bottleneck;
use iolab_stats::threads::ThreadClass;

use iolab_spec::Bytes;
use iolab_stats::format::thousands;

use super::evidence::{device_line, worker_line};
use super::facts::Facts;
use super::Finding;

/// A quota that ran out in this share of the window's enforcement periods or more held the job
/// back: its threads sat throttled for the rest of each such period.
pub const THROTTLED_PERIODS_PCT: f64 = 10.0;
/// Submitting threads wanting (running or waiting to run) this share of the CPUs their mask
/// allows, or more, were held by the mask. Wanted, not used: on a machine busy with other work
/// the threads get less than the mask allows, and the mask still held them.
pub const MASK_WANTED_SHARE: f64 = 0.8;

/// A device running at this share of a cgroup's cap on it, or more, ran at the cap.
pub const AT_THROTTLE_SHARE: f64 = 0.9;

/// iolab's cgroup (or a parent) caps a device of the job, and the device ran at the cap.
pub fn io_throttle(facts: &Facts<'_>) -> Option<Finding> {
    let throttles = &facts.machine?.limits.io_throttles;
    let window = facts.job.measured_s;
    if window <= 0.0 {
        return None;
    }
    facts.loads.iter().find_map(|load| {
        let a = load.activity;
        throttles.iter().filter(|t| t.device.as_deref() == Some(load.name())).find_map(|t| {
            // The cap is on the cgroup's own I/O: its counters where read, else the device's
            // (which other users of the device add to).
            let device_did = match (t.op.as_str(), t.unit.as_str()) {
                ("read", "iops") => a.reads,
                ("write", "iops") => a.writes,
                ("read", _) => a.read_bytes,
                _ => a.write_bytes,
            };
            let ran = t.served.unwrap_or(device_did) as f64 / window;
            if t.limit == 0 || ran < t.limit as f64 * AT_THROTTLE_SHARE {
                return None;
            }
            let (cap, done) = if t.unit == "iops" {
                (format!("{} {} IOPS", thousands(t.limit as f64), t.op), format!("{} {} IOPS", thousands(ran), t.op))
            } else {
                (format!("{}/s of {}s", Bytes(t.limit), t.op), format!("{}/s", Bytes(ran as u64)))
            };
            Finding::new(
                Bottleneck::ConfiguredLimit,
                format!(
                    "The I/O throttle of cgroup {} held the job back: {} is capped at {cap} ({}), and {} ran at {done}, so the figures are the throttle's, not the device's.",
                    t.cgroup,
                    load.name(),
                    t.source,
                    if t.served.is_some() { "the cgroup's I/O on it" } else { "it" }
                ),
                // A buffered writer waited on the dirty limits meanwhile: the throttled
                // writeback set their pace, the throttle set the writeback's.
                std::iter::once(device_line(load))
                    .chain(dirty_held(facts, false).map(|stood| {
                        format!("meanwhile the kernel's dirty page limits held the buffered writer: {stood}")
                    }))
                    .collect(),
            )
        })
    })
}

/// "; loop0 wrote 10.3MiB/s of it": the job's devices' own share of the writeback (the limits
/// are the machine's, and other writers' dirty pages count against them too).
fn devices_wrote(facts: &Facts<'_>, window: f64) -> String {
    let each: Vec<String> = facts
        .loads
        .iter()
        .map(|l| format!("{} wrote {}/s", l.name(), Bytes((l.activity.write_bytes as f64 / window) as u64)))
        .collect();
    if each.is_empty() {
        String::new()
    } else {
        format!("; {} of it", each.join(", "))
    }
}

/// A buffered writer's threads asleep in the kernel's dirty throttling (`balance_dirty_pages`)
/// this share of their time or more were held by it for the window; in `SEEN` or more,
/// it held them beside another limit.
pub const DIRTY_ASLEEP_PCT: f64 = 25.0;
pub const DIRTY_ASLEEP_SEEN_PCT: f64 = 5.0;

/// What shows the dirty throttle holding a buffered writer's job for the window (`most`), or at
/// all (evidence beside another limit): the page cache dirty or under writeback past the point
/// the kernel throttles writers from, in the window's samples, and the writer's threads asleep
/// in the throttle, in theirs (the page cache's count swings faster than it is sampled: a
/// writer 40% of the time in `balance_dirty_pages` was seen at most 6 MiB dirty against a
/// 12 MiB point); `None` when neither does.
fn dirty_held(facts: &Facts<'_>, most: bool) -> Option<String> {
    let writes_buffered = facts.job.groups.iter().any(|g| !g.direct && g.write.ios > 0);
    if !writes_buffered {
        return None;
    }
    let cache = facts.machine.and_then(|m| m.page_cache);
    let stood = cache.and_then(|cache| {
        let from = cache.throttling_from_bytes()?;
        let held =
            if most { cache.throttled() } else { cache.dirty_peak_bytes.max(cache.dirty_end_bytes) >= from };
        held.then(|| match cache.past_throttle_pct {
            Some(pct) => format!(
                "the page cache dirty or under writeback stood past {} in {pct:.0}% of the window's samples (at most {})",
                Bytes(from),
                Bytes(cache.dirty_peak_bytes)
            ),
            None => format!(
                "{} was dirty or under writeback when the window closed, past {}",
                Bytes(cache.dirty_end_bytes),
                Bytes(from)
            ),
        })
    });
    let least = if most { DIRTY_ASLEEP_PCT } else { DIRTY_ASLEEP_SEEN_PCT };
    // The writes' own threads: the lanes (psync, aio), or the io-wq workers io_uring punts a
    // throttled buffered write to (the lanes then wait for completions), counted while at work.
    // Lanes writing one file wait in turn for its lock, which the one inside holds while the
    // throttle holds it: their share is of the time not waiting for the lock.
    let cpu = &facts.job.cpu;
    let lanes = cpu.lane_waits.as_ref().map(|w| {
        let locked = w.asleep_in_any_pct(FILE_LOCK_WCHANS);
        let (when, aside) = if locked >= DIRTY_ASLEEP_SEEN_PCT {
            (
                " outside the wait for the lock of the file they write",
                format!(
                    "; they waited for the lock {locked:.0}% of their time: a buffered write holds it while the throttle holds the writer, so one throttled writer held the others"
                ),
            )
        } else {
            ("", String::new())
        };
        // A little time throttled beside much waiting for the lock is too little to say it.
        let pct = if w.asleep_in_pct(DIRTY_THROTTLE_WCHAN) >= DIRTY_ASLEEP_SEEN_PCT {
            w.asleep_leaving_out_pct(DIRTY_THROTTLE_WCHAN, FILE_LOCK_WCHANS)
        } else {
            w.asleep_in_pct(DIRTY_THROTTLE_WCHAN)
        };
        (pct, w, "its submitting threads", when, aside)
    });
    let io_wq = cpu.io_wq_waits.as_ref().map(|w| {
        (
            w.asleep_leaving_out_pct(DIRTY_THROTTLE_WCHAN, &[IO_WQ_IDLE_WCHAN]),
            w,
            "the io-wq threads io_uring handed its writes to",
            " while at work",
            String::new(),
        )
    });
    let slept = lanes.into_iter().chain(io_wq).filter(|t| t.0 >= least).max_by(|a, b| a.0.total_cmp(&b.0)).map(
        |(pct, waits, who, when, aside)| {
            format!(
                "{who} slept in {DIRTY_THROTTLE_WCHAN}, the kernel's dirty throttling, {pct:.0}% of their time{when} (as {} samples found them{aside})",
                thousands(waits.samples as f64)
            )
        },
    );
    match (stood, slept) {
        (Some(stood), Some(slept)) => Some(format!("{stood}; {slept}")),
        (stood, slept) => stood.or(slept),
    }
}

/// A buffered writer held by the kernel's dirty throttling (`balance_dirty_pages`) for the
/// window: its page cache dirty or under writeback stood past the throttling point in most of
/// the window's samples, or its threads slept in the throttle a quarter of their time or more.
/// It wrote at the writeback's pace, which the dirty limits (vm.dirty_ratio or dirty_bytes,
/// and their background twins) set.
pub fn dirty_throttle(facts: &Facts<'_>) -> Option<Finding> {
    let held = dirty_held(facts, true)?;
    let window = facts.job.measured_s.max(1e-9);
    let limits = facts.machine.and_then(|m| m.page_cache).and_then(|cache| {
        let from = cache.throttling_from_bytes()?;
        Some(format!(
            "; the kernel throttles writers from {} dirty or under writeback, halfway between the background limit, {}, and the hard limit, {} (vm.dirty_background_ratio or _bytes, vm.dirty_ratio or _bytes), so writes went at the writeback's pace ({}/s written back on the whole machine{}), not the page cache's or the device's alone",
            Bytes(from),
            Bytes(cache.dirty_background_threshold_bytes),
            Bytes(cache.dirty_threshold_bytes),
            Bytes((cache.written_back_bytes as f64 / window) as u64),
            devices_wrote(facts, window)
        ))
    });
    Finding::new(
        Bottleneck::ConfiguredLimit,
        format!(
            "The kernel's dirty page limits held the buffered writer: {held}{}.",
            limits.unwrap_or_default()
        ),
        Vec::new(),
    )
}

/// Of the bytes a buffered job's device read, at least this share were pages the memory
/// cgroup's own reclaim had evicted and the job read again: the limit, not the working set's
/// first reading, sent them to the device.
pub const REFAULT_SHARE: f64 = 0.25;

/// Threads asleep where the kernel throttles a cgroup above `memory.high` this share of their
/// time or more were held by it.
pub const MEMORY_HIGH_ASLEEP_PCT: f64 = 25.0;

/// iolab's cgroup (or a parent) limits memory, the page cache included, and either its threads
/// slept where the kernel throttles tasks above v2 `memory.high`, or a buffered job's reads went
/// to its device for pages that limit had evicted (workingset refaults) while its usage stood
/// at the limit: a page cache not held to it would have served them.
pub fn memory_limit(facts: &Facts<'_>) -> Option<Finding> {
    let memory = facts.machine?.limits.memory.as_ref()?;
    if let Some(held) = memory_high_held(facts, memory) {
        return Some(held);
    }
    let (limit, refaulted) = memory.tightest_bytes().zip(memory.refault_bytes)?;
    // Refaults under the machine's own memory pressure come from every cgroup alike: this
    // limit's are those of a cgroup that reached it.
    if memory.limit_hits == Some(0) {
        return None;
    }
    // A region larger than the machine's memory misses in a page cache with no limit too: the
    // refaults would not all be the limit's.
    let region: u64 = facts
        .job
        .groups
        .iter()
        .filter(|g| !g.direct)
        .filter_map(|g| g.blocks.map(|b| b.blocks.saturating_mul(b.block_bytes)))
        .sum();
    if memory.machine_bytes.is_some_and(|machine| region > machine) {
        return None;
    }
    let window = facts.job.measured_s;
    facts.loads.iter().filter(|l| l.buffered && l.job_read_bytes > 0 && window > 0.0).find_map(|load| {
        let device_read = load.activity.read_bytes as f64;
        let served_by_device = device_read >= load.job_read_bytes as f64 * super::CACHED_BYTES_SHARE;
        // The cgroup's refaults may be on other devices too: of this one's reads, at most all.
        let refaulted = (refaulted as f64).min(device_read);
        if !served_by_device || refaulted < device_read * REFAULT_SHARE {
            return None;
        }
        let hits = memory
            .limit_hits
            .map_or(String::new(), |n| format!("; the cgroup reached its limit {} times", thousands(n as f64)));
        Finding::new(
            Bottleneck::ConfiguredLimit,
            format!(
                "The memory limit of cgroup {} held the buffered reads back: it keeps the page cache to {} at most, so {} read {}/s for the job, {}/s of it pages the limit had evicted and the job read again (workingset refaults{hits}); the figures are the limit's, not the device's or a page cache's.",
                memory.cgroup,
                Bytes(limit),
                load.name(),
                Bytes((device_read / window) as u64),
                Bytes((refaulted / window) as u64)
            ),
            vec![device_line(load)],
        )
    })
}

/// The job's threads (the lanes, or io-wq's workers at work) asleep in the kernel's throttling
/// above `memory.high` for a quarter of their time or more.
fn memory_high_held(facts: &Facts<'_>, memory: &iolab_stats::limits::MemoryLimit) -> Option<Finding> {
    let cpu = &facts.job.cpu;
    let lanes =
        cpu.lane_waits.as_ref().map(|w| (w.asleep_in_pct(MEMORY_HIGH_WCHAN), "its submitting threads", ""));
    let io_wq = cpu.io_wq_waits.as_ref().map(|w| {
        (
            w.asleep_leaving_out_pct(MEMORY_HIGH_WCHAN, &[IO_WQ_IDLE_WCHAN]),
            "the io-wq threads io_uring handed its I/O to",
            " while at work",
        )
    });
    let (pct, who, when) = lanes
        .into_iter()
        .chain(io_wq)
        .filter(|t| t.0 >= MEMORY_HIGH_ASLEEP_PCT)
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    let high = memory.high_bytes.map_or(String::new(), |bytes| format!(" ({})", Bytes(bytes)));
    Finding::new(
        Bottleneck::ConfiguredLimit,
        format!(
            "The memory.high of cgroup {}{high} held the job back: {who} slept in {MEMORY_HIGH_WCHAN}, where the kernel throttles a cgroup's tasks above it after making them reclaim, {pct:.0}% of their time{when}; the figures are the limit's, not the device's.",
            memory.cgroup
        ),
        Vec::new(),
    )
}

/// iolab's cgroup (or a parent) has a CPU quota that ran out during the window.
pub fn cpu_quota(facts: &Facts<'_>) -> Option<Finding> {
    let quota = facts.machine?.limits.cpu_quota.as_ref()?;
    let pct = quota.throttled_pct();
    if pct < THROTTLED_PERIODS_PCT {
        return None;
    }
    Finding::new(
        Bottleneck::ConfiguredLimit,
        format!(
            "The CPU quota of cgroup {} held the job back: {:.2} cores ({} us per {} us), which ran out in {pct:.0}% of the window's {} periods; its threads waited {:.2} s throttled, so the figures are the quota's, not the target's.",
            quota.cgroup,
            quota.cores(),
            quota.quota_us,
            quota.period_us,
            quota.periods,
            quota.throttled_s
        ),
        worker_line(facts).into_iter().collect(),
    )
}

/// iolab may run on fewer CPUs than it has submitting threads, and those threads wanted the
/// CPUs allowed: the mask, not the machine, held them.
pub fn affinity_mask(facts: &Facts<'_>) -> Option<Finding> {
    let affinity = facts.machine?.limits.affinity.as_ref().filter(|a| a.narrowed())?;
    let workers = facts.class(ThreadClass::Worker)?;
    let allowed = affinity.allowed.len() as f64;
    let window = facts.job.measured_s;
    if f64::from(workers.threads) <= allowed || window <= 0.0 {
        return None;
    }
    let used = (workers.user_s + workers.system_s) / window;
    let wanted = used + workers.runqueue_wait_s / window;
    if wanted < allowed * MASK_WANTED_SHARE {
        return None;
    }
    let cpus: Vec<String> = affinity.allowed.iter().map(u32::to_string).collect();
    Finding::new(
        Bottleneck::ConfiguredLimit,
        format!(
            "iolab may run only on CPU {} of the machine's {} ({}): its {} submitting threads wanted {wanted:.2} cores and ran {used:.2} on the {} allowed, waiting {:.2} s in all for a CPU, so the figures are the mask's, not the target's.",
            cpus.join(","),
            affinity.online,
            affinity.source_words(),
            workers.threads,
            cpus.len(),
            workers.runqueue_wait_s
        ),
        worker_line(facts).into_iter().collect(),
    )
}
