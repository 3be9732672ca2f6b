//! The figures every verdict shows after those that decided it: each device, each target no
//! device served, iolab's threads, the cores, and the biggest users of the machine outside iolab.

use iolab_stats::format::{latency, thousands};
use iolab_stats::threads::ThreadClass;

use iolab_spec::Bytes;

use super::facts::{Facts, Load, FOREIGN_IOS_SLACK, FOREIGN_QUEUE_SLACK};
use super::words::{count, micros, owner};
use super::writeback::writeback_seen;
use crate::cpu;

/// Owners outside iolab the evidence names.
const OUTSIDE_OWNERS_SHOWN: usize = 3;
/// An owner outside iolab is worth naming from this share of one core over the window.
const NOTABLE_OWNER_PCT: f64 = 5.0;
/// Interrupt or steal time worth a line, as a share of a core.
const NOTABLE_CORE_PCT: f64 = 5.0;

pub fn lines(facts: &Facts<'_>) -> Vec<String> {
    let job = facts.job;
    let mut lines: Vec<String> = facts.loads.iter().map(device_line).collect();
    for load in facts.loads.iter().filter(|l| l.only_direct()) {
        let device_ios = load.activity.reads + load.activity.writes;
        // Requests over the job's with bytes behind them: another load's, not the job's split.
        if device_ios as f64 > load.job_requests() as f64 * FOREIGN_IOS_SLACK && load.shared_with(0.0) {
            lines.push(format!(
                "{} also served other I/O (other processes', or the filesystem's own): it completed {device_ios} requests, the job's I/Os {}; its figures include that load",
                load.name(),
                job_requests_words(load)
            ));
        } else if load.activity.avg_queue > load.asked_requests() * FOREIGN_QUEUE_SLACK {
            lines.push(format!(
                "{} held more requests on average ({:.1}) than the {}: other I/O shared it, and its queue and await figures include that load",
                load.name(),
                load.activity.avg_queue,
                asked_words(load)
            ));
        }
    }
    lines.extend(slots_line(facts));
    lines.extend(facts.in_memory.iter().map(|p| format!("{p} lives in memory (tmpfs): no device served it")));
    lines.extend(facts.unseen.iter().map(|p| format!("no block device behind {p} that iolab can read")));
    lines.extend(worker_line(facts));
    lines.extend(lane_waits_lines(facts));
    lines.extend(limit_lines(facts));
    if let Some(sqpoll) = facts.class(ThreadClass::Sqpoll) {
        lines.push(format!(
            "the SQPOLL thread was {:.0}% busy (it spins while it waits for work)",
            sqpoll.busiest_thread_pct
        ));
    }
    if let Some(io_wq) = facts.class(ThreadClass::IoWq) {
        if cpu::process_s(job) > 0.0 {
            lines.push(format!(
                "{} io-wq kernel thread(s) used {:.0}% of iolab's CPU (requests io_uring punted); the busiest ran {:.0}% of a core",
                io_wq.threads,
                facts.io_wq_share() * 100.0,
                io_wq.busiest_thread_pct
            ));
        }
    }
    lines.extend(machine_line(facts));
    lines.extend(writeback_seen(facts));
    lines.extend(outside_line(facts));
    lines.extend(core_time_line(facts));
    lines.extend(pressure_line(facts));
    if !facts.cpu_known {
        lines.push("no CPU figures were taken".into());
    }
    lines
}

/// Where the lanes, and io_uring's io-wq workers, waited most: "the submitting threads ran or
/// waited for a CPU 36% of their time (schedstat) and slept 64%: in __iomap_dio_rw 44%,
/// balance_dirty_pages 20% (as 200 samples of one thread each, every 20 ms, found them)" (the
/// three largest named).
fn lane_waits_lines(facts: &Facts<'_>) -> Vec<String> {
    let cpu = &facts.job.cpu;
    [(&cpu.lane_waits, "the submitting threads"), (&cpu.io_wq_waits, "io_uring's io-wq threads")]
        .into_iter()
        .filter_map(|(waits, who)| {
            let waits = waits.as_ref()?;
            let running = waits.running_pct();
            let asleep: Vec<String> =
                waits.named_sleeps().take(3).map(|(function, pct)| format!("{function} {pct:.0}%")).collect();
            let asleep = if asleep.is_empty() { String::new() } else { format!(": in {}", asleep.join(", ")) };
            let source = if waits.watched_ns > 0 { " (schedstat)" } else { " (samples)" };
            Some(format!(
                "{who} ran or waited for a CPU {running:.0}% of their time{source} and slept {:.0}%{asleep} (as {} samples of one thread each, every 20 ms, found them)",
                100.0 - running,
                thousands(waits.samples as f64)
            ))
        })
        .collect()
}

/// "vda: busy 97% of the window, 31.6 requests in it on average of the 32 the job kept
/// outstanding, 12,345 IOPS, read await 2.51 ms".
pub fn device_line(load: &Load<'_>) -> String {
    let a = load.activity;
    let busy = if load.busy_pct() > a.util_pct + 5.0 {
        format!(
            "busy {:.0}% of the window by io_ticks, at least {:.0}% by its queue",
            a.util_pct,
            load.busy_pct()
        )
    } else {
        format!("busy {:.0}% of the window", a.util_pct)
    };
    let mut line = format!("{}: {busy}, {}, {:.0} IOPS", a.device, queue_words(load), a.iops);
    for (what, value) in [("read", a.read_await_us), ("write", a.write_await_us)] {
        if let Some(us) = value {
            line.push_str(&format!(", {what} await {}", micros(us)));
        }
    }
    if let Some(split) = load.split() {
        line.push_str(&format!(
            "; each {} I/O of the job became up to {} requests (a request holds at most {}: {})",
            Bytes(split.io_bytes),
            count(split.requests),
            Bytes(split.request_bytes),
            split.limit
        ));
    }
    line
}

/// "8192", or "8192 (16384 requests, split)" where the block layer split them.
fn job_requests_words(load: &Load<'_>) -> String {
    match load.split() {
        Some(split) => format!(
            "{} ({} requests at most, each I/O split in {})",
            load.job_ios,
            load.job_requests(),
            count(split.requests)
        ),
        None => load.job_ios.to_string(),
    }
}

/// "where the 32 outstanding I/Os were: 20.0 in loop0, 5.9 in flight outside it (being
/// submitted, or completed and not yet reaped), 6.1 reaped in iolab awaiting resubmission (a
/// slot's mean gap 20.3us); Little's law: 298,502 IOPS x 107.2us = 32.0".
pub fn slots_line(facts: &Facts<'_>) -> Option<String> {
    let slots = facts.job.slots.filter(|s| s.ios > 0)?;
    let mut parts = Vec::new();
    if let Some((names, held, outside)) = facts.in_flight_split() {
        parts.push(format!("{held:.1} in {}", names.join(" + ")));
        parts.push(format!(
            "{outside:.1} in flight outside it (being submitted, or completed and not yet reaped)"
        ));
    } else {
        parts.push(format!("{:.1} in flight (handed over, not yet reaped)", slots.in_flight));
    }
    parts.push(format!(
        "{:.1} reaped in iolab awaiting resubmission (a slot's mean gap {})",
        slots.awaiting_resubmission,
        latency(slots.mean_gap_ns)
    ));
    Some(format!(
        "where the {} outstanding I/Os were: {}; Little's law: {} IOPS x {} = {:.1}",
        count(slots.slots),
        parts.join(", "),
        thousands(facts.job.total.iops),
        latency(slots.mean_cycle_ns),
        slots.littles_law_slots
    ))
}

/// "31.6 requests in it on average of the 32 the job kept outstanding", or where the block
/// layer split each I/O, "of the 64 requests the job's 32 outstanding I/Os became".
pub fn queue_words(load: &Load<'_>) -> String {
    format!("{:.1} requests in it on average of the {}", load.activity.avg_queue, asked_words(load))
}

/// "32 the job kept outstanding", or "64 requests the job's 32 outstanding I/Os became".
fn asked_words(load: &Load<'_>) -> String {
    match load.split() {
        Some(_) => format!(
            "{} requests the job's {} outstanding I/O{} became",
            count(load.asked_requests()),
            count(load.asked),
            if load.asked == 1.0 { "" } else { "s" }
        ),
        None => format!("{} the job kept outstanding", count(load.asked)),
    }
}

pub fn worker_line(facts: &Facts<'_>) -> Option<String> {
    let worker = facts.class(ThreadClass::Worker)?;
    let total = worker.user_s + worker.system_s;
    let kernel = if total > 0.0 { worker.system_s / total * 100.0 } else { 0.0 };
    let mut line = format!(
        "busiest submitting thread {:.0}% busy; the submitting threads spent {kernel:.0}% of their CPU in the kernel",
        worker.busiest_thread_pct
    );
    if worker.busiest_demand_pct > worker.busiest_thread_pct + NOTABLE_CORE_PCT {
        line.push_str(&format!(
            "; it was running or waiting for a CPU {:.0}% of the window",
            worker.busiest_demand_pct
        ));
    }
    if facts.iopoll {
        line.push_str(" (busy polling for completions too: --hipri)");
    } else if facts.completion_watch {
        line.push_str(" (busy watching for completions too: --completion-watch)");
    }
    Some(line)
}

pub fn machine_line(facts: &Facts<'_>) -> Option<String> {
    let job = facts.job;
    let cores = &job.cpu.machine_busy_pct;
    if cores.is_empty() {
        return None;
    }
    let each: Vec<String> = cores.iter().map(|p| format!("{p:.0}%")).collect();
    let mut line = format!("cores busy {} (mean {:.0}%)", each.join(" "), cpu::machine_busy_pct(job));
    if job.measured_s > 0.0 {
        line.push_str(&format!(
            "; iolab used {:.2} of the {} cores",
            cpu::process_s(job) / job.measured_s,
            cores.len()
        ));
    }
    Some(line)
}

/// "outside iolab: loop0 workers 1.67 core-seconds (...), ksoftirqd 0.98 core-seconds (...)":
/// the biggest, and the kernel threads that serve the job's devices wherever they rank (on a
/// machine busy with another load they are part of the I/O path all the same).
fn outside_line(facts: &Facts<'_>) -> Option<String> {
    let window_s = facts.machine?.window_s;
    let biggest: Vec<_> = facts
        .outside_owners()
        .filter(|o| window_s > 0.0 && o.cpu_s / window_s * 100.0 >= NOTABLE_OWNER_PCT)
        .take(OUTSIDE_OWNERS_SHOWN)
        .collect();
    let serving = facts.serving_owners().into_iter().map(|(o, _)| o).filter(|o| o.cpu_s > 0.0);
    let unnamed_serving: Vec<_> = serving.filter(|o| !biggest.iter().any(|b| std::ptr::eq(*b, *o))).collect();
    let mut named: Vec<String> = biggest.into_iter().map(owner).collect();
    named.extend(unnamed_serving.into_iter().map(owner));
    (!named.is_empty()).then(|| format!("outside iolab: {}", named.join("; ")))
}

/// "interrupts and softirqs took 18% of cpu0; the hypervisor took 12% of the cores (steal)".
fn core_time_line(facts: &Facts<'_>) -> Option<String> {
    let mut parts: Vec<String> = facts
        .cores()
        .iter()
        .filter(|c| c.interrupts_pct() >= NOTABLE_CORE_PCT)
        .map(|c| format!("interrupts and softirqs took {:.0}% of cpu{}", c.interrupts_pct(), c.cpu))
        .collect();
    if facts.steal_pct() >= NOTABLE_CORE_PCT {
        parts.push(format!("the hypervisor took {:.0}% of the cores (steal)", facts.steal_pct()));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The configuration's limits, whether or not they decided: a quota and how often it ran out, a
/// narrowed affinity mask, and what of them could not be read.
/// "pressure stalls over the window (PSI): cpu some 44%; io some 6%, full 1%; memory some 0%;
/// in cgroup /ci: io some 3%", or what kept the figures from being read.
fn pressure_line(facts: &Facts<'_>) -> Option<String> {
    let pressure = &facts.machine?.pressure;
    let scope = |machine: bool| {
        let each: Vec<String> = iolab_stats::pressure::RESOURCES
            .iter()
            .filter_map(|resource| pressure.stall(resource, machine))
            .map(|stall| match stall.full_pct.filter(|&full| full >= 0.5) {
                Some(full) => format!("{} some {:.0}%, full {full:.0}%", stall.resource, stall.some_pct),
                None => format!("{} some {:.0}%", stall.resource, stall.some_pct),
            })
            .collect();
        (!each.is_empty()).then(|| each.join("; "))
    };
    let cgroup = pressure.stalls.iter().find_map(|s| s.cgroup.as_deref());
    match (scope(true), scope(false), cgroup) {
        (Some(machine), Some(own), Some(cgroup)) => {
            Some(format!("pressure stalls over the window (PSI): {machine}; in cgroup {cgroup}: {own}"))
        }
        (Some(machine), _, _) => Some(format!("pressure stalls over the window (PSI): {machine}")),
        _ => pressure.unread.first().map(|why| format!("no pressure stall figures (PSI): {why}")),
    }
}

fn limit_lines(facts: &Facts<'_>) -> Vec<String> {
    let Some(limits) = facts.machine.map(|m| &m.limits) else { return Vec::new() };
    let mut lines = Vec::new();
    if let Some(quota) = &limits.cpu_quota {
        lines.push(format!(
            "cgroup {} has a CPU quota of {:.2} cores; it ran out in {} of the window's {} periods ({:.2} s throttled)",
            quota.cgroup,
            quota.cores(),
            quota.throttled_periods,
            quota.periods,
            quota.throttled_s
        ));
    }
    for t in &limits.io_throttles {
        lines.push(format!(
            "cgroup {} caps {} at {} {} {} ({})",
            t.cgroup,
            t.device.as_deref().unwrap_or(&t.devnum),
            t.limit,
            t.op,
            if t.unit == "iops" { "IOPS" } else { "bytes/s" },
            t.source
        ));
    }
    if let Some(affinity) = limits.affinity.as_ref().filter(|a| a.narrowed()) {
        let cpus: Vec<String> = affinity.allowed.iter().map(u32::to_string).collect();
        let source = affinity
            .cpuset
            .as_ref()
            .map_or(String::new(), |c| format!(", from the cpuset of cgroup {}", c.cgroup));
        lines.push(format!(
            "iolab's affinity mask allows CPU {} of {}{source}",
            cpus.join(","),
            affinity.online
        ));
    }
    if let Some(memory) = &limits.memory {
        let words = match (memory.max_bytes, memory.high_bytes) {
            (Some(max), Some(high)) => {
                format!("to {}, reclaimed from {} (memory.high)", Bytes(max), Bytes(high))
            }
            (Some(max), None) => format!("to {}", Bytes(max)),
            (None, Some(high)) => format!("by reclaim from {} (memory.high)", Bytes(high)),
            (None, None) => String::new(),
        };
        let mut counted = Vec::new();
        if let Some(bytes) = memory.refault_bytes.filter(|&b| b > 0) {
            counted.push(format!("{} of file pages read again after its reclaim evicted them", Bytes(bytes)));
        }
        if let Some(hits) = memory.limit_hits.filter(|&n| n > 0) {
            counted.push(format!("the limit reached {} times", thousands(hits as f64)));
        }
        let counted = if counted.is_empty() {
            String::new()
        } else {
            format!("; in the window {}", counted.join(", "))
        };
        lines.push(format!(
            "cgroup {} limits memory, the page cache included, {words}{counted}",
            memory.cgroup
        ));
    }
    lines.extend(limits.unread.iter().map(|why| format!("not read: {why}")));
    lines
}
