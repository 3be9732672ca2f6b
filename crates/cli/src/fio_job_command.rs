//! `iolab fio-job FILE`: checks a fio job file against what iolab can run, and with `--print`
//! shows the iolab job file it becomes (the very text `iolab run FILE` runs).

use std::process::ExitCode;

use crate::args::FioJobArgs;
use crate::exit;
use crate::exit::say;

pub fn run(args: FioJobArgs) -> ExitCode {
    let translation = match iolab_fiojob::translate_file(&args.file) {
        Ok(translation) => translation,
        Err(e) => return exit::fail(exit::USAGE, &e.to_string()),
    };
    let text = if args.print {
        translation.text
    } else {
        // The notes are also the file's comments; without --print they go to stderr.
        for note in &translation.notes {
            say!("iolab: note: fio job file {note}");
        }
        format!(
            "{}: iolab can run it (`iolab run {0}`); --print shows the iolab job file it becomes\n",
            args.file.display()
        )
    };
    match crate::flow::write_output(&iolab_spec::OutputSpec::default(), &text) {
        Ok(()) => ExitCode::from(exit::OK),
        Err(code) => code,
    }
}
