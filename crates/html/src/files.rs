//! The panels of an `iolab files` run: one per phase, with every operation kind it timed
//! (count, rate, latency percentiles to 99.9999), the stonewall rate beside the whole phase's,
//! the limit the phase met, and its operations per second as bars. Read from each point's
//! stored result (the phase's JSON, schema iolab.files/1); nothing for other runs.

use std::fmt::Write;

use iolab_stats::format::{latency, thousands};
use serde_json::Value;

use crate::escape::esc;
use crate::Subject;

const PERCENTILES: [(f64, &str); 6] = [
    (50.0, "p50"),
    (99.0, "p99"),
    (99.9, "p99.9"),
    (99.99, "p99.99"),
    (99.999, "p99.999"),
    (99.9999, "p99.9999"),
];

/// The phase panels of `subject`'s run ("" unless it is a files run).
pub(crate) fn panels(subject: &Subject<'_>) -> String {
    let mut out = String::new();
    if !matches!(subject.run.info.kind.as_str(), "files" | "fleet files") {
        return out;
    }
    for point in &subject.run.points {
        let phase = &point.result;
        if phase.get("phase").is_none() {
            continue;
        }
        panel(&mut out, &point.name, phase, subject);
    }
    out
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn panel(out: &mut String, name: &str, phase: &Value, subject: &Subject<'_>) {
    let _ = writeln!(
        out,
        "<section class=\"files-phase\">\n<h3>{}</h3>\n<p class=\"note\">{} of {} in {:.3} s: {}/s{}; stonewall {}/s (first thread done at {:.3} s){}. CPU {:.0}% of the threads' time ({:.0}% in the kernel, {:.0}% waiting for a core){}{}.</p>",
        esc(name),
        thousands(num(&phase["done"])),
        thousands(num(&phase["planned"])),
        num(&phase["elapsed_s"]),
        thousands(num(&phase["ops_per_s"])),
        if num(&phase["bytes"]) > 0.0 { format!(", {:.1} MB/s", num(&phase["bytes_per_s"]) / 1e6) } else { String::new() },
        thousands(num(&phase["stonewall"]["ops_per_s"])),
        num(&phase["stonewall"]["first_done_s"]),
        phase["engine"].as_str().filter(|e| !e.is_empty()).map_or(String::new(), |e| format!("; {}", esc(e))),
        num(&phase["cpu_busy_pct"]),
        num(&phase["cpu_sys_pct"]),
        num(&phase["runq_wait_pct"]),
        phase["device_busy_pct"].as_f64().map_or(String::new(), |d| format!(", device busy {d:.0}%")),
        phase["io_wq_workers"].as_f64().filter(|&w| w >= 0.05).map_or(String::new(), |w| format!(
            "; io_uring workers {w:.1} at a time on average, each waiting for a core {:.0}% of its time",
            num(&phase["io_wq_wait_pct"])
        )),
    );
    out.push_str("<table>\n<tr><th>operation</th><th class=\"num\">count</th><th class=\"num\">ops/s</th><th class=\"num\">mean</th>");
    for (_, label) in PERCENTILES {
        let _ = write!(out, "<th class=\"num\">{label}</th>");
    }
    out.push_str("<th class=\"num\">max</th></tr>\n");
    for kind in phase["kinds"].as_array().into_iter().flatten() {
        let s = &kind["summary"];
        let l = &s["latency"];
        let at = |p: f64| {
            l["percentiles"]
                .as_array()
                .and_then(|ps| ps.iter().find(|x| (num(&x["p"]) - p).abs() < 1e-9))
                .map_or("—".to_string(), |x| latency(num(&x["ns"])))
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
            esc(kind["kind"].as_str().unwrap_or("?")),
            thousands(num(&s["ios"])),
            thousands(num(&s["iops"])),
            latency(num(&l["mean_ns"])),
        );
        for (p, _) in PERCENTILES {
            let _ = write!(out, "<td class=\"num\">{}</td>", at(p));
        }
        let _ = writeln!(out, "<td class=\"num\">{}</td></tr>", latency(num(&l["max_ns"])));
    }
    out.push_str("</table>\n");
    bars(out, phase, subject);
    let _ = writeln!(
        out,
        "<p><strong>limited by:</strong> {}</p>",
        esc(phase["verdict"]["summary"].as_str().unwrap_or("not judged"))
    );
    if let Some(failure) = phase.get("failure").filter(|f| !f.is_null()) {
        let _ = writeln!(
            out,
            "<p class=\"status-failed\">stopped: {} of {} failed: {}</p>",
            esc(failure["op"].as_str().unwrap_or("?")),
            esc(failure["path"].as_str().unwrap_or("?")),
            esc(failure["error"].as_str().unwrap_or("?"))
        );
    }
    out.push_str("</section>\n");
}

/// The phase's operations per second, one bar per second, as inline SVG.
fn bars(out: &mut String, phase: &Value, subject: &Subject<'_>) {
    let seconds: Vec<f64> =
        phase["series"].as_array().into_iter().flatten().map(|s| num(&s["ops"])).collect();
    if seconds.len() < 2 {
        return;
    }
    let (width, height) = (640.0, 120.0);
    let top = seconds.iter().copied().fold(1.0, f64::max);
    let step = width / seconds.len() as f64;
    let c = subject.base;
    let _ = writeln!(
        out,
        "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{}\" role=\"img\"><title>operations per second</title>",
        height + 16.0
    );
    for (i, ops) in seconds.iter().enumerate() {
        let h = height * ops / top;
        let _ = writeln!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"rgb({},{},{})\"><title>second {i}: {} ops</title></rect>",
            i as f64 * step,
            height - h,
            (step - 1.0).max(1.0),
            c.0,
            c.1,
            c.2,
            thousands(*ops)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"0\" y=\"{}\" font-size=\"11\">ops/s per second, peak {}</text></svg></figure>",
        height + 13.0,
        thousands(top)
    );
}
