//! The studies over a job file (docs/job-file.md, "Studies over a job file"): a ramp shares each
//! level's rate among a blender's groups and a sweep scales each group's QD, so the groups keep
//! their proportions at every point; fio job files are taken too; what a study cannot do with
//! several groups or jobs is refused in one line that says why. The null engine runs them in
//! milliseconds.
mod common;

use common::{json, run_in, stderr};
use serde_json::Value;

const QUICK: [&str; 4] = ["--runtime", "300ms", "--ramp", "50ms"];

/// Two groups of unequal weight (QD 4 and QD 1) on the null engine over `t`.
const BLEND: &str = r#"
engine = "null"
target = "t"
size = "1m"
[[group]]
name = "oltp"
qd = 4
[[group]]
name = "backup"
rw = "write"
bs = "64k"
qd = 1
"#;

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("t"), vec![1u8; 1 << 20]).expect("target");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("job file");
    }
    dir
}

fn study(dir: &tempfile::TempDir, args: &[&str]) -> Value {
    let out = run_in(dir.path(), &[args, &["--json", "-q"], &QUICK].concat());
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    json(&out)
}

fn groups(job: &Value) -> &Vec<Value> {
    job["groups"].as_array().expect("groups")
}

/// Each group's scheduled rate in a job, in order.
fn rates(job: &Value) -> Vec<u64> {
    groups(job).iter().map(|g| g["rate"]["target_iops"].as_f64().expect("a rate") as u64).collect()
}

#[test]
fn a_ramp_shares_each_level_by_the_groups_qd() {
    let dir = dir_with(&[("blend.toml", BLEND)]);
    let report = study(&dir, &["ramp", "blend.toml", "--levels", "20,60,100"]);
    assert_eq!(report["schema"], "iolab.ramp/1");
    let jobs = report["run"]["jobs"].as_array().expect("jobs");
    let closed = &jobs[0];
    assert_eq!(groups(closed).len(), 2);
    assert!(groups(closed).iter().all(|g| g["rate"].is_null()), "the maximum is closed loop: {closed}");
    let max = report["summary"]["max_iops"].as_f64().expect("max");
    let rows = report["summary"]["rows"].as_array().expect("rows");
    assert!(!rows.is_empty());
    for (row, job) in rows.iter().zip(&jobs[1..]) {
        let level = row["level_pct"].as_f64().expect("level");
        let [oltp, backup] = rates(job)[..] else { panic!("two groups: {job}") };
        // QD 4 against QD 1: four fifths and one fifth of the level, to the I/O.
        let total = (max * level / 100.0).round() as u64;
        assert_eq!(oltp + backup, total.max(2), "level {level}: {oltp} + {backup}");
        assert!(oltp.abs_diff(4 * backup) <= 4, "level {level}: {oltp} is not 4 x {backup}");
        assert_eq!(
            row["target_iops"].as_f64().expect("asked") as u64,
            oltp + backup,
            "the row asks their sum"
        );
        let names: Vec<&str> = groups(job).iter().map(|g| g["name"].as_str().expect("name")).collect();
        assert_eq!(names, ["oltp", "backup"], "each point keeps its groups");
    }
}

#[test]
fn a_ramp_shares_each_level_by_the_groups_own_rates() {
    let rated = BLEND
        .replace("qd = 4\n", "qd = 4\nrate_iops = 3000\narrival = \"poisson\"\n")
        .replace("qd = 1\n", "qd = 1\nrate_iops = 1000\n");
    let dir = dir_with(&[("rated.toml", &rated)]);
    let report = study(&dir, &["ramp", "rated.toml", "--levels", "50,100"]);
    let jobs = report["run"]["jobs"].as_array().expect("jobs");
    assert!(jobs.len() >= 2, "{}", report["summary"]);
    for job in &jobs[1..] {
        let [oltp, backup] = rates(job)[..] else { panic!("two groups: {job}") };
        assert!(oltp.abs_diff(3 * backup) <= 3, "{oltp} is not 3 x {backup}");
        assert_eq!(groups(job)[0]["rate"]["arrival"], "poisson", "a group keeps its own arrival");
        assert_eq!(groups(job)[1]["rate"]["arrival"], "uniform");
    }
}

#[test]
fn a_ramp_over_a_list_ramps_each_mix_of_the_blender() {
    let dir = dir_with(&[("blend.toml", BLEND)]);
    let report = study(&dir, &["ramp", "blend.toml", "--read-pct", "100,90", "--levels", "50,100"]);
    let summary = &report["summary"];
    let curves = summary["curves"].as_array().expect("curves");
    let names: Vec<&str> = curves.iter().map(|c| c["name"].as_str().expect("name")).collect();
    assert_eq!(names, ["read 100%", "read 90%"]);
    let rows = summary["rows"].as_array().expect("rows");
    for (index, curve) in curves.iter().enumerate() {
        let max = curve["max_iops"].as_f64().expect("max");
        assert!(max > 0.0, "{curve}");
        for row in curve["rows"].as_array().expect("rows") {
            let row = &rows[row.as_u64().expect("index") as usize];
            assert_eq!(row["curve"].as_u64(), Some(index as u64));
            let asked = row["target_iops"].as_f64().expect("asked");
            let level = row["level_pct"].as_f64().expect("level");
            assert!((asked - (max * level / 100.0).round()).abs() <= 2.0, "{row}: the curve's own maximum");
        }
    }
    let jobs = report["run"]["jobs"].as_array().expect("jobs");
    let mixed: Vec<&Value> =
        jobs.iter().filter(|j| j["name"].as_str().expect("name").starts_with("read 90%: ")).collect();
    assert!(!mixed.is_empty(), "the second curve's jobs are named after it");
    for job in mixed {
        assert!(
            groups(job).iter().all(|g| g["access"].as_str().expect("access").contains("90% read")),
            "{job}"
        );
    }
    let text = run_in(
        dir.path(),
        &[&["ramp", "blend.toml", "--read-pct", "100,90", "--levels", "100", "-q"][..], &QUICK].concat(),
    );
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.matches("maximum (closed loop):").count(), 2, "a table per curve: {text}");
}

#[test]
fn a_qd_sweep_scales_every_group_by_the_same_factor() {
    let dir = dir_with(&[("blend.toml", BLEND)]);
    let report = study(&dir, &["sweep", "blend.toml", "--qd", "2,4,8,16"]);
    let jobs = report["run"]["jobs"].as_array().expect("jobs");
    let qds: Vec<(u64, u64)> = jobs
        .iter()
        .map(|job| (groups(job)[0]["qd"].as_u64().expect("qd"), groups(job)[1]["qd"].as_u64().expect("qd")))
        .collect();
    // The deepest group runs at the point's QD; the other keeps its quarter (at least 1).
    assert_eq!(qds, [(2, 1), (4, 1), (8, 2), (16, 4)]);
    let rows = report["summary"]["rows"].as_array().expect("rows");
    let outstanding: Vec<u64> =
        rows.iter().map(|r| r["outstanding"].as_u64().expect("outstanding")).collect();
    assert_eq!(outstanding, [3, 5, 10, 20], "a point's outstanding I/Os are all its groups'");
    assert_eq!(rows[0]["access"], "4KiB random read + 64KiB sequential write");
    for job in jobs {
        assert_eq!(
            groups(job)[1]["access"],
            "64KiB sequential write",
            "the file's groups keep their own access"
        );
        assert!(groups(job).iter().all(|g| g["total"]["ios"].as_u64().expect("ios") > 0), "{job}");
    }
}

#[test]
fn a_sweep_takes_its_lists_from_the_file_and_a_fio_job_file() {
    let listed = format!("qd = \"1,8\"\nread_pct = [100, 90]\n{BLEND}");
    let fio =
        "[global]\nioengine=null\nfilename=t\nsize=1m\nrw=randread\ntime_based\nruntime=1\n\n[vm1]\niodepth=8\n\n[vm2]\niodepth=8\n";
    let dir = dir_with(&[("listed.toml", &listed), ("vms.fio", fio)]);
    let report = study(&dir, &["sweep", "listed.toml"]);
    let names: Vec<&str> = report["summary"]["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["read 100%, qd 1", "read 100%, qd 8", "read 90%, qd 1", "read 90%, qd 8"]);
    let last = &report["run"]["jobs"][3];
    assert_eq!((groups(last)[0]["qd"].as_u64(), groups(last)[1]["qd"].as_u64()), (Some(8), Some(2)));
    assert!(groups(last).iter().all(|g| g["access"].as_str().expect("access").contains("90% read")));

    let report = study(&dir, &["sweep", "vms.fio", "--qd", "1,4"]);
    for (job, qd) in report["run"]["jobs"].as_array().expect("jobs").iter().zip([1, 4]) {
        let qds: Vec<u64> = groups(job).iter().map(|g| g["qd"].as_u64().expect("qd")).collect();
        assert_eq!(qds, [qd, qd], "fio's concurrent jobs are the groups, scaled alike");
    }
}

#[test]
fn a_steady_study_runs_the_groups_together_each_round() {
    let dir = dir_with(&[("blend.toml", BLEND)]);
    let out = run_in(
        dir.path(),
        &["steady", "blend.toml", "--runtime", "100ms", "--max-rounds", "5", "--window", "3", "--json", "-q"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    let jobs = report["run"]["jobs"].as_array().expect("jobs");
    assert!(jobs.len() >= 3);
    assert!(jobs.iter().all(|j| groups(j).len() == 2), "every round runs both groups");
}

#[test]
fn text_reports_list_each_point_s_groups() {
    let dir = dir_with(&[("blend.toml", BLEND)]);
    let out = run_in(dir.path(), &[&["sweep", "blend.toml", "--qd", "4,8", "-q"][..], &QUICK].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("per group"), "{text}");
    let backup: Vec<&str> = text.lines().filter(|l| l.contains("backup")).collect();
    assert_eq!(backup.len(), 2, "a line per point for the second group: {text}");
}

fn rejected(dir: &tempfile::TempDir, args: &[&str], expect: &str) {
    let out = run_in(dir.path(), args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    assert!(err.starts_with("iolab: error: "), "{args:?}: {err}");
    assert!(err.contains(expect), "{args:?}: expected '{expect}' in: {err}");
}

#[test]
fn what_a_study_cannot_do_with_a_job_file_is_refused_with_why() {
    let two_jobs = "engine = \"null\"\ntarget = \"t\"\n[[job]]\nname = \"read\"\n[[job]]\nname = \"mixed\"\nread_pct = 90\n";
    let half_rated = BLEND.replace("qd = 1\n", "qd = 1\nrate_iops = 500\n");
    let one = "engine = \"null\"\ntarget = \"t\"\nsize = \"1m\"\n";
    let dir = dir_with(&[
        ("blend.toml", BLEND),
        ("jobs.toml", two_jobs),
        ("half.toml", &half_rated),
        ("bursty.toml", &format!("burst = 4\n{BLEND}")),
        ("one.toml", one),
    ]);
    rejected(
        &dir,
        &["cliff", "blend.toml"],
        "`iolab cliff` measures one group, and the job file has 2: it writes one region once, sequentially",
    );
    rejected(&dir, &["precondition", "blend.toml"], "`iolab precondition` measures one group");
    rejected(&dir, &["suite", "quick", "blend.toml"], "`iolab suite` measures one group");
    rejected(
        &dir,
        &["suite", "quick", "one.toml", "--qd", "4"],
        "sets the workload of each test itself; drop --qd",
    );
    rejected(&dir, &["scale", "blend.toml", "a", "b"], "use `iolab run FILE --each-alone`");
    rejected(&dir, &["sweep", "jobs.toml", "--qd", "1,2"], "`iolab sweep` takes a job file of one job");
    rejected(&dir, &["ramp", "jobs.toml"], "this one has 2 [[job]]s: give each its own file");
    rejected(&dir, &["steady", "jobs.toml"], "`iolab steady` takes a job file of one job");
    rejected(
        &dir,
        &["ramp", "half.toml"],
        "not group 'oltp'; a ramp shares each level's rate by the groups' own rates",
    );
    rejected(&dir, &["ramp", "bursty.toml"], "the job file sets `burst`: remove it");
    rejected(&dir, &["ramp", "blend.toml", "--rate-iops", "10"], "drop --rate-iops");
    rejected(&dir, &["ramp", "blend.toml", "--qd", "1,8"], "a ramp's load is its rate, not --qd");
    rejected(&dir, &["ladder", "blend.toml"], "the job file sets `engine`: remove it");
    rejected(&dir, &["sweep", "missing.toml", "--qd", "1,2"], "cannot read it");
    rejected(
        &dir,
        &["sweep", "blend.toml", "--target", "t", "--qd", "1,2", "--size", "2k", "--bs", "4k"],
        "smaller than the block size",
    );
}

#[test]
fn a_target_argument_is_still_a_target() {
    // A data file (the study's target), not text: measured, not read as a job file.
    let dir = dir_with(&[]);
    let report = study(&dir, &["sweep", "t", "--engine", "null", "--qd", "1,2"]);
    let job = &report["run"]["jobs"][0];
    assert_eq!(groups(job).len(), 1);
    assert!(groups(job)[0]["targets"][0]["path"].as_str().expect("path").ends_with('t'));
}

#[test]
fn the_hyperconverged_example_ramps_44_groups_in_one_command() {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hyperconverged.toml");
    let example = example.to_str().expect("path");
    let dir = dir_with(&[]);
    // Its regions sit 16 MiB apart over 704 MiB; here every VM shares the first MiB of `t`.
    let args = ["ramp", example, "--engine", "null", "--target", "t", "--offset", "0", "--size", "1m"];
    let report = study(&dir, &[&args[..], &["--read-pct", "100,90", "--levels", "100"]].concat());
    let names: Vec<&str> = report["summary"]["curves"]
        .as_array()
        .expect("curves")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["read 100%", "read 90%"]);
    for job in report["run"]["jobs"].as_array().expect("jobs") {
        assert_eq!(groups(job).len(), 44, "{}", job["name"]);
        assert!(groups(job).iter().all(|g| g["qd"] == 8 && g["workers"] == 1));
    }
    let level = &report["run"]["jobs"][1];
    let rates = rates(level);
    assert!(
        rates.iter().max().expect("rates") - rates.iter().min().expect("rates") <= 1,
        "equal VMs, equal shares"
    );
}

#[test]
fn many_groups_are_shown_as_their_spread() {
    let mut file = String::from("engine = \"null\"\ntarget = \"t\"\nsize = \"1m\"\nqd = 2\n");
    for vm in 1..=10 {
        file.push_str(&format!("[[group]]\nname = \"vm{vm}\"\n"));
    }
    let dir = dir_with(&[("vms.toml", &file)]);
    let out = run_in(dir.path(), &[&["sweep", "vms.toml", "--qd", "1,2", "-q"][..], &QUICK].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("IOPS min"), "{text}");
    // The per-group table follows its header; the sweep's own table (whose "qd 1" line may hold
    // a 10 too) comes before it.
    let per_group = text.split("per group").nth(1).unwrap_or_else(|| panic!("no per-group table: {text}"));
    let spread: Vec<&str> =
        per_group.lines().filter(|l| l.trim_start().starts_with("qd ") && l.contains(" 10 ")).collect();
    assert_eq!(spread.len(), 2, "a line per point: {text}");
    assert!(!text.contains("vm7"), "not a line per group: {text}");
}

/// `iolab ramp --arrival poisson` was refused ("spaces a schedule, and there is none"): the
/// closed-loop run was resolved without a rate. Each level now keeps the arrival given.
#[test]
fn ramp_with_arrival_poisson_is_not_refused() {
    let dir = dir_with(&[]);
    let args = ["ramp", "--target", "t", "--engine", "null", "--size", "1m", "--arrival", "poisson"];
    let report = study(&dir, &[&args[..], &["--levels", "100"]].concat());
    let level = &report["run"]["jobs"][1];
    assert_eq!(groups(level)[0]["rate"]["arrival"], "poisson", "{level}");
}
