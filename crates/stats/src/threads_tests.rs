//! Tests of the thread readings: stat lines parsed, threads classed by name, and their CPU over a
//! window with births, exits and reused thread ids.

use super::*;

const MS: u64 = 1_000_000;

/// A stat line as the kernel writes it, with the fields this module reads set.
fn stat_line(tid: u32, comm: &str, utime: u64, stime: u64, starttime: u64) -> String {
    format!(
        "{tid} ({comm}) S 1 {tid} {tid} 0 -1 4194624 12 0 0 0 {utime} {stime} 0 0 20 0 3 0 \
         {starttime} 25165824 900 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
    )
}

fn sample(tid: u32, starttime: u64, class: ThreadClass, user_ms: u64, system_ms: u64) -> ThreadSample {
    ThreadSample {
        tid,
        starttime,
        class,
        user_ns: user_ms * MS,
        system_ns: system_ms * MS,
        run_ns: None,
        wait_ns: 0,
    }
}

fn class_of(cpu: &[ThreadClassCpu], class: ThreadClass) -> &ThreadClassCpu {
    cpu.iter().find(|c| c.class == class).expect("class in the report")
}

#[test]
fn parses_an_io_wq_thread() {
    let stat = stat_line(4321, "iou-wrk-1234", 3, 250, 987654);
    let parsed = ThreadSample::parse(&stat, None, 100).expect("a stat line");
    assert_eq!(
        parsed,
        ThreadSample {
            tid: 4321,
            starttime: 987654,
            class: ThreadClass::IoWq,
            user_ns: 30 * MS,
            system_ns: 2500 * MS,
            run_ns: None,
            wait_ns: 0,
        }
    );
}

#[test]
fn parses_a_name_with_parentheses_and_numbers_from_the_last_paren() {
    let stat = stat_line(77, "a) (b 1 2) 3", 5, 6, 7);
    let parsed = ThreadSample::parse(&stat, Some("123456789 2000 40\n"), 100).expect("a stat line");
    assert_eq!((parsed.tid, parsed.class), (77, ThreadClass::Other));
    assert_eq!((parsed.user_ns, parsed.system_ns, parsed.starttime), (50 * MS, 60 * MS, 7));
    assert_eq!((parsed.run_ns, parsed.wait_ns), (Some(123456789), 2000));
}

#[test]
fn rejects_what_is_not_a_stat_line_and_ignores_empty_schedstat() {
    assert_eq!(ThreadSample::parse("", None, 100), None);
    assert_eq!(ThreadSample::parse("12 (cut short) S 1 2 3", None, 100), None);
    assert_eq!(ThreadSample::parse("x (name) S", None, 100), None);
    let stat = stat_line(1, "iolab", 1, 1, 1);
    let parsed = ThreadSample::parse(&stat, Some("0 0 0\n"), 100).expect("a stat line");
    assert_eq!(parsed.run_ns, None);
}

#[test]
fn classifies_by_name() {
    assert_eq!(ThreadClass::of("iolab-lane0"), ThreadClass::Worker);
    assert_eq!(ThreadClass::of("iolab-lane12345"), ThreadClass::Worker);
    assert_eq!(ThreadClass::of("iou-sqp-4242"), ThreadClass::Sqpoll);
    assert_eq!(ThreadClass::of("iou-wrk-4243"), ThreadClass::IoWq);
    assert_eq!(ThreadClass::of("iolab"), ThreadClass::Other);
    assert_eq!(ThreadClass::of("iolab-lan"), ThreadClass::Other);
    assert_eq!(ThreadClass::of("iou-wrk"), ThreadClass::Other);
    let names: Vec<_> = ThreadClass::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["workers", "sqpoll", "io-wq", "other"]);
}

#[test]
fn counts_growth_births_exits_and_reused_tids() {
    use ThreadClass::*;
    let mut accounting = ThreadAccounting::new(&[
        sample(1, 10, Worker, 100, 50),
        sample(2, 10, Other, 500, 500),
        sample(4, 10, Other, 10, 10),
        sample(5, 10, Worker, 0, 0),
    ]);
    accounting.observe(&[
        sample(1, 10, Worker, 300, 150),
        sample(2, 10, Other, 500, 500),
        // Born in the window: all of its time counts.
        sample(3, 20, IoWq, 0, 120),
        sample(4, 10, Other, 60, 10),
        sample(5, 10, Worker, 100, 0),
    ]);
    accounting.observe(&[
        sample(1, 10, Worker, 500, 250),
        sample(2, 10, Other, 500, 500),
        sample(3, 20, IoWq, 0, 200),
        // 4 exited: its 50 ms up to the last sample count. 5 exited and its tid was reused.
        sample(5, 30, IoWq, 0, 30),
    ]);
    let cpu = accounting.finish(Nanos(1_000 * MS));

    let order: Vec<_> = cpu.iter().map(|c| c.class).collect();
    assert_eq!(order, [Worker, IoWq, Other], "report order, no empty class");
    assert_eq!(
        class_of(&cpu, Worker),
        &ThreadClassCpu {
            class: Worker,
            threads: 2,
            user_s: 0.5,
            system_s: 0.2,
            busiest_thread_pct: 60.0,
            runqueue_wait_s: 0.0,
            busiest_demand_pct: 60.0,
        }
    );
    assert_eq!(
        class_of(&cpu, IoWq),
        &ThreadClassCpu {
            class: IoWq,
            threads: 2,
            user_s: 0.0,
            system_s: 0.23,
            busiest_thread_pct: 20.0,
            runqueue_wait_s: 0.0,
            busiest_demand_pct: 20.0,
        }
    );
    // Thread 2 used nothing in the window and is not counted.
    assert_eq!(
        class_of(&cpu, Other),
        &ThreadClassCpu {
            class: Other,
            threads: 1,
            user_s: 0.05,
            system_s: 0.0,
            busiest_thread_pct: 5.0,
            runqueue_wait_s: 0.0,
            busiest_demand_pct: 5.0,
        }
    );
}

#[test]
fn schedstat_refines_the_total_and_keeps_the_split() {
    let with_run = |s: ThreadSample, run_ms: u64| ThreadSample { run_ns: Some(run_ms * MS), ..s };
    let (worker, sqpoll) = (ThreadClass::Worker, ThreadClass::Sqpoll);
    let mut accounting = ThreadAccounting::new(&[
        with_run(sample(1, 10, worker, 100, 100), 205),
        with_run(sample(2, 10, sqpoll, 0, 0), 3),
    ]);
    // Ticks say 30 ms user + 10 ms system; schedstat says 48 ms in all.
    // The SQPOLL thread ran 4 ms, under a tick: all of it is system time.
    accounting
        .observe(&[with_run(sample(1, 10, worker, 130, 110), 253), with_run(sample(2, 10, sqpoll, 0, 0), 7)]);
    let cpu = accounting.finish(Nanos(100 * MS));
    let worker_cpu = class_of(&cpu, worker);
    assert_eq!((worker_cpu.user_s, worker_cpu.system_s), (0.036, 0.012));
    assert!((worker_cpu.busiest_thread_pct - 48.0).abs() < 1e-9);
    let sqpoll_cpu = class_of(&cpu, sqpoll);
    assert_eq!((sqpoll_cpu.user_s, sqpoll_cpu.system_s), (0.0, 0.004));
}

#[test]
fn runqueue_wait_adds_to_demand() {
    let with = |s: ThreadSample, run_ms: u64, wait_ms: u64| ThreadSample {
        run_ns: Some(run_ms * MS),
        wait_ns: wait_ms * MS,
        ..s
    };
    let worker = ThreadClass::Worker;
    let mut accounting = ThreadAccounting::new(&[
        with(sample(1, 10, worker, 100, 100), 200, 50),
        with(sample(2, 10, worker, 0, 0), 0, 0),
    ]);
    // Thread 1 ran 600 ms and waited 350 ms for a CPU of a 1 s window: it wanted 95% of a
    // core and got 60%. Thread 2 ran 100 ms and waited 10 ms.
    accounting.observe(&[
        with(sample(1, 10, worker, 400, 400), 800, 400),
        with(sample(2, 10, worker, 10, 0), 100, 10),
    ]);
    let cpu = accounting.finish(Nanos(1_000 * MS));
    let workers = class_of(&cpu, worker);
    assert!((workers.busiest_thread_pct - 60.0).abs() < 1e-9);
    assert!((workers.runqueue_wait_s - 0.36).abs() < 1e-9);
    assert!((workers.busiest_demand_pct - 95.0).abs() < 1e-9);
}

#[test]
fn an_empty_window_reports_nothing() {
    let accounting = ThreadAccounting::new(&[sample(1, 10, ThreadClass::Other, 5, 5)]);
    assert_eq!(accounting.finish(Nanos(0)), []);
}
