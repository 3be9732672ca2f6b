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
    let Some(browser) = chromium() else {
        return iolab_test_support::skip!(
            iolab_test_support::Missing::Chromium,
            "no chromium on PATH (apt-get install chromium)"
        );
    };
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
    let dir = std::env::var_os("IOLAB_HTML_KEEP").map_or_else(|| scratch.path().to_path_buf(), PathBuf::from);
    std::fs::create_dir_all(&dir).expect("the output directory");
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
