//! fio's jobs in order, cut at each `stonewall`, as iolab jobs: the fio jobs between two
//! stonewalls run at the same time, so they become the concurrent groups of one iolab job,
//! and the iolab jobs run one after another.

use toml::{Table, Value};

use crate::error::{at, FioJobError};
use crate::job::{size_text, time_text, Group};
use crate::Findings;

/// How long a job that fio runs until its `size` is done may take here: iolab's runs end at a
/// time, so one is given, long enough not to end a real run first.
pub const NO_RUNTIME_CAP_US: u64 = 24 * 3_600_000_000;

/// The `[[job]]` tables of the translated file.
pub fn jobs(groups: Vec<Group>, findings: &mut Findings) -> Result<Vec<Value>, FioJobError> {
    let mut sets: Vec<Vec<Group>> = Vec::new();
    for group in groups {
        match sets.last_mut() {
            Some(set) if !group.stonewall => set.push(group),
            _ => sets.push(vec![group]),
        }
    }
    sets.into_iter().map(|set| job(set, findings)).collect()
}

fn job(set: Vec<Group>, findings: &mut Findings) -> Result<Value, FioJobError> {
    let first = &set[0];
    // A job's groups are measured together for one time: fio's timing options must agree.
    for other in &set[1..] {
        let differs = if other.time_based != first.time_based {
            Some("time_based")
        } else if other.runtime_us != first.runtime_us {
            Some("runtime")
        } else if other.ramp_us != first.ramp_us {
            Some("ramp_time")
        } else {
            None
        };
        if let Some(option) = differs {
            return Err(at(
                &other.loc,
                format!(
                    "[{}] runs beside [{}] (no stonewall between them) with a different {option}; iolab measures the groups of a job for one time: give them the same {option}, or put stonewall in [{}]",
                    other.name, first.name, other.name
                ),
            ));
        }
    }
    let mut table = Table::new();
    let names: Vec<&str> = set.iter().map(|g| g.name.as_str()).collect();
    table.insert("name".into(), names.join("+").into());
    table.insert("ramp".into(), time_text(first.ramp_us).into());
    if first.time_based {
        let Some(runtime) = first.runtime_us else {
            return Err(at(
                &first.loc,
                format!(
                    "[{}] is time_based without a runtime, which runs until stopped; add runtime=",
                    first.name
                ),
            ));
        };
        table.insert("runtime".into(), time_text(runtime).into());
    } else {
        if set.len() > 1 {
            return Err(at(
                &set[1].loc,
                format!(
                    "[{}] runs beside [{}] without time_based: fio ends each when it has moved its own size, and iolab ends a job's groups together; add time_based (with runtime), or put stonewall in [{}]",
                    set[1].name, first.name, set[1].name
                ),
            ));
        }
        let Some(bytes) = first.io_bytes else {
            return Err(at(&first.loc, format!("[{}] has neither time_based nor size: fio would run it once over the whole file or device; add size= (or io_size=), or time_based with runtime=", first.name)));
        };
        // fio's clones each move io_size; iolab counts the job's I/O as a whole.
        table.insert("io_limit".into(), size_text(bytes.saturating_mul(first.numjobs)).into());
        let runtime = match first.runtime_us {
            Some(runtime) => runtime,
            None => {
                findings.note(&first.loc, &format!("[{}] has no runtime: fio runs it until its size is done, and so does iolab (io_limit), giving up after {}", first.name, time_text(NO_RUNTIME_CAP_US)));
                NO_RUNTIME_CAP_US
            }
        };
        table.insert("runtime".into(), time_text(runtime).into());
    }
    match set.as_slice() {
        [only] => table.extend(only.keys.clone()),
        many => {
            let groups = many
                .iter()
                .map(|g| {
                    let mut keys = g.keys.clone();
                    keys.insert("name".into(), g.name.clone().into());
                    Value::Table(keys)
                })
                .collect();
            table.insert("group".into(), Value::Array(groups));
        }
    }
    Ok(Value::Table(table))
}
