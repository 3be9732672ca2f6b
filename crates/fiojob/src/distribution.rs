//! fio's `random_distribution`, translated where iolab's `distribution` means the same law:
//! `random` (uniform), `zipf:THETA`, `pareto:H` (H below 0.5) and `zoned:A/S:A/S...` whose
//! shares add up to 100 (fio's zones, like iolab's, are contiguous from the start of the
//! region, in the order given). Refused: `normal`/`gauss` (fio's is the mean of 12 uniform
//! draws hashed over the region; its argument does not set the bell's width as iolab's
//! normal:STDDEV_PCT does), `zoned_abs`, per-direction zones, and a centre (`zipf:1.2:0.5`).
//! fio draws its zipf approximately and hashes ranks onto blocks with collisions (fio issue
//! #1991); iolab draws the same law exactly, so a translated job touches more distinct blocks.

use iolab_spec::Distribution;

/// The iolab `distribution` value of fio's `random_distribution=value` (`None`: uniform, the
/// default), or why it has none.
pub(crate) fn translate(value: &str) -> Result<Option<String>, String> {
    let value = value.trim().to_ascii_lowercase();
    let (name, rest) = value.split_once(':').unwrap_or((value.as_str(), ""));
    let text = match name {
        "random" if rest.is_empty() => return Ok(None),
        "zipf" | "pareto" => {
            let mut parts = rest.split(':');
            let parameter = parts.next().unwrap_or_default();
            if parts.next().is_some_and(|center| center.trim().parse::<f64>() != Ok(0.0)) {
                return Err("a centre other than 0: iolab scatters the hottest blocks over the region".into());
            }
            format!("{name}:{parameter}")
        }
        "zoned" => {
            if rest.starts_with(['r', 'w', 't']) {
                return Err("zones per data direction: iolab's zones hold for reads and writes alike".into());
            }
            format!("zoned:{}", rest.replace(':', ","))
        }
        "normal" | "gauss" => {
            return Err(
                "fio's normal is the mean of 12 uniform draws hashed over the region; its argument is not the bell's width that iolab's normal:STDDEV_PCT sets".into(),
            )
        }
        "zoned_abs" => return Err("zones in absolute sizes: write iolab's zoned:IO_PCT/SIZE_PCT,... instead".into()),
        _ => return Err("not a distribution fio or iolab knows".into()),
    };
    text.parse::<Distribution>().map(|d| Some(d.to_string())).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn same_laws_translate_and_others_say_why_not() {
        assert_eq!(translate("random"), Ok(None));
        assert_eq!(translate("zipf:1.2"), Ok(Some("zipf:1.2".into())));
        assert_eq!(translate("zipf:0.8:0"), Ok(Some("zipf:0.8".into())));
        assert_eq!(translate("pareto:0.2"), Ok(Some("pareto:0.2".into())));
        assert_eq!(translate("zoned:60/10:30/20:8/30:2/40"), Ok(Some("zoned:60/10,30/20,8/30,2/40".into())));
        for (fio, why) in [
            ("normal:10", "12 uniform draws"),
            ("gauss:5", "12 uniform draws"),
            ("zipf:1.2:0.5", "centre"),
            ("zoned:r:60/10:40/90,w:100/100", "per data direction"),
            ("zoned_abs:60/1g:40/9g", "absolute sizes"),
            ("zoned:60/10:30/20", "add up to 90%"),
            ("pareto:0.7", "below 0.5"),
        ] {
            let err = translate(fio).expect_err(fio);
            assert!(err.contains(why), "{fio}: {err}");
        }
    }
}
