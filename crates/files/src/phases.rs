//! A fileset run's phases one after another, each run by every thread at once: shared by a
//! local run (`run`) and a fleet agent's (`Steps`), which differ only in how the directory is
//! made ready, when each phase starts and how the tree is removed.

use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};

use iolab_engine::fileops::{FileOps, FileOpsEngine};
use iolab_engine::target::DeviceStat;
use iolab_stats::OpStats;

use crate::gate::{BreakOnPanic, Gate};
use crate::io_wq::IoWqUse;
use crate::journal::{self, JournalSeen, JournalThread, JournalWatch};
use crate::mix::{Mix, MIX_OPS};
use crate::plan::{FileEngine, FilesPlan, Phase, TreeState};
use crate::population::{Population, LINKED, RENAMED, SYMLINKED};
use crate::progress::PhaseProgress;
use crate::report::{KindResult, MixFigures, OpKind, PhaseResult, Second, Stonewall, OP_KINDS};
use crate::safety_at;
use crate::tree::Tree;
use crate::verdict::{judge, PhaseFacts};
use crate::worker::{Ctx, Outcome, Worker};
use iolab_runner::Sampler;

/// The state between phases: the trees, the clock, what the tree holds (renamed, copied, linked),
/// and which phase is next.
pub(crate) struct Phases {
    plan: FilesPlan,
    trees: Vec<Tree>,
    clock: quanta::Clock,
    base: u64,
    state: TreeState,
    planned: Vec<(Phase, u64)>,
    next: usize,
    /// A phase failed or was interrupted: no later one runs.
    stopped: bool,
    /// The sysfs stat file of the block device the tree is on (none for tmpfs and the like).
    device: Option<PathBuf>,
    journal_thread: Option<JournalThread>,
    /// Creates with --fsync pay queued on a ring (`FilesPlan::engine_for`): the tree is on a
    /// block device, whose writes an fsync waits for, and this machine makes rings.
    queued_fsync_pays: bool,
}

impl Phases {
    /// `plan`'s phases over a tree in the directory open as `top`; `notes` gets what the
    /// default engine could not do here.
    pub(crate) fn new(plan: FilesPlan, top: BorrowedFd<'_>, notes: &mut Vec<String>) -> Phases {
        let dev = nix::sys::stat::fstat(top).ok().map(|st| st.st_dev);
        let device = dev.and_then(block_device);
        let queued_fsync_pays = device.is_some()
            && plan.engine == FileEngine::Auto
            && plan.fsync
            && {
                // A kernel without io_uring, or one that refuses it (io_uring_disabled, a seccomp
                // profile), leaves the default its system calls.
                let ring = FileOps::new(FileOpsEngine::Uring);
                if let Err(e) = &ring {
                    notes.push(format!(
                    "creates with --fsync run on system calls: this machine refused a ring ({e}), where they would have been queued on one"
                ));
                }
                ring.is_ok()
            };
        let journal_thread = device
            .as_deref()
            .and_then(Path::parent)
            .and_then(journal::device_name)
            .and_then(|name| journal::find_journal_thread(&name));
        let trees = (0..plan.trees()).map(|t| Tree::new(&plan, t)).collect();
        let start = plan.start;
        let clock = quanta::Clock::new();
        let base = clock.raw();
        Phases {
            planned: plan.planned(),
            plan,
            trees,
            clock,
            base,
            state: start,
            next: 0,
            stopped: false,
            device,
            journal_thread,
            queued_fsync_pays,
        }
    }

    pub(crate) fn plan(&self) -> &FilesPlan {
        &self.plan
    }

    /// The phases and their planned operations, in order.
    pub(crate) fn planned(&self) -> &[(Phase, u64)] {
        &self.planned
    }

    /// How many phases ran so far: the index of the next.
    pub(crate) fn ran(&self) -> usize {
        self.next
    }

    /// The phase the next `run_next` runs; none once all ran or one stopped the run.
    pub(crate) fn next_phase(&self) -> Option<Phase> {
        (!self.stopped).then(|| self.planned.get(self.next).map(|&(p, _)| p)).flatten()
    }

    /// Runs the next phase with every thread, each path relative to `dirfd` (publishing how far
    /// it is to `progress`); `None` when there is none left. A phase that fails or is interrupted is answered with what was done, and
    /// no later phase runs.
    pub(crate) fn run_next(
        &mut self,
        dirfd: i32,
        interrupt: &AtomicBool,
        notes: &mut Vec<String>,
        make_ops: MakeOps<'_>,
        progress: Option<&PhaseProgress>,
    ) -> Option<PhaseResult> {
        let phase = self.next_phase()?;
        let planned_ops = self.planned[self.next].1;
        self.next += 1;
        if self.plan.drop_caches {
            // Before the phase's clock starts: what it finds cached is only what it brings in.
            match crate::preflight::drop_caches() {
                Ok(()) if self.next == 1 => notes.push(
                    "caches dropped before each phase: sync, then the page cache, dentries and inodes (vm.drop_caches = 3); the figures are cold-cache figures"
                        .into(),
                ),
                Ok(()) => {}
                Err(e) => notes.push(format!("the caches could not be dropped before {phase}: {e}")),
            }
        }
        let mixing = match (phase, &self.plan.mix) {
            (Phase::Mix, Some(mix)) => match mixing(&self.plan, mix, &self.trees[0], self.state) {
                Ok(mixing) => Some(mixing),
                Err(e) => {
                    notes.push(format!("the mix cannot draw its files: {e}"));
                    self.stopped = true;
                    return None;
                }
            },
            _ => None,
        };
        let warmup_ns =
            self.plan.mix.as_ref().filter(|_| phase == Phase::Mix).map_or(0, |m| (m.warmup_s * 1e9) as u64);
        if let Some(progress) = progress {
            let runtime = self
                .plan
                .mix
                .as_ref()
                .filter(|_| phase == Phase::Mix)
                .map(|m| std::time::Duration::from_secs_f64(m.warmup_s + m.runtime_s));
            progress.begin(phase, planned_ops, runtime);
        }
        let files_at_start = mixing.as_ref().map(|(population, _)| population.present());
        let ctx = Ctx {
            plan: &self.plan,
            trees: &self.trees,
            dirfd,
            clock: self.clock.clone(),
            base: self.base,
            failed: AtomicBool::new(false),
            interrupt,
            first_done_ns: AtomicU64::new(0),
            barrier: Gate::new(self.plan.threads as usize),
            state: self.state,
            phase_start_ns: 0,
            progress,
            mixing: mixing.as_ref().map(|(population, sampler)| (population, sampler)),
        };
        // A mix's measured time begins after its warm-up, and so do the device's and the journal
        // thread's readings, as the threads' CPU and operations do.
        let ctx = Ctx { phase_start_ns: ctx.now_ns() + warmup_ns, ..ctx };
        let engine = self.plan.engine_for(phase, self.queued_fsync_pays);
        let readings = || {
            (
                self.device.as_deref().and_then(device_stat),
                self.journal_thread.as_ref().and_then(JournalWatch::start),
            )
        };
        let (outcomes, (device_before, watch)) = if warmup_ns == 0 {
            let at_start = readings();
            (run_threads_with(&ctx, phase, engine, notes, make_ops), at_start)
        } else {
            let ended = AtomicBool::new(false);
            std::thread::scope(|scope| {
                let at_start = scope.spawn(|| {
                    wait_for_measured_start(&ctx, &ended);
                    readings()
                });
                let outcomes = run_threads_with(&ctx, phase, engine, notes, make_ops);
                ended.store(true, std::sync::atomic::Ordering::Relaxed);
                (outcomes, at_start.join().unwrap_or((None, None)))
            })
        };
        // What the phase made is iolab's to remove (safety_at): a failed mark leaves it to the
        // user, never the other way round.
        let _ = safety_at::mark(dirfd);
        let device = device_before.zip(self.device.as_deref().and_then(device_stat));
        let elapsed_s = ctx.now_ns().saturating_sub(ctx.phase_start_ns) as f64 / 1e9;
        let journal = watch.and_then(|w| w.finish(elapsed_s));
        let mut result = assemble(&self.plan, &ctx, phase, planned_ops, &outcomes, device, journal);
        result.engine = engine.name().to_string();
        if let (Some((population, _)), Some(files_at_start)) = (&ctx.mixing, files_at_start) {
            result.mix = Some(mix_figures(population, files_at_start, &outcomes, warmup_ns));
        }
        self.state = self.state.after(phase);
        self.stopped = result.failure.is_some() || result.interrupted;
        Some(result)
    }
}

/// Sleeps until the phase's measured time begins (a mix's warm-up is over), or until the phase
/// ends or stops before it.
fn wait_for_measured_start(ctx: &Ctx<'_>, ended: &AtomicBool) {
    while !ended.load(std::sync::atomic::Ordering::Relaxed) && !ctx.stopping() {
        let left_ns = ctx.phase_start_ns.saturating_sub(ctx.now_ns());
        if left_ns == 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_nanos(left_ns.min(10_000_000)));
    }
}

/// Makes a thread's operations on an engine (its ring); a test gives one that fails.
pub(crate) type MakeOps<'m> = &'m (dyn Fn(u32, FileOpsEngine) -> std::io::Result<FileOps> + Sync);

/// Runs `phase` on every thread. A thread that cannot start, or panics, breaks the gate the
/// others may be waiting at (so none waits for it forever) and fails the phase like a failed
/// operation: the run stops with what was done reported, and the tree is removed.
pub(crate) fn run_threads_with(
    ctx: &Ctx<'_>,
    phase: Phase,
    engine: FileOpsEngine,
    notes: &mut Vec<String>,
    make_ops: MakeOps<'_>,
) -> Vec<Outcome> {
    let (running, all_ended) = std::sync::mpsc::channel::<()>();
    let results: Vec<std::io::Result<(Outcome, Vec<&'static str>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..ctx.plan.threads)
            .map(|thread| {
                let running = running.clone();
                std::thread::Builder::new().name(format!("iolab-files-{thread}")).spawn_scoped(
                    scope,
                    move || {
                        // Dropped as the thread ends, however it ends.
                        let _running = running;
                        let _unwinding = BreakOnPanic(&ctx.barrier);
                        // Each thread makes its own ring: a single-issuer ring belongs to its maker.
                        let sys = match make_ops(thread, engine) {
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
        drop(running);
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            all_ended.recv_timeout(safety_at::MARK_EVERY)
        {
            let _ = safety_at::mark(ctx.dirfd);
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

/// A mix's files (as the tree holds them now, before any is worked) and its sampler of them.
fn mixing(
    plan: &FilesPlan,
    mix: &Mix,
    tree: &Tree,
    state: TreeState,
) -> Result<(Population, Sampler), String> {
    let sampler = Sampler::new(&mix.distribution, tree.files, plan.seed).map_err(|e| e.to_string())?;
    let start = [(state.renamed, RENAMED), (state.linked, LINKED), (state.symlinked, SYMLINKED)]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |flags, (_, flag)| flags | flag);
    // The band the population is held in: a twentieth of the names either side (a random walk
    // of creates and unlinks stays inside it for long), and room for every thread.
    let slack = (tree.files / 20).max(u64::from(plan.threads)).max(1);
    let population =
        Population::new(tree.files, |i| state.files && plan.made(tree.index, i), start, tree.leaves(), slack);
    Ok((population, sampler))
}

fn mix_figures(
    population: &Population,
    files_at_start: u64,
    outcomes: &[Outcome],
    warmup_ns: u64,
) -> MixFigures {
    let mut unplaced = [0u64; MIX_OPS.len()];
    for o in outcomes {
        for (sum, n) in unplaced.iter_mut().zip(o.unplaced) {
            *sum += n;
        }
    }
    MixFigures {
        files_at_start,
        files_at_end: population.present(),
        names: population.names(),
        swapped: outcomes.iter().map(|o| o.swapped).sum(),
        unplaced: MIX_OPS.iter().zip(unplaced).filter(|(_, n)| *n > 0).map(|(&op, n)| (op, n)).collect(),
        warmup_s: warmup_ns as f64 / 1e9,
    }
}

fn assemble(
    plan: &FilesPlan,
    ctx: &Ctx<'_>,
    phase: Phase,
    planned: u64,
    outcomes: &[Outcome],
    device: Option<(DeviceStat, DeviceStat)>,
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
    let mut io_wq = IoWqUse::default();
    let mut failure = None;
    for o in outcomes {
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
        io_wq.add(&o.io_wq);
        if failure.is_none() {
            failure.clone_from(&o.failure);
        }
    }
    // The phase's own kind first; a mix's operations next, in the mix's order; then the parts.
    let mut order: Vec<OpKind> = vec![OpKind::of_phase(phase)];
    if let Some(mix) = plan.mix.as_ref().filter(|_| phase == Phase::Mix) {
        order.extend(mix.ops.iter().map(|&(op, _)| OpKind::of_mix_op(op)));
    }
    for kind in OP_KINDS {
        if !order.contains(&kind) {
            order.push(kind);
        }
    }
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
    let io_wq_ns = io_wq.run_ns;
    let fsync_ns = merged[OpKind::Fsync as usize].moments().sum_ns.min(u128::from(u64::MAX)) as u64;
    // Operations queued on a ring overlap: their fsyncs' share is of the operations' own time
    // (each file's making, open to close), which then passes the threads' time.
    let own_ns = merged[OpKind::of_phase(phase) as usize].moments().sum_ns.min(u128::from(u64::MAX)) as u64;
    let fsync_share = |ns: u64| {
        let over = (thread_s * 1e9).max(own_ns as f64);
        if over > 0.0 {
            100.0 * ns as f64 / over
        } else {
            0.0
        }
    };
    let device_busy_pct = device.map(|(before, after)| {
        if elapsed_s > 0.0 {
            (100.0 * DeviceStat::ms_delta(before.io_ticks_ms, after.io_ticks_ms) as f64 / 1e3 / elapsed_s)
                .min(100.0)
        } else {
            0.0
        }
    });
    let device_bytes = |sectors: fn(&DeviceStat) -> u64| {
        device.map(|(before, after)| sectors(&after).saturating_sub(sectors(&before)) * 512)
    };
    // A mix changes the tree as its operations do.
    let (modifies_entries, writes_nothing) = match plan.mix.as_ref().filter(|_| phase == Phase::Mix) {
        Some(mix) => (mix.changes_entries(), mix.writes_nothing()),
        None => (phase.changes_entries(), phase.writes_nothing()),
    };
    let facts = PhaseFacts {
        threads: plan.threads,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        shared_dir: plan.shared_dir,
        modifies_entries,
        writes_nothing,
        elapsed_s,
        ops: done,
        cpu_busy_pct: pct(user_ns + sys_ns + io_wq_ns).min(100.0),
        cpu_sys_pct: pct(sys_ns + io_wq_ns).min(100.0),
        runq_wait_pct: pct(wait_ns).min(100.0),
        io_wq_workers: if elapsed_s > 0.0 { io_wq.alive_ns as f64 / 1e9 / elapsed_s } else { 0.0 },
        io_wq_wait_pct: io_wq.wait_pct(),
        device_busy_pct,
        device_read_bytes: device_bytes(|d| d.read_sectors),
        device_written_bytes: device_bytes(|d| d.write_sectors),
        fsync_pct: fsync_share(fsync_ns),
        journal,
    };
    PhaseResult {
        phase,
        repeat: 1,
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
        entries_per_s: (phase == Phase::Readdir).then(|| rate(entries, elapsed_s)),
        kinds,
        series: series
            .iter()
            .enumerate()
            .map(|(t, s)| Second { t_s: t as f64, ops: s[0], bytes: s[1] })
            .collect(),
        cpu_busy_pct: facts.cpu_busy_pct,
        cpu_sys_pct: facts.cpu_sys_pct,
        engine: String::new(),
        io_wq_pct: pct(io_wq_ns),
        runq_wait_pct: facts.runq_wait_pct,
        io_wq_workers: facts.io_wq_workers,
        io_wq_wait_pct: facts.io_wq_wait_pct,
        device_busy_pct,
        verdict: judge(&facts),
        journal: facts.journal,
        failure,
        interrupted: ctx.interrupt.load(std::sync::atomic::Ordering::Relaxed),
        histograms,
        mix: None,
    }
}

/// The sysfs stat file of block device `dev` (none for tmpfs, NFS and the like).
fn block_device(dev: u64) -> Option<PathBuf> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return None;
    }
    let path = PathBuf::from(format!("/sys/dev/block/{major}:{minor}/stat"));
    path.exists().then_some(path)
}

/// The device's I/O counters now.
fn device_stat(stat: &Path) -> Option<DeviceStat> {
    DeviceStat::parse(&std::fs::read_to_string(stat).ok()?)
}
