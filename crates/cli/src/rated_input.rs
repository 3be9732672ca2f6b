//! `--rated` (of `iolab run` and `iolab burnin`): the drive's datasheet figures, given as a
//! list of KEY=VALUE or as a TOML file of them.

use std::path::Path;

use iolab_analysis::rated::Rated;
use iolab_spec::user_file;

/// Reads `--rated`: a TOML file (a path that exists, or ends in .toml), else a KEY=VALUE list.
pub fn load_rated(text: &str) -> Result<Rated, String> {
    let path = Path::new(text);
    if path.extension().is_some_and(|e| e == "toml") || (!text.contains('=') && path.exists()) {
        let toml =
            user_file::read_to_string(path, user_file::RATED_FILE).map_err(|e| format!("--rated: {e}"))?;
        return Rated::parse_toml(&toml).map_err(|e| format!("{}: {e}", path.display()));
    }
    Rated::parse_list(text)
}
