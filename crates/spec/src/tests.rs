//! Resolution tests: defaults, layering, and the one-line errors of bad input.

use crate::jobfile::parse;
use crate::*;

fn flags(text: &str) -> Options {
    parse(text).expect("test flags parse")
}

fn plan(file: Option<&str>, cli: &str) -> Result<RunPlan, SpecError> {
    let file = file.map(|text| parse(text).expect("test file parses"));
    resolve(file.as_ref(), &flags(cli))
}

fn error(file: Option<&str>, cli: &str) -> String {
    plan(file, cli).expect_err("should be rejected").to_string()
}

#[test]
fn defaults_are_4k_random_read_qd32_one_worker() {
    let plan = plan(None, "").unwrap();
    let job = &plan.jobs[0];
    assert_eq!(job.runtime, Nanos::from_secs(10));
    assert_eq!(job.ramp, Nanos::from_secs(2));
    assert_eq!(job.slo, STANDARD_SLO.to_vec());
    let group = &job.groups[0];
    assert_eq!((group.access.read_pct, group.access.random_pct), (100, 100));
    assert_eq!(group.access.bs_split, vec![BsWeight { bs: Bytes(4096), weight: 1 }]);
    assert_eq!((group.qd, group.workers, group.engine), (32, 1, EngineKind::Uring));
    assert!(group.target.direct && group.target.paths.is_empty());
    assert_eq!(group.lanes(), 1);
}

#[test]
fn psync_runs_one_thread_per_outstanding_io() {
    let plan = plan(None, "engine = \"psync\"\nqd = 8\nworkers = 2").unwrap();
    let group = &plan.jobs[0].groups[0];
    assert_eq!((group.lanes(), group.qd_per_lane()), (16, 1));
}

#[test]
fn flags_override_the_file_and_rw_resets_shares() {
    let file = "read_pct = 70\nqd = 4\nbs_split = \"4k/70,64k/30\"\n";
    let plan = plan(Some(file), "rw = \"randread\"\nbs = \"8k\"").unwrap();
    let group = &plan.jobs[0].groups[0];
    assert_eq!(group.access.read_pct, 100);
    assert_eq!(group.qd, 4);
    assert_eq!(group.access.bs_split, vec![BsWeight { bs: Bytes(8192), weight: 1 }]);
}

#[test]
fn buffered_flag_overrides_direct_below_it() {
    let plan = plan(Some("direct = true"), "buffered = true").unwrap();
    assert!(!plan.jobs[0].groups[0].target.direct);
    let plan2 = super::resolve(Some(&flags("buffered = true")), &flags("direct = true")).unwrap();
    assert!(plan2.jobs[0].groups[0].target.direct);
}

#[test]
fn jobs_run_in_order_with_concurrent_groups() {
    let file = r#"
runtime = "3s"
[[job]]
name = "blender"
[[job.group]]
name = "oltp"
rw = "randread"
qd = 16
[[job.group]]
name = "backup"
rw = "write"
bs = "128k"
qd = 2
[[job]]
name = "seq"
runtime = "1s"
rw = "read"
bs = "1m"
"#;
    let plan = plan(Some(file), "").unwrap();
    assert_eq!(plan.jobs.len(), 2);
    let blender = &plan.jobs[0];
    assert_eq!(blender.name, "blender");
    assert_eq!(blender.runtime, Nanos::from_secs(3));
    let names: Vec<&str> = blender.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["oltp", "backup"]);
    assert_eq!(blender.groups[1].access.read_pct, 0);
    assert_eq!(blender.groups[1].access.random_pct, 0);
    assert_ne!(blender.groups[0].seed, blender.groups[1].seed);
    assert_eq!(plan.jobs[1].runtime, Nanos::from_secs(1));
    assert_eq!(plan.jobs[1].groups[0].access.max_bs(), Bytes(1 << 20));
}

#[test]
fn bad_values_are_rejected_with_the_fix() {
    assert!(error(None, "qd = 0").contains("--qd must be 1 or more"));
    assert!(error(None, "workers = 0").contains("--workers must be 1 or more"));
    assert!(error(None, "read_pct = 150").contains("--read-pct must be between 0 and 100 (got 150)"));
    assert!(error(None, "random_pct = 101").contains("--random-pct"));
    assert!(error(None, "size = \"2k\"\nbs = \"4k\"").contains("smaller than the block size"));
    assert!(error(None, "runtime = \"0s\"").contains("--runtime must be above 0"));
    assert!(error(None, "burst_idle = \"1ms\"").contains("needs --burst"));
    assert!(error(None, "engine = \"psync\"\nqd = 512\nworkers = 16").contains("threads"));
    assert!(error(None, "direct = true\nbuffered = true").contains("contradict"));
}

#[test]
fn keys_in_the_wrong_place_are_rejected() {
    let err = error(Some("[[job]]\n[[job.group]]\nruntime = \"5s\"\n"), "");
    assert!(err.contains("'runtime' cannot be set in a group"), "{err}");
    let err = error(Some("[[job]]\njson = true\n"), "");
    assert!(err.contains("'json' cannot be set in [[job]]"), "{err}");
}

#[test]
fn user_slo_joins_the_standard_thresholds() {
    let plan = plan(None, "slo = \"500us,1ms\"").unwrap();
    assert_eq!(plan.jobs[0].slo, vec![Nanos(500_000), Nanos(1_000_000), Nanos(2_000_000)]);
}

#[test]
fn describe_reads_like_a_spec_sheet() {
    let plan = plan(None, "bs_split = \"4k/70,64k/30\"\nread_pct = 70\nrandom_pct = 100").unwrap();
    assert_eq!(plan.jobs[0].groups[0].access.describe(), "mix 4KiB/70,64KiB/30 random 70% read");
}

#[test]
fn skew_is_described_and_checked() {
    let skewed =
        plan(None, "distribution = \"zipf:1.2\"\nworking_set = \"1g\"\nworking_set_moves = \"64m/1000\"")
            .unwrap();
    assert_eq!(
        skewed.jobs[0].groups[0].access.describe(),
        "4KiB random read zipf:1.2 in a 1GiB working set moving 64MiB every 1000 I/Os"
    );
    let sequential = plan(None, "distribution = \"zipf:1.2\"\nrw = \"read\"").unwrap();
    assert_eq!(sequential.jobs[0].groups[0].access.describe(), "4KiB sequential read");
    let err = error(None, "working_set_moves = \"64m/1000\"");
    assert!(err.contains("add --working-set SIZE"), "{err}");
    let err = error(None, "working_set = \"2k\"");
    assert!(err.contains("smaller than the block size"), "{err}");
    let err = error(None, "working_set = \"2g\"\nsize = \"1g\"");
    assert!(err.contains("larger than the region"), "{err}");
    let err = error(None, "working_set = \"1g\"\nworking_set_moves = \"6k/10\"");
    assert!(err.contains("not a multiple of --align"), "{err}");
    let err = parse("distribution = \"zoned:50/50,40/50\"").expect_err("shares short of 100").to_string();
    assert!(err.contains("line 1 (distribution)") && err.contains("add up to 90%"), "{err}");
}

#[test]
fn run_wide_keys_count_in_a_file_without_jobs() {
    let plan = plan(Some("json = true\nquiet = true\noutput = \"r.json\"\nqd = 4\n"), "").unwrap();
    assert!(plan.output.json && plan.output.quiet);
    assert_eq!(plan.output.path.as_deref(), Some(std::path::Path::new("r.json")));
}

#[test]
fn unnamed_groups_do_not_take_the_job_name() {
    let plan = plan(Some("[[job]]\nname = \"blender\"\n[[job.group]]\nqd = 1\n[[job.group]]\nqd = 2\n"), "")
        .unwrap();
    let names: Vec<&str> = plan.jobs[0].groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["group1", "group2"]);
}

#[test]
fn limits_of_the_kernel_and_of_sanity() {
    assert!(error(None, "qd = 40000").contains("32768 requests one io_uring can hold"));
    assert!(error(None, "workers = 5000").contains("--workers 5000 is above the 4096 threads"));
    assert!(error(None, "submit_batch = 0").contains("--submit-batch must be 1 or more"));
    let bad_value = |text: &str| parse(text).expect_err("rejected while parsing").to_string();
    assert!(bad_value("bs_split = \"4k/2147483648,8k/2147483648\"").contains("at most 1000000"));
    assert!(bad_value("size = \"16384p\"").contains("is not a size"));
    assert!(bad_value("runtime = \"1000000h\"").contains("longer than any run"));
}

#[test]
fn job_files_take_target_lists_and_engine_tuning() {
    let text = "target = [\"/dev/zram0\", \"/dev/zram1\"]\nstripe = \"128k\"\nsqpoll_cpu = 1\n\
                fixed_buffers = false\ncpus = \"0-1\"\ncomplete_batch = 4\n";
    let tuned = plan(Some(text), "").unwrap();
    let group = &tuned.jobs[0].groups[0];
    assert_eq!(group.target.paths.len(), 2);
    assert_eq!(group.target.stripe, Some(Bytes(128 << 10)));
    assert!(group.uring.sqpoll && group.uring.sqpoll_cpu == Some(1), "--sqpoll-cpu implies SQPOLL");
    assert!(!group.uring.fixed_buffers && group.uring.fixed_files);
    assert_eq!((group.cpus.as_slice(), group.complete_batch), (&[0, 1][..], 4));
    let one = plan(Some("target = \"/dev/zram0\"\n"), "").unwrap();
    assert_eq!(one.jobs[0].groups[0].target.paths, [std::path::PathBuf::from("/dev/zram0")]);
    assert!(error(Some("engine = \"aio\"\nhipri = true\n"), "").contains("--hipri tunes io_uring"));
    assert!(error(Some("ring_setup = \"coop\"\nsqpoll = true\n"), "")
        .contains("cannot be combined with --sqpoll"));
}

#[test]
fn a_completion_watch_is_asked_for_and_only_where_a_lane_sleeps_for_completions() {
    let default = plan(None, "").unwrap();
    assert_eq!(default.jobs[0].groups[0].uring.completion_watch, Nanos(0), "off unless asked for");
    let watched = plan(None, "completion_watch = \"15us\"").unwrap();
    assert_eq!(watched.jobs[0].groups[0].uring.completion_watch, Nanos(15_000));
    assert!(error(None, "completion_watch = \"15us\"\nsqpoll = true").contains("drop one"));
    assert!(error(None, "completion_watch = \"15us\"\nhipri = true").contains("drop one"));
    assert!(error(None, "completion_watch = \"2ms\"").contains("at most 1ms"));
    assert!(error(None, "completion_watch = \"15us\"\nengine = \"psync\"")
        .contains("--completion-watch tunes io_uring"));
}

#[test]
fn rate_is_a_flag_and_a_job_file_key() {
    let closed = plan(None, "").unwrap();
    assert_eq!(closed.jobs[0].groups[0].rate, None, "closed loop unless a rate is given");
    let uniform = plan(None, "rate_iops = 2000").unwrap();
    assert_eq!(uniform.jobs[0].groups[0].rate, Some(RateSpec { iops: 2000, arrival: Arrival::Uniform }));
    let file =
        "rate_iops = 500\n[[job]]\n[[job.group]]\narrival = \"poisson\"\n[[job.group]]\nrate_iops = 10\n";
    let groups = &plan(Some(file), "").unwrap().jobs[0].groups;
    assert_eq!(groups[0].rate, Some(RateSpec { iops: 500, arrival: Arrival::Poisson }));
    assert_eq!(groups[1].rate, Some(RateSpec { iops: 10, arrival: Arrival::Uniform }));
    let overridden = plan(Some("rate_iops = 500\n"), "rate_iops = 7\narrival = \"poisson\"").unwrap();
    assert_eq!(overridden.jobs[0].groups[0].rate, Some(RateSpec { iops: 7, arrival: Arrival::Poisson }));
}

#[test]
fn bad_rates_are_rejected_with_the_fix() {
    assert!(error(None, "rate_iops = 0").contains("--rate-iops must be above 0"));
    assert!(error(None, "rate_iops = 2000000000").contains("above the 1000000000 I/Os per second"));
    let err = error(None, "arrival = \"poisson\"");
    assert!(err.contains("--arrival poisson") && err.contains("add --rate-iops N"), "{err}");
    let err = error(None, "rate_iops = 100\nburst = 4");
    assert!(err.contains("--rate-iops and --burst") && err.contains("use one"), "{err}");
    assert!(parse("arrival = \"bursty\"").unwrap_err().to_string().contains("use uniform or poisson"));
}

#[test]
fn empty_target_list_is_refused_not_a_scratch_file() {
    let err = parse("target = []").unwrap_err().to_string();
    assert!(err.contains("give at least one target, or leave the key out for a scratch file"), "{err}");
    assert!(err.starts_with("line 1"), "{err}");
    let err = parse("[[group]]\ntarget = [\"\"]\n").unwrap_err().to_string();
    assert!(err.contains("empty"), "{err}");
    let flags = Options { target: Some(vec!["".into()]), ..Options::default() };
    let err = resolve(None, &flags).unwrap_err().to_string();
    assert!(err.contains("--target '' is empty"), "{err}");
}

#[test]
fn empty_job_and_group_lists_are_refused() {
    for text in ["job = []", "group = []", "[[job]]\ngroup = []"] {
        let err = parse(text).unwrap_err().to_string();
        assert!(err.contains("empty list of jobs or groups"), "{text}: {err}");
    }
}
