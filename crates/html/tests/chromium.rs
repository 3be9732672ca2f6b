//! The report opens in a real browser: headless Chromium renders a page of several overlaid runs
//! to a screenshot that is not blank. Skips, saying why, where Chromium is not installed
//! (Debian: `apt-get install chromium`). Set IOLAB_HTML_KEEP=DIR to keep the page and the
//! screenshot for a look.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Chromium, or `None` once the test's skip is recorded with its reason.
fn chromium_or_skip() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        iolab_test_support::skip!(
            iolab_test_support::Missing::Chromium,
            "no chromium on PATH (apt-get install chromium)"
        );
    }
    found
}

/// Where pages and screenshots are written: IOLAB_HTML_KEEP to keep them, else `scratch`.
fn keep_dir(scratch: &Path) -> PathBuf {
    let dir = std::env::var_os("IOLAB_HTML_KEEP").map_or_else(|| scratch.to_path_buf(), PathBuf::from);
    std::fs::create_dir_all(&dir).expect("the output directory");
    dir
}

/// Share of the image's pixels that are not (near) white, and its size.
fn ink(png_path: &Path) -> (f64, u32, u32) {
    let file = std::fs::File::open(png_path).expect("the screenshot exists");
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buffer = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buffer).expect("one frame");
    let channels = frame.color_type.samples();
    let pixels = &buffer[..frame.buffer_size()];
    let inked = pixels.chunks(channels).filter(|p| p.iter().take(3).any(|&c| c < 200)).count();
    (inked as f64 / (pixels.len() / channels) as f64, frame.width, frame.height)
}

#[test]
fn headless_chromium_renders_the_report() {
    let Some(browser) = chromium_or_skip() else { return };
    let runs = vec![
        support::iolab_run(1, "sweep", "sweep.json"),
        support::iolab_run(2, "sweep", "sweep_bs.json"),
        support::iolab_run(4, "steady", "steady.json"),
        support::iolab_run(5, "cliff", "cliff.json"),
        support::iolab_run(7, "run", "run.json"),
        support::iolab_run(8, "run", "run_rw.json"),
        support::fio_run(10, "fio.json"),
    ];
    let html = iolab_html::render(&runs).expect("renders");
    let scratch = tempfile::tempdir().expect("a temp dir");
    let dir = keep_dir(scratch.path());
    let page = dir.join("report.html");
    std::fs::write(&page, html).expect("writes the page");
    let shot = dir.join("report.png");
    let _ = std::fs::remove_file(&shot);
    let output = Command::new(&browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"])
        .arg(format!("--user-data-dir={}", scratch.path().join("profile").display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,4000")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium starts");
    assert!(shot.exists(), "no screenshot; chromium said: {}", String::from_utf8_lossy(&output.stderr));
    let (share, width, height) = ink(&shot);
    assert_eq!((width, height), (1280, 4000));
    // Charts, tables and text: a page that rendered nothing (or only a background) has ~0.
    assert!(share > 0.03, "only {:.1}% of the pixels are not white", share * 100.0);
}

/// A chart as laid out: its kind, workload, texts, legend entries and caption.
struct LaidFigure {
    kind: String,
    workload: String,
    texts: Vec<String>,
    legend: Vec<Entry>,
    caption: String,
}

/// A legend entry: the name, the colour of its line sample, and whether the sample is dashed.
struct Entry {
    name: String,
    color: (u8, u8, u8),
    dashed: bool,
}

/// The page laid out by Chromium, as `tests/chromium_bar.js` measured it.
struct Laid {
    figures: Vec<LaidFigure>,
    overflows: Vec<String>,
    /// Sweet-spot labels drawn over a data point.
    covered: Vec<String>,
    /// Labels on a box (the sweet spots) the script checked.
    labels: u64,
    /// The row and column names of the environment tables.
    keys: Vec<String>,
    summary: Option<String>,
}

/// Opens `html` (with the measuring script added to a copy) in headless Chromium, keeps a
/// screenshot of the page as given beside it, and returns what the script found.
fn lay_out(browser: &Path, html: &str, dir: &Path, name: &str) -> Laid {
    let page = dir.join(format!("{name}.html"));
    std::fs::write(&page, html).expect("writes the page");
    let screenshot = dir.join(format!("{name}.png"));
    let common = |cmd: &mut Command| {
        cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"])
            .arg(format!("--user-data-dir={}", dir.join("profile").display()))
            .arg("--window-size=1280,12000");
    };
    let mut shot = Command::new(browser);
    common(&mut shot);
    shot.arg(format!("--screenshot={}", screenshot.display())).arg(format!("file://{}", page.display()));
    let _ = shot.output().expect("chromium starts");
    let script = include_str!("chromium_bar.js");
    let measured = dir.join(format!("{name}-measured.html"));
    std::fs::write(&measured, html.replace("</body>", &format!("<script>{script}</script>\n</body>")))
        .expect("writes the measured copy");
    let mut dump = Command::new(browser);
    common(&mut dump);
    let output = dump
        .arg("--dump-dom")
        .arg(format!("file://{}", measured.display()))
        .output()
        .expect("chromium starts");
    let dom = String::from_utf8_lossy(&output.stdout);
    let json = dom
        .rsplit("<pre id=\"iolab-checks\">")
        .next()
        .filter(|_| dom.contains("<pre id=\"iolab-checks\">{"))
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!("the script did not run; chromium said: {}", String::from_utf8_lossy(&output.stderr))
        });
    let json = json.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&");
    let value: serde_json::Value = serde_json::from_str(&json).expect("the script's JSON");
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(String::from)).collect()
    };
    Laid {
        figures: value["figures"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| LaidFigure {
                kind: f["kind"].as_str().unwrap_or_default().into(),
                workload: f["workload"].as_str().unwrap_or_default().into(),
                texts: strings(&f["texts"]),
                legend: f["legend"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|e| Entry {
                        name: e["name"].as_str().unwrap_or_default().into(),
                        color: hex(e["color"].as_str().unwrap_or_default()),
                        dashed: e["dashed"].as_bool().unwrap_or(false),
                    })
                    .collect(),
                caption: f["caption"].as_str().unwrap_or_default().into(),
            })
            .collect(),
        overflows: strings(&value["overflows"]),
        covered: strings(&value["covered"]),
        labels: value["labels"].as_u64().unwrap_or(0),
        keys: strings(&value["keys"]),
        summary: value["summary"].as_str().map(String::from),
    }
}

/// "#1F77B4" as (r, g, b).
fn hex(color: &str) -> (u8, u8, u8) {
    let channel = |i: usize| u8::from_str_radix(color.get(i..i + 2).unwrap_or("00"), 16).unwrap_or(0);
    (channel(1), channel(3), channel(5))
}

/// Block sizes named in `text`: "4KiB", "128KiB", "1MiB".
fn block_sizes(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            let digits = w.trim_end_matches(char::is_alphabetic);
            !digits.is_empty()
                && digits.chars().all(|c| c.is_ascii_digit())
                && ["KiB", "MiB", "GiB"].contains(&&w[digits.len()..])
        })
        .map(String::from)
        .collect()
}

/// The report of the comparison fixtures (support::comparison_runs), laid out as `name`.
fn comparison_laid_out(browser: &Path, name: &str) -> Laid {
    let html = iolab_html::render(&support::comparison_runs()).expect("renders");
    let scratch = tempfile::tempdir().expect("a temp dir");
    let dir = keep_dir(scratch.path());
    lay_out(browser, &html, &dir, name)
}

/// Issue 20's bar: what a storage engineer compares (sweeps of 4 KiB on two targets and of
/// 1 MiB, a quick suite, a blender job of two groups, a fio import) reads without editing.
#[test]
fn a_comparison_of_several_kinds_reads_cleanly_in_chromium() {
    let Some(browser) = chromium_or_skip() else { return };
    let laid = comparison_laid_out(&browser, "comparison");

    // Every requested run in every panel it has data for, and no other (ids as stored: 1 sweep 4 KiB,
    // 2 sweep 1 MiB, 3 sweep 4 KiB on the other target, 4 suite, 5 blender, 6 fio).
    let blender = "4KiB random read + 128KiB sequential write";
    let expected: [(&str, &str, &[i64]); 12] = [
        ("percentiles", "4KiB random read", &[1, 3, 4, 6]),
        ("percentiles", "1MiB random read", &[2]),
        ("percentiles", "1MiB sequential write", &[4]),
        ("percentiles", blender, &[5]),
        ("histogram", "4KiB random read", &[1, 3, 4]),
        ("histogram", blender, &[5]),
        ("qd-iops", "4KiB random read", &[1, 3]),
        ("qd-iops", "1MiB random read", &[2]),
        ("cpu-per-io", "4KiB random read", &[1, 3, 4, 6]),
        ("series-iops", "4KiB random read", &[1, 3, 4]),
        ("series-p99", "4KiB random read", &[1, 3, 4]),
        ("series-iops", blender, &[5]),
    ];
    for (kind, workload, ids) in expected {
        let Some(LaidFigure { texts, .. }) =
            laid.figures.iter().find(|f| f.kind == kind && f.workload == workload)
        else {
            panic!("no {kind} panel for {workload}");
        };
        // Exactly these runs: a run missing was left out, one more is of another workload.
        for id in 1..=6 {
            let named = texts.iter().any(|t| t.starts_with(&format!("#{id} ")));
            assert_eq!(named, ids.contains(&id), "{kind} {workload}: run {id} (expected {ids:?})");
        }
    }
    // The blender's groups are each drawn beside its total.
    let texts = &laid
        .figures
        .iter()
        .find(|f| f.kind == "percentiles" && f.workload == blender)
        .expect("the blender panel")
        .texts;
    for group in ["group oltp (4KiB random read)", "group backup (128KiB sequential write)"] {
        assert!(texts.iter().any(|t| t.ends_with(group)), "the blender's {group}: {texts:?}");
    }
    for LaidFigure { kind, workload, texts, .. } in &laid.figures {
        // No panel mixes block sizes: every one it names is its workload's.
        let own = block_sizes(workload);
        for text in texts {
            for size in block_sizes(text) {
                assert!(own.contains(&size), "{kind} {workload}: '{text}' is of another block size");
            }
        }
        // Every sweet-spot label names its run.
        for label in texts.iter().filter(|t| t.contains("sweet spot:") || t.contains("best (no knee):")) {
            assert!(label.starts_with('#'), "{kind} {workload}: '{label}' does not name its run");
        }
    }
    assert!(laid.figures.iter().any(|f| f.kind == "qd-iops"), "the sweeps are charted");
    assert!(laid.overflows.is_empty(), "text overflows its box: {:#?}", laid.overflows);
    assert!(laid.covered.is_empty(), "labels hide data: {:#?}", laid.covered);
    // Three sweeps, a sweet spot each, on each of three load charts: all were measured.
    assert!(laid.labels >= 9, "only {} sweet-spot labels were found to check", laid.labels);
    let summary = laid.summary.expect("the page opens with a summary");
    assert!(summary.contains("4KiB random read: #") && summary.contains("is fastest"), "{summary}");
    for id in 1..=6 {
        assert!(summary.contains(&format!("#{id} ")), "the summary leaves out run {id}: {summary}");
    }
}

/// Issue 36 item 5, seen in the browser: differences past 2x read as ratios, the environment
/// tables name their rows in words, a run's lines of one style in one panel stay tellable apart,
/// and every run that measured a panel's workload is drawn in it or named under it with why.
#[test]
fn the_comparison_says_ratios_keys_shades_and_what_each_panel_leaves_out() {
    let Some(browser) = chromium_or_skip() else { return };
    let laid = comparison_laid_out(&browser, "comparison-item5");

    // Ratios: no "6,900% lower"; the fixtures differ by more than 2x, so some ratio is there.
    let summary = laid.summary.expect("the page opens with a summary");
    let words: Vec<&str> = summary.split_whitespace().collect();
    for pair in words.windows(2) {
        let comparative = ["higher", "lower", "more", "fewer"].contains(&pair[1]);
        if let Some(pct) = pair[0].strip_suffix('%').filter(|_| comparative) {
            let pct: f64 = pct.replace(',', "").parse().expect("a percentage");
            assert!(pct <= 100.0, "a difference past 2x as a percentage: '{} {}'", pair[0], pair[1]);
        }
    }
    let ratio = |w: &str| w.strip_suffix('x').is_some_and(|n| n.parse::<f64>().is_ok_and(|n| n >= 2.0));
    assert!(words.windows(2).any(|p| ratio(p[0]) && p[1] == "fewer"), "no ratio in: {summary}");

    // Environment keys in words: no field names ("device.capacity_bytes").
    assert!(laid.keys.len() >= 5, "the environment tables were not found: {:?}", laid.keys);
    // (The targets table's columns are the targets' own paths.)
    for key in laid.keys.iter().filter(|k| !k.starts_with('/')) {
        let dotted = key
            .as_bytes()
            .windows(3)
            .any(|w| w[0].is_ascii_lowercase() && w[1] == b'.' && w[2].is_ascii_lowercase());
        assert!(!key.contains('_') && !dotted, "a raw field name: '{key}'");
    }

    // Shades: a run's lines of one style in one panel are at least ΔE 10 apart (2.3 is just noticeable).
    let mut pairs = 0;
    for figure in &laid.figures {
        for (i, a) in figure.legend.iter().enumerate() {
            for b in &figure.legend[i + 1..] {
                let run = |e: &Entry| e.name.split(' ').next().unwrap_or_default().to_string();
                if run(a) != run(b) || a.dashed != b.dashed {
                    continue;
                }
                pairs += 1;
                let d = iolab_html::delta_e(a.color, b.color);
                assert!(
                    d >= 10.0,
                    "{} {}: '{}' and '{}' are ΔE {d:.1} apart",
                    figure.kind,
                    figure.workload,
                    a.name,
                    b.name
                );
            }
        }
    }
    assert!(pairs >= 5, "only {pairs} pairs of one run's lines were measured");

    // What each panel leaves out: the runs' workloads as stored (1, 3 sweeps of 4 KiB; 2 of
    // 1 MiB; 4 a quick suite; 5 a blender; 6 a fio import of 4 KiB).
    let ran: [(i64, &[&str]); 6] = [
        (1, &["4KiB random read"]),
        (2, &["1MiB random read"]),
        (3, &["4KiB random read"]),
        (4, &["4KiB random read", "4KiB random write", "1MiB sequential read", "1MiB sequential write"]),
        (5, &["4KiB random read + 128KiB sequential write"]),
        (6, &["4KiB random read"]),
    ];
    let mut noted = 0;
    for figure in laid.figures.iter().filter(|f| !f.workload.is_empty()) {
        let left_out = figure.caption.split("Not drawn here: ").nth(1).unwrap_or_default();
        for (id, workloads) in ran.iter().filter(|(_, w)| w.contains(&figure.workload.as_str())) {
            let tag = format!("#{id} ");
            let drawn = figure.texts.iter().any(|t| t.starts_with(&tag));
            let named = left_out.split("; ").find(|n| n.starts_with(&tag));
            assert!(
                drawn != named.is_some(),
                "{} {}: run {id} ({workloads:?}) drawn: {drawn}, named under it: {named:?}",
                figure.kind,
                figure.workload
            );
            // A name with its reason after it.
            if let Some(named) = named {
                noted += 1;
                assert!(named.split(": ").nth(1).is_some_and(|why| why.len() > 10), "no reason: '{named}'");
            }
        }
    }
    // The suite and the import have no load curve; the import no histogram and no series.
    assert!(noted >= 9, "only {noted} left-out runs were named");
}
