//! A run's samples (a burn-in's drive health): committed one by one, read back in the order
//! taken, kept apart by kind and by run, and gone with their run.

use iolab_store::{NewRun, Store};
use serde_json::json;

fn new_run(kind: &str) -> NewRun {
    NewRun {
        kind: kind.to_string(),
        label: format!("{kind} test"),
        command: vec!["iolab".into(), kind.into()],
        iolab_version: "0".into(),
        host: "test".into(),
        started_at_unix_s: 1,
        plan: json!([]),
        environment: json!({}),
    }
}

#[test]
fn samples_are_kept_by_run_and_kind_in_the_order_taken() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store = Store::open(&dir.path().join("db.sqlite")).expect("opens");
    let one = store.begin_run(&new_run("burnin")).expect("run");
    let two = store.begin_run(&new_run("burnin")).expect("run");
    store.add_sample(one, "health", 20, &json!({"t": 20})).expect("kept");
    store.add_sample(one, "health", 10, &json!({"t": 10})).expect("kept");
    store.add_sample(one, "other", 15, &json!({"t": 15})).expect("kept");
    store.add_sample(two, "health", 5, &json!({"t": 5})).expect("kept");

    assert_eq!(store.samples(one, "health").expect("read"), [json!({"t": 10}), json!({"t": 20})]);
    assert_eq!(store.samples(one, "other").expect("read"), [json!({"t": 15})]);
    assert_eq!(store.samples(two, "health").expect("read"), [json!({"t": 5})]);

    // A second connection (a killed process's successor) reads what the first committed.
    let again = Store::open(&dir.path().join("db.sqlite")).expect("opens again");
    assert_eq!(again.samples(one, "health").expect("read").len(), 2);

    store.delete_run(one).expect("deleted");
    assert!(store.samples(one, "health").expect("read").is_empty());
    assert_eq!(store.samples(two, "health").expect("read").len(), 1);
}
