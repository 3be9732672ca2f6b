//! fio's INI dialect, as fio 3.x reads it: `[section]` lines, `key=value` or a bare `key`,
//! `;` and `#` comments (a whole line, or the rest of one), `include FILE` inside a section,
//! and `${VAR}` replaced by the environment variable.
//!
//! Stricter than fio in two places, both where fio would run something other than what the
//! file seems to say: an unset `${VAR}` is an error (fio silently substitutes nothing), and
//! fio's `$ncpus`-style keywords are refused (their value depends on the machine).
//!
//! An included file may be anything the user can read (`include /etc/shadow`), so no error or
//! note ever shows its text beyond an option's name: a line that is not `name[=value]` with a
//! name of letters, digits and `_` is refused by its number, and a value is never quoted
//! (`Opt::shown`).

use std::path::{Path, PathBuf};

use iolab_spec::user_file;

use crate::error::{at, FioJobError, Loc};

/// One `key[=value]` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    pub key: String,
    pub value: Option<String>,
    pub loc: Loc,
    /// Read from an included file: its value is never shown.
    pub included: bool,
}

impl Opt {
    /// `key=value` or `key`, as written (after `${VAR}` expansion); `key=…` when the value
    /// comes from an included file.
    pub fn shown(&self) -> String {
        match &self.value {
            Some(_) if self.included => format!("{}=…", self.key),
            Some(value) => format!("{}={value}", self.key),
            None => self.key.clone(),
        }
    }
}

/// One `[name]` section with its options, included ones in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub loc: Loc,
    pub options: Vec<Opt>,
}

impl Section {
    pub fn is_global(&self) -> bool {
        // fio compares the first six characters only: `[global-x]` is a global section too.
        self.name.starts_with("global")
    }
}

/// Includes nest at most this deep: a file that includes itself stops here.
const MAX_INCLUDE_DEPTH: usize = 16;

/// Reads the file at `path`; `env` looks environment variables up.
pub fn parse_file(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Section>, FioJobError> {
    let text = read(path)?;
    parse_text(&text, path, env)
}

/// Parses `text` as the file `path` (which names it in errors and anchors relative includes).
pub fn parse_text(
    text: &str,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Section>, FioJobError> {
    let mut sections: Vec<Section> = Vec::new();
    let mut reader = Reader { env, sections: &mut sections };
    reader.lines(text, path, 0)?;
    Ok(sections)
}

fn read(path: &Path) -> Result<String, FioJobError> {
    user_file::read_to_string(path, user_file::FIO_JOB_FILE)
        .map_err(|e| FioJobError::Read { file: path.display().to_string(), message: e.to_string() })
}

struct Reader<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    sections: &'a mut Vec<Section>,
}

impl Reader<'_> {
    /// The lines of one file; `depth` above 0 is an included file, which may not open sections.
    fn lines(&mut self, text: &str, path: &Path, depth: usize) -> Result<(), FioJobError> {
        let file = path.display().to_string();
        let included = depth > 0;
        for (index, raw) in text.lines().enumerate() {
            let loc = Loc { file: file.clone(), line: index + 1 };
            let Some(line) = content(raw) else { continue };
            let line = expand(line, &loc, self.env, included)?;
            if let Some(rest) = line.strip_prefix('[') {
                if included {
                    return Err(at(&loc, "an included file cannot open a section (fio refuses it too)"));
                }
                let name = rest
                    .strip_suffix(']')
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .ok_or_else(|| at(&loc, format!("'{line}' is not a section header; write [name]")))?;
                if name.chars().any(char::is_control) {
                    return Err(at(
                        &loc,
                        "the section name holds a control character; name the job with printable characters",
                    ));
                }
                self.sections.push(Section { name: name.to_string(), loc, options: Vec::new() });
                continue;
            }
            if self.sections.is_empty() {
                return Err(at(
                    &loc,
                    format!("'{line}' is outside any section; put options in a [job] or [global] section"),
                ));
            }
            if let Some(target) = include_target(&line) {
                self.include(target, path, &loc, depth)?;
                continue;
            }
            let (key, value) = match line.split_once('=') {
                Some((key, value)) => (key.trim(), Some(value.trim().to_string())),
                None => (line.trim(), None),
            };
            if included && !is_option_name(key) {
                return Err(at(&loc, format!(
                    "line {} of {file} is not an option (a name of letters, digits and _, then =value); nothing of an included file but an option's name is shown",
                    loc.line
                )));
            }
            if key.is_empty() {
                return Err(at(&loc, format!("'{line}' has no option name before '='")));
            }
            let option = Opt { key: key.to_ascii_lowercase(), value, loc, included };
            if let Some(section) = self.sections.last_mut() {
                section.options.push(option);
            }
        }
        Ok(())
    }

    fn include(&mut self, target: &str, from: &Path, loc: &Loc, depth: usize) -> Result<(), FioJobError> {
        if depth + 1 >= MAX_INCLUDE_DEPTH {
            return Err(at(
                loc,
                format!("includes nest deeper than {MAX_INCLUDE_DEPTH}: does a file include itself?"),
            ));
        }
        // As fio: the name as given if it exists, else beside the including file.
        let given = PathBuf::from(target);
        let path = match (given.exists(), from.parent()) {
            (false, Some(dir)) if given.is_relative() => dir.join(&given),
            _ => given,
        };
        let text = user_file::read_to_string(&path, user_file::FIO_JOB_FILE)
            .map_err(|e| at(loc, format!("include {target}: {e}")))?;
        self.lines(&text, &path, depth + 1)
    }
}

/// The line without its comment and surrounding blanks; `None` for a blank or comment line.
fn content(raw: &str) -> Option<&str> {
    // fio cuts a line at its first ';' and at its first '#', wherever they are.
    let end = raw.find([';', '#']).unwrap_or(raw.len());
    let line = raw[..end].trim();
    (!line.is_empty()).then_some(line)
}

/// `include FILE`: the word, blanks, then the file name.
fn include_target(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    let name = rest.trim_start();
    (rest.len() > name.len() && !name.is_empty()).then_some(name.trim())
}

/// An option's name as fio has them: letters, digits and `_`.
fn is_option_name(key: &str) -> bool {
    !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Replaces `${VAR}` by the variable's value; refuses fio's machine-dependent `$keywords`. The
/// line of an `included` file is never quoted.
fn expand(
    line: &str,
    loc: &Loc,
    env: &dyn Fn(&str) -> Option<String>,
    included: bool,
) -> Result<String, FioJobError> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        if let Some(body) = after.strip_prefix('{') {
            let shown =
                if included { format!("line {} of {}", loc.line, loc.file) } else { format!("'{line}'") };
            let end = body.find('}').ok_or_else(|| at(loc, format!("{shown}: '${{' without its '}}'")))?;
            let name = &body[..end];
            let value = env(name).ok_or_else(|| {
                let what = if included {
                    "an environment variable this line names".to_string()
                } else {
                    format!("environment variable {name}")
                };
                at(
                    loc,
                    format!("{what} is not set (fio would silently use nothing); set it or write the value"),
                )
            })?;
            out.push_str(&value);
            rest = &body[end + 1..];
            continue;
        }
        for keyword in ["ncpus", "pagesize", "mb_memory"] {
            if after.starts_with(keyword) {
                return Err(at(
                    loc,
                    format!("fio's ${keyword} depends on the machine, and iolab does not expand it; write the number"),
                ));
            }
        }
        out.push('$');
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn parse(text: &str) -> Result<Vec<Section>, FioJobError> {
        parse_text(text, Path::new("job.fio"), &no_env)
    }

    #[test]
    fn sections_options_bare_keys_and_comments() {
        let sections =
            parse("; a comment\n[global]\nbs=4k ; trailing\n# another\n\n[seq read]\n  direct\nrw = read\n")
                .unwrap();
        assert_eq!(sections.len(), 2);
        assert!(sections[0].is_global());
        assert_eq!(sections[0].options[0].key, "bs");
        assert_eq!(sections[0].options[0].value.as_deref(), Some("4k"));
        assert_eq!(sections[1].name, "seq read");
        assert_eq!(sections[1].options[0].value, None);
        assert_eq!(sections[1].options[1].value.as_deref(), Some("read"));
        assert_eq!(sections[1].options[1].loc.line, 8);
    }

    #[test]
    fn option_outside_a_section_names_its_line() {
        let err = parse("\nbs=4k\n[a]\n").unwrap_err().to_string();
        assert!(err.starts_with("fio job file job.fio: line 2:"), "{err}");
    }

    #[test]
    fn environment_variables_expand_and_unset_ones_are_refused() {
        let env = |name: &str| (name == "DEV").then(|| "/dev/zram0".to_string());
        let sections = parse_text("[a]\nfilename=${DEV}\n", Path::new("j.fio"), &env).unwrap();
        assert_eq!(sections[0].options[0].value.as_deref(), Some("/dev/zram0"));
        let err = parse_text("[a]\nsize=${SIZE}\n", Path::new("j.fio"), &env).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("SIZE is not set"), "{err}");
        let err = parse("[a]\nnumjobs=$ncpus\n").unwrap_err().to_string();
        assert!(err.contains("$ncpus"), "{err}");
    }

    #[test]
    fn includes_add_options_to_the_section_and_may_not_open_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("common.fio"), "bs=64k\niodepth=8\n").unwrap();
        std::fs::write(dir.path().join("bad.fio"), "[other]\n").unwrap();
        let main = dir.path().join("main.fio");
        std::fs::write(&main, "[a]\ninclude common.fio\nrw=read\n").unwrap();
        let sections = parse_file(&main, &no_env).unwrap();
        let keys: Vec<&str> = sections[0].options.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["bs", "iodepth", "rw"]);
        assert!(sections[0].options[0].loc.file.ends_with("common.fio"));
        std::fs::write(&main, "[a]\ninclude bad.fio\n").unwrap();
        let err = parse_file(&main, &no_env).unwrap_err().to_string();
        assert!(err.contains("bad.fio: line 1") && err.contains("cannot open a section"), "{err}");
        std::fs::write(dir.path().join("loop.fio"), "include loop.fio\n").unwrap();
        std::fs::write(&main, "[a]\ninclude loop.fio\n").unwrap();
        assert!(parse_file(&main, &no_env).unwrap_err().to_string().contains("nest deeper"));
    }
}
