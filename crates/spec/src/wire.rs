//! The wire form of a job: job-file text, for fleet mode.
//!
//! An agent never trusts a deserialized `JobSpec`: a `JobSpec` is only ever built by `resolve`,
//! which checks every value. So a coordinator sends the job as the TOML a user could have
//! written, and the agent parses and resolves it exactly as it would a local job file.
//!
//! Every value is written exactly: sizes as integers of bytes, durations as strings of
//! nanoseconds, seeds per group (undoing resolve's seed + index). Some jobs that code builds
//! cannot be written as a job file at all (a lone group not named `main`, a path that is not
//! UTF-8, io_uring tuning on another engine); `job_file_text` resolves its own text and
//! refuses rather than send a job the agent would run differently.

use std::fmt::Debug;

use toml::{Table, Value};

use crate::distribution::WorkingSet;
use crate::error::{invalid, SpecError};
use crate::jobfile;
use crate::model::{AccessSpec, Burst, GroupSpec, JobSpec, RateSpec, TargetSpec, UringSpec};
use crate::resolve::{resolve, STANDARD_SLO};
use crate::units::{Bytes, Nanos};
use crate::values::{EngineKind, IoLimit};
use crate::Options;

/// The job-file text that resolves back to `job` exactly: what a fleet coordinator sends an
/// agent, which validates it the way it validates a user's job file. Refuses a job that no job
/// file resolves to, naming the first field that would change.
pub fn job_file_text(job: &JobSpec) -> Result<String, SpecError> {
    let text = toml::to_string(&job_table(job)?)
        .map_err(|e| invalid(format!("job '{}' cannot be written as TOML: {e}", job.name)))?;
    let back = job_from_text(&text).map_err(|e| {
        invalid(format!("job '{}' cannot travel as a job file, which would be refused: {e}", job.name))
    })?;
    match first_difference(job, &back) {
        None => Ok(text),
        Some((field, sent, received)) => Err(invalid(format!(
            "job '{}' cannot travel as a job file: its {field} would arrive as {received} instead of {sent}",
            job.name
        ))),
    }
}

/// Parses and resolves what `job_file_text` wrote: exactly one job, else an error naming what
/// was found. Parse errors give the line, as for a job file.
pub fn job_from_text(text: &str) -> Result<JobSpec, SpecError> {
    let options = jobfile::parse(text).map_err(|message| invalid(format!("job text: {message}")))?;
    let mut plan = resolve(Some(&options), &Options::default())?;
    if plan.jobs.len() != 1 {
        let names: Vec<String> = plan.jobs.iter().map(|j| format!("'{}'", j.name)).collect();
        return Err(invalid(format!(
            "job text holds {} jobs ({}); an agent runs exactly one, so send each job on its own",
            plan.jobs.len(),
            names.join(", ")
        )));
    }
    Ok(plan.jobs.remove(0))
}

/// `[[job]]` with the job's keys, and its groups' keys inline (one group) or as `[[job.group]]`.
fn job_table(job: &JobSpec) -> Result<Table, SpecError> {
    let JobSpec { name, runtime, ramp, interval, io_limit, io_timeout, slo, continue_on_error, groups } = job;
    let mut table = Table::new();
    table.insert("name".into(), name.clone().into());
    table.insert("runtime".into(), nanos(*runtime));
    table.insert("ramp".into(), nanos(*ramp));
    table.insert("interval".into(), nanos(*interval));
    table.insert("io_timeout".into(), nanos(*io_timeout));
    match io_limit {
        None => {}
        Some(IoLimit::Bytes(limit)) => {
            table.insert("io_limit".into(), bytes(*limit));
        }
        Some(IoLimit::Ios(count)) => {
            table.insert("io_limit".into(), format!("{count}ios").into());
        }
    }
    // Resolve always adds the standard thresholds; only the user's own travel.
    let own: Vec<Value> = slo.iter().filter(|t| !STANDARD_SLO.contains(t)).map(|&t| nanos(t)).collect();
    if !own.is_empty() {
        table.insert("slo".into(), Value::Array(own));
    }
    table.insert("continue_on_error".into(), (*continue_on_error).into());
    match groups.as_slice() {
        // A lone group's keys sit in the job: resolve names it `main` either way.
        [group] => group_keys(group, 0, &mut table)?,
        many => {
            let mut entries = Vec::new();
            for (index, group) in many.iter().enumerate() {
                let mut entry = Table::new();
                entry.insert("name".into(), group.name.clone().into());
                group_keys(group, index, &mut entry)?;
                entries.push(Value::Table(entry));
            }
            table.insert("group".into(), Value::Array(entries));
        }
    }
    let mut file = Table::new();
    file.insert("job".into(), Value::Array(vec![Value::Table(table)]));
    Ok(file)
}

/// The keys of the group at `index` of its job. Every key is written, defaults too, so the text
/// does not depend on what the agent's defaults are.
fn group_keys(group: &GroupSpec, index: usize, table: &mut Table) -> Result<(), SpecError> {
    let GroupSpec {
        name: _,
        target,
        access,
        qd,
        workers,
        engine,
        submit_batch,
        complete_batch,
        cpus,
        uring,
        rate,
        seed,
        verify,
        data,
        replay,
    } = group;
    if replay.is_some() {
        return Err(SpecError::Invalid(
            "a replay's requests do not fit in job-file text; they travel beside it (iolab fleet ... replay)"
                .into(),
        ));
    }
    target_keys(target, table)?;
    access_keys(access, table);
    table.insert("qd".into(), i64::from(*qd).into());
    table.insert("workers".into(), i64::from(*workers).into());
    table.insert("engine".into(), engine.name().into());
    table.insert("submit_batch".into(), i64::from(*submit_batch).into());
    table.insert("complete_batch".into(), i64::from(*complete_batch).into());
    if !cpus.is_empty() {
        let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
        table.insert("cpus".into(), list.join(",").into());
    }
    // Other engines refuse io_uring keys, and resolve gives them the default tuning.
    if *engine == EngineKind::Uring {
        uring_keys(uring, table);
    }
    if let Some(RateSpec { iops, arrival }) = rate {
        table.insert("rate_iops".into(), whole(*iops));
        table.insert("arrival".into(), arrival.name().into());
    }
    if verify.verify {
        table.insert("verify".into(), true.into());
        if let Some(path) = &verify.state {
            let text = path.to_str().ok_or_else(|| {
                invalid(format!(
                    "--verify-state {} is not valid UTF-8, which a job file cannot hold",
                    path.display()
                ))
            })?;
            table.insert("verify_state".into(), text.into());
        }
    }
    // Resolve gives the group at `index` the seed + index.
    table.insert("seed".into(), whole(seed.wrapping_sub(index as u64)));
    data_keys(data, table);
    Ok(())
}

fn target_keys(target: &TargetSpec, table: &mut Table) -> Result<(), SpecError> {
    let TargetSpec { paths, stripe, size, offset, direct, allow_destroy, keep } = target;
    // No paths: the scratch file, which is what leaving `target` out means.
    if !paths.is_empty() {
        let mut list = Vec::new();
        for path in paths {
            let text = path.to_str().ok_or_else(|| {
                invalid(format!(
                    "target {} is not valid UTF-8, which a job file cannot hold; use a path (or a symlink to it) whose name is UTF-8",
                    path.display()
                ))
            })?;
            list.push(Value::String(text.to_string()));
        }
        table.insert("target".into(), Value::Array(list));
    }
    if let Some(stripe) = stripe {
        table.insert("stripe".into(), bytes(*stripe));
    }
    if let Some(size) = size {
        table.insert("size".into(), bytes(*size));
    }
    table.insert("offset".into(), bytes(*offset));
    table.insert("direct".into(), (*direct).into());
    table.insert("allow_destroy".into(), (*allow_destroy).into());
    table.insert("keep".into(), (*keep).into());
    Ok(())
}

fn access_keys(access: &AccessSpec, table: &mut Table) {
    let AccessSpec { read_pct, random_pct, bs_split, align, burst, distribution, working_set } = access;
    table.insert("read_pct".into(), i64::from(*read_pct).into());
    table.insert("random_pct".into(), i64::from(*random_pct).into());
    // A split of one entry is a plain block size: `bs_split` says both exactly.
    let mix: Vec<String> = bs_split.iter().map(|w| format!("{}/{}", w.bs.0, w.weight)).collect();
    table.insert("bs_split".into(), mix.join(",").into());
    table.insert("align".into(), bytes(*align));
    if let Some(Burst { ios, idle }) = burst {
        table.insert("burst".into(), i64::from(*ios).into());
        table.insert("burst_idle".into(), nanos(*idle));
    }
    table.insert("distribution".into(), distribution.to_string().into());
    if let Some(WorkingSet { size, moves }) = working_set {
        table.insert("working_set".into(), bytes(*size));
        if let Some(moves) = moves {
            table.insert("working_set_moves".into(), moves.to_string().into());
        }
    }
}

fn data_keys(data: &crate::data::DataSpec, table: &mut Table) {
    let crate::data::DataSpec { dedupe_pct, dedupe_set, compress_pct, pattern } = data;
    table.insert("dedupe_pct".into(), i64::from(*dedupe_pct).into());
    // Resolve refuses a set without repeats.
    if *dedupe_pct > 0 {
        table.insert("dedupe_set".into(), bytes(*dedupe_set));
    }
    table.insert("compress_pct".into(), i64::from(*compress_pct).into());
    table.insert("buffer_pattern".into(), pattern.to_string().into());
}

fn uring_keys(uring: &UringSpec, table: &mut Table) {
    let UringSpec { ring_setup, fixed_files, fixed_buffers, sqpoll, sqpoll_cpu, hipri, completion_watch } =
        uring;
    table.insert("ring_setup".into(), ring_setup.name().into());
    table.insert("fixed_files".into(), (*fixed_files).into());
    table.insert("fixed_buffers".into(), (*fixed_buffers).into());
    table.insert("sqpoll".into(), (*sqpoll).into());
    if let Some(cpu) = sqpoll_cpu {
        table.insert("sqpoll_cpu".into(), i64::from(*cpu).into());
    }
    table.insert("hipri".into(), (*hipri).into());
    if completion_watch.0 > 0 {
        table.insert("completion_watch".into(), nanos(*completion_watch));
    }
}

/// A duration as nanoseconds in a string: a bare number would mean seconds.
fn nanos(value: Nanos) -> Value {
    format!("{}ns", value.0).into()
}

/// A size as an integer of bytes.
fn bytes(value: Bytes) -> Value {
    whole(value.0)
}

/// A u64 as a TOML integer, or as a string of digits beyond TOML's largest integer (the sizes
/// resolve accepts never are; seeds may be, and the seed key takes the string).
fn whole(value: u64) -> Value {
    match i64::try_from(value) {
        Ok(n) => Value::Integer(n),
        Err(_) => Value::String(value.to_string()),
    }
}

/// The first field that differs between what was sent and what resolved, with both values.
fn first_difference(sent: &JobSpec, back: &JobSpec) -> Option<(String, String, String)> {
    // "number of groups" comes before any group's fields, so zip never hides a missing group.
    let (sent, back) = (fields(sent), fields(back));
    sent.into_iter().zip(back).find(|(a, b)| a.1 != b.1).map(|(a, b)| (a.0, a.1, b.1))
}

/// Every field of a job, labelled, with its value as Debug text.
fn fields(job: &JobSpec) -> Vec<(String, String)> {
    fn add(out: &mut Vec<(String, String)>, label: String, value: &dyn Debug) {
        out.push((label, format!("{value:?}")));
    }
    let JobSpec { name, runtime, ramp, interval, io_limit, io_timeout, slo, continue_on_error, groups } = job;
    let mut out = Vec::new();
    add(&mut out, "name".into(), name);
    add(&mut out, "runtime".into(), runtime);
    add(&mut out, "ramp".into(), ramp);
    add(&mut out, "interval".into(), interval);
    add(&mut out, "io_limit".into(), io_limit);
    add(&mut out, "io_timeout".into(), io_timeout);
    add(&mut out, "slo".into(), slo);
    add(&mut out, "continue_on_error".into(), continue_on_error);
    add(&mut out, "number of groups".into(), &groups.len());
    for (index, group) in groups.iter().enumerate() {
        let GroupSpec {
            name,
            target,
            access,
            qd,
            workers,
            engine,
            submit_batch,
            complete_batch,
            cpus,
            uring,
            rate,
            seed,
            verify,
            data,
            replay,
        } = group;
        let label = |field: &str| format!("group {} {field}", index + 1);
        add(&mut out, label("name"), name);
        add(&mut out, label("target"), target);
        add(&mut out, label("access"), access);
        add(&mut out, label("qd"), qd);
        add(&mut out, label("workers"), workers);
        add(&mut out, label("engine"), engine);
        add(&mut out, label("submit_batch"), submit_batch);
        add(&mut out, label("complete_batch"), complete_batch);
        add(&mut out, label("cpus"), cpus);
        add(&mut out, label("uring"), uring);
        add(&mut out, label("rate"), rate);
        add(&mut out, label("seed"), seed);
        add(&mut out, label("verify"), verify);
        add(&mut out, label("data"), data);
        add(&mut out, label("replay"), replay);
    }
    out
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
