//! What the API ladder found: per rung, IOPS, latency and CPU per I/O split by thread class;
//! then, in plain words, the fastest and the cheapest interface on this target, what io_uring's
//! punting to io-wq threads cost, and what each io_uring refinement changed.
//!
//! Rungs run once each, so differences under `NOISE_PCT` are called "no measurable difference"
//! (io-wq paths vary 6-9% from run to run on this class of machine; repeat the ladder to judge
//! smaller ones).

use iolab_spec::ladder::Rung;
use iolab_stats::format::thousands;
use iolab_stats::machine::OwnerKind;
use iolab_stats::result::JobResult;
use iolab_stats::threads::ThreadClass;
use serde::{Deserialize, Serialize};

use crate::cpu;

/// Differences smaller than this, in percent, are not called differences.
pub const NOISE_PCT: f64 = 3.0;

/// io-wq threads taking this share of a rung's CPU or more mean io_uring punted its requests.
pub const PUNT_SHARE_PCT: f64 = 10.0;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LadderRow {
    pub rung: Rung,
    pub name: String,
    pub what: String,
    /// Why the rung did not run (e.g. no poll queues), else `None`.
    pub skipped: Option<String>,
    /// What the kernel granted the engine.
    pub engine_setup: Vec<String>,
    pub iops: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    /// Process CPU per I/O, and the parts of it spent in each thread class.
    pub cpu_us_per_io: f64,
    pub worker_us_per_io: f64,
    pub io_wq_us_per_io: f64,
    pub sqpoll_us_per_io: f64,
    pub io_wq_threads: u32,
    /// CPU per I/O of the machine outside iolab (kernel threads serving the device, softirqs,
    /// other processes): what an interface moves out of the process is still paid for.
    pub outside_us_per_io: f64,
    /// The rung's own bottleneck verdict, and the busiest owner outside iolab with its share of
    /// one core ("loop0 workers 64%"), when the machine was sampled.
    pub limited_by: String,
    pub busiest_outside: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LadderSummary {
    pub rows: Vec<LadderRow>,
    /// Plain-words findings, most important first.
    pub verdict: Vec<String>,
}

/// One rung's outcome: its job's result, or why it was skipped or failed.
pub struct RungOutcome<'a> {
    pub rung: Rung,
    pub result: Result<&'a JobResult, String>,
}

pub fn summarize(outcomes: &[RungOutcome<'_>]) -> LadderSummary {
    let rows: Vec<LadderRow> = outcomes.iter().map(row).collect();
    let verdict = verdict(&rows);
    LadderSummary { rows, verdict }
}

fn row(outcome: &RungOutcome<'_>) -> LadderRow {
    let rung = outcome.rung;
    let mut row = LadderRow {
        rung,
        name: rung.name().to_string(),
        what: rung.describe().to_string(),
        skipped: None,
        engine_setup: Vec::new(),
        iops: 0.0,
        p50_ns: 0,
        p99_ns: 0,
        cpu_us_per_io: 0.0,
        worker_us_per_io: 0.0,
        io_wq_us_per_io: 0.0,
        sqpoll_us_per_io: 0.0,
        io_wq_threads: 0,
        outside_us_per_io: 0.0,
        limited_by: String::new(),
        busiest_outside: None,
    };
    let job = match &outcome.result {
        Ok(job) => job,
        Err(why) => {
            row.skipped = Some(why.clone());
            return row;
        }
    };
    let ios = job.total.ios as f64;
    let per_io = |seconds: f64| if ios > 0.0 { seconds * 1e6 / ios } else { 0.0 };
    let percentile = |p: f64| {
        job.total.latency.as_ref().and_then(|l| l.percentiles.iter().find(|x| x.p == p)).map_or(0, |x| x.ns)
    };
    let (io_wq_s, io_wq_threads) = cpu::class_s(job, ThreadClass::IoWq);
    LadderRow {
        engine_setup: job.groups.first().map(|g| g.engine_setup.clone()).unwrap_or_default(),
        iops: job.total.iops,
        p50_ns: percentile(50.0),
        p99_ns: percentile(99.0),
        cpu_us_per_io: per_io(cpu::process_s(job)),
        worker_us_per_io: per_io(cpu::class_s(job, ThreadClass::Worker).0),
        io_wq_us_per_io: per_io(io_wq_s),
        sqpoll_us_per_io: per_io(cpu::class_s(job, ThreadClass::Sqpoll).0),
        io_wq_threads,
        outside_us_per_io: per_io(outside_s(job)),
        limited_by: crate::verdict::judge(job).cause.name().to_string(),
        busiest_outside: busiest_outside(job),
        ..row
    }
}

/// Core-seconds the machine spent outside iolab in the window.
pub fn outside_s(job: &JobResult) -> f64 {
    job.machine.iter().flat_map(|m| &m.owners).filter(|o| o.kind != OwnerKind::Iolab).map(|o| o.cpu_s).sum()
}

/// "loop0 workers 64% (kworker/u8:3-loop0)": the biggest owner of CPU outside iolab, as a
/// share of one core over the window.
pub fn busiest_outside(job: &JobResult) -> Option<String> {
    let machine = job.machine.as_ref()?;
    let owner = machine.owners.iter().find(|o| o.kind != OwnerKind::Iolab)?;
    (machine.window_s > 0.0).then(|| {
        format!("{} {:.0}% ({})", owner.name, owner.cpu_s / machine.window_s * 100.0, owner.busiest_thread)
    })
}

fn change_pct(from: f64, to: f64) -> f64 {
    if from > 0.0 {
        (to - from) / from * 100.0
    } else {
        0.0
    }
}

/// "12% less CPU per I/O", "no measurable difference in IOPS".
fn describe_change(what: &str, from: f64, to: f64, lower_is_better: bool) -> String {
    let pct = change_pct(from, to);
    if pct.abs() < NOISE_PCT {
        return format!("no measurable difference in {what}");
    }
    let direction = match (pct < 0.0, lower_is_better) {
        (true, true) | (false, false) => "better",
        _ => "worse",
    };
    format!("{what} {:+.0}% ({direction})", pct)
}

fn verdict(rows: &[LadderRow]) -> Vec<String> {
    let ran: Vec<&LadderRow> = rows.iter().filter(|r| r.skipped.is_none() && r.iops > 0.0).collect();
    let mut words = Vec::new();
    if ran.is_empty() {
        words.push("no rung completed any I/O; nothing to compare".to_string());
        return words;
    }
    let fastest = ran.iter().copied().max_by(|a, b| a.iops.total_cmp(&b.iops));
    let cheapest = ran.iter().copied().min_by(|a, b| a.cpu_us_per_io.total_cmp(&b.cpu_us_per_io));
    if let (Some(fastest), Some(cheapest)) = (fastest, cheapest) {
        words.push(format!(
            "cheapest on this target: {} at {:.2} us of CPU per I/O ({} IOPS); fastest: {} at {} IOPS ({:.2} us per I/O)",
            cheapest.name,
            cheapest.cpu_us_per_io,
            thousands(cheapest.iops),
            fastest.name,
            thousands(fastest.iops),
            fastest.cpu_us_per_io
        ));
    }
    words.extend(punting(&ran));
    let find = |rung: Rung| ran.iter().copied().find(|r| r.rung == rung);
    if let (Some(plain), Some(flags)) = (find(Rung::Uring), find(Rung::UringFlags)) {
        let granted = flags
            .engine_setup
            .iter()
            .filter(|f| matches!(f.as_str(), "single_issuer" | "defer_taskrun" | "coop_taskrun"))
            .cloned()
            .collect::<Vec<_>>();
        if granted.is_empty() {
            // Both rungs ran the same plain ring: a gap between them is not the flags' doing.
            words.push(
                "ring setup flags: none offered by this kernel, so uring+flags ran the same plain ring as uring; any difference between the two is run-to-run variation".into(),
            );
        } else {
            words.push(format!(
                "ring setup flags ({}): {}, {}",
                granted.join("+"),
                describe_change("CPU per I/O", plain.cpu_us_per_io, flags.cpu_us_per_io, true),
                describe_change("IOPS", plain.iops, flags.iops, false)
            ));
        }
    }
    if let (Some(flags), Some(registered)) = (find(Rung::UringFlags), find(Rung::UringRegistered)) {
        words.push(format!(
            "registered files and buffers: {}, {}",
            describe_change("CPU per I/O", flags.cpu_us_per_io, registered.cpu_us_per_io, true),
            describe_change("IOPS", flags.iops, registered.iops, false)
        ));
    }
    if let (Some(registered), Some(sqpoll)) = (find(Rung::UringRegistered), find(Rung::UringSqpoll)) {
        words.push(format!(
            "SQPOLL: the polling thread spends {:.2} us per I/O (it spins for a whole core while busy); {}, {}",
            sqpoll.sqpoll_us_per_io,
            describe_change("total CPU per I/O", registered.cpu_us_per_io, sqpoll.cpu_us_per_io, true),
            describe_change("IOPS", registered.iops, sqpoll.iops, false)
        ));
    }
    for row in rows {
        if let Some(why) = &row.skipped {
            words.push(format!("{} not measured: {why}", row.name));
        }
    }
    words
}

/// io_uring rungs whose requests went to io-wq threads, and what that cost against the
/// interfaces that do not punt.
fn punting(ran: &[&LadderRow]) -> Option<String> {
    let punted: Vec<&&LadderRow> = ran
        .iter()
        .filter(|r| r.rung.is_uring() && r.io_wq_us_per_io >= r.cpu_us_per_io * PUNT_SHARE_PCT / 100.0)
        // Without process CPU there is no share to judge (and none to divide by).
        .filter(|r| r.io_wq_threads > 0 && r.cpu_us_per_io > 0.0)
        .collect();
    let worst = punted.iter().max_by(|a, b| a.io_wq_us_per_io.total_cmp(&b.io_wq_us_per_io))?;
    let best_other =
        ran.iter().filter(|r| !r.rung.is_uring()).min_by(|a, b| a.cpu_us_per_io.total_cmp(&b.cpu_us_per_io));
    let share = worst.io_wq_us_per_io / worst.cpu_us_per_io * 100.0;
    let mut text = format!(
        "io_uring punted requests to io-wq kernel worker threads in {} of {} io_uring rungs: in {} they ran {} io-wq thread(s) costing {:.2} of its {:.2} us of CPU per I/O ({share:.0}%), and p50 latency was {:.1} us",
        punted.len(),
        ran.iter().filter(|r| r.rung.is_uring()).count(),
        worst.name,
        worst.io_wq_threads,
        worst.io_wq_us_per_io,
        worst.cpu_us_per_io,
        worst.p50_ns as f64 / 1e3
    );
    if let Some(other) = best_other {
        text.push_str(&format!(
            "; {} completes inline here at {:.2} us per I/O and p50 {:.1} us",
            other.name,
            other.cpu_us_per_io,
            other.p50_ns as f64 / 1e3
        ));
    }
    text.push_str(" (the target cannot take io_uring's inline async path, e.g. zram or buffered I/O that misses the page cache)");
    Some(text)
}
