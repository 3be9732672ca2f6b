//! Round trips of the wire form: every job resolves back to itself, compared as JSON.

use super::*;
use crate::ladder::Rung;
use crate::{defaults, scale};

/// The jobs `file` (job-file text) resolves to, with the command line empty.
fn jobs(file: &str) -> Vec<JobSpec> {
    let options = jobfile::parse(file).unwrap_or_else(|e| panic!("test file parses: {e}\n{file}"));
    resolve(Some(&options), &Options::default())
        .unwrap_or_else(|e| panic!("test file resolves: {e}\n{file}"))
        .jobs
}

fn assert_round_trip(job: &JobSpec) {
    let text = job_file_text(job).unwrap_or_else(|e| panic!("job '{}' is written: {e}", job.name));
    let back = job_from_text(&text).unwrap_or_else(|e| panic!("text resolves: {e}\n{text}"));
    assert_eq!(
        serde_json::to_value(job).expect("json"),
        serde_json::to_value(&back).expect("json"),
        "job '{}' changed on the way:\n{text}",
        job.name
    );
}

fn assert_all_round_trip(file: &str) {
    for job in jobs(file) {
        assert_round_trip(&job);
    }
}

#[test]
fn the_default_job() {
    assert_all_round_trip("");
    let lone = resolve(None, &defaults()).expect("defaults resolve").jobs.remove(0);
    assert_round_trip(&lone);
}

#[test]
fn multi_group_and_multi_job_files_each_job_alone() {
    assert_all_round_trip(
        r#"
        target = "/dev/nvme0n1"
        runtime = "30s"
        ramp = "5s"
        seed = 42
        [[job]]
        name = "blender"
        [[job.group]]
        name = "oltp"
        rw = "randrw"
        bs = "4k"
        qd = 16
        workers = 4
        [[job.group]]
        name = "backup"
        rw = "write"
        bs = "128k"
        qd = 2
        engine = "psync"
        [[job.group]]
        read_pct = 70
        random_pct = 30
        engine = "aio"
        [[job]]
        name = "seq-read"
        rw = "read"
        bs = "1m"
        qd = 8
        engine = "null"
        "#,
    );
    assert_all_round_trip("[[group]]\nname = \"a\"\n[[group]]\nname = \"b\"\nqd = 1\n");
}

#[test]
fn block_size_mixes_and_alignment() {
    assert_all_round_trip("bs_split = \"4k/70,64k/30\"\n");
    assert_all_round_trip("bs_split = \"512/1,8k/2,1m/997\"\nalign = \"4k\"\nrw = \"randwrite\"\n");
    assert_all_round_trip("bs = \"1.5m\"\nalign = 512\n");
    assert_all_round_trip("bs_split = \"16k/5\"\n");
}

#[test]
fn distributions_and_working_sets() {
    assert_all_round_trip("distribution = \"zipf:1.2\"\n");
    assert_all_round_trip("distribution = \"pareto:0.1\"\nworking_set = \"64m\"\n");
    assert_all_round_trip(
        "distribution = \"normal:3.7\"\nworking_set = \"1g\"\nworking_set_moves = \"8m/1000\"\n",
    );
    assert_all_round_trip(
        "[[group]]\ndistribution = \"zoned:80/20,15/30,5/50\"\n[[group]]\ndistribution = \"uniform\"\n",
    );
}

#[test]
fn rate_limits_and_bursts() {
    assert_all_round_trip("rate_iops = 25000\narrival = \"poisson\"\n");
    assert_all_round_trip("rate_iops = 1000000000\n");
    assert_all_round_trip("burst = 16\nburst_idle = \"1.5ms\"\n");
    assert_all_round_trip("burst = 1\n");
    assert_all_round_trip(
        "[[group]]\nrate_iops = 500\narrival = \"uniform\"\n[[group]]\nburst = 4\nburst_idle = \"250ns\"\n",
    );
}

#[test]
fn io_limits_of_both_kinds_and_job_keys() {
    assert_all_round_trip("io_limit = \"10g\"\n");
    assert_all_round_trip("io_limit = 12345\n");
    assert_all_round_trip("io_limit = \"250kios\"\n");
    assert_all_round_trip("io_limit = \"7ios\"\ncontinue_on_error = true\nio_timeout = \"150ms\"\n");
    assert_all_round_trip("slo = [\"500us\", \"1ms\", \"3.25ms\", \"17ns\"]\ninterval = \"50ms\"\n");
    assert_all_round_trip("slo = \"2ms\"\n");
}

#[test]
fn runtimes_with_sub_second_parts() {
    assert_all_round_trip("runtime = \"1.5s\"\nramp = \"0\"\n");
    assert_all_round_trip("runtime = \"123456789ns\"\nramp = \"999us\"\ninterval = \"1.25s\"\n");
    assert_all_round_trip("runtime = \"4800h\"\n");
}

#[test]
fn cpus_engines_batches_and_ring_setups() {
    assert_all_round_trip("cpus = \"0-3,8,5\"\nsubmit_batch = 8\ncomplete_batch = 4\nworkers = 3\n");
    assert_all_round_trip("sqpoll = true\nsqpoll_cpu = 7\n");
    assert_all_round_trip("sqpoll_cpu = 0\nring_setup = \"plain\"\n");
    assert_all_round_trip("hipri = true\nfixed_files = false\nfixed_buffers = false\n");
    assert_all_round_trip("completion_watch = \"15us\"\n");
    for mode in ["auto", "defer-taskrun", "coop-taskrun", "plain"] {
        assert_all_round_trip(&format!("ring_setup = \"{mode}\"\n"));
    }
    for engine in ["psync", "aio", "null"] {
        assert_all_round_trip(&format!("engine = \"{engine}\"\nqd = 4\nbuffered = true\n"));
    }
}

#[test]
fn targets_striped_offsets_and_safety_switches() {
    assert_all_round_trip(
        "target = [\"/dev/zram0\", \"/dev/zram1\", \"/dev/zram2\"]\nstripe = \"128k\"\nsize = \"1g\"\noffset = \"1m\"\nallow_destroy = true\n",
    );
    assert_all_round_trip("target = [\"a\", \"b\"]\n");
    assert_all_round_trip("keep = true\nbuffered = true\nsize = 4096\n");
    assert_all_round_trip("direct = false\n");
}

#[test]
fn odd_paths_arrive_unchanged() {
    let odd = [
        "/mnt/my disk/iolab \"test\" file.dat",
        "C:\\not\\a\\unix\\path",
        "/tmp/ünïcødé ✓/データ",
        "/tmp/line\nbreak\tand tab",
        "/tmp/'''triple'''/\"\"\"quotes\"\"\"",
        "relative/#not a comment = 1",
    ];
    let flags = Options { target: Some(odd.iter().map(Into::into).collect()), ..Options::default() };
    let job = resolve(None, &flags).expect("odd paths resolve").jobs.remove(0);
    assert_eq!(job.groups[0].target.paths.len(), odd.len());
    assert_round_trip(&job);
}

#[test]
fn a_scratch_target_stays_empty() {
    let job = jobs("").remove(0);
    let text = job_file_text(&job).expect("written");
    assert!(!text.contains("target"), "{text}");
    assert!(job_from_text(&text).expect("resolves").groups[0].target.paths.is_empty());
}

#[test]
fn seeds_of_every_group_even_where_they_wrap() {
    assert_all_round_trip("seed = 0\n");
    assert_all_round_trip("seed = \"18446744073709551615\"\n[[group]]\n[[group]]\n[[group]]\n");
    assert_all_round_trip("seed = 9223372036854775807\n[[group]]\n[[group]]\n");
}

#[test]
fn jobs_built_in_code_travel_too() {
    let base = jobs("target = [\"a\", \"b\", \"c\"]\nseed = 0\nworkers = 2\n").remove(0);
    // Scaling's last job has one group per target, all with the base's seed.
    let together = scale::plan(&base).expect("scale plan").pop().expect("together");
    assert_round_trip(&together);
    for rung in Rung::ALL {
        assert_round_trip(&rung.apply(&base));
    }
}

#[test]
fn a_job_no_file_resolves_to_is_refused_naming_the_field() {
    let base = jobs("target = [\"a\", \"b\"]\n").remove(0);
    // A lone group is always `main` in a job file.
    let alone = scale::plan(&base).expect("scale plan").remove(0);
    let err = job_file_text(&alone).expect_err("lone group named t1").to_string();
    assert!(err.contains("group 1 name") && err.contains("\"t1\""), "{err}");

    let mut odd = base.clone();
    odd.slo = vec![Nanos(5)];
    let err = job_file_text(&odd).expect_err("slo without the standard thresholds").to_string();
    assert!(err.contains("its slo"), "{err}");

    let buffered = jobs("buffered = true\n").remove(0);
    let err = job_file_text(&Rung::UringIopoll.apply(&buffered)).expect_err("hipri without O_DIRECT");
    assert!(err.to_string().contains("--hipri"), "{err}");
}

#[cfg(unix)]
#[test]
fn a_path_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let mut job = jobs("").remove(0);
    job.groups[0].target.paths = vec![std::ffi::OsStr::from_bytes(b"/tmp/\xff").into()];
    let err = job_file_text(&job).expect_err("not UTF-8").to_string();
    assert!(err.contains("not valid UTF-8"), "{err}");
}

#[test]
fn two_jobs_are_refused_by_name() {
    let err =
        job_from_text("[[job]]\nname = \"a\"\n[[job]]\nname = \"b\"\n").expect_err("two jobs").to_string();
    assert!(err.contains("2 jobs") && err.contains("'a', 'b'"), "{err}");
}

#[test]
fn an_unknown_key_is_refused_with_its_line() {
    let err = job_from_text("[[job]]\nname = \"a\"\nqdepth = 8\n").expect_err("unknown key").to_string();
    assert!(err.contains("line 3") && err.contains("qdepth"), "{err}");
}

#[test]
fn a_bad_value_is_refused_as_resolve_refuses_it() {
    let err = job_from_text("[[job]]\nqd = 0\n").expect_err("qd 0").to_string();
    assert!(err.contains("--qd must be 1 or more"), "{err}");
}

#[test]
fn data_settings_travel() {
    assert_all_round_trip("dedupe_pct = 50\ndedupe_set = \"8m\"\ncompress_pct = 30\n");
    assert_all_round_trip("buffer_pattern = \"zero\"\n");
    assert_all_round_trip("[[group]]\nbuffer_pattern = \"0xdeadbeef\"\n[[group]]\ncompress_pct = 100\n");
}
