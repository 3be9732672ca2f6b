//! How a load axis applies to a job of several concurrent groups (an I/O blender): a swept QD
//! or worker count scales every group, and a ramp's rate is shared by the groups, so that the
//! groups keep the proportions the job file gives them at every point. docs/job-file.md,
//! "Studies over a job file", states the rules.

use iolab_spec::Options;

/// Each group's value at a point whose value is `to`: the largest of `values` becomes `to` and
/// every other one is scaled by the same factor (`to` / the largest), rounded to the nearest
/// whole number (halves up), at least 1. Groups of equal values all get `to`.
pub fn scaled(values: &[u32], to: u32) -> Vec<u32> {
    let top = u128::from(values.iter().copied().max().unwrap_or(1).max(1));
    values
        .iter()
        .map(|&v| {
            let exact_x2 = u128::from(v) * u128::from(to) * 2;
            u32::try_from((exact_x2 + top) / (2 * top)).unwrap_or(u32::MAX).max(1)
        })
        .collect()
}

/// `total` shared in proportion to `weights`, in whole units: each group its floor, then the
/// units left over to the largest remainders (the first group wins a tie), so the shares sum to
/// `total`. A group with a rate of 0 cannot run, so a share that would be 0 is 1, taken from
/// the largest share: the sum stays `total` as long as `total` is at least the number of groups
/// (a ramp skips a level below that, saying so).
pub fn shares(weights: &[u64], total: u64) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if sum == 0 {
        return vec![1; weights.len()];
    }
    let exact: Vec<(u128, u128)> = weights
        .iter()
        .map(|&w| {
            let product = u128::from(total) * u128::from(w);
            (product / sum, product % sum)
        })
        .collect();
    let mut out: Vec<u64> = exact.iter().map(|&(floor, _)| floor as u64).collect();
    let left = total.saturating_sub(out.iter().sum());
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| exact[b].1.cmp(&exact[a].1).then(a.cmp(&b)));
    for &index in order.iter().take(left as usize) {
        out[index] += 1;
    }
    while let Some(empty) = out.iter().position(|&share| share == 0) {
        let largest = (0..out.len()).max_by_key(|&i| (out[i], std::cmp::Reverse(i))).unwrap_or(empty);
        if out[largest] > 1 {
            out[largest] -= 1;
        }
        out[empty] = 1;
    }
    out
}

/// `file` with each group of its one job passed through `edit` (with the group's index), or
/// `None` when the file lists no groups (its job is one group, which flags set directly).
pub fn with_each_group(file: &Options, mut edit: impl FnMut(usize, &mut Options)) -> Option<Options> {
    let mut file = file.clone();
    let groups = match file.job.as_mut_slice() {
        [] if !file.group.is_empty() => &mut file.group,
        [job] if !job.group.is_empty() => &mut job.group,
        _ => return None,
    };
    for (index, group) in groups.iter_mut().enumerate() {
        edit(index, group);
    }
    Some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_value_becomes_the_point_and_the_others_keep_their_ratio() {
        assert_eq!(scaled(&[16, 4], 64), [64, 16]);
        assert_eq!(scaled(&[16, 4], 8), [8, 2]);
        assert_eq!(scaled(&[8, 8, 8], 2), [2, 2, 2], "equal groups all run at the point's value");
        assert_eq!(scaled(&[4, 1], 2), [2, 1], "a half rounds up");
        assert_eq!(scaled(&[16, 2], 1), [1, 1], "never below 1");
        assert_eq!(scaled(&[3, 2], 9), [9, 6]);
    }

    #[test]
    fn shares_sum_to_the_total_in_proportion() {
        assert_eq!(shares(&[4, 1], 1000), [800, 200]);
        assert_eq!(shares(&[1, 1, 1], 100), [34, 33, 33], "the remainder goes to the first on a tie");
        assert_eq!(shares(&[2, 1], 10), [7, 3]);
        assert_eq!(shares(&[1000, 1], 10), [9, 1], "a share of 0 is 1, taken from the largest");
        assert_eq!(shares(&[1, 1, 1000], 3), [1, 1, 1], "still the total");
        assert_eq!(shares(&[0, 0], 10), [1, 1]);
        let many = shares(&[8; 44], 1_000_003);
        assert_eq!(many.iter().sum::<u64>(), 1_000_003);
        assert!(many.iter().all(|&s| s == 22_727 || s == 22_728), "{many:?}");
    }

    #[test]
    fn each_group_of_the_one_job_is_edited() {
        let file = iolab_spec::jobfile::parse("qd = 4\n[[group]]\nname = \"a\"\n[[group]]\nname = \"b\"\n")
            .expect("file");
        let edited = with_each_group(&file, |i, g| g.workers = Some(iolab_spec::Axis::one(i as u32 + 1)))
            .expect("groups");
        let workers: Vec<_> = edited.group.iter().map(|g| g.workers.clone()).collect();
        assert_eq!(workers, [Some(iolab_spec::Axis::one(1)), Some(iolab_spec::Axis::one(2))]);
        let nested = iolab_spec::jobfile::parse("[[job]]\n[[job.group]]\n[[job.group]]\n").expect("file");
        assert_eq!(with_each_group(&nested, |_, _| ()).map(|f| f.job[0].group.len()), Some(2));
        let flat = iolab_spec::jobfile::parse("qd = 4\n").expect("file");
        assert!(with_each_group(&flat, |_, _| ()).is_none());
    }

    #[test]
    fn a_sweep_of_workers_scales_each_group_and_names_the_point_by_its_value() {
        let file = iolab_spec::jobfile::parse(
            "engine = \"null\"\ntarget = \"/nonexistent/t\"\nsize = \"1m\"\n[[group]]\nworkers = 4\n[[group]]\nworkers = 2\nqd = 3\n",
        )
        .expect("file");
        let flags = Options { workers: Some("2,8".parse().expect("workers")), ..Options::default() };
        let input = crate::plan::Input { file: Some(file), flags, targets: Vec::new() };
        let sweep = crate::sweep::Sweep::over(&input, 1, None).expect("sweep");
        let workers: Vec<Vec<(u32, u32)>> = sweep
            .plan
            .jobs
            .iter()
            .map(|job| job.groups.iter().map(|g| (g.workers, g.qd)).collect())
            .collect();
        assert_eq!(workers, [vec![(2, 32), (1, 3)], vec![(8, 32), (4, 3)]], "QD stays each group's own");
        let names: Vec<&str> = sweep.plan.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["workers 2", "workers 8"]);
    }
}
