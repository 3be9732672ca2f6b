//! `iolab capture DEV`, `iolab trace show FILE` and `iolab trace import FILE -o OUT`: block
//! traces recorded, described and converted (crates/trace).

use std::path::Path;
use std::process::ExitCode;

use iolab_report::{trace_json, trace_text};
use iolab_trace::capture::{capture, CaptureError};
use iolab_trace::shape::shape;
use iolab_trace::{file_format, import, Trace};

use crate::args::CaptureArgs;
use crate::exit::{self, say};
use crate::flow::{install_signals, write_output};
use crate::output_file;

pub fn capture_run(args: CaptureArgs) -> ExitCode {
    if let Err(message) =
        output_file::check(&args.output, &output_file::Protected::default().target(&args.device))
    {
        return exit::usage(message);
    }
    let interrupt = match install_signals() {
        Ok(interrupt) => interrupt,
        Err(code) => return code,
    };
    // Said once the kernel records (setting up takes a while on a busy machine): what starts
    // after this line is in the capture.
    let mut recording = || {
        say!(
            "iolab: capturing {} for {} (recording; a stop signal ends it sooner)",
            args.device.display(),
            args.duration
        )
    };
    let captured = match capture(&args.device, args.duration.as_duration(), &interrupt, &mut recording) {
        Ok(captured) => captured,
        Err(e @ (CaptureError::NotRoot | CaptureError::NotABlockDevice(_) | CaptureError::NoTracefs)) => {
            return exit::usage(e.to_string())
        }
        Err(e) => return exit::fail(exit::INTERNAL, &e.to_string()),
    };
    if let Err(code) = save(&captured.trace, &args.output) {
        return code;
    }
    let shown = describe(&captured.trace, args.json);
    let shown = if args.json { shown } else { format!("{shown}  written to {}\n", args.output.display()) };
    if let Err(code) = write_output(&iolab_spec::OutputSpec::default(), &shown) {
        return code;
    }
    let dropped = captured.trace.header.capture_cost.as_ref().map_or(0, |c| c.dropped_events);
    if dropped > 0 {
        say!("iolab: warning: the kernel dropped {dropped} trace events: the capture misses requests");
    }
    if captured.interrupted {
        ExitCode::from(exit::INTERRUPTED)
    } else {
        ExitCode::from(exit::OK)
    }
}

/// `trace show FILE`.
pub fn show(file: &Path, json: bool) -> ExitCode {
    match open(file) {
        Ok(trace) => exit::of(
            write_output(&iolab_spec::OutputSpec::default(), &describe(&trace, json))
                .map(|()| ExitCode::from(exit::OK)),
        ),
        Err(code) => code,
    }
}

/// `trace import FILE -o OUTPUT`.
pub fn import(file: &Path, output: &Path) -> ExitCode {
    let trace = match open(file) {
        Ok(trace) => trace,
        Err(code) => return code,
    };
    if let Err(message) = output_file::check(output, &output_file::Protected::default().target(file)) {
        return exit::usage(message);
    }
    match save(&trace, output) {
        Ok(()) => {
            say!(
                "iolab: {} requests from {} ({}) written to {}",
                trace.requests.len(),
                file.display(),
                trace.header.source.describe(),
                output.display()
            );
            ExitCode::from(exit::OK)
        }
        Err(code) => code,
    }
}

/// Any trace iolab reads; a bad one is the user's input.
pub fn open(file: &Path) -> Result<Trace, ExitCode> {
    import::open(file).map_err(|e| exit::usage(e.to_string()))
}

fn describe(trace: &Trace, json: bool) -> String {
    let shape = shape(trace);
    if json {
        trace_json(&trace.header, &shape)
    } else {
        trace_text(&trace.header, &shape)
    }
}

fn save(trace: &Trace, path: &Path) -> Result<(), ExitCode> {
    let mut bytes = Vec::new();
    file_format::write(trace, &mut bytes).and_then(|()| output_file::write(path, &bytes)).map_err(|e| {
        exit::fail(exit::INTERNAL, &format!("cannot write the trace to {}: {e}", path.display()))
    })
}
