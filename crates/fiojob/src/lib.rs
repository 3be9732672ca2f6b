//! fio job files as iolab job files: `iolab run job.fio` and `iolab fio-job job.fio --print`.
//!
//! The translation produces the text of an iolab job file (TOML), which is then read exactly
//! as a user's own job file is: what `--print` shows is what `run` runs. Options with an iolab
//! equivalent are translated, options that change only fio's reporting are dropped with a
//! note, and every other option is refused, all of them listed at once. The mapping, option by
//! option, is in docs/job-file.md ("fio job files").

mod distribution;
mod error;
mod ini;
mod job;
mod options;
mod pacing;
mod plan;
mod values;

use std::io::Read;
use std::path::Path;

use iolab_spec::{jobfile, resolve, Options};
use toml::{Table, Value};

pub use error::{FioJobError, Loc};

/// A fio job file as an iolab job file.
#[derive(Debug, Clone)]
pub struct Translation {
    /// The iolab job file (TOML).
    pub text: String,
    /// One line each: options dropped, and where iolab's run differs from fio's in a way the
    /// user should know. For stderr (and as comments at the top of `text`).
    pub notes: Vec<String>,
}

impl Translation {
    /// The job file's options, as `iolab_spec::jobfile::parse` reads them.
    pub fn options(&self, file: &str) -> Result<Options, FioJobError> {
        jobfile::parse(&self.text).map_err(|message| FioJobError::Refused {
            file: file.to_string(),
            message: format!("its translation is not a valid iolab job file ({message}); please report this"),
        })
    }
}

/// What the translation found beside the keys: notes, and options without an equivalent.
#[derive(Debug, Default)]
pub struct Findings {
    notes: Vec<String>,
    unsupported: Vec<(Loc, String)>,
}

impl Findings {
    /// A note, once per place (`[global]` options are seen again by every job).
    fn note(&mut self, loc: &Loc, text: &str) {
        let line = format!("{loc}: {text}");
        if !self.notes.contains(&line) {
            self.notes.push(line);
        }
    }

    /// An option without an equivalent, once per place.
    fn unsupported(&mut self, loc: &Loc, shown: String) {
        if !self.unsupported.iter().any(|(l, s)| l == loc && *s == shown) {
            self.unsupported.push((loc.clone(), shown));
        }
    }
}

/// Whether `path` holds a fio job file rather than an iolab (TOML) one: a `.fio` or `.ini`
/// name, or a first line (past comments) that opens a `[section]` (an iolab file begins with
/// keys or `[[job]]`).
pub fn looks_like_fio(path: &Path) -> bool {
    let by_name = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    if matches!(by_name.as_deref(), Some("fio" | "ini")) {
        return true;
    }
    if matches!(by_name.as_deref(), Some("toml")) {
        return false;
    }
    // The first lines decide; a large file (or a device named by mistake) is not read whole.
    let mut head = Vec::new();
    let Ok(file) = iolab_spec::user_file::open(path, "fio job file") else { return false };
    if file.take(64 << 10).read_to_end(&mut head).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&head);
    let first = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with(['#', ';']));
    first.is_some_and(|line| line.starts_with('[') && !line.starts_with("[["))
}

/// Translates the fio job file at `path`, reading `${VAR}`s from the process environment.
pub fn translate_file(path: &Path) -> Result<Translation, FioJobError> {
    let sections = ini::parse_file(path, &|name| std::env::var(name).ok())?;
    translate_sections(&sections, &path.display().to_string())
}

/// Translates fio job-file text (for tests and callers with text in hand); `path` names it.
pub fn translate_text(
    text: &str,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Translation, FioJobError> {
    let sections = ini::parse_text(text, path, env)?;
    translate_sections(&sections, &path.display().to_string())
}

fn translate_sections(sections: &[ini::Section], file: &str) -> Result<Translation, FioJobError> {
    let mut findings = Findings::default();
    let mut globals = Vec::new();
    let mut fio_jobs = Vec::new();
    for section in sections {
        if section.is_global() {
            globals.extend(section.options.iter().cloned());
        } else {
            fio_jobs.push(job::FioJob::new(section, &globals, &mut findings));
        }
    }
    if fio_jobs.is_empty() {
        return Err(FioJobError::File {
            file: file.to_string(),
            message: "it has no job, only [global] sections; add a [name] section for each job".into(),
        });
    }
    let groups = fio_jobs.iter().map(|j| j.group(&mut findings)).collect::<Result<Vec<_>, _>>();
    // Options without an equivalent come first: the user fixes the whole list in one go.
    refuse_unsupported(&findings, file)?;
    let jobs = plan::jobs(groups?, &mut findings)?;
    refuse_unsupported(&findings, file)?;
    let mut root = Table::new();
    root.insert("job".into(), Value::Array(jobs));
    let body = toml::to_string(&root).map_err(|e| FioJobError::Refused {
        file: file.to_string(),
        message: format!("its translation cannot be written as TOML ({e}); please report this"),
    })?;
    let mut text =
        format!("# iolab job file translated from the fio job file {file} (iolab fio-job --print)\n");
    for note in &findings.notes {
        text.push_str(&format!("# note: {}\n", comment_text(note)));
    }
    text.push('\n');
    text.push_str(&body);
    let translation = Translation { text, notes: findings.notes };
    // Refuse here what iolab would refuse when running it, so `--print` never shows a file
    // that `run` rejects.
    let options = translation.options(file)?;
    resolve(Some(&options), &Options::default()).map_err(|e| FioJobError::Refused {
        file: file.to_string(),
        message: format!("iolab refuses the job it becomes: {e}"),
    })?;
    Ok(translation)
}

fn refuse_unsupported(findings: &Findings, file: &str) -> Result<(), FioJobError> {
    if findings.unsupported.is_empty() {
        return Ok(());
    }
    let mut found = findings.unsupported.clone();
    found.sort_by(|a, b| {
        (a.0.file != file, &a.0.file, a.0.line).cmp(&(b.0.file != file, &b.0.file, b.0.line))
    });
    let list: Vec<String> = found
        .iter()
        .map(|(loc, shown)| {
            if loc.file == file {
                format!("{shown} (line {})", loc.line)
            } else {
                format!("{shown} ({loc})")
            }
        })
        .collect();
    let (what, them) = if list.len() == 1 {
        ("this option".to_string(), "it")
    } else {
        (format!("these {} options", list.len()), "them")
    };
    Err(FioJobError::Unsupported {
        file: file.to_string(),
        list: format!("{what}: {}", list.join(", ")),
        them,
    })
}

/// `note` as a TOML comment may hold it: control characters (which TOML allows in no comment
/// but a tab) escaped, as a section name or value of the user's can carry them.
fn comment_text(note: &str) -> String {
    note.chars()
        .map(|c| if c.is_control() && c != '\t' { c.escape_default().to_string() } else { c.to_string() })
        .collect()
}

#[cfg(test)]
mod tests;
