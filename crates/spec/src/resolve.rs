//! From stacked option layers to a validated `RunPlan`.
//!
//! Checks here need no I/O: ranges, combinations, and the structure of a job file. What needs
//! the target (block-size multiples under O_DIRECT, device size, safety) is checked by the
//! runner when it opens the target.

use crate::axis::Axis;
use crate::distribution::{Distribution, WorkingSet};
use crate::error::{invalid, SpecError};
use crate::model::{
    AccessSpec, Burst, GroupSpec, JobSpec, OutputSpec, RateSpec, RunPlan, TargetSpec, UringSpec,
};
use crate::options::{flag_name, Options, JOB_KEYS, RUN_KEYS, URING_KEYS};
use crate::units::{Bytes, Nanos};
use crate::values::{BsWeight, EngineKind, RingSetup, Rw};

/// The default seed: runs repeat exactly unless the user asks otherwise.
pub const DEFAULT_SEED: u64 = 0x101a_b5eed;

/// Requests handed to the kernel per system call. Measured here, 4 KiB random read at QD 32:
/// on a virtio disk (5 s runs, means of 3-4) batches of 32 gave 94k IOPS, 4 gave 97-109k and 1
/// gave 105k (fio, which submits one request per call: 106k), at the same CPU per I/O; on a
/// loop device over tmpfs, batches of 1 cost 1.41 us of CPU per I/O against 1.33 for 4 (fio:
/// 1.77). One per call keeps a slow device as busy as fio keeps it; raise it for fast devices.
pub const DEFAULT_SUBMIT_BATCH: u32 = 1;

/// The most entries the kernel gives one io_uring submission queue.
pub const MAX_QD: u32 = 32_768;

/// The most I/O threads one group may have.
const MAX_THREADS: u64 = 4096;

/// The shortest interval of the series: each one costs every I/O thread a hand-over.
pub const MIN_INTERVAL: Nanos = Nanos(50_000_000);

/// The highest `--rate-iops`: a billion I/Os per second is beyond any device, and keeps the
/// schedule's arithmetic (nanoseconds) meaningful.
pub const MAX_RATE_IOPS: u64 = 1_000_000_000;

/// Thresholds every report includes, in addition to the user's `--slo`.
pub const STANDARD_SLO: [Nanos; 2] = [Nanos(1_000_000), Nanos(2_000_000)];

/// The built-in defaults, each stated here once: `defaults()` lays them under every run, and
/// the resolver falls back on them where a layer above cleared a key (`--buffered` clears
/// `direct`, `--bs-split` clears `bs`).
struct Builtin {
    rw: Rw,
    bs: Bytes,
    qd: u32,
    workers: u32,
    engine: EngineKind,
    runtime: Nanos,
    ramp: Nanos,
    io_timeout: Nanos,
    direct: bool,
}

/// 4 KiB random read, QD 32, one worker, 2 s ramp + 10 s measured, O_DIRECT through io_uring.
const BUILTIN: Builtin = Builtin {
    rw: Rw::RandRead,
    bs: Bytes(4096),
    qd: 32,
    workers: 1,
    engine: EngineKind::Uring,
    runtime: Nanos::from_secs(10),
    ramp: Nanos::from_secs(2),
    io_timeout: Nanos::from_secs(60),
    direct: true,
};

/// The built-in defaults (`BUILTIN`, and `DEFAULT_SEED`) as the bottom layer of every run.
pub fn defaults() -> Options {
    Options {
        rw: Some(BUILTIN.rw),
        bs: Some(Axis::one(BUILTIN.bs)),
        qd: Some(Axis::one(BUILTIN.qd)),
        workers: Some(Axis::one(BUILTIN.workers)),
        engine: Some(BUILTIN.engine),
        runtime: Some(BUILTIN.runtime),
        ramp: Some(BUILTIN.ramp),
        io_timeout: Some(BUILTIN.io_timeout),
        direct: Some(BUILTIN.direct),
        seed: Some(DEFAULT_SEED),
        ..Options::default()
    }
}

/// Builds the plan of a run from an optional job file's top level and the command-line flags.
pub fn resolve(file: Option<&Options>, flags: &Options) -> Result<RunPlan, SpecError> {
    let base = defaults();
    let (top, jobs): (Options, Vec<Options>) = match file {
        None => (Options::default(), vec![Options::default()]),
        Some(file) => {
            check_structure(file)?;
            let mut top = file.clone();
            let jobs = std::mem::take(&mut top.job);
            if jobs.is_empty() {
                (Options::default(), vec![top])
            } else {
                (top, jobs)
            }
        }
    };
    // Run-wide keys live at the file's top level, whether or not it has [[job]]s.
    let run_layer = base.overlay(file.unwrap_or(&Options::default())).overlay(flags);
    let output = OutputSpec {
        json: run_layer.json.unwrap_or(false),
        path: run_layer.output.clone(),
        quiet: run_layer.quiet.unwrap_or(false),
    };
    let many = jobs.len() > 1;
    let jobs = jobs
        .iter()
        .enumerate()
        .map(|(index, job)| {
            let name = job.name.clone().unwrap_or_else(|| {
                if many {
                    format!("job{}", index + 1)
                } else {
                    "default".into()
                }
            });
            resolve_job(&base.overlay(&top).overlay(job), job, flags, name.clone())
                .map_err(|e| in_context(e, &format!("job '{name}'")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RunPlan { jobs, output })
}

fn in_context(error: SpecError, context: &str) -> SpecError {
    match error {
        SpecError::Invalid(message) => SpecError::Invalid(format!("{context}: {message}")),
        other => other,
    }
}

/// Keys in the wrong place: run-wide keys below the top, job keys inside a group, nesting.
fn check_structure(file: &Options) -> Result<(), SpecError> {
    for job in &file.job {
        if !job.job.is_empty() {
            return Err(invalid("a [[job]] cannot hold another [[job]]"));
        }
        misplaced(job, RUN_KEYS, "[[job]]", "it applies to the whole run; put it at the top of the file")?;
        check_groups(&job.group)?;
    }
    if !file.job.is_empty() && !file.group.is_empty() {
        return Err(invalid(
            "the file has both [[job]] and top-level [[group]] entries; put groups inside a job as [[job.group]]",
        ));
    }
    check_groups(&file.group)
}

fn check_groups(groups: &[Options]) -> Result<(), SpecError> {
    for group in groups {
        if !group.job.is_empty() || !group.group.is_empty() {
            return Err(invalid("a group cannot hold jobs or groups"));
        }
        misplaced(group, RUN_KEYS, "a group", "it applies to the whole run; put it at the top of the file")?;
        misplaced(group, JOB_KEYS, "a group", "it applies to the whole job; put it in the [[job]]")?;
    }
    Ok(())
}

fn misplaced(layer: &Options, keys: &[&str], place: &str, fix: &str) -> Result<(), SpecError> {
    match layer.keys_set().into_iter().find(|k| keys.contains(k)) {
        Some(key) => Err(invalid(format!("'{key}' cannot be set in {place}: {fix}"))),
        None => Ok(()),
    }
}

fn resolve_job(
    job_layer: &Options,
    job: &Options,
    flags: &Options,
    name: String,
) -> Result<JobSpec, SpecError> {
    let whole = job_layer.overlay(flags);
    let runtime = whole.runtime.unwrap_or(BUILTIN.runtime);
    if runtime.0 == 0 {
        return Err(invalid("--runtime must be above 0 (e.g. --runtime 30s)"));
    }
    let interval = whole.interval.unwrap_or(Nanos::from_secs(1));
    if interval < MIN_INTERVAL {
        return Err(invalid(format!("--interval {interval} is too short; use {MIN_INTERVAL} or more")));
    }
    let io_timeout = whole.io_timeout.unwrap_or(BUILTIN.io_timeout);
    if io_timeout < Nanos::from_millis(100) {
        return Err(invalid(format!(
            "--io-timeout {io_timeout} is too short to tell a stuck request; use 100ms or more"
        )));
    }
    if let Some(crate::values::IoLimit::Ios(0) | crate::values::IoLimit::Bytes(Bytes(0))) = whole.io_limit {
        return Err(invalid("--io-limit must be above 0"));
    }
    let mut slo = STANDARD_SLO.to_vec();
    slo.extend(whole.slo.clone().unwrap_or_default().0);
    if slo.iter().any(|t| t.0 == 0) {
        return Err(invalid("--slo thresholds must be above 0 (e.g. --slo 500us,1ms)"));
    }
    slo.sort();
    slo.dedup();

    let group_layers: Vec<Options> = if job.group.is_empty() {
        vec![whole.clone()]
    } else {
        // A group's name is its own, never inherited from the job.
        let unnamed = Options { name: None, ..job_layer.clone() };
        job.group.iter().map(|g| unnamed.overlay(g).overlay(flags)).collect()
    };
    let many = group_layers.len() > 1;
    let groups = group_layers
        .iter()
        .enumerate()
        .map(|(index, layer)| {
            let name = layer.name.clone().filter(|_| many).unwrap_or_else(|| {
                if many {
                    format!("group{}", index + 1)
                } else {
                    "main".into()
                }
            });
            let seed = layer.seed.unwrap_or(DEFAULT_SEED).wrapping_add(index as u64);
            resolve_group(layer, name.clone(), seed).map_err(|e| in_context(e, &format!("group '{name}'")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let groups = if many {
        groups
    } else {
        groups.into_iter().map(|g| GroupSpec { name: "main".into(), ..g }).collect()
    };

    Ok(JobSpec {
        name,
        runtime,
        ramp: whole.ramp.unwrap_or(BUILTIN.ramp),
        interval,
        io_limit: whole.io_limit,
        io_timeout,
        slo,
        continue_on_error: whole.continue_on_error.unwrap_or(false),
        groups,
    })
}

/// The one value of an option that sweeps vary; a list is for `iolab sweep`.
fn single<T: Copy + std::fmt::Display>(axis: &Option<Axis<T>>, flag: &str) -> Result<Option<T>, SpecError> {
    match axis {
        None => Ok(None),
        Some(axis) => axis.single().map(Some).ok_or_else(|| {
            let values: Vec<String> = axis.0.iter().map(ToString::to_string).collect();
            invalid(format!(
                "--{flag} {} is a list; `iolab sweep` runs lists, other commands take one value",
                values.join(",")
            ))
        }),
    }
}

fn percent(value: Option<u32>, flag: &str) -> Result<Option<u32>, SpecError> {
    match value {
        Some(v) if v > 100 => Err(invalid(format!("--{flag} must be between 0 and 100 (got {v})"))),
        other => Ok(other),
    }
}

fn resolve_group(layer: &Options, name: String, seed: u64) -> Result<GroupSpec, SpecError> {
    let (rw_read, rw_random) = layer.rw.unwrap_or(BUILTIN.rw).shares();
    let read_pct = percent(single(&layer.read_pct, "read-pct")?, "read-pct")?.unwrap_or(rw_read);
    let random_pct = percent(single(&layer.random_pct, "random-pct")?, "random-pct")?.unwrap_or(rw_random);

    let bs_split = match (&layer.bs_split, single(&layer.bs, "bs")?) {
        (Some(split), _) => split.0.clone(),
        (None, Some(bs)) => vec![BsWeight { bs, weight: 1 }],
        (None, None) => vec![BsWeight { bs: BUILTIN.bs, weight: 1 }],
    };
    if let Some(zero) = bs_split.iter().find(|w| w.bs.0 == 0) {
        return Err(invalid(format!("block size must be above 0 (got {})", zero.bs)));
    }
    if let Some(huge) = bs_split.iter().find(|w| w.bs.0 > 64 << 20) {
        return Err(invalid(format!(
            "block size {} is above the 64MiB that one request can carry; use a smaller --bs",
            huge.bs
        )));
    }
    let min_bs = bs_split.iter().map(|w| w.bs).min().unwrap_or(BUILTIN.bs);
    let align = layer.align.unwrap_or(min_bs);
    if align.0 == 0 {
        return Err(invalid("--align must be above 0 (e.g. --align 4k)"));
    }

    let burst = match (layer.burst, layer.burst_idle) {
        (None, None) => None,
        (None, Some(_)) => return Err(invalid("--burst-idle needs --burst N (the I/Os in each burst)")),
        (Some(0), _) => return Err(invalid("--burst must be 1 or more I/Os")),
        (Some(ios), idle) => Some(Burst { ios, idle: idle.unwrap_or_default() }),
    };

    let rate = resolve_rate(layer, burst.is_some())?;

    let qd = single(&layer.qd, "qd")?.unwrap_or(BUILTIN.qd);
    if qd == 0 {
        return Err(invalid("--qd must be 1 or more (got 0)"));
    }
    if qd > MAX_QD {
        return Err(invalid(format!(
            "--qd {qd} is above the {MAX_QD} requests one io_uring can hold; use a smaller --qd or more --workers"
        )));
    }
    let workers = single(&layer.workers, "workers")?.unwrap_or(BUILTIN.workers);
    if workers == 0 {
        return Err(invalid("--workers must be 1 or more (got 0)"));
    }
    let engine = layer.engine.unwrap_or(BUILTIN.engine);
    let submit_batch = layer.submit_batch.unwrap_or(DEFAULT_SUBMIT_BATCH);
    if submit_batch == 0 {
        return Err(invalid("--submit-batch must be 1 or more (got 0)"));
    }
    let complete_batch = layer.complete_batch.unwrap_or(1);
    if complete_batch == 0 {
        return Err(invalid("--complete-batch must be 1 or more (got 0)"));
    }
    let uring = resolve_uring(layer, engine)?;
    let verify =
        crate::verify::resolve_verify(layer, &bs_split.iter().map(|w| w.bs).collect::<Vec<_>>(), align)?;
    let data = crate::data::resolve_data(
        layer.dedupe_pct,
        layer.dedupe_set,
        layer.compress_pct,
        layer.buffer_pattern.as_ref(),
    )?;
    verifiable(&verify, &data)?;
    let paths = layer.target.clone().unwrap_or_default();
    if paths.iter().any(|p| p.as_os_str().is_empty()) {
        return Err(invalid("--target '' is empty; give a path, or leave --target out for a scratch file"));
    }
    let stripe = match (layer.stripe, paths.len()) {
        (None, _) => None,
        (Some(_), 0 | 1) => {
            return Err(invalid("--stripe needs two or more --target paths to stripe over"));
        }
        (Some(stripe), _) if stripe < bs_split.iter().map(|w| w.bs).max().unwrap_or(stripe) => {
            return Err(invalid(format!(
                "--stripe {stripe} is smaller than the largest block size; a stripe must hold a whole I/O"
            )));
        }
        (Some(stripe), _) if stripe.0 % align.0 != 0 => {
            return Err(invalid(format!("--stripe {stripe} is not a multiple of --align {align}")));
        }
        (Some(stripe), _) => Some(stripe),
    };
    if let Some(path) = paths.iter().enumerate().find_map(|(i, p)| paths[..i].contains(p).then_some(p)) {
        return Err(invalid(format!("--target {} is given twice; name each target once", path.display())));
    }
    let threads = u64::from(workers) * u64::from(qd / engine.qd_per_lane(qd));
    if threads > MAX_THREADS && engine == EngineKind::Psync {
        return Err(invalid(format!(
            "psync would need {threads} threads ({workers} workers x QD {qd}, one thread per outstanding I/O), above the {MAX_THREADS} iolab runs; lower --qd or --workers, or use --engine uring"
        )));
    }
    if threads > MAX_THREADS {
        return Err(invalid(format!("--workers {workers} is above the {MAX_THREADS} threads iolab runs; use fewer workers with a deeper --qd")));
    }

    let size = layer.size;
    let max_bs = bs_split.iter().map(|w| w.bs).max().unwrap_or(min_bs);
    if let Some(size) = size.filter(|&size| size < max_bs) {
        return Err(invalid(format!(
            "--size {size} is smaller than the block size {max_bs}; use a larger --size or a smaller --bs"
        )));
    }
    let (distribution, working_set) = resolve_skew(layer, align, max_bs)?;
    if layer.direct == Some(true) && layer.buffered == Some(true) {
        return Err(invalid("--direct and --buffered contradict each other; pick one"));
    }

    Ok(GroupSpec {
        name,
        target: TargetSpec {
            paths,
            stripe,
            size,
            offset: layer.offset.unwrap_or_default(),
            direct: layer.direct.unwrap_or(BUILTIN.direct) && !layer.buffered.unwrap_or(false),
            allow_destroy: layer.allow_destroy.unwrap_or(false),
            keep: layer.keep.unwrap_or(false),
        },
        access: AccessSpec { read_pct, random_pct, bs_split, align, burst, distribution, working_set },
        qd,
        workers,
        engine,
        submit_batch,
        complete_batch,
        cpus: layer.cpus.clone().unwrap_or_default().0,
        uring,
        rate,
        seed,
        verify,
        data,
        replay: None,
    })
}

/// `--verify` checks each block's stamp and checksums, so a block must carry its own: a
/// dedupe repeat is another block's copy, and a pattern has no stamp.
fn verifiable(verify: &crate::verify::VerifySpec, data: &crate::data::DataSpec) -> Result<(), SpecError> {
    if !verify.verify {
        return Ok(());
    }
    if data.dedupe_pct > 0 {
        return Err(invalid(
            "--verify and --dedupe-pct do not mix: a repeated block is a copy of another and cannot say where or when it was written; drop one",
        ));
    }
    if data.pattern != crate::data::BufferPattern::Random {
        return Err(invalid(
            "--verify needs stamped blocks, and --buffer-pattern zero or HEX writes the pattern alone; drop one",
        ));
    }
    Ok(())
}

/// The open-loop schedule: `--rate-iops` and `--arrival`.
fn resolve_rate(layer: &Options, burst: bool) -> Result<Option<RateSpec>, SpecError> {
    let Some(iops) = layer.rate_iops else {
        if let Some(arrival) = layer.arrival {
            return Err(invalid(format!(
                "--arrival {arrival} spaces a schedule, and there is none: add --rate-iops N (the group's I/Os per second)"
            )));
        }
        return Ok(None);
    };
    if iops == 0 {
        return Err(invalid(
            "--rate-iops must be above 0 (e.g. --rate-iops 10000); leave it out to run as fast as the queue allows",
        ));
    }
    if iops > MAX_RATE_IOPS {
        return Err(invalid(format!(
            "--rate-iops {iops} is above the {MAX_RATE_IOPS} I/Os per second iolab schedules; leave it out to run as fast as the queue allows"
        )));
    }
    if burst {
        return Err(invalid(
            "--rate-iops and --burst both set when I/Os are issued; use one (a schedule, or bursts with --burst-idle)",
        ));
    }
    Ok(Some(RateSpec { iops, arrival: layer.arrival.unwrap_or_default() }))
}

/// The longest `--completion-watch`: a wake-up from the deepest idle state a server's cores
/// reach costs about a tenth of it.
const MAX_COMPLETION_WATCH: Nanos = Nanos::from_millis(1);

/// The io_uring options, which only the uring engine takes.
fn resolve_uring(layer: &Options, engine: EngineKind) -> Result<UringSpec, SpecError> {
    if engine != EngineKind::Uring {
        if let Some(key) = layer.keys_set().into_iter().find(|k| URING_KEYS.contains(k)) {
            return Err(invalid(format!(
                "{} tunes io_uring; it needs --engine uring (not {engine})",
                flag_name(key)
            )));
        }
        return Ok(UringSpec::default());
    }
    let sqpoll = layer.sqpoll.unwrap_or(false) || layer.sqpoll_cpu.is_some();
    if layer.sqpoll == Some(false) && layer.sqpoll_cpu.is_some() {
        return Err(invalid("--sqpoll-cpu needs --sqpoll; drop --sqpoll=false"));
    }
    let hipri = layer.hipri.unwrap_or(false);
    if hipri && (layer.buffered == Some(true) || layer.direct == Some(false)) {
        return Err(invalid("--hipri polls for O_DIRECT completions; it cannot be used with --buffered"));
    }
    let completion_watch = layer.completion_watch.unwrap_or_default();
    if completion_watch.0 > 0 && (sqpoll || hipri) {
        return Err(invalid(
            "--completion-watch watches the completion queue of a lane that sleeps for completions; with --sqpoll or --hipri the lane does not: drop one",
        ));
    }
    if completion_watch > MAX_COMPLETION_WATCH {
        return Err(invalid(format!(
            "--completion-watch {completion_watch} is longer than a watch helps: a lane that waits that long for a completion is better asleep; at most {MAX_COMPLETION_WATCH}"
        )));
    }
    if let (true, Some(mode @ (RingSetup::DeferTaskrun | RingSetup::CoopTaskrun))) =
        (sqpoll, layer.ring_setup)
    {
        return Err(invalid(format!(
            "--ring-setup {} cannot be combined with --sqpoll: the kernel refuses task-work flags on a polled ring",
            mode.name()
        )));
    }
    Ok(UringSpec {
        ring_setup: layer.ring_setup.unwrap_or_default(),
        fixed_files: layer.fixed_files.unwrap_or(true),
        fixed_buffers: layer.fixed_buffers.unwrap_or(true),
        sqpoll,
        sqpoll_cpu: layer.sqpoll_cpu,
        hipri,
        completion_watch,
    })
}

/// `--distribution`, `--working-set` and `--working-set-moves`. The working set is checked
/// against the region's size here when `--size` gives it, else by the runner.
fn resolve_skew(
    layer: &Options,
    align: Bytes,
    max_bs: Bytes,
) -> Result<(Distribution, Option<WorkingSet>), SpecError> {
    let distribution = layer.distribution.clone().unwrap_or_default();
    let Some(size) = layer.working_set else {
        if layer.working_set_moves.is_some() {
            return Err(invalid(
                "--working-set-moves moves a working set, and there is none: add --working-set SIZE",
            ));
        }
        return Ok((distribution, None));
    };
    if size < max_bs {
        return Err(invalid(format!(
            "--working-set {size} is smaller than the block size {max_bs}; it must hold one I/O"
        )));
    }
    if let Some(region) = layer.size.filter(|&region| size > region) {
        return Err(invalid(format!(
            "--working-set {size} is larger than the region (--size {region}); use a smaller working set or leave it out"
        )));
    }
    if let Some(moves) = layer.working_set_moves {
        if moves.distance.0 % align.0 != 0 {
            return Err(invalid(format!(
                "--working-set-moves {}: the distance {} is not a multiple of --align {align}",
                moves, moves.distance
            )));
        }
    }
    Ok((distribution, Some(WorkingSet { size, moves: layer.working_set_moves })))
}
