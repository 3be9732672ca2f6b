//! Tests of the open-loop schedule: uniform and Poisson due times, lanes interleaved, counts in a
//! window.

use super::*;

fn rate(iops: u64, arrival: Arrival) -> RateSpec {
    RateSpec { iops, arrival }
}

fn take(schedule: &mut Schedule, n: usize) -> Vec<u64> {
    (0..n).map(|_| schedule.take()).collect()
}

/// Due time of the group's I/O `k`, by the definition.
fn by_definition(k: u64, iops: u64) -> u64 {
    (u128::from(k) * NS_PER_SEC / u128::from(iops)) as u64
}

#[test]
fn uniform_spacing_is_exact() {
    let mut schedule = Schedule::new(&rate(2000, Arrival::Uniform), 1, 0, 1, 0);
    let due = take(&mut schedule, 4001);
    assert!(due.iter().enumerate().all(|(n, &t)| t == n as u64 * 500_000), "{:?}", &due[..4]);
    // A period that is not a whole number of nanoseconds (1/3 us) never drifts.
    let mut third = Schedule::new(&rate(3_000_000, Arrival::Uniform), 1, 0, 1, 0);
    let due = take(&mut third, 3_000_001);
    assert_eq!((due[1], due[2], due[3]), (333, 666, 1000));
    assert_eq!(due[3_000_000], 1_000_000_000, "the 3,000,000th I/O is due at exactly 1 s");
    assert!(due.iter().enumerate().all(|(n, &t)| t == by_definition(n as u64, 3_000_000)));
    let mut lane = Schedule::new(&rate(7, Arrival::Uniform), 3, 2, 1, 0);
    let due = take(&mut lane, 1000);
    assert!(due.iter().enumerate().all(|(n, &t)| t == by_definition(n as u64 * 3 + 2, 7)));
}

#[test]
fn uniform_lanes_interleave_into_one_even_schedule() {
    let mut lanes: Vec<Schedule> =
        (0..4).map(|lane| Schedule::new(&rate(1000, Arrival::Uniform), 4, lane, 1, 0)).collect();
    let mut all: Vec<u64> = lanes.iter_mut().flat_map(|s| take(s, 250)).collect();
    all.sort_unstable();
    assert!(all.iter().enumerate().all(|(k, &t)| t == k as u64 * 1_000_000), "{:?}", &all[..8]);
}

#[test]
fn uniform_counts_the_window_exactly() {
    for (threads, iops) in [(1, 2000), (3, 1000), (4, 7), (2, 3_000_000)] {
        for lane in 0..threads {
            let (start, end) = (250_000_000, 1_250_000_000);
            let mut schedule = Schedule::new(&rate(iops, Arrival::Uniform), threads, lane, 1, start);
            let mut brute = Schedule::new(&rate(iops, Arrival::Uniform), threads, lane, 1, start);
            let mut count = 0;
            loop {
                let due = brute.take();
                if due >= end {
                    break;
                }
                count += u64::from(due >= start);
            }
            assert_eq!(schedule.due_between(start, end), count, "{threads} lanes at {iops}, lane {lane}");
        }
    }
    let mut group = 0;
    for lane in 0..3 {
        group += Schedule::new(&rate(1000, Arrival::Uniform), 3, lane, 1, 0).due_between(0, 1_000_000_000);
    }
    assert_eq!(group, 1000, "a group's lanes share its rate");
}

#[test]
fn poisson_gaps_average_one_over_the_rate_and_repeat_with_the_seed() {
    let samples = 100_000;
    let mut schedule = Schedule::new(&rate(2000, Arrival::Poisson), 1, 0, 42, 0);
    let due = take(&mut schedule, samples + 1);
    let gaps: Vec<f64> = due.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let mean = gaps.iter().sum::<f64>() / samples as f64;
    assert!((mean - 500_000.0).abs() / 500_000.0 < 0.02, "mean gap {mean} ns, not 500 us");
    // Exponential: the standard deviation equals the mean, and about 1/e of gaps exceed it.
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / samples as f64).sqrt();
    assert!((sd - mean).abs() / mean < 0.03, "sd {sd} vs mean {mean}");
    let above = gaps.iter().filter(|&&g| g > mean).count() as f64 / samples as f64;
    assert!((above - (-1f64).exp()).abs() < 0.01, "{above}");

    let mut again = Schedule::new(&rate(2000, Arrival::Poisson), 1, 0, 42, 0);
    assert_eq!(take(&mut again, samples + 1), due, "the same seed gives the same schedule");
    let mut other = Schedule::new(&rate(2000, Arrival::Poisson), 1, 0, 43, 0);
    assert_ne!(take(&mut other, 100), due[..100], "another seed, another schedule");
    let mut lane1 = Schedule::new(&rate(2000, Arrival::Poisson), 2, 1, 42, 0);
    assert_ne!(take(&mut lane1, 100), due[..100], "lanes of a group draw their own gaps");
}

#[test]
fn poisson_window_counts_what_was_due_in_it() {
    let (start, end) = (200_000_000, 1_200_000_000);
    let mut issued = Schedule::new(&rate(50_000, Arrival::Poisson), 1, 0, 9, start);
    let mut brute = Schedule::new(&rate(50_000, Arrival::Poisson), 1, 0, 9, start);
    // The lane issued part of the window, then fell behind; the count is the same.
    while issued.next_due_ns() < 700_000_000 {
        issued.take();
    }
    let mut count = 0;
    loop {
        let due = brute.take();
        if due >= end {
            break;
        }
        count += u64::from(due >= start);
    }
    assert_eq!(issued.due_between(start, end), count);
    assert!((count as f64 - 50_000.0).abs() < 5.0 * 50_000f64.sqrt(), "{count}");
}

#[test]
fn a_lane_far_behind_counts_the_rest_at_the_mean_rate() {
    // 10 s at 1 G IOPS per lane: far past what is drawn one by one.
    let mut schedule = Schedule::new(&rate(1_000_000_000, Arrival::Poisson), 1, 0, 3, 0);
    let count = schedule.due_between(0, 10_000_000_000);
    assert!((count as f64 - 1e10).abs() / 1e10 < 0.001, "{count}");
}

fn replay_ios(dues: &[u64]) -> Arc<[ReplayIo]> {
    dues.iter().map(|&due_ns| ReplayIo { due_ns, write: false, offset: 0, len: 4096 }).collect()
}

#[test]
fn a_replay_lane_takes_every_lanes_th_request_at_its_time_then_nothing() {
    let ios = replay_ios(&[0, 10, 20, 30, 40]);
    let mut second = Schedule::replay(ios.clone(), 2, 1, 0);
    assert_eq!(take(&mut second, 2), vec![10, 30]);
    assert_eq!(second.next_due_ns(), u64::MAX, "after its last request nothing is due");
    let mut first = Schedule::replay(ios, 2, 0, 0);
    assert_eq!(first.due_between(5, 41), 2, "20 and 40 are due in 5..41");
    assert_eq!(take(&mut first, 3), vec![0, 20, 40]);
    assert_eq!(first.next_due_ns(), u64::MAX);
}
