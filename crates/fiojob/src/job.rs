//! One fio job (a non-global section with the `[global]` options in force before it) and its
//! translation into the keys of one iolab group, plus what its iolab job needs to know.
//!
//! fio's defaults are not iolab's (fio: sequential read, psync, QD 1, buffered, no ramp), so
//! every key that decides the workload is written out, whether the fio file set it or not.

use std::collections::BTreeMap;

use toml::{Table, Value};

use crate::error::{at, FioJobError, Loc};
use crate::ini::{Opt, Section};
use crate::options::{canonical, dropped, MAPPED};
use crate::values;
use crate::Findings;

/// An option's last setting in a job, and when it was set (options replace each other in order).
#[derive(Debug, Clone)]
pub struct Setting {
    pub opt: Opt,
    order: usize,
}

/// The options in force for one fio job, by canonical name, the last one winning.
#[derive(Debug, Clone)]
pub struct FioJob {
    pub section: String,
    pub loc: Loc,
    settings: BTreeMap<&'static str, Setting>,
}

/// A fio job translated: its group's iolab keys and what decides its iolab job.
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub loc: Loc,
    pub keys: Table,
    /// fio's `stonewall`: this job waits for every one before it.
    pub stonewall: bool,
    pub time_based: bool,
    pub runtime_us: Option<u64>,
    pub ramp_us: u64,
    /// Bytes each clone moves when not time based (fio's `io_size`, else `size`).
    pub io_bytes: Option<u64>,
    pub numjobs: u64,
}

impl FioJob {
    /// The job of `section`, with `globals` (the `[global]` options before it) applied first.
    /// Options without an equivalent go to `findings`, as do notes on dropped ones.
    pub fn new(section: &Section, globals: &[Opt], findings: &mut Findings) -> FioJob {
        let mut settings = BTreeMap::new();
        for (order, opt) in globals.iter().chain(&section.options).enumerate() {
            let key = canonical(&opt.key);
            match MAPPED.iter().find(|known| **known == key) {
                Some(known) => {
                    settings.insert(*known, Setting { opt: opt.clone(), order });
                }
                None => match dropped(key) {
                    Some(why) => findings.note(&opt.loc, &format!("{}: {why}", opt.shown())),
                    None => findings.unsupported(&opt.loc, opt.shown()),
                },
            }
        }
        FioJob { section: section.name.clone(), loc: section.loc.clone(), settings }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Setting> {
        self.settings.get(key)
    }

    /// The later-set of two options that set one thing (`direct`/`buffered`).
    fn latest(&self, a: &str, b: &str) -> Option<&Setting> {
        match (self.get(a), self.get(b)) {
            (Some(x), Some(y)) => Some(if x.order > y.order { x } else { y }),
            (x, y) => x.or(y),
        }
    }

    /// Translates the job; values iolab cannot run the same way go to `findings`.
    pub fn group(&self, findings: &mut Findings) -> Result<Group, FioJobError> {
        let mut keys = Table::new();
        let name = match self.get("name") {
            Some(s) => text(s)?.to_string(),
            None => self.section.clone(),
        };
        self.check_defaults_only(findings)?;
        if let Some(s) = self.get("random_distribution") {
            match crate::distribution::translate(text(s)?) {
                Ok(None) => {}
                Ok(Some(distribution)) => {
                    keys.insert("distribution".into(), Value::String(distribution));
                }
                Err(why) => findings.unsupported(&s.opt.loc, format!("{} ({why})", s.opt.shown())),
            }
        }
        let engine = self.engine(findings)?;
        let (read_pct, random_pct) = self.access(findings)?;
        keys.insert("read_pct".into(), Value::Integer(read_pct.into()));
        keys.insert("random_pct".into(), Value::Integer(random_pct.into()));
        let (reads, writes) = (read_pct > 0, read_pct < 100);
        let sizes = self.block_sizes(reads, writes, findings)?;
        if let (true, true, None, Some(split)) =
            (sizes.len() > 1, random_pct > 0, self.get("norandommap"), self.get("bssplit"))
        {
            // Measured with fio 3.33 (null engine, 256 MiB, randread): bssplit=4k/50:64k/50
            // gave a mean of 20.9 KB per I/O, and 34.8 KB with norandommap.
            findings.note(&split.opt.loc, &format!("{}: fio's random map (on unless norandommap) gives the larger sizes of a mix fewer I/Os than their shares as the region fills; iolab keeps the shares, as fio does with norandommap", split.opt.shown()));
        }
        match sizes.as_slice() {
            [(bs, _)] => keys.insert("bs".into(), size_value(*bs)),
            mix => {
                let parts: Vec<String> =
                    mix.iter().map(|(bs, w)| format!("{}/{w}", size_text(*bs))).collect();
                keys.insert("bs_split".into(), parts.join(",").into())
            }
        };
        if let Some(s) = self.get("ba") {
            if let Some(align) = self.sizes_for(s, reads, writes, findings)? {
                keys.insert("align".into(), size_value(align));
            }
        }
        let numjobs = self.number("numjobs", 1)?;
        if numjobs == 0 {
            return Err(self.bad("numjobs", "must be 1 or more"));
        }
        keys.insert("workers".into(), whole(numjobs));
        let iodepth = self.number("iodepth", 1)?;
        if iodepth == 0 {
            return Err(self.bad("iodepth", "must be 1 or more"));
        }
        let qd = if engine == "psync" {
            if iodepth > 1 {
                let loc = self.get("iodepth").map_or(&self.loc, |s| &s.opt.loc);
                findings.note(loc, &format!("iodepth={iodepth}: psync is synchronous, so fio keeps one I/O in flight per job whatever iodepth says; so does the translation (qd = 1)"));
            }
            1
        } else {
            iodepth
        };
        keys.insert("qd".into(), whole(qd));
        keys.insert("engine".into(), engine.into());
        self.uring_options(engine, &mut keys, findings)?;
        let direct = match self.latest("direct", "buffered") {
            None => false,
            Some(s) => {
                let on = values::switch(s.opt.value.as_deref()).map_err(|why| bad_value(s, &why))?;
                if s.opt.key == "buffered" {
                    !on
                } else {
                    on
                }
            }
        };
        keys.insert("direct".into(), direct.into());
        let size = self.size_of("size")?;
        let largest = sizes.iter().map(|e| e.0).max().unwrap_or(4096);
        if let Some(each) = self.target(size, &mut keys, findings)?.filter(|&each| each < largest) {
            let why = format!("each file's region ({each} bytes) is smaller than the largest block size ({largest}); use a larger size");
            return Err(self.bad("size", &why));
        }
        if let Some(offset) = self.size_of("offset")? {
            keys.insert("offset".into(), size_value(offset));
        }
        self.pacing(reads, writes, numjobs, sizes.len() > 1, &mut keys, findings)?;
        if let Some(seed) = self.seed(findings)? {
            keys.insert("seed".into(), whole(seed));
        }
        let time_based = match self.get("time_based") {
            Some(s) => values::switch(s.opt.value.as_deref()).map_err(|why| bad_value(s, &why))?,
            None => false,
        };
        let stonewall = match self.get("stonewall") {
            Some(s) => values::switch(s.opt.value.as_deref()).map_err(|why| bad_value(s, &why))?,
            None => false,
        };
        Ok(Group {
            name,
            loc: self.loc.clone(),
            keys,
            stonewall,
            time_based,
            runtime_us: self.time_of("runtime", 1_000_000)?.filter(|&us| us > 0),
            ramp_us: self.time_of("ramp_time", 1_000_000)?.unwrap_or(0),
            io_bytes: self.size_of("io_size")?.or(size),
            numjobs,
        })
    }

    /// Options accepted only at the value where fio behaves as iolab does.
    fn check_defaults_only(&self, findings: &mut Findings) -> Result<(), FioJobError> {
        let only =
            |key: &str, accepted: &[&str], why: &str, findings: &mut Findings| -> Result<(), FioJobError> {
                if let Some(s) = self.get(key) {
                    let value = s.opt.value.as_deref().unwrap_or("1").trim().to_ascii_lowercase();
                    if !accepted.contains(&value.as_str()) {
                        findings.unsupported(&s.opt.loc, format!("{} ({why})", s.opt.shown()));
                    }
                }
                Ok(())
            };
        only("verify", &["0", "none"], "iolab does not verify data", findings)?;
        only("norandommap", &["1", "true"], "iolab keeps no random map", findings)?;
        only("kb_base", &["1024"], "write sizes in kb_base=1024 form", findings)?;
        only("loops", &["1"], "run the job file again instead", findings)?;
        only(
            "file_service_type",
            &["roundrobin"],
            "iolab sends each I/O to the next file in turn",
            findings,
        )?;
        Ok(())
    }

    /// `randseed`, else a fresh seed for `randrepeat=0`, which asks fio for different random
    /// offsets on every run (an iolab job file repeats its seed, so the one drawn is said).
    fn seed(&self, findings: &mut Findings) -> Result<Option<u64>, FioJobError> {
        if let Some(s) = self.get("randseed") {
            return values::count(text(s)?).map(Some).map_err(|why| bad_value(s, &why));
        }
        let Some(s) = self.get("randrepeat") else { return Ok(None) };
        if values::switch(s.opt.value.as_deref()).map_err(|why| bad_value(s, &why))? {
            return Ok(None);
        }
        // Within a TOML integer's range.
        let seed = fastrand::u64(..=i64::MAX as u64);
        findings.note(
            &s.opt.loc,
            &format!(
                "{}: fio draws new random offsets on every run; this translation drew seed {seed}, which the job file keeps, so its runs repeat one another; translate again (or change seed) for other offsets",
                s.opt.shown()
            ),
        );
        Ok(Some(seed))
    }

    /// fio's `ioengine`: psync (fio's default), libaio, io_uring and null have iolab engines.
    fn engine(&self, findings: &mut Findings) -> Result<&'static str, FioJobError> {
        let Some(s) = self.get("ioengine") else { return Ok("psync") };
        Ok(match text(s)?.to_ascii_lowercase().as_str() {
            "psync" => "psync",
            "libaio" => "aio",
            "io_uring" => "uring",
            "null" => "null",
            _ => {
                findings.unsupported(
                    &s.opt.loc,
                    format!("{} (iolab has psync, libaio, io_uring and null)", s.opt.shown()),
                );
                "psync"
            }
        })
    }

    /// (read %, random %) from `rw`, `rwmixread`/`rwmixwrite` and `percentage_random`.
    fn access(&self, findings: &mut Findings) -> Result<(u32, u32), FioJobError> {
        let (pattern, random) = match self.get("rw") {
            None => ("read", false),
            Some(s) => {
                let value = text(s)?.to_ascii_lowercase();
                match value.as_str() {
                    "read" => ("read", false),
                    "write" => ("write", false),
                    "randread" => ("read", true),
                    "randwrite" => ("write", true),
                    "rw" | "readwrite" => ("mixed", false),
                    "randrw" => ("mixed", true),
                    _ => {
                        let why = if value.contains(':') {
                            "the :N offset modifier"
                        } else if value.contains("trim") {
                            "iolab does not trim"
                        } else {
                            "not an access pattern"
                        };
                        findings.unsupported(&s.opt.loc, format!("{} ({why})", s.opt.shown()));
                        ("read", false)
                    }
                }
            }
        };
        let mix = self.latest("rwmixread", "rwmixwrite");
        let read_pct = match (pattern, mix) {
            ("read", _) | ("write", _) if mix.is_some() => {
                let s = mix.map_or(&self.loc, |s| &s.opt.loc);
                findings.note(
                    s,
                    "rwmixread/rwmixwrite has no effect on a job that only reads or only writes (as in fio)",
                );
                if pattern == "read" {
                    100
                } else {
                    0
                }
            }
            ("read", _) => 100,
            ("write", _) => 0,
            (_, None) => 50,
            (_, Some(s)) => {
                let pct = values::count(text(s)?).map_err(|why| bad_value(s, &why))?;
                if pct > 100 {
                    return Err(bad_value(s, "a share is 0 to 100"));
                }
                let pct = pct as u32;
                if s.opt.key == "rwmixwrite" {
                    100 - pct
                } else {
                    pct
                }
            }
        };
        let random_pct = match (random, self.get("percentage_random")) {
            (_, None) => u32::from(random) * 100,
            (false, Some(s)) => {
                findings.note(
                    &s.opt.loc,
                    &format!("{}: has no effect on a sequential rw (as in fio)", s.opt.shown()),
                );
                0
            }
            (true, Some(s)) => {
                let (r, w) = values::per_direction(text(s)?);
                let parse = |v: Option<&str>| -> Result<Option<u64>, FioJobError> {
                    v.map(values::count).transpose().map_err(|why| bad_value(s, &why))
                };
                let (r, w) = (parse(r)?.unwrap_or(100), parse(w)?.unwrap_or(100));
                let pct = match (read_pct > 0, read_pct < 100) {
                    (true, true) if r != w => {
                        findings.unsupported(
                            &s.opt.loc,
                            format!("{} (different shares for reads and writes)", s.opt.shown()),
                        );
                        r
                    }
                    (true, _) => r,
                    _ => w,
                };
                if pct > 100 {
                    return Err(bad_value(s, "a share is 0 to 100"));
                }
                pct as u32
            }
        };
        Ok((read_pct, random_pct))
    }

    /// The block sizes with their weights: `bssplit`, else `bs` (fio's default 4k).
    fn block_sizes(
        &self,
        reads: bool,
        writes: bool,
        findings: &mut Findings,
    ) -> Result<Vec<(u64, u32)>, FioJobError> {
        // Each direction's mix: its bssplit part, else its bs part, else fio's 4k.
        let (mut read, mut write) = (None, None);
        let split = self.get("bssplit");
        if let Some(s) = split {
            let (r, w) = values::per_direction(text(s)?);
            let parse = |v: Option<&str>| -> Result<Option<Vec<(u64, u32)>>, FioJobError> {
                let Some(v) = v else { return Ok(None) };
                let mut mix = values::bssplit(v).map_err(|why| bad_value(s, &why))?;
                let total: u32 = mix.iter().map(|e| e.1).sum();
                if total != 100 {
                    return Err(bad_value(s, &format!("its shares come to {total}%, and fio gives the rest to one of the sizes; make them add up to 100")));
                }
                mix.retain(|e| e.1 > 0);
                Ok(Some(mix))
            };
            (read, write) = (parse(r)?, parse(w)?);
        }
        let bs = self.get("bs");
        if let Some(s) = bs {
            if text(s)?.contains('-') {
                let why = "a range of block sizes; use bssplit";
                findings.unsupported(&s.opt.loc, format!("{} ({why})", s.opt.shown()));
            } else {
                let (r, w) = values::per_direction(text(s)?);
                let single = |v: Option<&str>| -> Result<Option<Vec<(u64, u32)>>, FioJobError> {
                    let size = v.map(values::size).transpose().map_err(|why| bad_value(s, &why))?;
                    Ok(size.map(|size| vec![(size, 100)]))
                };
                read = read.or(single(r)?);
                write = write.or(single(w)?);
            }
        }
        let fio_default = || vec![(4096, 100)];
        let (read, write) = (read.unwrap_or_else(fio_default), write.unwrap_or_else(fio_default));
        let mix = match (reads, writes) {
            (true, true) if sorted(&read) != sorted(&write) => {
                if let Some(s) = split.or(bs) {
                    let why = "reads and writes of different sizes";
                    findings.unsupported(&s.opt.loc, format!("{} ({why})", s.opt.shown()));
                }
                read
            }
            (true, _) => read,
            _ => write,
        };
        let min = mix.iter().map(|e| e.0).min().unwrap_or(4096);
        if min == 0 {
            if let Some(s) = split.or(bs) {
                return Err(bad_value(s, "a block size of 0 moves no data; give sizes of 512 bytes or more"));
            }
        }
        if let (Some(odd), Some(s)) = (mix.iter().find(|e| e.0 % min.max(1) != 0), split) {
            return Err(bad_value(s, &format!("fio rounds {} down to a multiple of the smallest size ({min}); write the sizes as multiples of it", odd.0)));
        }
        Ok(mix)
    }

    /// A per-direction size option (`bs`, `ba`) for the directions the job does.
    fn sizes_for(
        &self,
        s: &Setting,
        reads: bool,
        writes: bool,
        findings: &mut Findings,
    ) -> Result<Option<u64>, FioJobError> {
        let (r, w) = values::per_direction(text(s)?);
        let parse = |v: Option<&str>| v.map(values::size).transpose().map_err(|why| bad_value(s, &why));
        let (r, w) = (parse(r)?, parse(w)?);
        Ok(match (reads, writes) {
            (true, true) if r != w => {
                findings.unsupported(
                    &s.opt.loc,
                    format!("{} (reads and writes of different sizes)", s.opt.shown()),
                );
                r
            }
            (true, _) => r,
            _ => w,
        })
    }

    /// Targets: `filename` (a colon list) under `directory`; none means a scratch file.
    fn target(
        &self,
        size: Option<u64>,
        keys: &mut Table,
        findings: &mut Findings,
    ) -> Result<Option<u64>, FioJobError> {
        let names = match self.get("filename") {
            Some(s) => values::file_list(text(s)?),
            None => Vec::new(),
        };
        if let Some(s) = self.get("nrfiles") {
            let n = values::count(text(s)?).map_err(|why| bad_value(s, &why))?;
            if n > 1 && names.is_empty() {
                findings.unsupported(
                    &s.opt.loc,
                    format!("{} (fio lays out files of its own; name them with filename=a:b)", s.opt.shown()),
                );
            } else if n > 1 {
                findings.note(
                    &s.opt.loc,
                    &format!("{}: fio ignores nrfiles when filename is given", s.opt.shown()),
                );
            }
        }
        let directory = match self.get("directory") {
            Some(s) if names.is_empty() => {
                findings.unsupported(
                    &s.opt.loc,
                    format!("{} without filename (fio names its own files there)", s.opt.shown()),
                );
                None
            }
            Some(s) if text(s)?.contains(':') => {
                findings.unsupported(&s.opt.loc, format!("{} (several directories)", s.opt.shown()));
                None
            }
            Some(s) => Some(text(s)?.to_string()),
            None => None,
        };
        if names.is_empty() {
            findings.note(&self.loc, &format!("[{}] names no filename: fio would lay out a file of its own for each of its numjobs; iolab runs it on one scratch file in the current directory (or give --target)", self.section));
        }
        let paths: Vec<Value> = names
            .iter()
            .map(|name| match &directory {
                Some(dir) => format!("{}/{name}", dir.trim_end_matches('/')).into(),
                None => name.clone().into(),
            })
            .collect();
        let files = paths.len().max(1) as u64;
        if !paths.is_empty() {
            keys.insert("target".into(), Value::Array(paths));
        }
        // fio's size is the job's total over its files; iolab's is each target's region.
        let each = size.map(|size| size / files);
        if let Some(each) = each {
            keys.insert("size".into(), size_value(each));
        }
        Ok(each)
    }

    fn number(&self, key: &str, default: u64) -> Result<u64, FioJobError> {
        match self.get(key) {
            None => Ok(default),
            Some(s) => values::count(text(s)?).map_err(|why| bad_value(s, &why)),
        }
    }

    fn size_of(&self, key: &str) -> Result<Option<u64>, FioJobError> {
        self.get(key).map(|s| values::size(text(s)?).map_err(|why| bad_value(s, &why))).transpose()
    }

    pub(crate) fn time_of(&self, key: &str, bare_us: u64) -> Result<Option<u64>, FioJobError> {
        self.get(key).map(|s| values::micros(text(s)?, bare_us).map_err(|why| bad_value(s, &why))).transpose()
    }

    fn bad(&self, key: &str, why: &str) -> FioJobError {
        match self.get(key) {
            Some(s) => bad_value(s, why),
            None => at(&self.loc, format!("{key}: {why}")),
        }
    }
}

/// The value of an option that needs one.
pub(crate) fn text(s: &Setting) -> Result<&str, FioJobError> {
    s.opt
        .value
        .as_deref()
        .ok_or_else(|| at(&s.opt.loc, format!("{} needs a value ({}=...)", s.opt.key, s.opt.key)))
}

/// `why` quotes the value: for an included file's option, only that the value is bad is said.
pub(crate) fn bad_value(s: &Setting, why: &str) -> FioJobError {
    if s.opt.included {
        let Loc { file, line } = &s.opt.loc;
        return at(
            &s.opt.loc,
            format!("{}: its value on line {line} of {file} is not one iolab can take (an included file's values are not shown)", s.opt.key),
        );
    }
    at(&s.opt.loc, format!("{}: {why}", s.opt.shown()))
}

fn sorted(mix: &[(u64, u32)]) -> Vec<(u64, u32)> {
    let mut mix = mix.to_vec();
    mix.sort_unstable();
    mix
}

/// A u64 as a TOML integer (the values here are far below i64's end; saturate to be sure).
pub fn whole(n: u64) -> Value {
    Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A size in iolab's binary units: `4k`, `1m`, or bytes.
pub fn size_text(bytes: u64) -> String {
    for (unit, shift) in [("g", 30), ("m", 20), ("k", 10)] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

fn size_value(bytes: u64) -> Value {
    size_text(bytes).into()
}

/// A time in microseconds as iolab duration text: `30s`, `500ms`, `250us`.
pub fn time_text(us: u64) -> String {
    if us % 1_000_000 == 0 {
        format!("{}s", us / 1_000_000)
    } else if us % 1_000 == 0 {
        format!("{}ms", us / 1_000)
    } else {
        format!("{us}us")
    }
}
