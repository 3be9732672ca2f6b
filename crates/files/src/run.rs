//! A fileset run from start to end: the directory made ready (and marked), each phase run by
//! every thread at once and handed to the caller as it ends (so it is kept even if a later one
//! fails), a failing or interrupted phase ending the run, and the tree removed unless kept.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};

use iolab_engine::fileops::FileOps;
use iolab_stats::OpStats;

use crate::error::FilesError;
use crate::gate::{BreakOnPanic, Gate};
use crate::journal::{self, JournalSeen, JournalWatch};
use crate::plan::{FilesPlan, Phase};
use crate::report::{
    FilesReport, KindResult, OpKind, PhaseResult, Second, Stonewall, FILES_SCHEMA, OP_KINDS,
};
use crate::safety;
use crate::tree::Tree;
use crate::verdict::{judge, PhaseFacts};
use crate::worker::{Ctx, Outcome, Worker};

pub struct RunOptions<'a> {
    pub dir: PathBuf,
    /// Leave the tree (and the directory) in place at the end.
    pub keep: bool,
    /// Set by a stop signal: the phase running ends, its figures kept, and the run stops.
    pub interrupt: &'a AtomicBool,
}

/// Runs `plan` in `options.dir`, calling `on_phase` with each phase as it ends.
pub fn run(
    plan: &FilesPlan,
    options: &RunOptions<'_>,
    on_phase: impl FnMut(&PhaseResult),
) -> Result<FilesReport, FilesError> {
    let engine = plan.engine.fileops();
    run_with(plan, options, on_phase, &|_| FileOps::new(engine))
}

/// As `run`, each thread of each phase with the operations `make_ops` gives it.
pub(crate) fn run_with(
    plan: &FilesPlan,
    options: &RunOptions<'_>,
    mut on_phase: impl FnMut(&PhaseResult),
    make_ops: MakeOps<'_>,
) -> Result<FilesReport, FilesError> {
    plan.check()?;
    let dir = &options.dir;
    let prepared = safety::prepare(dir)?;
    let claim = safety::Claim(dir);
    let mut notes = Vec::new();
    if let Some(earlier) = &prepared.earlier {
        notes.push(format!(
            "an earlier iolab tree in {} was removed first ({} files, {} directories)",
            dir.display(),
            earlier.files,
            earlier.dirs
        ));
    }
    let top = File::open(dir).map_err(|e| FilesError::io("cannot open", dir, e))?;
    let device = block_device(dir);
    let journal_thread = device
        .as_deref()
        .and_then(Path::parent)
        .and_then(journal::device_name)
        .and_then(|name| journal::find_journal_thread(&name));
    let trees: Vec<Tree> = (0..plan.trees()).map(|t| Tree::new(plan, t)).collect();
    let clock = quanta::Clock::new();
    let base = clock.raw();
    let (mut renamed, mut copied) = (false, false);
    let mut phases = Vec::new();
    let planned = plan.planned();
    for &(phase, planned_ops) in &planned {
        let ctx = Ctx {
            plan,
            trees: &trees,
            dirfd: top.as_raw_fd(),
            clock: clock.clone(),
            base,
            failed: AtomicBool::new(false),
            interrupt: options.interrupt,
            first_done_ns: AtomicU64::new(0),
            barrier: Gate::new(plan.threads as usize),
            renamed,
            copied,
            phase_start_ns: 0,
        };
        let ticks_before = device.as_deref().and_then(io_ticks_ms);
        let ctx = Ctx { phase_start_ns: ctx.now_ns(), ..ctx };
        let watch = journal_thread.as_ref().and_then(|j| JournalWatch::start(j, plan.threads));
        let outcomes = run_threads_with(&ctx, phase, &mut notes, make_ops);
        let device_busy = ticks_before.zip(device.as_deref().and_then(io_ticks_ms));
        let elapsed_s = ctx.now_ns().saturating_sub(ctx.phase_start_ns) as f64 / 1e9;
        let journal = watch.and_then(|w| w.finish(elapsed_s, plan.threads));
        let result = assemble(plan, &ctx, phase, planned_ops, outcomes, device_busy, journal);
        on_phase(&result);
        let go_on = result.failure.is_none() && !result.interrupted;
        match phase {
            Phase::Rename => renamed = !renamed,
            Phase::Copy => copied = true,
            Phase::Rmdir => copied = false,
            _ => {}
        }
        phases.push(result);
        if !go_on {
            break;
        }
    }
    drop(top);
    let mut kept = options.keep;
    if options.keep {
        notes.push(format!("the tree was kept in {}: `iolab files --clean {0}` removes it", dir.display()));
    } else {
        match claim.clean() {
            Ok(cleaned) if cleaned.left.is_empty() => {}
            Ok(cleaned) => {
                kept = true;
                notes.push(format!(
                    "{} entries not made by iolab were left in {} with the marker",
                    cleaned.left.len(),
                    dir.display()
                ));
            }
            Err(e) => {
                kept = true;
                notes.push(format!(
                    "the tree could not be removed ({e}): `iolab files --clean {}`",
                    dir.display()
                ));
            }
        }
    }
    Ok(FilesReport {
        schema: FILES_SCHEMA.to_string(),
        dir: dir.display().to_string(),
        plan: plan.clone(),
        total_files: plan.total_files(),
        total_dirs: plan.total_dirs(),
        phases,
        notes,
        peak_rss_bytes: iolab_stats::cpu::peak_rss_bytes().unwrap_or(0),
        kept,
    })
}

/// Makes a thread's operations (its ring); a test gives one that fails.
pub(crate) type MakeOps<'m> = &'m (dyn Fn(u32) -> std::io::Result<FileOps> + Sync);

/// Runs `phase` on every thread, each with its own ring (where the engine has one).
pub(super) fn run_threads(ctx: &Ctx<'_>, phase: Phase, notes: &mut Vec<String>) -> Vec<Outcome> {
    run_threads_with(ctx, phase, notes, &|_| FileOps::new(ctx.plan.engine.fileops()))
}

/// Runs `phase` on every thread. A thread that cannot start, or panics, breaks the gate the
/// others may be waiting at (so none waits for it forever) and fails the phase like a failed
/// operation: the run stops with what was done reported, and the tree is removed.
pub(crate) fn run_threads_with(
    ctx: &Ctx<'_>,
    phase: Phase,
    notes: &mut Vec<String>,
    make_ops: MakeOps<'_>,
) -> Vec<Outcome> {
    let results: Vec<std::io::Result<(Outcome, Vec<&'static str>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..ctx.plan.threads)
            .map(|thread| {
                std::thread::Builder::new().name(format!("iolab-files-{thread}")).spawn_scoped(
                    scope,
                    move || {
                        let _unwinding = BreakOnPanic(&ctx.barrier);
                        // Each thread makes its own ring: a single-issuer ring belongs to its maker.
                        let sys = match make_ops(thread) {
                            Ok(sys) => sys,
                            Err(e) => {
                                // The others must not wait for this thread at the gate forever.
                                ctx.failed.store(true, std::sync::atomic::Ordering::Relaxed);
                                ctx.barrier.break_open();
                                return Err(e);
                            }
                        };
                        let missing = sys.missing();
                        let (outcome, _) = Worker::new(ctx, sys, thread, phase).run(phase);
                        Ok((outcome, missing))
                    },
                )
            })
            .collect();
        if handles.iter().any(Result::is_err) {
            // A thread that never started will not come to the gate either.
            ctx.failed.store(true, std::sync::atomic::Ordering::Relaxed);
            ctx.barrier.break_open();
        }
        handles
            .into_iter()
            .map(|h| {
                h.map_or_else(Err, |h| {
                    h.join().unwrap_or_else(|_| Err(std::io::Error::other("a thread panicked")))
                })
            })
            .collect()
    });
    let mut outcomes = Vec::with_capacity(results.len());
    for (thread, result) in (0..).zip(results) {
        let (outcome, missing) = match result {
            Ok(done) => done,
            Err(e) => (Outcome::not_started(thread, &e), Vec::new()),
        };
        if !missing.is_empty() {
            let note = format!(
                "io_uring on this kernel lacks {}: done with system calls instead",
                missing.join(", ")
            );
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
        outcomes.push(outcome);
    }
    outcomes
}

fn assemble(
    plan: &FilesPlan,
    ctx: &Ctx<'_>,
    phase: Phase,
    planned: u64,
    outcomes: Vec<Outcome>,
    device_ticks: Option<(u64, u64)>,
    journal: Option<JournalSeen>,
) -> PhaseResult {
    let start = ctx.phase_start_ns;
    let last = outcomes.iter().map(|o| o.finished_ns).max().unwrap_or(start);
    let elapsed_s = last.saturating_sub(start) as f64 / 1e9;
    let first_done_s =
        ctx.first_done_ns.load(std::sync::atomic::Ordering::Relaxed).saturating_sub(start) as f64 / 1e9;
    let mut merged: Vec<OpStats> = OP_KINDS.iter().map(|_| OpStats::default()).collect();
    let mut series: Vec<[u64; 2]> = Vec::new();
    let (mut done, mut bytes, mut entries, mut sw_ops, mut sw_bytes) = (0, 0, 0, 0, 0);
    let (mut user_ns, mut sys_ns, mut wait_ns) = (0u64, 0u64, 0u64);
    let mut failure = None;
    for o in &outcomes {
        for (m, k) in merged.iter_mut().zip(&o.kinds) {
            m.merge(k);
        }
        if series.len() < o.series.len() {
            series.resize(o.series.len(), [0, 0]);
        }
        for (s, t) in series.iter_mut().zip(&o.series) {
            s[0] += t[0];
            s[1] += t[1];
        }
        done += o.done;
        bytes += o.bytes;
        entries += o.entries;
        let [ops, b] = o.stonewall.unwrap_or([o.done, o.bytes]);
        sw_ops += ops;
        sw_bytes += b;
        user_ns += o.cpu_user_ns;
        sys_ns += o.cpu_sys_ns;
        wait_ns += o.runq_wait_ns;
        if failure.is_none() {
            failure.clone_from(&o.failure);
        }
    }
    let main = OpKind::of_phase(phase);
    let mut order: Vec<OpKind> = vec![main];
    order.extend(OP_KINDS.iter().copied().filter(|&k| k != main));
    let kinds: Vec<KindResult> = order
        .iter()
        .filter(|&&k| merged[k as usize].ios() > 0)
        .map(|&k| KindResult { kind: k, summary: merged[k as usize].summary(elapsed_s, &[]) })
        .collect();
    let histograms: Vec<(OpKind, OpStats)> = order
        .iter()
        .filter(|&&k| merged[k as usize].ios() > 0)
        .map(|&k| (k, merged[k as usize].clone()))
        .collect();
    let rate = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    let thread_s = elapsed_s * f64::from(plan.threads);
    let pct = |ns: u64| if thread_s > 0.0 { 100.0 * ns as f64 / 1e9 / thread_s } else { 0.0 };
    let fsync_ns = merged[OpKind::Fsync as usize].moments().sum_ns.min(u128::from(u64::MAX)) as u64;
    let device_busy_pct = device_ticks.map(|(before, after)| {
        if elapsed_s > 0.0 {
            (100.0 * after.saturating_sub(before) as f64 / 1e3 / elapsed_s).min(100.0)
        } else {
            0.0
        }
    });
    let facts = PhaseFacts {
        threads: plan.threads,
        shared_dir: plan.shared_dir,
        elapsed_s,
        ops: done,
        cpu_busy_pct: pct(user_ns + sys_ns).min(100.0),
        cpu_sys_pct: pct(sys_ns).min(100.0),
        runq_wait_pct: pct(wait_ns).min(100.0),
        device_busy_pct,
        fsync_pct: pct(fsync_ns),
        journal,
    };
    PhaseResult {
        phase,
        planned,
        done,
        elapsed_s,
        ops_per_s: rate(done, elapsed_s),
        bytes,
        bytes_per_s: rate(bytes, elapsed_s),
        stonewall: Stonewall {
            first_done_s,
            ops: sw_ops,
            ops_per_s: rate(sw_ops, first_done_s),
            bytes_per_s: rate(sw_bytes, first_done_s),
        },
        entries: (phase == Phase::Readdir).then_some(entries),
        kinds,
        series: series
            .iter()
            .enumerate()
            .map(|(t, s)| Second { t_s: t as f64, ops: s[0], bytes: s[1] })
            .collect(),
        cpu_busy_pct: facts.cpu_busy_pct,
        cpu_sys_pct: facts.cpu_sys_pct,
        runq_wait_pct: facts.runq_wait_pct,
        device_busy_pct,
        verdict: judge(&facts),
        journal: facts.journal,
        failure,
        interrupted: ctx.interrupt.load(std::sync::atomic::Ordering::Relaxed),
        histograms,
    }
}

/// The block device's sysfs directory under `dir` (none for tmpfs, NFS and the like).
fn block_device(dir: &Path) -> Option<PathBuf> {
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return None;
    }
    let path = PathBuf::from(format!("/sys/dev/block/{major}:{minor}/stat"));
    path.exists().then_some(path)
}

/// The device's io_ticks (ms it had requests in flight), the stat file's tenth field.
fn io_ticks_ms(stat: &Path) -> Option<u64> {
    std::fs::read_to_string(stat).ok()?.split_whitespace().nth(9)?.parse().ok()
}

// The same phases one at a time, on an opened directory (`iolab fleet files`).
#[path = "steps.rs"]
pub mod steps;
