use super::*;
use iolab_analysis::compare::Noise;

fn finding(metric: Metric, baseline: f64, candidate: f64, status: Status, why: &str) -> Finding {
    Finding {
        point: "default".into(),
        metric,
        baseline: Some(baseline),
        candidate: Some(candidate),
        pct: Some((candidate - baseline) / baseline * 100.0),
        noise: Some(Noise::Beyond),
        noise_pct: Some(4.0),
        max_regression_pct: Some(5.0),
        status,
        why: why.into(),
    }
}

fn regression() -> Check {
    Check {
        schema: CHECK_SCHEMA,
        verdict: Verdict::Regression,
        baseline: "#1".into(),
        candidate: "#2".into(),
        rules: Rules::default(),
        findings: vec![
            finding(
                Metric::Iops,
                200.0,
                140.0,
                Status::Regression,
                "-30.0%, worse, beyond noise (4.0%), past the 5% allowed",
            ),
            finding(
                Metric::P99Ns,
                20_000_000.0,
                20_100_000.0,
                Status::Held,
                "+0.5%, worse, within the 5% allowed",
            ),
            Finding {
                baseline: None,
                candidate: None,
                pct: None,
                noise: None,
                noise_pct: None,
                status: Status::NotMeasured,
                why: "not measured on both sides".into(),
                ..finding(Metric::CpuUsPerIo, 1.0, 1.0, Status::NotMeasured, "")
            },
        ],
        not_comparable: Vec::new(),
        notes: vec!["a <note> & a 'quote'".into()],
        summary: "REGRESSION: IOPS at 'default' -30.0%, worse, beyond noise (4.0%), past the 5% allowed"
            .into(),
    }
}

#[test]
fn the_text_names_each_figure_its_judgement_and_ends_with_the_verdict() {
    let text = check_text(&regression());
    assert!(
        text.starts_with(
            "check: #2 against baseline #1; a figure regresses when it is worse past its limit (IOPS 5%,"
        ),
        "{text}"
    );
    let iops = text.lines().find(|l| l.trim_start().starts_with("IOPS")).expect("an IOPS line");
    assert!(iops.contains("200") && iops.contains("140") && iops.ends_with("[REGRESSION]"), "{text}");
    assert!(text.contains("not measured on both sides  [not measured]"), "{text}");
    assert!(text.trim_end().ends_with("past the 5% allowed"), "{text}");
}

#[test]
fn markdown_is_a_table_with_the_verdict_as_its_title() {
    let md = check_markdown(&regression());
    assert!(md.starts_with("## iolab check: REGRESSION\n"), "{md}");
    assert!(md.contains("| default | IOPS | 200 | 140 | -30.0%, worse, beyond noise (4.0%), past the 5% allowed | ❌ regression |"), "{md}");
    let mut pass = regression();
    pass.verdict = Verdict::Pass;
    pass.findings[0].status = Status::Held;
    assert!(check_markdown(&pass).starts_with("## iolab check: pass\n"));
}

#[test]
fn junit_fails_the_regressed_figure_and_errs_when_not_comparable() {
    let xml = check_junit(&regression());
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"iolab check\" tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"1\">"), "{xml}");
    assert!(xml.contains("<testcase classname=\"iolab.check.default\" name=\"IOPS\">\n      <failure type=\"regression\" message=\"-30.0%, worse, beyond noise (4.0%), past the 5% allowed\">"), "{xml}");
    assert!(xml.contains("<testcase classname=\"iolab.check\" name=\"comparable\"/>"), "{xml}");
    assert!(xml.contains("<skipped message=\"not measured on both sides\"/>"), "{xml}");
    let mut other = regression();
    other.verdict = Verdict::NotComparable;
    other.not_comparable = vec!["#2 'default': not the same workload: 'a' vs 'b' & more".into()];
    let xml = check_junit(&other);
    assert!(xml.contains("errors=\"1\""), "{xml}");
    assert!(xml.contains("<error type=\"not_comparable\""), "{xml}");
    assert!(xml.contains("&#39;a&#39; vs &#39;b&#39; &amp; more"), "{xml}");
    // Well formed, and the counts agree with the cases.
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let cases = doc.descendants().filter(|n| n.has_tag_name("testcase")).count();
    assert_eq!(doc.root_element().attribute("tests"), Some(cases.to_string().as_str()));
    let errors = doc.descendants().filter(|n| n.has_tag_name("error")).count();
    assert_eq!((cases, errors), (4, 1));
}
