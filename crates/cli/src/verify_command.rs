//! `iolab verify TARGET`: reads a region once and checks every block against the record a
//! `--verify` run left (docs/verify.md). Exit 0 when every recorded block is good, 6 when any
//! is bad; blocks with no record are counted as never written, not as errors.

use std::process::ExitCode;

use iolab_engine::block::BLOCK;
use iolab_engine::blockcheck::{self, Verdict};
use iolab_engine::readback;
use iolab_runner::verify::{bad_block, read_records, state_path};
use iolab_stats::verify::VerifySummary;

use crate::args::VerifyArgs;
use crate::exit;

pub fn run(args: VerifyArgs) -> ExitCode {
    exit::of(verify(args))
}

fn verify(args: VerifyArgs) -> Result<ExitCode, ExitCode> {
    let path = state_path(args.verify_state.as_deref(), &args.target).map_err(exit::usage)?;
    if !path.exists() {
        return Err(exit::usage(format!(
            "no verify state at {}: nothing records what {} should hold (give the --verify-state of the run that wrote it)",
            path.display(),
            args.target.display()
        )));
    }
    let target_size = target_size(&args.target).map_err(exit::usage)?;
    let records = read_records(&path, target_size).map_err(exit::usage)?;
    let start = args.offset.map_or(0, |o| o.0);
    if start % BLOCK as u64 != 0 {
        return Err(exit::usage(format!(
            "--offset {start} is not a multiple of 4k; verify reads whole 4 KiB blocks"
        )));
    }
    let recorded_end = records.len() as u64 * BLOCK as u64;
    let end = match args.size {
        Some(size) => start
            .checked_add(size.0)
            .ok_or_else(|| exit::usage("--offset plus --size is beyond any device"))?,
        None if recorded_end > 0 => recorded_end.min(target_size),
        None => target_size,
    };
    let label = args.target.display().to_string();
    let mut summary = VerifySummary { state_files: vec![path.display().to_string()], ..Default::default() };
    let read = readback::read_blocks(&args.target, start, end.saturating_sub(start), |offset, block| {
        let expected =
            records.get((offset / BLOCK as u64) as usize).copied().unwrap_or(blockcheck::UNWRITTEN);
        match blockcheck::check(block, offset, expected) {
            Verdict::Good => summary.blocks_checked += 1,
            Verdict::NeverWritten => summary.never_written += 1,
            Verdict::Bad(kind, found) => {
                summary.blocks_checked += 1;
                summary.add_bad(bad_block(&label, offset, kind, expected, found));
            }
        }
    })
    .map_err(|e| exit::fail(exit::IO_ERRORS, &format!("reading {}: {e}", args.target.display())))?;
    let text = if args.json {
        serde_json::to_string_pretty(&summary).map_err(|e| exit::fail(exit::INTERNAL, &e.to_string()))?
    } else {
        let mut lines =
            vec![format!("{}: read {} bytes from offset {start}, record {}", label, read, path.display())];
        lines.extend(summary.text());
        if summary.blocks_checked == 0 {
            lines.push("  nothing in this region was recorded as written: no block could be checked".into());
        }
        lines.join("\n")
    };
    crate::flow::write_output(&iolab_spec::OutputSpec::default(), &format!("{text}\n"))?;
    Ok(ExitCode::from(if summary.data_errors() > 0 { exit::DATA_ERRORS } else { exit::OK }))
}

/// The size of a file, or of a block device (its end, seeked to).
fn target_size(path: &std::path::Path) -> Result<u64, String> {
    use std::io::Seek;
    let mut file = std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    file.seek(std::io::SeekFrom::End(0)).map_err(|e| format!("cannot size {}: {e}", path.display()))
}
