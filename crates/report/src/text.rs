//! The terminal report: what ran, throughput, the latency distribution, CPU, the devices behind
//! the targets, anything that went wrong, and what limited the job, in that order.

use std::fmt::Write;

use iolab_stats::result::{
    DeviceActivity, GroupResult, JobResult, LatencySummary, OpSummary, RateReport, RunReport, StopReason,
    Verdict,
};

use iolab_spec::printable::Shown;
use iolab_stats::format::{latency, thousands};

pub fn render_text(report: &RunReport) -> String {
    let mut out = String::new();
    for job in &report.jobs {
        job_text(&mut out, job);
    }
    if report.peak_rss_bytes > 0 {
        let _ = writeln!(out, "iolab's peak resident memory: {}", iolab_spec::Bytes(report.peak_rss_bytes));
    }
    if report.interrupted {
        out.push_str("INTERRUPTED: these are the results gathered before the stop.\n");
    }
    crate::shown(out)
}

fn stop_words(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Runtime => "runtime reached",
        StopReason::IoLimit => "I/O limit reached",
        StopReason::Interrupted => "INTERRUPTED",
        StopReason::IoError => "STOPPED BY AN I/O ERROR",
        StopReason::StuckIo => "STOPPED: A REQUEST NEVER COMPLETED",
        StopReason::EngineError => "STOPPED BY AN ENGINE FAILURE",
    }
}

fn job_text(out: &mut String, job: &JobResult) {
    let _ = writeln!(
        out,
        "job '{}': {:.2} s measured after {:.1} s ramp ({})",
        Shown(&job.name),
        job.measured_s,
        job.ramp_s,
        stop_words(job.stop_reason)
    );
    let many = job.groups.len() > 1;
    for (group, spec) in job.groups.iter().zip(&job.spec.groups) {
        let direct = if spec.target.direct { "O_DIRECT" } else { "buffered" };
        let workers =
            if group.workers == 1 { "1 worker".to_string() } else { format!("{} workers", group.workers) };
        let engine = if group.engine_setup.is_empty() {
            group.engine.clone()
        } else {
            format!("{} ({})", group.engine, group.engine_setup.join("+"))
        };
        let pinned = if group.cpus.is_empty() {
            String::new()
        } else {
            format!(
                ", pinned to CPUs {}",
                group.cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
            )
        };
        let paths: Vec<String> = group.targets.iter().map(|t| Shown(&t.path).to_string()).collect();
        let layout = match group.stripe_bytes {
            Some(stripe) => format!(" striped in {} chunks", iolab_spec::Bytes(stripe)),
            None if paths.len() > 1 => " in turn".to_string(),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "  {}{}, QD {} x {}, {engine}{pinned}, {direct} -> {}{layout}",
            if many { format!("group '{}': ", Shown(&group.name)) } else { String::new() },
            group.access,
            group.qd,
            workers,
            paths.join(" + "),
        );
        if let Some(blocks) = &group.blocks {
            let _ = writeln!(out, "    {}", blocks_touched(blocks));
        }
        if let Some(data) = &group.data {
            let _ = writeln!(out, "    {}", data.line());
        }
    }
    out.push('\n');
    for group in &job.groups {
        if many {
            let _ = writeln!(out, "group '{}'", Shown(&group.name));
            tables(out, &group.read, &group.write, &group.total, response(group));
            rate_line(out, group);
        }
        if group.targets.len() > 1 {
            per_target(out, group);
        }
    }
    if many {
        let _ = writeln!(out, "all groups");
    }
    // One group: the job's figures are the group's, its response time included.
    let single = job.groups.first().filter(|_| !many);
    tables(out, &job.read, &job.write, &job.total, single.and_then(response));
    if let Some(group) = single {
        rate_line(out, group);
    }
    if let Some(fleet) = &job.fleet {
        crate::fleet::fleet_text(out, fleet);
    }
    cpu_text(out, job);
    for device in &job.devices {
        device_text(out, device);
    }
    problems_text(out, job);
    for note in &job.notes {
        let _ = writeln!(out, "note: {note}");
    }
    verdict_text(out, &job.verdict);
    out.push('\n');
}

/// "  device vda: 97% busy, avg queue 31.6, 12,345 IOPS (12,300 read, 45 write), await read
/// 2.51ms write 880us; mq-deadline, nr_requests 256, hw queue depth 128, rotational".
fn device_text(out: &mut String, d: &DeviceActivity) {
    let await_words: Vec<String> = [("read", d.read_await_us), ("write", d.write_await_us)]
        .iter()
        .filter_map(|(what, us)| us.map(|us| format!("{what} {}", latency(us * 1e3))))
        .collect();
    let mut queue = Vec::new();
    if let Some(scheduler) = &d.queue.scheduler {
        queue.push(scheduler.clone());
    }
    if let Some(nr) = d.queue.nr_requests {
        queue.push(format!("nr_requests {nr}"));
    }
    if let Some(depth) = d.queue.hw_queue_depth {
        let queues = d.queue.hw_queues.filter(|&n| n > 1).map_or(String::new(), |n| format!(" x {n} queues"));
        queue.push(format!("hw queue depth {depth}{queues}"));
    }
    match d.queue.rotational {
        Some(true) => queue.push("rotational".into()),
        Some(false) => queue.push("non-rotational".into()),
        None => {}
    }
    let _ = writeln!(
        out,
        "  device {}: {:.0}% busy, avg queue {:.1}, {} IOPS ({} reads and {} writes completed){}{}",
        d.device,
        d.util_pct,
        d.avg_queue,
        thousands(d.iops),
        thousands(d.reads as f64),
        thousands(d.writes as f64),
        if await_words.is_empty() { String::new() } else { format!(", await {}", await_words.join(" ")) },
        if queue.is_empty() { String::new() } else { format!("; {}", queue.join(", ")) },
    );
}

/// "Bottleneck: device — vda was busy 97% ..." and the evidence, indented.
fn verdict_text(out: &mut String, verdict: &Verdict) {
    if verdict.summary.is_empty() {
        return;
    }
    let _ = writeln!(out, "Bottleneck: {} — {}", verdict.cause.name(), verdict.summary);
    for line in &verdict.evidence {
        let _ = writeln!(out, "    {line}");
    }
}

fn rows<'a>(
    read: &'a OpSummary,
    write: &'a OpSummary,
    total: &'a OpSummary,
) -> Vec<(&'static str, &'a OpSummary)> {
    let mut rows = Vec::new();
    if read.ios > 0 {
        rows.push(("read", read));
    }
    if write.ios > 0 {
        rows.push(("write", write));
    }
    if rows.len() != 1 {
        rows.push(("total", total));
    }
    rows
}

/// The response-time summary of an open-loop group.
fn response(group: &GroupResult) -> Option<&LatencySummary> {
    group.rate.as_ref().and_then(|rate| rate.response.as_ref())
}

/// "target 2,000 IOPS uniform: achieved 1,999 IOPS (1,999 of 2,000 scheduled I/Os), sustained;
/// I/Os started at most 85.0us late", or "... NOT sustained: 38% short, I/Os started up to
/// 850ms late".
pub fn rate_summary(rate: &RateReport) -> String {
    let head = format!(
        "target {} IOPS {}: achieved {} IOPS ({} of {} scheduled I/Os)",
        thousands(rate.target_iops),
        rate.arrival,
        thousands(rate.achieved_iops),
        thousands(rate.completed_ios as f64),
        thousands(rate.scheduled_ios as f64),
    );
    let lag = latency(rate.max_lag_ns as f64);
    if rate.sustained {
        format!("{head}, sustained; I/Os started at most {lag} late")
    } else {
        // Whole percents, except where that would read as 0% or 100%.
        let short = if (10.0..99.5).contains(&rate.shortfall_pct) {
            format!("{:.0}", rate.shortfall_pct)
        } else {
            format!("{:.1}", rate.shortfall_pct)
        };
        format!("{head}, NOT sustained: {short}% short, I/Os started up to {lag} late")
    }
}

fn rate_line(out: &mut String, group: &GroupResult) {
    if let Some(rate) = &group.rate {
        let _ = writeln!(out, "  rate  {}", rate_summary(rate));
        out.push('\n');
    }
}

fn tables(
    out: &mut String,
    read: &OpSummary,
    write: &OpSummary,
    total: &OpSummary,
    response: Option<&LatencySummary>,
) {
    let rows = rows(read, write, total);
    let _ = writeln!(out, "  {:<6}{:>14}{:>11}{:>11}{:>15}", "", "IOPS", "MB/s", "MiB/s", "I/Os");
    for (name, s) in &rows {
        let _ = writeln!(
            out,
            "  {:<6}{:>14}{:>11.2}{:>11.2}{:>15}",
            name,
            thousands(s.iops),
            s.mb_s,
            s.mib_s,
            thousands(s.ios as f64)
        );
    }
    out.push('\n');
    let mut with_latency: Vec<_> =
        rows.iter().filter_map(|(n, s)| s.latency.as_ref().map(|l| (*n, l))).collect();
    // Open loop: response time (from the scheduled time) under the service times.
    with_latency.extend(response.map(|l| ("resp", l)));
    let Some((_, first)) = with_latency.first() else { return };
    let _ = write!(out, "  {:<6}{:>9}{:>9}{:>9}{:>9}", "lat", "min", "mean", "stdev", "max");
    for p in &first.percentiles {
        let _ = write!(out, "{:>9}", format!("p{}", p.p));
    }
    out.push('\n');
    for (name, l) in &with_latency {
        let _ = write!(
            out,
            "  {:<6}{:>9}{:>9}{:>9}{:>9}",
            name,
            latency(l.min_ns as f64),
            latency(l.mean_ns),
            latency(l.stdev_ns),
            latency(l.max_ns as f64)
        );
        for p in &l.percentiles {
            let _ = write!(out, "{:>9}", latency(p.ns as f64));
        }
        out.push('\n');
    }
    for (name, l) in &with_latency {
        let shares: Vec<String> = l
            .within
            .iter()
            .map(|w| format!("{}: {:.4}%", iolab_spec::Nanos(w.threshold_ns), w.pct))
            .collect();
        let _ = writeln!(out, "  {:<6}within {}", name, shares.join("  "));
    }
    for (name, tail) in with_latency.iter().filter_map(|(n, l)| l.tail.map(|t| (n, t))) {
        let _ = writeln!(out, "  {:<6}the mean is the tail's: {}", name, tail.sentence());
    }
    if response.is_some() {
        let _ = writeln!(
            out,
            "  (read/write/total: service time, from submission; resp: response time, from the scheduled time)"
        );
    }
    out.push('\n');
}

/// One line per target of a group with several.
fn per_target(out: &mut String, group: &iolab_stats::result::GroupResult) {
    let _ = writeln!(out, "  {:<24}{:>14}{:>11}{:>9}{:>9}", "target", "IOPS", "MB/s", "mean", "p99");
    for target in &group.targets {
        let t = &target.total;
        let (mean, p99) =
            t.latency.as_ref().map_or((0.0, 0.0), |l| (l.mean_ns, l.percentile(99.0).unwrap_or(0) as f64));
        let _ = writeln!(
            out,
            "  {:<24}{:>14}{:>11.2}{:>9}{:>9}",
            Shown(&target.path),
            thousands(t.iops),
            t.mb_s,
            latency(mean),
            latency(p99)
        );
    }
    out.push('\n');
}

fn cpu_text(out: &mut String, job: &JobResult) {
    let cpu = &job.cpu;
    let cores: Vec<String> = cpu.machine_busy_pct.iter().map(|p| format!("{p:.0}%")).collect();
    let _ = writeln!(
        out,
        "  cpu   {:.2} s user + {:.2} s system (whole process, io_uring workers included) = {:.2} us per I/O; machine busy per core: {}",
        cpu.user_s,
        cpu.system_s,
        cpu.us_per_io,
        if cores.is_empty() { "n/a".to_string() } else { cores.join(" ") }
    );
    if cpu.threads.is_empty() {
        return;
    }
    let classes: Vec<String> = cpu
        .threads
        .iter()
        .map(|t| {
            let plural = if t.threads == 1 { "" } else { "s" };
            format!(
                "{} {:.2} s ({} thread{plural}, busiest {:.0}%)",
                t.class.name(),
                t.user_s + t.system_s,
                t.threads,
                t.busiest_thread_pct
            )
        })
        .collect();
    let unattributed = if cpu.unattributed_s >= 0.01 {
        format!("; {:.2} s in threads that exited", cpu.unattributed_s)
    } else {
        String::new()
    };
    let _ = writeln!(out, "  cpu by thread: {}{unattributed}", classes.join(", "));
    machine_text(out, job);
    slots_text(out, job);
}

/// "slots: 32 = 26.0 in flight (latency 87.0us) + 6.0 awaiting resubmission in iolab (gap 20.3us);
/// Little's law 295,504 IOPS x 108us = 32.0".
fn slots_text(out: &mut String, job: &JobResult) {
    let Some(s) = job.slots.filter(|s| s.ios > 0) else { return };
    let _ = writeln!(
        out,
        "  slots {:.0} = {:.1} in flight (hand-over to reap: the latency figures) + {:.1} reaped in iolab awaiting resubmission (mean gap {}); Little's law: {} IOPS x {} cycle = {:.1}",
        s.slots,
        s.in_flight,
        s.awaiting_resubmission,
        latency(s.mean_gap_ns),
        thousands(job.total.iops),
        latency(s.mean_cycle_ns),
        s.littles_law_slots
    );
    if s.waits_with_free_slots > 0 {
        let _ = writeln!(
            out,
            "  the lanes waited for completions {} times with a slot free and I/O due: the engine refused the request (its queue was full), so fewer I/Os were in flight than asked",
            thousands(s.waits_with_free_slots as f64)
        );
    }
    let spans = s.fio_spans;
    if spans.lat_mean_ns > 0.0 {
        let _ = writeln!(
            out,
            "  in fio's names: clat {} (hand-over to reap: iolab's latency) + slat {} (reap to the next hand-over: iolab's gap, where fio's slat and free-list time fall) = lat {} (fio's lat, an I/O's whole cycle)",
            latency(spans.clat_mean_ns),
            latency(spans.slat_mean_ns),
            latency(spans.lat_mean_ns)
        );
    }
}

/// Owners of the machine's CPU the text report names; JSON keeps all of them.
const OWNERS_SHOWN: usize = 6;

/// "machine by owner (2 cores, 3.0 s): iolab workers 1.85 (busiest 62%), loop0 workers 1.67
/// (2 threads, busiest kworker/u8:2-loop0 34%), ...; cores: cpu0 user 0% sys 69% irq 0%
/// softirq 18% iowait 2% steal 0%, ...".
fn machine_text(out: &mut String, job: &JobResult) {
    let Some(machine) = &job.machine else { return };
    let owners: Vec<String> = machine
        .owners
        .iter()
        .take(OWNERS_SHOWN)
        .map(|o| {
            let threads = if o.threads == 1 { String::new() } else { format!("{} threads, ", o.threads) };
            format!(
                "{} {:.2} ({threads}busiest {} {:.0}%)",
                Shown(&o.name),
                o.cpu_s,
                Shown(&o.busiest_thread),
                o.busiest_thread_pct
            )
        })
        .collect();
    let more = machine.owners.len().saturating_sub(OWNERS_SHOWN);
    let more = if more > 0 { format!(", {more} more in the JSON") } else { String::new() };
    let _ = writeln!(
        out,
        "  machine by owner, core-seconds ({} cores x {:.1} s): {}{more}",
        machine.cores,
        machine.window_s,
        owners.join(", ")
    );
    let cores: Vec<String> = machine
        .cpus
        .iter()
        .map(|c| {
            format!(
                "cpu{} user {:.0}% sys {:.0}% irq {:.0}% softirq {:.0}% iowait {:.0}% steal {:.0}%",
                c.cpu,
                c.user_pct + c.nice_pct,
                c.system_pct,
                c.irq_pct,
                c.softirq_pct,
                c.iowait_pct,
                c.steal_pct
            )
        })
        .collect();
    if !cores.is_empty() {
        let _ = writeln!(out, "  cores: {}", cores.join("; "));
    }
}

fn problems_text(out: &mut String, job: &JobResult) {
    let errors = &job.errors;
    if errors.count > 0 {
        let _ = writeln!(out, "  ERRORS: {} I/Os failed; the first:", errors.count);
        for e in &errors.first {
            let _ = writeln!(
                out,
                "    {} {} offset {} length {}: {}",
                e.target, e.op, e.offset, e.len, e.message
            );
        }
    }
    if let Some(stuck) = &errors.stuck {
        let _ = writeln!(
            out,
            "  STUCK: group '{}' thread {} on {} had {} request(s) outstanding for {} ms with no completion; the run was stopped",
            stuck.group, stuck.thread, stuck.target, stuck.in_flight, stuck.outstanding_ms
        );
    }
    if let Some(engine) = &errors.engine {
        let _ = writeln!(out, "  ENGINE FAILURE: {engine}");
    }
    if let Some(verify) = &job.verify {
        for line in verify.text() {
            let _ = writeln!(out, "  {}", Shown(&line));
        }
    }
}

/// "blocks touched: 63.2% of 262,144 4KiB blocks (counted)".
fn blocks_touched(blocks: &iolab_stats::result::BlockCoverage) -> String {
    format!(
        "blocks touched: {:.1}% of {} {} blocks ({})",
        blocks.touched_pct,
        iolab_stats::format::thousands(blocks.blocks as f64),
        iolab_spec::Bytes(blocks.block_bytes),
        if blocks.sampled { "estimated from a fixed sample" } else { "counted" }
    )
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
