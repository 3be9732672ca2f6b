//! fio's value syntax: sizes, times, switches, per-direction lists and file lists.
//!
//! Sizes follow fio's default `kb_base=1024`, quirk included: `k`, `kb`, `ki` are 1024 and
//! `kib` is 1000 (fio turns the prefixes around for old scripts: `4KiB` is 4000 bytes there).
//! Checked against fio 3.33 with `--debug=parse`.

/// The largest size taken, 8 PiB: iolab's job file reads sizes as exact only below 2^53, and
/// a larger one came back from the translation as "not a valid iolab job file".
const MAX_SIZE: u64 = 1 << 53;
/// The longest time taken, below a century (as iolab's own durations: they are added to clock
/// readings).
const MAX_MICROS: u64 = 100 * 365 * 86_400 * 1_000_000 - 1;

/// A size in bytes: `4096`, `0x1000`, `4k`, `1M`, `4Ki`, `512b`. `Err` says why, for the caller
/// to put beside the option.
pub fn size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let bad = |why: &str| format!("'{text}' is not a size ({why}); write e.g. 4096, 4k, 1m");
    if text.contains('%') {
        return Err(bad("a share of the device or file, which iolab does not take"));
    }
    if text.contains('.') {
        return Err(bad("fio reads no fractions here"));
    }
    let (number, suffix) = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        let end = hex.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(hex.len());
        (u64::from_str_radix(&hex[..end], 16).map_err(|_| bad("no hex digits"))?, &hex[end..])
    } else {
        let end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
        (text[..end].parse::<u64>().map_err(|_| bad("no number"))?, &text[end..])
    };
    let multiplier = multiplier(&suffix.trim().to_ascii_lowercase()).ok_or_else(|| bad("unknown unit"))?;
    number
        .checked_mul(multiplier)
        .filter(|&n| n <= MAX_SIZE)
        .ok_or_else(|| bad("above 8 PiB, the most iolab takes"))
}

/// fio's unit of a size under `kb_base=1024`.
fn multiplier(suffix: &str) -> Option<u64> {
    if suffix.is_empty() || suffix == "b" {
        return Some(1);
    }
    let mut chars = suffix.chars();
    let power = match chars.next()? {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => return None,
    };
    let base: u64 = match chars.as_str() {
        "" | "b" | "i" => 1024,
        // The three-letter IEC form is the decimal one under fio's default kb_base.
        "ib" => 1000,
        _ => return None,
    };
    Some(base.pow(power))
}

/// A time in microseconds, fio's unit. A bare number is in `bare_us` units (seconds for
/// `runtime`, microseconds for `thinktime`).
pub fn micros(text: &str, bare_us: u64) -> Result<u64, String> {
    let text = text.trim();
    let bad = || format!("'{text}' is not a time; write e.g. 30 (or 30s), 500ms, 100us, 2m");
    let end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let number: u64 = text[..end].parse().map_err(|_| bad())?;
    let unit = match text[end..].trim().to_ascii_lowercase().as_str() {
        "" => bare_us,
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return Err(bad()),
    };
    let micros = number.checked_mul(unit).ok_or_else(bad)?;
    if micros > MAX_MICROS {
        return Err(format!("'{text}' is longer than any run can be (a century at most)"));
    }
    Ok(micros)
}

/// A switch: a bare key is on; `1`/`0` (and `true`/`false`, `yes`/`no`, `on`/`off`).
pub fn switch(value: Option<&str>) -> Result<bool, String> {
    match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("1" | "true" | "yes" | "on") => Ok(true),
        Some("0" | "false" | "no" | "off") => Ok(false),
        Some(other) => Err(format!("'{other}' is not a switch; write 1 or 0")),
    }
}

/// A whole number (no units), such as `iodepth` or `numjobs`.
pub fn count(text: &str) -> Result<u64, String> {
    text.trim().parse().map_err(|_| format!("'{}' is not a whole number", text.trim()))
}

/// fio's per-direction list `read,write,trim`: one value is for every direction, an empty
/// entry leaves that direction at its default, and a second value also covers trims.
/// Returns (read, write).
pub fn per_direction(text: &str) -> (Option<&str>, Option<&str>) {
    fn nonempty(s: &str) -> Option<&str> {
        let s = s.trim();
        (!s.is_empty()).then_some(s)
    }
    match text.split_once(',') {
        None => (nonempty(text), nonempty(text)),
        Some((read, rest)) => {
            let write = rest.split_once(',').map_or(rest, |(write, _trim)| write);
            (nonempty(read), nonempty(write))
        }
    }
}

/// `filename=a:b`: fio's colon-separated list, where `\:` is a colon inside a name.
pub fn file_list(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut name = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                name.push(':');
            }
            ':' => names.push(std::mem::take(&mut name)),
            c => name.push(c),
        }
    }
    names.push(name);
    names.into_iter().filter(|n| !n.is_empty()).collect()
}

/// One direction of `bssplit`: `4k/50:64k/50`, entries without a share (`1k/` or `1k`)
/// sharing what the others leave, as fio does (a share of 0 counts as none given; above 100
/// is 100). Returns (size, share) with shares filled in.
pub fn bssplit(text: &str) -> Result<Vec<(u64, u32)>, String> {
    let mut entries = Vec::new();
    // fio stops at the first empty entry.
    for entry in text.split(':').take_while(|e| !e.trim().is_empty()) {
        let (bs, share) = match entry.split_once('/') {
            Some((bs, share)) => (bs, leading_number(share).min(100)),
            None => (entry, 0),
        };
        entries.push((size(bs)?, (share > 0).then_some(share)));
    }
    if entries.is_empty() {
        return Err("it has no entries; write e.g. 4k/70:64k/30".into());
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    if given > 100 && missing > 1 {
        return Err(format!("its shares add up to {given}%, above 100%"));
    }
    let fill =
        if missing == 1 && entries.len() == 1 { 100 } else { 100u32.saturating_sub(given) / missing.max(1) };
    Ok(entries.into_iter().map(|(bs, share)| (bs, share.unwrap_or(fill))).collect())
}

/// C's atoi: the leading digits, 0 if none.
fn leading_number(text: &str) -> u32 {
    let text = text.trim();
    let end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    match &text[..end] {
        "" => 0,
        digits => digits.parse().unwrap_or(u32::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_fio_kb_base_1024() {
        assert_eq!(size("4096"), Ok(4096));
        assert_eq!(size("4k"), Ok(4096));
        assert_eq!(size("4K"), Ok(4096));
        assert_eq!(size("4kb"), Ok(4096));
        assert_eq!(size("4Ki"), Ok(4096));
        assert_eq!(size("1M"), Ok(1 << 20));
        assert_eq!(size("1mi"), Ok(1 << 20));
        assert_eq!(size("2g"), Ok(2 << 30));
        assert_eq!(size("512b"), Ok(512));
        assert_eq!(size("0x1000"), Ok(4096));
        // fio's turned-around IEC form: 4KiB is 4000 bytes under kb_base=1024.
        assert_eq!(size("4KiB"), Ok(4000));
        assert!(size("50%").unwrap_err().contains("share"));
        assert!(size("1.5k").unwrap_err().contains("fractions"));
        assert!(size("4q").is_err());
        assert!(size("").is_err());
    }

    #[test]
    fn times_take_fio_units_and_a_bare_default() {
        assert_eq!(micros("30", 1_000_000), Ok(30_000_000));
        assert_eq!(micros("30s", 1), Ok(30_000_000));
        assert_eq!(micros("1m", 1), Ok(60_000_000));
        assert_eq!(micros("500ms", 1_000_000), Ok(500_000));
        assert_eq!(micros("250us", 1_000_000), Ok(250));
        assert_eq!(micros("10", 1), Ok(10));
        assert_eq!(micros("2h", 1), Ok(7_200_000_000));
        assert!(micros("soon", 1).is_err());
        assert!(micros("5ns", 1).is_err());
    }

    #[test]
    fn switches_and_directions() {
        assert_eq!(switch(None), Ok(true));
        assert_eq!(switch(Some("0")), Ok(false));
        assert!(switch(Some("maybe")).is_err());
        assert_eq!(per_direction("4k"), (Some("4k"), Some("4k")));
        assert_eq!(per_direction("4k,8k"), (Some("4k"), Some("8k")));
        assert_eq!(per_direction(",8k"), (None, Some("8k")));
        assert_eq!(per_direction("500,"), (Some("500"), None));
        assert_eq!(per_direction("4k,8k,16k"), (Some("4k"), Some("8k")));
    }

    #[test]
    fn file_lists_split_on_unescaped_colons() {
        assert_eq!(file_list("/dev/sda:/dev/sdb"), ["/dev/sda", "/dev/sdb"]);
        assert_eq!(file_list(r"a\:b:c"), ["a:b", "c"]);
        assert_eq!(file_list("one"), ["one"]);
    }

    #[test]
    fn bssplit_fills_missing_shares_as_fio() {
        assert_eq!(bssplit("4k/70:64k/30"), Ok(vec![(4096, 70), (65536, 30)]));
        assert_eq!(bssplit("4k/50:1k/:32k/"), Ok(vec![(4096, 50), (1024, 25), (32768, 25)]));
        assert_eq!(bssplit("4k"), Ok(vec![(4096, 100)]));
        assert_eq!(bssplit("4k/0:8k/50"), Ok(vec![(4096, 50), (8192, 50)]));
        assert!(bssplit("4k/80:8k/:16k/").is_ok());
        assert!(bssplit("4k/90:8k/90:16k/:32k/").unwrap_err().contains("above 100"));
    }
}
