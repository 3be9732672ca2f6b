//! What one import may bring into the store. fio's output is small (a job's json+ is about
//! 20 KB), so a file far larger, or a job name of megabytes, is not a result: the file is
//! refused before it is parsed, and long texts are cut, with a note, so an import stores a
//! bounded amount whatever it is given (issue 19: a 50 MB single-string file took 521 MB of
//! memory and grew the database by 315 MB).

use serde_json::Value;

/// The largest file one import reads: 16 MiB, room for hundreds of json+ jobs.
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// The longest text kept (a job name, an option's value, a description), in characters.
pub const MAX_TEXT_CHARS: usize = 1024;

/// Cuts every string in `value` to `MAX_TEXT_CHARS` and drops object keys longer than that;
/// returns how many texts were cut or dropped.
pub(crate) fn clip(value: &mut Value) -> usize {
    match value {
        Value::String(text) => usize::from(cut(text)),
        Value::Array(items) => items.iter_mut().map(clip).sum(),
        Value::Object(map) => {
            let long: Vec<String> =
                map.keys().filter(|k| k.chars().count() > MAX_TEXT_CHARS).cloned().collect();
            for key in &long {
                map.remove(key);
            }
            long.len() + map.values_mut().map(clip).sum::<usize>()
        }
        _ => 0,
    }
}

/// Cuts `text` to `MAX_TEXT_CHARS` characters, saying how much was left out.
fn cut(text: &mut String) -> bool {
    let Some((at, _)) = text.char_indices().nth(MAX_TEXT_CHARS) else { return false };
    let left_out = text.len() - at;
    text.truncate(at);
    text.push_str(&format!("... [{left_out} more bytes not kept]"));
    text.shrink_to_fit();
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_and_long_keys_dropped() {
        let long = "x".repeat(MAX_TEXT_CHARS + 10);
        let mut value =
            serde_json::json!({"a": long, "b": ["short", long], long.clone(): 1, "c": "é".repeat(2000)});
        assert_eq!(clip(&mut value), 4);
        assert!(value["a"].as_str().is_some_and(|s| s.ends_with("[10 more bytes not kept]")));
        assert_eq!(value["b"][0], "short");
        assert_eq!(value.as_object().map(|m| m.len()), Some(3));
        assert!(value["c"].as_str().is_some_and(|s| s.starts_with(&"é".repeat(MAX_TEXT_CHARS))));
    }
}
