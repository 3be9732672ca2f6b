//! Studies of concurrency across a job: target scaling (the same workload on each target alone,
//! then on all of them at once, so the aggregate can be held against the sum of the singles),
//! and a blender's interference (each concurrent group alone, then all together).

use std::path::PathBuf;

use crate::error::{invalid, SpecError};
use crate::model::JobSpec;

/// The jobs of a scaling run over the targets of `base`'s only group: one per target alone,
/// then one with a group per target, all at once. Each group keeps the workers and QD given.
pub fn plan(base: &JobSpec) -> Result<Vec<JobSpec>, SpecError> {
    let [group] = base.groups.as_slice() else {
        return Err(invalid("scale takes one workload (a job file with several groups cannot be scaled)"));
    };
    let paths = &group.target.paths;
    if paths.len() < 2 {
        return Err(invalid("scale needs two or more targets, e.g. iolab scale /dev/zram0 /dev/zram1"));
    }
    let alone = |index: usize, path: &PathBuf| {
        let mut g = group.clone();
        g.name = format!("t{}", index + 1);
        g.target.paths = vec![path.clone()];
        g.target.stripe = None;
        g
    };
    let mut jobs: Vec<JobSpec> = paths
        .iter()
        .enumerate()
        .map(|(i, path)| JobSpec {
            name: format!("alone: {}", path.display()),
            groups: vec![alone(i, path)],
            ..base.clone()
        })
        .collect();
    jobs.push(JobSpec {
        name: format!("together: {} targets", paths.len()),
        groups: paths.iter().enumerate().map(|(i, path)| alone(i, path)).collect(),
        ..base.clone()
    });
    Ok(jobs)
}

/// The jobs of an interference run (`--each-alone`) of `base`'s concurrent groups: each group
/// alone, in order, then the job as written, every group at once.
pub fn each_alone(base: &JobSpec) -> Result<Vec<JobSpec>, SpecError> {
    if base.groups.len() < 2 {
        return Err(invalid(format!(
            "--each-alone compares a job's concurrent groups, alone and together; job '{}' has one group (give a job file with several [[job.group]] tables)",
            base.name
        )));
    }
    let mut jobs: Vec<JobSpec> = base
        .groups
        .iter()
        .map(|group| JobSpec {
            name: format!("alone: {}", group.name),
            groups: vec![group.clone()],
            ..base.clone()
        })
        .collect();
    jobs.push(JobSpec { name: format!("together: {} groups", base.groups.len()), ..base.clone() });
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{defaults, resolve, Options};

    #[test]
    fn singles_then_all_together_with_the_same_load_per_target() {
        let flags = Options {
            target: Some(vec!["a".into(), "b".into(), "c".into()]),
            workers: Some(crate::Axis::one(2)),
            ..defaults()
        };
        let base = resolve(None, &flags).expect("plan").jobs.remove(0);
        let jobs = plan(&base).expect("scale plan");
        assert_eq!(jobs.len(), 4);
        assert_eq!(jobs[1].groups[0].target.paths, [PathBuf::from("b")]);
        let together = &jobs[3];
        assert_eq!(together.groups.len(), 3);
        assert!(together.groups.iter().all(|g| g.workers == 2 && g.target.paths.len() == 1));
        assert_ne!(together.groups[0].name, together.groups[1].name);

        let one = resolve(None, &Options { target: Some(vec!["a".into()]), ..defaults() }).expect("plan");
        assert!(plan(&one.jobs[0]).unwrap_err().to_string().contains("two or more targets"));
    }
}
