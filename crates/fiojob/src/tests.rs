//! Each option family's translation, checked on the plan iolab resolves from it.

use std::path::Path;

use iolab_spec::{resolve, EngineKind, GroupSpec, JobSpec, Nanos, Options, RunPlan};

use super::*;

fn env(name: &str) -> Option<String> {
    (name == "DEV").then(|| "/dev/zram0".to_string())
}

fn translate(text: &str) -> Result<Translation, FioJobError> {
    translate_text(text, Path::new("job.fio"), &env)
}

fn plan(text: &str) -> RunPlan {
    let translation = translate(text).unwrap_or_else(|e| panic!("{e}"));
    let options = translation.options("job.fio").expect("parses");
    resolve(Some(&options), &Options::default()).expect("resolves")
}

fn only_job(text: &str) -> JobSpec {
    let mut plan = plan(text);
    assert_eq!(plan.jobs.len(), 1);
    plan.jobs.remove(0)
}

fn only_group(text: &str) -> GroupSpec {
    let mut job = only_job(text);
    assert_eq!(job.groups.len(), 1);
    job.groups.remove(0)
}

fn refusal(text: &str) -> String {
    let err = translate(text).expect_err("refused").to_string();
    assert!(!err.contains('\n'), "one line: {err}");
    err
}

const TIMED: &str = "[global]\ntime_based\nruntime=10\nfilename=t\nsize=1m\n";

#[test]
fn fio_defaults_are_written_out_not_iolabs() {
    let group = only_group(&format!("{TIMED}[a]\n"));
    assert_eq!(group.access.read_pct, 100);
    assert_eq!(group.access.random_pct, 0, "fio's default rw is a sequential read");
    assert_eq!(group.access.bs_split[0].bs.0, 4096);
    assert_eq!(group.engine, EngineKind::Psync);
    assert_eq!((group.qd, group.workers), (1, 1));
    assert!(!group.target.direct, "fio is buffered unless direct=1");
    let job = only_job(&format!("{TIMED}[a]\n"));
    assert_eq!(job.ramp, Nanos(0));
    assert_eq!(job.runtime, Nanos::from_secs(10));
}

#[test]
fn rw_and_rwmix() {
    let g = only_group(&format!("{TIMED}[a]\nrw=randrw\nrwmixread=70\n"));
    assert_eq!((g.access.read_pct, g.access.random_pct), (70, 100));
    let g = only_group(&format!("{TIMED}[a]\nreadwrite=rw\nrwmixwrite=20\n"));
    assert_eq!((g.access.read_pct, g.access.random_pct), (80, 0));
    let g = only_group(&format!("{TIMED}[a]\nrw=randrw\nrwmixwrite=20\nrwmixread=60\n"));
    assert_eq!(g.access.read_pct, 60, "the later of the two wins, as in fio");
    let g = only_group(&format!("{TIMED}[a]\nrw=randwrite\n"));
    assert_eq!((g.access.read_pct, g.access.random_pct), (0, 100));
    let g = only_group(&format!("{TIMED}[a]\nrw=randread\npercentage_random=30\n"));
    assert_eq!(g.access.random_pct, 30);
    let t = translate(&format!("{TIMED}[a]\nrw=read\nrwmixread=70\n")).unwrap();
    assert!(t.notes.iter().any(|n| n.contains("no effect")), "{:?}", t.notes);
}

#[test]
fn block_sizes_splits_and_alignment() {
    let g = only_group(&format!("{TIMED}[a]\nbs=64k\nba=4k\nrw=randread\n"));
    assert_eq!((g.access.bs_split[0].bs.0, g.access.align.0), (65536, 4096));
    let g = only_group(&format!("{TIMED}[a]\nrw=randread\nbs=4k,64k\n"));
    assert_eq!(g.access.bs_split[0].bs.0, 4096, "a read-only job takes the read size");
    let g = only_group(&format!("{TIMED}[a]\nrw=randwrite\nblocksize=,8k\n"));
    assert_eq!(g.access.bs_split[0].bs.0, 8192);
    let g = only_group(&format!("{TIMED}[a]\nrw=randrw\nbssplit=4k/70:64k/30\n"));
    let mix: Vec<(u64, u32)> = g.access.bs_split.iter().map(|w| (w.bs.0, w.weight)).collect();
    assert_eq!(mix, [(4096, 70), (65536, 30)]);
    let err = refusal(&format!("{TIMED}[a]\nrw=randrw\nbs=4k,8k\n"));
    assert!(err.contains("bs=4k,8k (reads and writes of different sizes) (line 8)"), "{err}");
    let g = only_group(&format!("{TIMED}[a]\nrw=randrw\nbs=,4k\n"));
    assert_eq!(g.access.bs_split[0].bs.0, 4096, "reads keep fio's 4k, the same as the writes");
    let g = only_group(&format!("{TIMED}[a]\nrw=randread\nbs=16k\nbssplit=,4k/50:8k/50\n"));
    assert_eq!(g.access.bs_split[0].bs.0, 16384, "reads take bs where bssplit gives only writes");
    let t = translate(&format!("{TIMED}[a]\nrw=randread\nbssplit=4k/50:64k/50\n")).unwrap();
    assert!(t.notes.iter().any(|n| n.contains("random map")), "{:?}", t.notes);
    let t = translate(&format!("{TIMED}[a]\nrw=randread\nbssplit=4k/50:64k/50\nnorandommap\n")).unwrap();
    assert!(t.notes.is_empty(), "{:?}", t.notes);
    let err = refusal(&format!("{TIMED}[a]\nrw=randrw\nbssplit=4k,8k\n"));
    assert!(err.contains("bssplit=4k,8k (reads and writes of different sizes)"), "{err}");
    let err = refusal(&format!("{TIMED}[a]\nbs=4k-16k\n"));
    assert!(err.contains("a range of block sizes"), "{err}");
    let err = refusal(&format!("{TIMED}[a]\nbssplit=4k/50:8k/30\n"));
    assert!(err.contains("line 7") && err.contains("come to 80%"), "{err}");
}

#[test]
fn load_targets_and_engines() {
    let g = only_group(&format!(
        "{TIMED}[a]\nioengine=libaio\niodepth=16\nnumjobs=4\ndirect=1\noffset=4k\nfilename=/dev/a\\:1:/dev/b\nsize=2m\n"
    ));
    assert_eq!(g.engine, EngineKind::Aio);
    assert_eq!((g.qd, g.workers), (16, 4));
    assert!(g.target.direct);
    assert_eq!(g.target.offset.0, 4096);
    let paths: Vec<String> = g.target.paths.iter().map(|p| p.display().to_string()).collect();
    assert_eq!(paths, ["/dev/a:1", "/dev/b"]);
    assert_eq!(g.target.size.map(|s| s.0), Some(1 << 20), "fio's size is shared by the files");
    let g = only_group(&format!("{TIMED}[a]\nioengine=io_uring\niodepth=8\nfixedbufs\nregisterfiles=0\n"));
    assert_eq!((g.engine, g.qd), (EngineKind::Uring, 8));
    assert!(g.uring.fixed_buffers && !g.uring.fixed_files);
    let g = only_group(&format!("{TIMED}[a]\nioengine=null\nbuffered=0\n"));
    assert!(g.target.direct && g.engine == EngineKind::Null);
    let g = only_group(&format!("{TIMED}[a]\ndirectory=/mnt\nfilename=${{DEV}}\n"));
    assert_eq!(g.target.paths[0].display().to_string(), "/mnt//dev/zram0");
    let t = translate(&format!("{TIMED}[a]\niodepth=32\n")).unwrap();
    assert!(t.notes.iter().any(|n| n.contains("psync is synchronous")), "{:?}", t.notes);
    assert_eq!(only_group(&format!("{TIMED}[a]\niodepth=32\n")).qd, 1);
}

#[test]
fn timing_without_time_based_is_a_byte_limit() {
    let job = only_job("[a]\nfilename=t\nsize=1m\nnumjobs=2\nruntime=30s\nramp_time=2\n");
    assert_eq!(job.io_limit, Some(iolab_spec::IoLimit::Bytes(iolab_spec::Bytes(2 << 20))));
    assert_eq!((job.runtime, job.ramp), (Nanos::from_secs(30), Nanos::from_secs(2)));
    let t = translate("[a]\nfilename=t\nsize=1m\n").unwrap();
    assert!(t.notes.iter().any(|n| n.contains("giving up after 86400s")), "{:?}", t.notes);
    let err = refusal("[a]\nfilename=t\n");
    assert!(err.contains("neither time_based nor size"), "{err}");
    let err = refusal("[a]\nfilename=t\ntime_based\n");
    assert!(err.contains("add runtime="), "{err}");
}

#[test]
fn rates_and_think_times() {
    let g = only_group(&format!("{TIMED}[a]\nrw=randread\nrate_iops=1k\nrate_process=poisson\nnumjobs=2\n"));
    let rate = g.rate.expect("rate");
    assert_eq!(rate.iops, 2048, "fio paces each clone: 1024 x 2");
    assert_eq!(rate.arrival, iolab_spec::Arrival::Poisson);
    let g = only_group(&format!("{TIMED}[a]\nthinktime=500\nthinktime_blocks=8\n"));
    let burst = g.access.burst.expect("burst");
    assert_eq!((burst.ios, burst.idle), (8, Nanos(500_000)), "thinktime is in microseconds");
    let err = refusal(&format!("{TIMED}[a]\nrw=randrw\nrate_iops=500\n"));
    assert!(err.contains("paces reads and writes separately"), "{err}");
    let err = refusal(&format!("{TIMED}[a]\nrate_iops=500\nthinktime=10\n"));
    assert!(err.contains("not both"), "{err}");
}

#[test]
fn stonewalls_cut_jobs_and_concurrent_jobs_become_groups() {
    let plan = plan(&format!(
        "{TIMED}[writer]\nrw=write\n[reader]\nrw=randread\nnumjobs=2\n[after]\nstonewall\nrw=randwrite\n"
    ));
    assert_eq!(plan.jobs.len(), 2);
    assert_eq!(plan.jobs[0].name, "writer+reader");
    let names: Vec<&str> = plan.jobs[0].groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["writer", "reader"]);
    assert_eq!(plan.jobs[0].groups[1].workers, 2);
    assert_eq!(plan.jobs[1].name, "after");
    let err = refusal(&format!("{TIMED}[a]\n[b]\nruntime=20\n"));
    assert!(err.contains("line 7") && err.contains("different runtime"), "{err}");
}

#[test]
fn a_later_global_changes_the_jobs_after_it() {
    let plan = plan(&format!("{TIMED}[a]\n[global]\nbs=64k\nstonewall\n[b]\n"));
    assert_eq!(plan.jobs[0].groups[0].access.bs_split[0].bs.0, 4096);
    assert_eq!(plan.jobs[1].groups[0].access.bs_split[0].bs.0, 65536);
}

#[test]
fn unsupported_options_are_listed_together_with_their_lines() {
    let err = refusal(&format!(
        "{TIMED}[a]\nverify=md5\nrandom_distribution=normal:5\nfsync=1\nioengine=sync\nrw=trim\n"
    ));
    for part in [
        "these 5 options",
        "verify=md5 (iolab does not verify data) (line 7)",
        "random_distribution=normal:5 (fio's normal",
        "fsync=1 (line 9)",
        "ioengine=sync (iolab has psync",
        "rw=trim (iolab does not trim)",
        "remove them, or write an iolab job file instead (docs/job-file.md)",
    ] {
        assert!(err.contains(part), "'{part}' in: {err}");
    }
    assert!(err.starts_with("fio job file job.fio: iolab has no equivalent of"), "{err}");
    // The defaults of those options are what iolab does, so they pass.
    only_group(&format!("{TIMED}[a]\nverify=0\nrandom_distribution=random\nrandrepeat=1\nnorandommap\n"));
}

/// fio's jesd219.fio asks for new offsets on every run (randrepeat=0): the translation draws a
/// fresh seed and says which, so the job file it writes repeats that one; randseed wins over it.
#[test]
fn randrepeat_0_draws_a_fresh_seed_and_says_it() {
    let text = format!("{TIMED}[a]\nrw=randread\nrandrepeat=0\n");
    let seeds: Vec<u64> = (0..2)
        .map(|_| {
            let t = translate(&text).unwrap_or_else(|e| panic!("{e}"));
            let note = t
                .notes
                .iter()
                .find(|n| n.contains("randrepeat=0"))
                .unwrap_or_else(|| panic!("{:?}", t.notes));
            let group = only_group(&text);
            assert!(note.contains("this translation drew seed"), "{note}");
            group.seed
        })
        .collect();
    assert_ne!(seeds[0], seeds[1], "each translation draws its own");
    let group = only_group(&format!("{TIMED}[a]\nrw=randread\nrandrepeat=0\nrandseed=42\n"));
    assert_eq!(group.seed, 42, "a seed given is the seed");
    let t = translate(&format!("{TIMED}[a]\nrandrepeat=0\nrandseed=42\n")).expect("translates");
    assert!(!t.notes.iter().any(|n| n.contains("drew seed")), "{:?}", t.notes);
    assert!(refusal(&format!("{TIMED}[a]\nrandrepeat=maybe\n")).contains("not a switch"));
}

#[test]
fn random_distributions_of_the_same_law_translate() {
    let group = only_group(&format!("{TIMED}[a]\nrw=randread\nrandom_distribution=zoned:60/10:40/90\n"));
    assert_eq!(group.access.distribution.to_string(), "zoned:60/10,40/90");
    let group = only_group(&format!("{TIMED}[a]\nrw=randread\nrandom_distribution=zipf:1.1\n"));
    assert_eq!(group.access.distribution, iolab_spec::Distribution::Zipf { theta: 1.1 });
}

#[test]
fn reporting_options_are_dropped_with_a_note() {
    let t = translate(&format!("{TIMED}group_reporting\n[a]\ndescription=x\n[b]\n")).unwrap();
    let group_notes = t.notes.iter().filter(|n| n.contains("group_reporting")).count();
    assert_eq!(group_notes, 1, "a [global] option is noted once: {:?}", t.notes);
    assert!(t.notes.iter().any(|n| n.starts_with("job.fio: line 8: description=x")), "{:?}", t.notes);
    assert!(t.text.contains("# note: "), "{}", t.text);
}

#[test]
fn bad_values_name_the_line_and_option() {
    let err = refusal(&format!("{TIMED}[a]\niodepth=zero\n"));
    assert_eq!(err, "fio job file job.fio: line 7: iodepth=zero: 'zero' is not a whole number");
    let err = refusal(&format!("{TIMED}[a]\nsize=50%\n"));
    assert!(err.contains("line 7: size=50%"), "{err}");
    let err = refusal(&format!("{TIMED}[a]\nbs=64k\nfilename=a:b\nsize=64k\n"));
    assert!(err.contains("line 9: size=64k: each file's region (32768 bytes) is smaller"), "{err}");
    let err = refusal("[global]\nbs=4k\n");
    assert!(err.contains("no job"), "{err}");
}

#[test]
fn the_printed_text_is_an_iolab_job_file() {
    let t = translate(&format!("{TIMED}[a]\nrw=randread\n[b]\nrw=write\n")).unwrap();
    assert!(t.text.contains("[[job]]") && t.text.contains("[[job.group]]"), "{}", t.text);
    assert!(iolab_spec::jobfile::parse(&t.text).is_ok());
}

#[test]
fn fio_files_are_told_from_toml_ones() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    assert!(looks_like_fio(&write("a.fio", "")));
    assert!(looks_like_fio(&write("a.ini", "")));
    assert!(looks_like_fio(&write("job", "; fio\n[global]\nbs=4k\n")));
    assert!(!looks_like_fio(&write("b", "# toml\n[[job]]\nqd = 1\n")));
    assert!(!looks_like_fio(&write("c", "qd = 1\n")));
    assert!(!looks_like_fio(&write("d.toml", "[global]\n")));
}

/// Issue 32: these came back as "its translation is not a valid iolab job file ... please
/// report this". They are the user's to fix, named by line and option.
#[test]
fn values_iolab_cannot_hold_are_refused_at_their_line() {
    let job = "[j]\nfilename=t\nrw=randread\nsize=1m\n";
    let err = refusal("[j\u{1b}[31m]\nfilename=t\nrw=read\n");
    assert!(err.contains("line 1: the section name holds a control character"), "{err}");
    let err = refusal(&format!("{job}thinktime=18446744073709551615\n"));
    assert!(err.contains("line 5: thinktime=") && err.contains("longer than any run"), "{err}");
    let err = refusal(&format!("{job}ramp_time=99999999999\n"));
    assert!(err.contains("line 5: ramp_time=") && err.contains("longer than any run"), "{err}");
    let err = refusal(&format!("{job}offset=4611686018427387903\n"));
    assert!(err.contains("line 5: offset=") && err.contains("above 8 PiB"), "{err}");
    for text in [&format!("{job}thinktime=3153599999999999\n"), &format!("{job}offset=8p\n")] {
        let translation = translate(text).unwrap_or_else(|e| panic!("{e}"));
        translation.options("job.fio").expect("the largest values iolab takes parse");
    }
}

/// Issue 32: `include /etc/shadow` printed its lines, password hashes and all, in the error.
/// Nothing of an included file but an option's name is ever shown.
#[test]
fn an_included_file_is_never_quoted() {
    let dir = tempfile::tempdir().expect("dir");
    let secret = dir.path().join("secret");
    let main = dir.path().join("main.fio");
    let cases = [
        ("root:$6$SECRETHASH:19000:0:99999:7:::\n", "line 1 of"),
        ("password=SECRETHASH\n", "password=… ("),
        ("bs=SECRETHASH\n", "bs: its value on line 1 of"),
        ("x=${SECRETHASH\n", "line 1 of"),
        ("x=${SECRETHASH}\n", "an environment variable this line names is not set"),
    ];
    for (text, expect) in cases {
        std::fs::write(&secret, text).expect("secret");
        std::fs::write(&main, "[j]\nfilename=t\nrw=read\nsize=1m\ninclude secret\n").expect("main");
        let err = translate_file(&main).expect_err("refused").to_string();
        assert!(!err.to_lowercase().contains("secrethash"), "{text}: the secret is shown: {err}");
        assert!(err.contains(expect), "{text}: expected '{expect}' in: {err}");
    }
}

/// Fuzzing (fuzz/fuzz_targets/fio_job.rs) found `bs=0` (and `bssplit=0/100`, `bs=4k,0` on a
/// writing job) panicking on a remainder by zero instead of being refused at its line.
#[test]
fn fuzz_finding_a_block_size_of_0_is_refused_not_a_panic() {
    for (option, line) in [("bs=0", 7), ("bs=0k", 7), ("bssplit=0/100", 7), ("rw=write\nbs=4k,0", 8)] {
        let err = refusal(&format!("{TIMED}[a]\n{option}\n"));
        assert!(
            err.contains(&format!("line {line}:")) && err.contains("a block size of 0"),
            "{option}: {err}"
        );
    }
}

/// Fuzzing found a control character in a value a note repeats (`thread=\x01`,
/// `description=\x7f`) written raw into the translation's `# note:` comments, which TOML
/// refuses: users read "its translation is not a valid iolab job file ... please report this".
/// (A section name with one is refused at its line.)
#[test]
fn fuzz_finding_a_control_character_in_a_note_is_escaped_in_its_comment() {
    for value in ["thread=\u{1}", "description=x\u{7f}", "thread=a\rb"] {
        let text = format!("{TIMED}[a]\n{value}\n");
        let translation = translate(&text).unwrap_or_else(|e| panic!("{value:?}: {e}"));
        translation.options("job.fio").unwrap_or_else(|e| panic!("{value:?}: {e}"));
        assert!(!translation.text.chars().any(|c| c.is_control() && c != '\n'), "{:?}", translation.text);
    }
}
