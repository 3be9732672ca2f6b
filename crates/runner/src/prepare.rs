//! Getting targets ready before any I/O is timed: the scratch file, laying out file targets,
//! sizes, O_DIRECT alignment, and the safety check before writing to a block device.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use iolab_engine::content::ContentConfig;
use iolab_engine::target::{self, Access, OpenedTarget, TargetKind};
use iolab_engine::{exit_cleanup, safety};
use iolab_spec::{Bytes, EngineKind, GroupSpec, JobSpec, RunPlan};

use crate::error::RunError;
use crate::leftovers;
use crate::observer::Observer;

/// Size of the scratch file when no --size is given.
pub const SCRATCH_SIZE: Bytes = Bytes(1 << 30);

/// A target opened for one group, with the region the group works on.
pub struct PreparedTarget {
    pub path: PathBuf,
    pub file: File,
    /// What the descriptor is (not what the path names now).
    pub kind: TargetKind,
    /// What the user should know about this target (e.g. that it is sparse).
    pub notes: Vec<String>,
    pub region_start: u64,
    pub region_size: u64,
}

impl PreparedTarget {
    /// Discards (trims) the target's region: a block device forgets its data, a file's
    /// blocks are freed. Refused by devices that cannot discard; the caller decides.
    pub fn discard(&self) -> Result<(), RunError> {
        Ok(target::discard(&self.path, &self.file, self.kind, self.region_start, self.region_size)?)
    }
}

/// The scratch file of a run; removed when dropped unless the user asked to keep it, and by a
/// second stop signal (which ends the process at once) while it lives.
pub struct Scratch {
    pub path: PathBuf,
    keep: bool,
    /// Held while the file is to be removed: dropping it disarms the second signal's removal.
    _on_exit: Option<exit_cleanup::RemoveOnExit>,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Refuses a plan whose I/O buffers would take more than half of the memory available: the
/// kernel would kill the run instead of it failing with a message.
pub fn check_buffer_memory(jobs: &[JobSpec]) -> Result<(), RunError> {
    let Some(available) = mem_available() else { return Ok(()) };
    for job in jobs {
        let needed: u64 = job
            .groups
            .iter()
            .map(|g| {
                u64::from(g.lanes()) * u64::from(g.qd_per_lane()) * g.access.max_bs().0.next_multiple_of(4096)
            })
            .sum();
        if needed > available / 2 {
            return Err(RunError::Invalid(format!(
                "job '{}' needs {} of I/O buffers (threads x QD x largest block), more than half of the {} of memory available; lower --qd, --workers or --bs",
                job.name,
                Bytes(needed),
                Bytes(available)
            )));
        }
    }
    Ok(())
}

fn mem_available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Creates and lays out the scratch file if any group of the plan has no target.
pub fn scratch(
    plan: &RunPlan,
    cancel: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<Option<Scratch>, RunError> {
    let groups: Vec<&GroupSpec> =
        plan.jobs.iter().flat_map(|j| &j.groups).filter(|g| g.target.paths.is_empty()).collect();
    if groups.is_empty() {
        return Ok(None);
    }
    let size = groups
        .iter()
        .map(|g| g.target.offset.0 + g.target.size.unwrap_or(SCRATCH_SIZE).0)
        .max()
        .unwrap_or(SCRATCH_SIZE.0);
    let keep = groups.iter().any(|g| g.target.keep);
    let dir = std::env::current_dir().map_err(|source| RunError::Internal {
        context: "cannot find the current directory".into(),
        source,
    })?;
    let removed = leftovers::remove_abandoned_scratch_files(&dir);
    if !removed.is_empty() {
        observer.note(&format!(
            "removed {} scratch file(s) that earlier iolab runs left behind when they were killed (no iolab with the pid in the name runs; a file kept with --keep is named {} and never removed): {}",
            removed.len(),
            leftovers::KEPT_PATTERN,
            removed.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    let path = match keep {
        true => leftovers::free_kept_path(&dir, std::process::id()),
        false => dir.join(leftovers::scratch_name(std::process::id())),
    };
    let kept = if keep { " (--keep: it stays after the run, and no later run removes it)" } else { "" };
    // The null engine neither reads nor writes its target: its scratch file holds no data.
    let empty = groups.iter().all(|g| g.engine == EngineKind::Null);
    let making = if empty { "making an empty (sparse)" } else { "laying out a" };
    observer.note(&format!("{making} {} scratch file at {}{kept}", Bytes(size), path.display()));
    // From here on the guard removes whatever was created, even on error or a second signal: a
    // file to keep is kept only once it is whole.
    let mut scratch = Scratch { _on_exit: Some(exit_cleanup::remove_on_exit(&path)), path, keep: false };
    // Shared by the groups without a target: laid out with the first one's data.
    match empty {
        true => target::size_without_data(&scratch.path, size)?,
        false => target::lay_out_file_with(
            &scratch.path,
            size,
            &ContentConfig::new(&groups[0].data, groups[0].seed, 1),
            cancel,
        )?,
    };
    if keep {
        scratch.keep = true;
        scratch._on_exit = None;
    }
    Ok(Some(scratch))
}

/// Targets a caller opened and checked itself (a fleet agent, beneath its `--allow-write`): per
/// group, one for each of the group's paths, in order. The runner lays them out and runs on
/// these descriptors and never opens those paths again.
pub type OpenedTargets = Vec<Vec<OpenedTarget>>;

/// Opens and checks the targets of every group of `job`: per group, its targets in order.
/// With `opened`, the groups that name targets use those descriptors instead of their paths.
pub fn targets(
    job: &JobSpec,
    scratch: Option<&Path>,
    opened: Option<OpenedTargets>,
    cancel: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<Vec<Vec<PreparedTarget>>, RunError> {
    let mut opened = opened.map(Vec::into_iter);
    job.groups
        .iter()
        .map(|group| {
            let given = opened.as_mut().map(|o| o.next().unwrap_or_default());
            let handles = match (group.target.paths.as_slice(), scratch, given) {
                ([], Some(scratch), _) => vec![open_by_path(group, scratch)?],
                ([], None, _) => return Err(RunError::Invalid("no target and no scratch file".into())),
                (paths, _, Some(given)) if given.len() == paths.len() => given,
                (_, _, Some(_)) => {
                    return Err(RunError::Invalid(
                        "the opened targets do not match the job's targets (a bug in iolab)".into(),
                    ))
                }
                (paths, _, None) => paths.iter().map(|p| open_by_path(group, p)).collect::<Result<_, _>>()?,
            };
            let context = |e: RunError| match e {
                RunError::Invalid(m) if job.groups.len() > 1 => {
                    RunError::Invalid(format!("group '{}': {m}", group.name))
                }
                other => other,
            };
            let prepared = handles
                .into_iter()
                .map(|handle| prepare(group, handle, cancel, observer))
                .collect::<Result<Vec<_>, _>>()
                .map_err(context)?;
            check_stripe(group, &prepared).map_err(context)?;
            Ok(prepared)
        })
        .collect()
}

/// Opens `path` by name for a run of this process's own user: for writing when the group
/// writes or the file must be laid out first, created when missing and given a size.
fn open_by_path(group: &GroupSpec, path: &Path) -> Result<OpenedTarget, RunError> {
    let spec = &group.target;
    let needed = spec.size.map(|size| spec.offset.0 + size.0);
    let meta = std::fs::metadata(path);
    if let Ok(meta) = &meta {
        // Refused by what it is before it is opened (opening a character device can act on it).
        target::classify(path, meta.file_type())?;
    }
    let access = match (meta, needed) {
        (Err(e), _) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(target::TargetError::from_open(path, group.access.writes(), e).into())
        }
        (Err(_), None) => return Err(target::TargetError::NotFound(path.to_path_buf()).into()),
        (Err(_), Some(_)) => Access::Create,
        (Ok(meta), Some(needed)) if meta.is_file() && meta.len() < needed => Access::Write,
        _ if group.access.writes() => Access::Write,
        _ => Access::Read,
    };
    OpenedTarget::open_path(path, access)
        .map_err(|e| target::TargetError::from_open(path, access != Access::Read, e).into())
}

/// Every target must hold at least one whole chunk of the stripe.
fn check_stripe(group: &GroupSpec, targets: &[PreparedTarget]) -> Result<(), RunError> {
    let Some(stripe) = group.target.stripe else { return Ok(()) };
    match targets.iter().find(|t| t.region_size < stripe.0) {
        Some(small) => Err(RunError::Invalid(format!(
            "the region of {} ({}) is smaller than one --stripe chunk ({stripe}); use a smaller --stripe or a larger --size",
            small.path.display(),
            Bytes(small.region_size)
        ))),
        None => Ok(()),
    }
}

fn prepare(
    group: &GroupSpec,
    handle: OpenedTarget,
    cancel: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<PreparedTarget, RunError> {
    let spec = &group.target;
    let writes = group.access.writes();
    let offset = spec.offset.0;
    let path = handle.path.clone();
    let io_error = |context, source| target::TargetError::Io { path: path.clone(), context, source };
    let meta = handle.file.metadata().map_err(|e| io_error("cannot stat", e))?;
    let kind = target::classify(&path, meta.file_type())?;
    // A file iolab did not lay out is someone's data; the null engine writes nothing.
    if kind == TargetKind::File && writes && !spec.allow_destroy && group.engine != EngineKind::Null {
        let findings = safety::inspect_open_file(&handle.file).map_err(cannot_check(&path))?;
        refuse_findings(&path, findings, None)?;
    }
    if let (TargetKind::File, Some(size)) = (kind, spec.size) {
        // A file the run may not write is laid out further only when iolab made it.
        let may_write = (writes && spec.allow_destroy) || handle.created() || spec.paths.is_empty();
        if !may_write {
            refuse_growth(&handle, &meta, offset, size)?;
        }
        let content = ContentConfig::new(&group.data, group.seed, 1);
        let layout = target::lay_out_with(&handle, offset + size.0, &content, cancel)?;
        if layout.written > 0 && !spec.paths.is_empty() {
            observer.note(&format!("wrote {} of data to lay out {}", Bytes(layout.written), path.display()));
        }
    }
    let file = handle.file;
    target::set_run_flags(&file, spec.direct).map_err(|e| match e.raw_os_error() {
        Some(libc::EINVAL) => target::TargetError::NoDirect(path.clone()),
        _ => io_error("cannot set the run's open flags", e),
    })?;
    let info = target::inspect(&path, &file)?;
    let mut notes = Vec::new();
    if info.kind == TargetKind::BlockDevice && writes && !spec.allow_destroy {
        let inspection = safety::inspect_open_block_device(&file, &path).map_err(cannot_check(&path))?;
        refuse_findings(&path, inspection.findings, inspection.fallback.clone())?;
        if let Some(fallback) = inspection.fallback {
            observer.note(&format!("warning: {}: {fallback}", path.display()));
            notes.push(fallback);
        }
    }
    if offset >= info.size {
        return Err(RunError::Invalid(format!(
            "--offset {} is beyond the end of {} ({}); use a smaller --offset",
            spec.offset,
            path.display(),
            Bytes(info.size)
        )));
    }
    let region_size = match spec.size {
        Some(size) if offset + size.0 > info.size => {
            return Err(RunError::Invalid(format!(
                "--offset {} + --size {} is beyond the end of {} ({}); use a smaller --size",
                spec.offset,
                size,
                path.display(),
                Bytes(info.size)
            )))
        }
        Some(size) => size.0,
        None => info.size - offset,
    };
    let max_bs = group.access.max_bs();
    if region_size < max_bs.0 {
        return Err(RunError::Invalid(format!(
            "the region of {} ({}) is smaller than the block size {max_bs}; use a larger --size or a smaller --bs",
            path.display(),
            Bytes(region_size)
        )));
    }
    if spec.direct {
        check_direct_alignment(group, &path, info.direct_align)?;
    }
    if group.uring.hipri && !target::has_poll_queues_behind(&path) {
        return Err(RunError::Invalid(format!(
            "--hipri polls for completions, but the device behind {} has no poll queues (its queue/io_poll is not 1); NVMe gets them with the nvme module's poll_queues=N; drop --hipri",
            path.display()
        )));
    }
    // Holes matter only to an engine that reads: the null engine touches nothing.
    if info.kind == TargetKind::File && group.engine != EngineKind::Null {
        use std::os::unix::fs::MetadataExt;
        let allocated = file.metadata().map(|m| m.blocks() * 512).unwrap_or(u64::MAX);
        if allocated < (offset + region_size).min(info.size) {
            let note = format!(
                "{} is sparse: only {} of its {} are allocated, so reads of the holes never reach the device; write it in full first",
                path.display(),
                Bytes(allocated),
                Bytes(info.size)
            );
            observer.note(&format!("warning: {note}"));
            notes.push(note);
        }
    }
    Ok(PreparedTarget { path, file, kind: info.kind, notes, region_start: offset, region_size })
}

/// Refuses to lay out more of a file, shorter than `--offset` + `--size`, that iolab did not make
/// (it neither begins with iolab's mark nor is empty): growing it would change a user's file
/// in a run that was not allowed to write it (a read run, or the null engine's).
fn refuse_growth(
    handle: &OpenedTarget,
    meta: &std::fs::Metadata,
    offset: u64,
    size: Bytes,
) -> Result<(), RunError> {
    let (len, needed) = (meta.len(), offset + size.0);
    if len >= needed {
        return Ok(());
    }
    let path = &handle.path;
    let findings = safety::inspect_open_file(&handle.file).map_err(|source| RunError::Internal {
        context: format!("cannot read {} to see whether iolab made it", path.display()),
        source,
    })?;
    if findings.is_empty() {
        return Ok(());
    }
    let asks = match offset {
        0 => format!("--size asks {size}"),
        _ => format!("--offset {} + --size {size} ask {}", Bytes(offset), Bytes(needed)),
    };
    let instead = match len.checked_sub(offset).filter(|fit| *fit > 0) {
        Some(fit) => format!("Pass --size {} or less", exact(fit)),
        None => "Pass a smaller --offset".to_string(),
    };
    Err(RunError::Invalid(format!(
        "{} holds {}, {asks}: a run that does not write a file iolab did not make never lays out more of it (it does not begin with iolab's mark); nothing was changed. {instead}, or write it first (a write run, with --allow-destroy)",
        path.display(),
        Bytes(len)
    )))
}

/// `bytes` as a --size value that is exactly it: "8MiB", or the plain number when a unit would round.
fn exact(bytes: u64) -> String {
    let shown = Bytes(bytes).to_string();
    if shown.contains('.') {
        bytes.to_string()
    } else {
        shown
    }
}

/// Refuses the write when the safety check found anything on `path` that it would destroy.
fn refuse_findings(
    path: &Path,
    findings: Vec<safety::Finding>,
    fallback: Option<String>,
) -> Result<(), RunError> {
    if findings.is_empty() {
        return Ok(());
    }
    Err(RunError::Refused { path: path.to_path_buf(), findings, fallback })
}

/// The safety check itself failed: the write does not go ahead unchecked.
fn cannot_check(path: &Path) -> impl Fn(std::io::Error) -> RunError + '_ {
    move |source| RunError::Internal {
        context: format!("cannot check {} before writing", path.display()),
        source,
    }
}

/// O_DIRECT needs offsets and lengths that are multiples of the target's logical block size.
fn check_direct_alignment(group: &GroupSpec, path: &Path, align: u32) -> Result<(), RunError> {
    let align = u64::from(align);
    let unit = Bytes(align);
    let bad = |flag: &str, value: Bytes| {
        RunError::Invalid(format!(
            "{flag} {value} is not a multiple of the {unit} logical block size of {}, which O_DIRECT requires; use a multiple of {unit}, or --buffered",
            path.display()
        ))
    };
    if let Some(w) = group.access.bs_split.iter().find(|w| w.bs.0 % align != 0) {
        return Err(bad("--bs", w.bs));
    }
    if group.access.align.0 % align != 0 {
        return Err(bad("--align", group.access.align));
    }
    if group.target.offset.0 % align != 0 {
        return Err(bad("--offset", group.target.offset));
    }
    Ok(())
}
