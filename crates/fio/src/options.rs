//! fio's job options (strings, as its JSON prints them) read into iolab's words: the engine,
//! the access pattern as iolab describes its own (`AccessSpec::describe`), queue depth,
//! workers and targets, so an imported job reads like an iolab one in tables and comparisons.

use std::collections::BTreeMap;

use iolab_spec::{AccessSpec, BsWeight, Bytes};
use serde_json::Value;

/// A job's options: the "global options" with the job's own on top, as fio applies them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options(BTreeMap<String, String>);

/// fio's engines that hold one I/O at a time per job: fio caps their iodepth at 1.
const SYNC_ENGINES: [&str; 6] = ["sync", "psync", "vsync", "pvsync", "pvsync2", "mmap"];

/// fio's default engine on Linux.
const DEFAULT_ENGINE: &str = "psync";

impl Options {
    pub fn merged(global: Option<&Value>, job: Option<&Value>) -> Options {
        let mut options = BTreeMap::new();
        for layer in [global, job].into_iter().flatten() {
            if let Some(map) = layer.as_object() {
                for (key, value) in map {
                    let text = match value {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    options.insert(key.clone(), text);
                }
            }
        }
        Options(options)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The first of several spellings fio accepts.
    fn any(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().find_map(|k| self.get(k))
    }

    pub fn to_json(&self) -> Value {
        Value::Object(self.0.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
    }

    pub fn fio_engine(&self) -> &str {
        self.get("ioengine").unwrap_or(DEFAULT_ENGINE)
    }

    /// The engine by iolab's name where iolab has the same one, else fio's own name.
    pub fn engine(&self) -> String {
        match self.fio_engine() {
            "io_uring" => "uring".to_string(),
            "libaio" => "aio".to_string(),
            other => other.to_string(),
        }
    }

    pub fn sync_engine(&self) -> bool {
        SYNC_ENGINES.contains(&self.fio_engine())
    }

    pub fn iodepth(&self) -> u32 {
        self.get("iodepth").and_then(|v| v.trim().parse().ok()).unwrap_or(1)
    }

    /// I/Os the job kept in flight: its iodepth, or 1 for a synchronous engine.
    pub fn qd(&self) -> u32 {
        if self.sync_engine() {
            1
        } else {
            self.iodepth()
        }
    }

    pub fn numjobs(&self) -> u32 {
        self.get("numjobs").and_then(|v| v.trim().parse().ok()).filter(|n| *n > 0).unwrap_or(1)
    }

    /// The files or devices the job used: fio separates several filenames with ':'.
    pub fn targets(&self) -> Vec<String> {
        if let Some(names) = self.any(&["filename", "filename_format"]) {
            return names.split(':').filter(|n| !n.is_empty()).map(str::to_string).collect();
        }
        self.get("directory").map(|d| vec![d.to_string()]).unwrap_or_default()
    }

    /// fio's rw without its ":N" offset modifier ("randread:8" -> "randread").
    pub fn rw(&self) -> &str {
        let rw = self.any(&["rw", "readwrite"]).unwrap_or("read");
        rw.split(':').next().unwrap_or(rw).trim()
    }

    /// The access as iolab words its own ("4KiB random read", "4KiB random 70% read"), or
    /// fio's rw and bs as given when they do not map.
    pub fn access(&self) -> String {
        let rw = self.rw();
        let (reads, writes, random, trims) = match rw {
            "read" => (true, false, false, false),
            "write" => (false, true, false, false),
            "randread" => (true, false, true, false),
            "randwrite" => (false, true, true, false),
            "rw" | "readwrite" => (true, true, false, false),
            "randrw" => (true, true, true, false),
            "trim" | "randtrim" => (false, false, rw == "randtrim", true),
            "trimwrite" => (false, true, false, true),
            "randtrimwrite" => (false, true, true, true),
            _ => return format!("{rw} {}", self.any(&["bs", "blocksize"]).unwrap_or("4k")),
        };
        let read_pct = match (reads, writes) {
            (true, false) => 100,
            (false, _) => 0,
            (true, true) => self.read_mix_pct(),
        };
        let random_pct = if random { self.random_pct() } else { 0 };
        // fio's block sizes come per direction: "4k,64k" reads 4k and writes 64k.
        let read_split = self.bs_split(0);
        let write_split = self.bs_split(1);
        let split = if reads { read_split.clone() } else { write_split.clone() };
        let Some(bs_split) = split else {
            return format!("{rw} {}", self.any(&["bs", "blocksize", "bssplit", "bsrange"]).unwrap_or("?"));
        };
        let align = bs_split.first().map_or(Bytes(4096), |w| w.bs);
        let mut text = AccessSpec {
            read_pct,
            random_pct,
            bs_split,
            align,
            burst: None,
            distribution: iolab_spec::Distribution::Uniform,
            working_set: None,
        }
        .describe();
        if reads && writes && read_split != write_split {
            if let Some(write_split) = write_split {
                let sizes: Vec<String> = write_split.iter().map(|w| w.bs.to_string()).collect();
                text.push_str(&format!(" (writes {})", sizes.join(",")));
            }
        }
        if trims {
            text = if reads || writes { format!("{text} and trim") } else { format!("{rw} {text}") };
        }
        text
    }

    fn read_mix_pct(&self) -> u32 {
        if let Some(read) = self.get("rwmixread").and_then(|v| v.trim().parse::<u32>().ok()) {
            return read.min(100);
        }
        match self.get("rwmixwrite").and_then(|v| v.trim().parse::<u32>().ok()) {
            Some(write) => 100 - write.min(100),
            None => 50,
        }
    }

    fn random_pct(&self) -> u32 {
        let given =
            self.get("percentage_random").and_then(|v| v.split(',').next()?.trim().parse::<u32>().ok());
        given.map_or(100, |pct| pct.min(100))
    }

    /// The block sizes of direction `ddir` (0 reads, 1 writes): from bssplit, bsrange (as its
    /// two ends) or bs; fio's default is 4 KiB. `None` when a size does not parse.
    fn bs_split(&self, ddir: usize) -> Option<Vec<BsWeight>> {
        let per_direction = |text: &str| {
            let parts: Vec<&str> = text.split(',').collect();
            // A missing direction takes the previous one's value, as in fio.
            parts.get(ddir).or(parts.last()).map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
        };
        if let Some(split) = self.get("bssplit").and_then(per_direction) {
            return split
                .split(':')
                .map(|part| {
                    let (bs, weight) = part.split_once('/').unwrap_or((part, "100"));
                    Some(BsWeight { bs: Bytes(size(bs)?), weight: weight.trim().parse().ok()? })
                })
                .collect();
        }
        if let Some(range) = self.any(&["bsrange", "blocksize_range"]).and_then(per_direction) {
            let (low, high) = range.split_once('-')?;
            let (low, high) = (size(low)?, size(high)?);
            let ends = if low == high { vec![low] } else { vec![low, high] };
            return Some(ends.into_iter().map(|bs| BsWeight { bs: Bytes(bs), weight: 1 }).collect());
        }
        let bs = match self.any(&["bs", "blocksize"]).and_then(per_direction) {
            Some(text) => size(&text)?,
            None => 4096,
        };
        Some(vec![BsWeight { bs: Bytes(bs), weight: 100 }])
    }

    /// A few words on the job in fio's own terms: "randread 4k iodepth=8 on /dev/nvme0n1".
    pub fn describe(&self) -> String {
        let mut text = self.rw().to_string();
        if let Some(bs) = self.any(&["bs", "blocksize", "bssplit", "bsrange"]) {
            text.push_str(&format!(" {bs}"));
        }
        if let Some(mix) = self.get("rwmixread").filter(|_| self.rw().ends_with("rw")) {
            text.push_str(&format!(" rwmixread={mix}"));
        }
        text.push_str(&format!(" iodepth={}", self.iodepth()));
        if self.numjobs() > 1 {
            text.push_str(&format!(" numjobs={}", self.numjobs()));
        }
        text.push_str(&format!(" {}", self.fio_engine()));
        let targets = self.targets();
        if !targets.is_empty() {
            text.push_str(&format!(" on {}", targets.join(":")));
        }
        text
    }
}

/// A size as fio reads one ("4k", "64KiB", "1m", "512"), in bytes. fio's suffixes are powers
/// of 1024 unless a job sets kb_base=1000, which iolab does not follow (it is rare in results).
pub(crate) fn size(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, suffix) = text.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let suffix = suffix.trim().to_ascii_lowercase();
    let unit = suffix.trim_end_matches("ib").trim_end_matches('b');
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        "p" => 50,
        _ => return None,
    };
    number.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> Options {
        let map: serde_json::Map<String, Value> =
            pairs.iter().map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect();
        Options::merged(None, Some(&Value::Object(map)))
    }

    #[test]
    fn sizes_read_as_fio_reads_them() {
        assert_eq!(size("4k"), Some(4096));
        assert_eq!(size("4K"), Some(4096));
        assert_eq!(size("64KiB"), Some(65536));
        assert_eq!(size("1m"), Some(1 << 20));
        assert_eq!(size("512"), Some(512));
        assert_eq!(size("4x"), None);
        assert_eq!(size("k"), None);
    }

    #[test]
    fn access_reads_like_iolab() {
        assert_eq!(options(&[("rw", "randread"), ("bs", "4k")]).access(), "4KiB random read");
        assert_eq!(options(&[("rw", "write"), ("bs", "128k")]).access(), "128KiB sequential write");
        assert_eq!(options(&[("rw", "randrw"), ("rwmixread", "70")]).access(), "4KiB random 70% read");
        assert_eq!(options(&[("rw", "rw"), ("rwmixwrite", "20")]).access(), "4KiB sequential 80% read");
        assert_eq!(
            options(&[("rw", "randread"), ("bssplit", "4k/70:64k/30")]).access(),
            "mix 4KiB/70,64KiB/30 random read"
        );
        assert_eq!(
            options(&[("rw", "randrw"), ("bs", "4k,64k")]).access(),
            "4KiB random 50% read (writes 64KiB)"
        );
        assert_eq!(
            options(&[("rw", "randread:8"), ("percentage_random", "30")]).access(),
            "4KiB 30% random read"
        );
        assert_eq!(options(&[("rw", "trimwrite")]).access(), "4KiB sequential write and trim");
        assert_eq!(options(&[("rw", "randread"), ("bs", "4q")]).access(), "randread 4q");
    }

    #[test]
    fn engines_and_depths() {
        let uring = options(&[("ioengine", "io_uring"), ("iodepth", "32")]);
        assert_eq!((uring.engine(), uring.qd()), ("uring".to_string(), 32));
        let psync = options(&[("ioengine", "psync"), ("iodepth", "8")]);
        assert_eq!((psync.engine(), psync.qd(), psync.iodepth()), ("psync".to_string(), 1, 8));
        assert_eq!(options(&[]).engine(), "psync");
        assert_eq!(options(&[("ioengine", "libaio")]).engine(), "aio");
        assert_eq!(options(&[("filename", "/dev/a:/dev/b")]).targets(), ["/dev/a", "/dev/b"]);
    }

    /// A job's own option overrides the global one, as in fio.
    #[test]
    fn job_options_override_global_ones() {
        let global = serde_json::json!({"ioengine": "libaio", "iodepth": "4"});
        let job = serde_json::json!({"iodepth": "16"});
        let merged = Options::merged(Some(&global), Some(&job));
        assert_eq!((merged.engine().as_str(), merged.qd()), ("aio", 16));
    }
}
