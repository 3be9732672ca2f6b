//! The rules about what the job's I/O met: nothing done, a schedule, the null engine, the page
//! cache, another load on the device, the device's queue, the device itself.

use iolab_spec::Bytes;
use iolab_stats::format::{latency, thousands};
use iolab_stats::machine::{CpuOwner, OwnerKind};
use iolab_stats::result::Bottleneck;
use iolab_stats::threads::ThreadClass;

use super::evidence::device_line;
use super::facts::{Facts, Load, FULL_QUEUE_SHARE, PUNTED_FULL_QUEUE_SHARE};
use super::words::{count, pct};
use super::writeback::writeback_words;
use super::Finding;

/// A device whose requests were at least this share not the job's served another load.
pub const FOREIGN_SHARE: f64 = 0.25;
/// io-wq threads taking at least this share of iolab's CPU: io_uring punted most requests.
pub const PUNTED_SHARE: f64 = 0.5;

pub fn nothing_completed(facts: &Facts<'_>) -> Option<Finding> {
    (facts.job.total.ios == 0).then(|| Finding {
        advice: None,
        cause: Bottleneck::Undetermined,
        summary: "No I/O completed in the measured window, so there is nothing to judge.".into(),
        lead: Vec::new(),
    })
}

/// An open-loop job (--rate-iops) that kept to its schedule did what it was asked and no more,
/// whatever else idled. "Kept" means sustained and every I/O started within `LATE_START_NS` of
/// its due time. One whose I/Os started late while iolab's own submitting thread waited for a
/// CPU was let down by its load generator, not the device: said so. Any other that fell behind
/// is judged by the later rules: they say what held it back.
pub fn rate_kept(facts: &Facts<'_>) -> Option<Finding> {
    let groups = &facts.job.groups;
    let rates: Vec<_> = groups.iter().filter_map(|g| g.rate.as_ref()).collect();
    if rates.is_empty() || rates.len() != groups.len() {
        return None;
    }
    let latest_ns = rates.iter().map(|r| r.max_lag_ns).max().unwrap_or(0);
    if latest_ns > LATE_START_NS {
        if let Some(behind) = generator_fell_behind(facts, latest_ns) {
            return Some(behind);
        }
    }
    if !rates.iter().all(|r| r.sustained) {
        return None;
    }
    // Kept: the rate set the load, whatever else was near its limit. Starts behind schedule
    // that the load generator's CPU does not explain are said, not made the cause: the rate
    // was still delivered.
    let asked: f64 = rates.iter().map(|r| r.target_iops).sum();
    let achieved: f64 = rates.iter().map(|r| r.achieved_iops).sum();
    let summary = if latest_ns > LATE_START_NS {
        format!(
            "The rate limit set the load: {} IOPS were asked (--rate-iops) and delivered, so the target was not pushed to its limit; some I/Os started up to {} behind their schedule, which its submitting thread's wait for a CPU does not explain; a closed-loop run (without --rate-iops) finds the target's limit.",
            thousands(asked),
            latency(latest_ns as f64)
        )
    } else {
        format!(
            "The rate limit set the load: {} IOPS were asked (--rate-iops) and delivered, every I/O on its schedule, so the target was not pushed to its limit; a closed-loop run (without --rate-iops) finds it.",
            thousands(asked)
        )
    };
    Finding::new(
        Bottleneck::RateLimit,
        summary,
        vec![format!(
            "{} IOPS asked, {} achieved; the latest start was {} behind its schedule",
            thousands(asked),
            thousands(achieved),
            latency(latest_ns as f64)
        )],
    )
}

/// A replay at its recorded times (`iolab replay`) that completed every request of its trace,
/// none starting more than `LATE_START_NS` behind its time, did what the trace asked: the
/// trace set the load, not the target. One that fell behind while its submitting thread waited
/// for a CPU was let down by iolab; any other falls to the later rules. A replay as fast as
/// possible is a closed loop and is judged as one.
pub fn replay_kept(facts: &Facts<'_>) -> Option<Finding> {
    let groups = &facts.job.groups;
    let replays: Vec<_> =
        groups.iter().filter_map(|g| g.replay.as_ref()).filter(|r| r.speed.is_some()).collect();
    if replays.is_empty() || replays.len() != groups.len() {
        return None;
    }
    let latest_ns = replays.iter().map(|r| r.max_lag_ns).max().unwrap_or(0);
    if latest_ns > LATE_START_NS {
        return generator_fell_behind(facts, latest_ns);
    }
    if !replays.iter().all(|r| r.completed == r.requests) {
        return None;
    }
    let requests: u64 = replays.iter().map(|r| r.requests).sum();
    let late = replays.iter().filter_map(|r| r.late_pct).fold(0.0, f64::max);
    let p99 = replays.iter().filter_map(|r| r.lag.as_ref()?.percentile(99.0)).max().unwrap_or(0);
    Finding::new(
        Bottleneck::RateLimit,
        format!(
            "The trace set the load: its {} requests were replayed at their recorded times and all completed, every one started within {} of its time, so the target was not pushed to its limit; --speed max finds how fast it replays the trace.",
            thousands(requests as f64),
            latency(latest_ns as f64)
        ),
        vec![format!(
            "lag behind the recorded times: p99 {}, max {}; {late:.2}% started more than 1ms late",
            latency(p99 as f64),
            latency(latest_ns as f64)
        )],
    )
}

/// An I/O that started more than this behind its due time was late: the schedule was not kept,
/// whatever the completions add up to (a 20 ms late start is most of a 25 ms p99).
pub const LATE_START_NS: u64 = 5_000_000;
/// The submitting threads waiting this share of the window for a CPU or more made the lateness.
pub const GENERATOR_WAIT_PCT: f64 = 5.0;

/// Late starts while iolab's submitting thread waited for a CPU: whoever held the cores held
/// the load generator back.
fn generator_fell_behind(facts: &Facts<'_>, latest_ns: u64) -> Option<Finding> {
    let worker = facts.class(ThreadClass::Worker)?;
    let waited = worker.busiest_demand_pct - worker.busiest_thread_pct;
    if waited < GENERATOR_WAIT_PCT {
        return None;
    }
    let outside: Vec<String> = facts.outside_owners().take(2).map(super::words::owner).collect();
    let who = if outside.is_empty() {
        String::new()
    } else {
        format!(" (busiest outside iolab: {})", outside.join("; "))
    };
    let cause = if outside.is_empty() { Bottleneck::SubmittingCpu } else { Bottleneck::OtherLoad };
    Finding::new(
        cause,
        format!(
            "The load generator fell behind its schedule: I/Os started up to {} late while iolab's submitting thread waited {waited:.0}% of the window for a CPU{who}; the device did not make them late, and the response times include that wait; measure on a quieter machine, or pin iolab's threads (--cpus).",
            latency(latest_ns as f64)
        ),
        Vec::new(),
    )
}

pub fn null_engine(facts: &Facts<'_>) -> Option<Finding> {
    facts.null.then(|| Finding {
        advice: None,
        cause: Bottleneck::SubmittingCpu,
        summary: "The null engine does no I/O: the figures measure iolab's own cost per I/O, so the run is CPU-bound by construction.".into(),
        lead: vec![format!("{:.3} us of CPU per I/O", facts.job.cpu.us_per_io)],
    })
}

/// A target in memory, or buffered I/O its device never saw: the result measured RAM.
pub fn page_cache(facts: &Facts<'_>) -> Option<Finding> {
    if let Some(path) = facts.in_memory.first() {
        return Finding::new(
            Bottleneck::PageCache,
            format!("{path} lives in memory (tmpfs): the result measures RAM and the kernel's memory copies, not a device."),
            Vec::new(),
        );
    }
    facts.loads.iter().filter(|l| l.buffered).find_map(|load| {
        let (share, words) = cached(load)?;
        Finding::new(
            Bottleneck::PageCache,
            format!("The page cache served this buffered I/O: {} saw {share:.1}% of the bytes the job {words}, so the result measures RAM, not the device; drop --buffered to measure the device.", load.name()),
            vec![format!(
                "the job read {} and wrote {} on {}; the device read {} and wrote {}",
                Bytes(load.job_read_bytes),
                Bytes(load.job_write_bytes),
                load.name(),
                Bytes(load.activity.read_bytes),
                Bytes(load.activity.write_bytes)
            )],
        )
    })
}

/// Whether the device moved under `CACHED_BYTES_SHARE` of the job's bytes in every direction
/// the job moved any (counting each direction alone keeps other processes' writes from hiding a
/// cached read job): the larger share, and what the job did.
fn cached(load: &Load<'_>) -> Option<(f64, &'static str)> {
    let a = load.activity;
    let directions = [(load.job_read_bytes, a.read_bytes), (load.job_write_bytes, a.write_bytes)];
    let used: Vec<(u64, u64)> = directions.into_iter().filter(|&(job, _)| job > 0).collect();
    let cached = !used.is_empty()
        && used.iter().all(|&(job, device)| (device as f64) < job as f64 * super::CACHED_BYTES_SHARE);
    let share = used.iter().map(|&(job, device)| pct(device as f64, job as f64)).fold(0.0, f64::max);
    let words = match (load.job_read_bytes > 0, load.job_write_bytes > 0) {
        (true, false) => "read",
        (false, true) => "wrote",
        _ => "read and wrote",
    };
    cached.then_some((share, words))
}

/// io_uring punted most of an O_DIRECT job's requests to io-wq while its device wrote what the
/// job did not: direct I/O on a file whose pages are being written back waits for the writeback
/// (it cannot be issued without blocking, so io_uring hands it to a kernel thread).
pub fn writeback_punting(facts: &Facts<'_>) -> Option<Finding> {
    let punted = facts.io_wq_share();
    if !facts.uring || punted < PUNTED_SHARE {
        return None;
    }
    facts.loads.iter().filter(|l| l.only_direct()).find_map(|load| {
        let foreign = load.foreign_write_bytes();
        let (foreign_ios, share) = load.foreign_ios();
        let writeback = writeback_words(facts, load);
        let disturbed = load.shared_with(FOREIGN_SHARE);
        if foreign == 0 || (!disturbed && writeback.is_none()) {
            return None;
        }
        let by = writeback.map_or_else(String::new, |words| format!(" ({words})"));
        Finding::new(
            Bottleneck::Writeback,
            format!(
                "io_uring punted the job's I/O to its io-wq kernel threads ({:.0}% of iolab's CPU) while {} wrote {} the job did not{by}: direct I/O on a file whose pages are still being written back waits for the writeback, so these figures are the writeback's, not the device's; run `sync`, wait for the device to go quiet, and measure again.",
                punted * 100.0,
                load.name(),
                Bytes(foreign)
            ),
            vec![format!(
                "{} completed {foreign_ios} requests that were not the job's ({:.0}% of all it did)",
                load.name(),
                share * 100.0
            )],
        )
    })
}

/// An O_DIRECT job whose device did a large share of requests that were not the job's: the
/// device served another load too, so its figures are not the job's alone.
pub fn other_load_on_device(facts: &Facts<'_>) -> Option<Finding> {
    facts.loads.iter().filter(|l| l.only_direct()).find_map(|load| {
        if !load.shared_with(FOREIGN_SHARE) {
            return None;
        }
        let (foreign, share) = load.foreign_ios();
        let bytes_share = load.foreign_bytes_share();
        Finding::new(
            Bottleneck::OtherLoad,
            format!(
                "Another load shared {}: {foreign} of the requests it completed ({:.0}%, {:.0}% of its bytes) were not the job's{}, so the run was disturbed and its figures are not the device's alone; measure again when the device is quiet.",
                load.name(),
                share * 100.0,
                bytes_share * 100.0,
                who_else(facts, load)
            ),
            vec![device_line(load)],
        )
    })
}

/// ", most of them by dd (pid 4242), which wrote 812 MiB in the window" or the writeback. A
/// process whose open files were all on other devices is not named: /proc/<pid>/io says how
/// much a process moved, not where.
fn who_else(facts: &Facts<'_>, load: &Load<'_>) -> String {
    let movers = || facts.outside_owners().filter(|o| o.kind == OwnerKind::Process && o.io_bytes() > 0);
    let elsewhere = |o: &CpuOwner| {
        o.devices.as_ref().is_some_and(|d| !d.is_empty() && !d.iter().any(|name| name == load.name()))
    };
    let process = movers().filter(|o| !elsewhere(o)).max_by_key(|o| o.io_bytes());
    let mut words = String::new();
    if let Some(writeback) = writeback_words(facts, load) {
        words.push_str(&format!("; it was {writeback}"));
    }
    if let Some(p) = process {
        let pids: Vec<String> = p.pids.iter().map(u32::to_string).collect();
        let pid = if pids.is_empty() { String::new() } else { format!(" (pid {})", pids.join(", ")) };
        words.push_str(&format!(
            "; the busiest other I/O in the window was {}{pid}, which read {} and wrote {}",
            p.name,
            Bytes(p.read_bytes.unwrap_or(0)),
            Bytes(p.write_bytes.unwrap_or(0))
        ));
    }
    if !words.is_empty() {
        return words;
    }
    let others: Vec<String> = movers()
        .filter(|o| elsewhere(o))
        .map(|o| format!("{} on {}", o.name, o.devices.as_deref().unwrap_or_default().join(", ")))
        .collect();
    if !others.is_empty() {
        return format!(
            "; no process's open files were on {}: those with I/O in the window worked other devices ({})",
            load.name(),
            others.join("; ")
        );
    }
    if facts.machine.is_some() {
        "; no process's I/O in the window shows whose (it ended before the window, or its /proc/<pid>/io could not be read: other users' processes need root)".into()
    } else {
        String::new()
    }
}

/// The device's queue is smaller than what the job kept outstanding, and sat full. Buffered
/// I/O is left out: readahead and writeback, not --qd, decide what reaches the device.
pub fn queue_full(facts: &Facts<'_>) -> Option<Finding> {
    let punted = facts.uring && facts.class(ThreadClass::IoWq).is_some();
    facts.loads.iter().filter(|l| !l.buffered).find_map(|load| {
        let (limit, what) = load.queue_limit()?;
        let full_share = if punted { PUNTED_FULL_QUEUE_SHARE } else { FULL_QUEUE_SHARE };
        if load.asked_requests() <= limit || load.activity.avg_queue < limit * full_share {
            return None;
        }
        let overflow = match facts.class(ThreadClass::IoWq).filter(|_| punted) {
            Some(io_wq) => format!(
                "; io_uring punted the overflow to {} io-wq threads ({:.0}% of iolab's CPU), where requests wait for a free tag",
                io_wq.threads,
                facts.io_wq_share() * 100.0
            ),
            None => String::new(),
        };
        Finding::new(
            Bottleneck::Queue,
            format!("The job kept {} I/Os outstanding on {}, but {what}: the queue sat full ({:.1} on average) and the rest waited in the kernel{overflow}, so more QD adds latency, not IOPS.", count(load.asked), load.name(), load.activity.avg_queue),
            vec![device_line(load)],
        )
    })
}

/// The device was busy all the time, holding what the job kept outstanding.
pub fn device_busy(facts: &Facts<'_>) -> Option<Finding> {
    facts.loads.iter().filter(|l| l.busy()).find_map(|load| {
        // One request at a time keeps any device busy without showing what it could do with
        // more: that is the job's concurrency, even for a disk, which reorders a queue.
        let one_at_a_time = load.asked <= 1.0;
        (load.held() && !one_at_a_time).then(|| Finding {
            advice: None,
            cause: Bottleneck::Device,
            summary: format!("{} was busy {:.0}% of the window with the job's requests waiting in it, not in iolab; utilization alone does not prove saturation for a device that serves requests in parallel (SSD, NVMe): a QD sweep does.", load.name(), load.busy_pct()),
            lead: vec![device_line(load)],
        })
    })
}
