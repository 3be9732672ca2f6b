//! Regression tests of issue 19: `import fio` panicked on some values and stored nonsense
//! without a word. Each test edits a real fio 3.33 output the way the issue did.

use iolab_fio::{import, limits, FioImportError, Imported};
use serde_json::Value;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture exists")).expect("JSON")
}

fn refused(doc: &Value) -> String {
    let err: FioImportError = import(&doc.to_string(), "edited.json").expect_err("refused");
    err.to_string()
}

fn imports(doc: &Value) -> Imported {
    import(&doc.to_string(), "edited.json").expect("imports")
}

#[test]
fn clat_min_above_max_is_refused_not_a_panic() {
    let mut doc = fixture("uring_randread.json");
    doc["jobs"][0]["read"]["clat_ns"]["min"] = Value::from(9_000_000_000u64);
    let message = refused(&doc);
    assert!(message.contains("\"read.clat_ns.min\" (9000000000 ns) is above max"), "{message}");
}

/// The json+ path reached `OpStats::percentile_ns`, whose clamp panicked.
#[test]
fn json_plus_min_above_max_is_refused_not_a_panic() {
    let mut doc = fixture("uring_randread.jsonplus.json");
    doc["jobs"][0]["read"]["clat_ns"]["max"] = Value::from(1);
    assert!(refused(&doc).contains("is above max (1 ns)"));
}

#[test]
fn mean_outside_min_and_max_is_refused() {
    let mut doc = fixture("uring_randread.json");
    doc["jobs"][0]["read"]["clat_ns"]["mean"] = Value::from(1e12);
    assert!(refused(&doc).contains("\"read.clat_ns.mean\""));
}

/// A bin count of u64::MAX panicked in the histogram's encoding; bins that do not add up to
/// N are left out, with a note, and fio's percentile list is used.
#[test]
fn bin_counts_of_u64_max_are_left_out_not_a_panic() {
    let mut doc = fixture("uring_randread.jsonplus.json");
    let bins = doc["jobs"][0]["read"]["clat_ns"]["bins"].as_object_mut().expect("bins");
    for count in bins.values_mut() {
        *count = Value::from(u64::MAX);
    }
    let message = refused(&doc);
    assert!(message.contains("bin count that is not a whole number under 2^63"), "{message}");
    let mut doc = fixture("uring_randread.jsonplus.json");
    let bins = doc["jobs"][0]["read"]["clat_ns"]["bins"].as_object_mut().expect("bins");
    for count in bins.values_mut() {
        *count = Value::from(i64::MAX as u64 - 1);
    }
    let run = imports(&doc);
    assert!(run.points[0].histograms.is_none());
    assert!(run.notes.iter().any(|n| n.contains("bins are left out")), "{:?}", run.notes);
    let latency = run.points[0].summary.read.latency.as_ref().expect("latency");
    assert_eq!(latency.percentiles.len(), 5, "fio's own list");
}

/// 1.23e29 was stored as u64::MAX.
#[test]
fn total_ios_beyond_2_63_is_refused_not_stored_as_u64_max() {
    let mut doc = fixture("uring_randread.json");
    doc["jobs"][0]["read"]["total_ios"] = serde_json::json!(1.23e29);
    let message = refused(&doc);
    assert!(message.contains("\"read.total_ios\" is 1.23e+29, beyond 2^63"), "{message}");
    doc["jobs"][0]["read"]["total_ios"] = Value::from(u64::MAX);
    assert!(refused(&doc).contains("beyond 2^63"));
}

#[test]
fn negative_bandwidth_is_refused() {
    let mut doc = fixture("uring_randread.json");
    doc["jobs"][0]["read"]["bw_bytes"] = Value::from(-5);
    let message = refused(&doc);
    assert!(message.contains("\"read.bw_bytes\" is negative (-5)"), "{message}");
}

#[test]
fn negative_timestamp_is_refused() {
    let mut doc = fixture("uring_randread.json");
    doc["timestamp"] = Value::from(-1);
    assert!(refused(&doc).contains("\"timestamp\" is negative (-1)"));
}

#[test]
fn negative_cpu_is_left_out_with_a_note() {
    let mut doc = fixture("uring_randread.json");
    doc["jobs"][0]["sys_cpu"] = Value::from(-3.5);
    let run = imports(&doc);
    assert_eq!(run.points[0].summary.cpu_us_per_io, None);
    assert!(run.notes.iter().any(|n| n.contains("sys_cpu is negative (-3.5)")), "{:?}", run.notes);
}

#[test]
fn a_text_over_the_size_limit_is_refused_before_parsing() {
    let text = format!("{{\"x\": \"{}\"}}", "a".repeat(limits::MAX_INPUT_BYTES as usize));
    let err = import(&text, "huge.json").expect_err("refused");
    assert!(matches!(err, FioImportError::TooLarge { .. }));
    assert!(err.to_string().contains("16 MiB"), "{err}");
}

#[test]
fn long_job_names_and_options_are_cut_with_a_note() {
    let mut doc = fixture("uring_randread.json");
    let long = "n".repeat(100_000);
    doc["jobs"][0]["jobname"] = Value::from(long.clone());
    doc["jobs"][0]["job options"]["description"] = Value::from(long);
    let run = imports(&doc);
    let point = &run.points[0];
    assert!(point.name.len() < 2 * limits::MAX_TEXT_CHARS, "{}", point.name.len());
    let stored = serde_json::to_string(&point.result).expect("JSON").len()
        + serde_json::to_string(&point.spec).expect("JSON").len()
        + serde_json::to_string(&run.run.plan).expect("JSON").len()
        + run.run.command.iter().map(String::len).sum::<usize>()
        + run.run.label.len();
    assert!(stored < 40_000, "stored {stored} bytes");
    assert!(run.notes.iter().any(|n| n.contains("2 texts")), "{:?}", run.notes);
}

/// Every number of a job replaced by what fio never writes: refused or imported, never a
/// panic.
#[test]
fn no_panic_on_any_mangled_number() {
    for name in ["uring_randread.jsonplus.json", "randrw_group.jsonplus.json", "fio2_randread.jsonplus.json"]
    {
        let doc = fixture(name);
        let mut pointers = Vec::new();
        numbers(&doc["jobs"][0], String::from("/jobs/0"), &mut pointers);
        for pointer in pointers.iter().filter(|p| !p.contains("/bins/") || p.ends_with("0")) {
            for bad in [serde_json::json!(-1), serde_json::json!(1.23e29), serde_json::json!(u64::MAX)] {
                let mut edited = doc.clone();
                *edited.pointer_mut(pointer).expect("exists") = bad;
                let _ = import(&edited.to_string(), "mangled.json");
            }
        }
    }
}

fn numbers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Number(_) => out.push(at),
        Value::Object(map) => {
            for (k, v) in map {
                numbers(v, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                numbers(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Counts that do not add up are kept as fio's, with a note saying which.
#[test]
fn iops_that_do_not_add_up_are_noted() {
    let mut doc = fixture("uring_randread.json");
    doc["jobs"][0]["read"]["iops"] = Value::from(1.0);
    let run = imports(&doc);
    assert!(
        run.notes.iter().any(|n| n.contains("read iops (1) is not total_ios / runtime")),
        "{:?}",
        run.notes
    );
    let clean = imports(&fixture("uring_randread.json"));
    assert!(!clean.notes.iter().any(|n| n.contains("is not")), "{:?}", clean.notes);
}
