//! How a fio job is paced (`rate_iops`, `rate_process`, `thinktime`) and its io_uring options,
//! as iolab keys.

use toml::Table;

use crate::error::{at, FioJobError};
use crate::job::{bad_value, text, time_text, whole, FioJob};
use crate::values;
use crate::Findings;

impl FioJob {
    /// `rate_iops`/`rate_process` and `thinktime`/`thinktime_blocks`.
    pub(crate) fn pacing(
        &self,
        reads: bool,
        writes: bool,
        numjobs: u64,
        mixed_sizes: bool,
        keys: &mut Table,
        findings: &mut Findings,
    ) -> Result<(), FioJobError> {
        let mut rate = None;
        if let Some(s) = self.get("rate_iops") {
            let (r, w) = values::per_direction(text(s)?);
            let parse = |v: Option<&str>| v.map(values::size).transpose().map_err(|why| bad_value(s, &why));
            let (r, w) = (parse(r)?.filter(|&n| n > 0), parse(w)?.filter(|&n| n > 0));
            let wanted = if reads && writes && (r.is_some() || w.is_some()) {
                findings.unsupported(&s.opt.loc, format!("{} on a job that reads and writes (fio paces reads and writes separately; iolab paces the group)", s.opt.shown()));
                None
            } else if reads {
                r
            } else {
                w
            };
            if wanted.is_some() && mixed_sizes {
                findings.unsupported(
                    &s.opt.loc,
                    format!(
                        "{} with several block sizes (fio paces bytes, at rate_iops x the smallest size)",
                        s.opt.shown()
                    ),
                );
            }
            // fio paces each clone; iolab's rate is the group's, shared by its workers.
            rate = wanted.map(|n| n * numjobs);
        }
        let process = self.get("rate_process");
        match (rate, process) {
            (Some(iops), _) => {
                keys.insert("rate_iops".into(), whole(iops));
                let arrival = match process {
                    None => "uniform",
                    Some(s) => match text(s)?.to_ascii_lowercase().as_str() {
                        "linear" => "uniform",
                        "poisson" => "poisson",
                        _ => return Err(bad_value(s, "use linear or poisson")),
                    },
                };
                keys.insert("arrival".into(), arrival.into());
            }
            (None, Some(s)) => findings
                .note(&s.opt.loc, &format!("{}: has no effect without rate_iops (as in fio)", s.opt.shown())),
            (None, None) => {}
        }
        let think = self.time_of("thinktime", 1)?.filter(|&us| us > 0);
        match (think, self.get("thinktime_blocks")) {
            (Some(_), _) if rate.is_some() => {
                let loc = self.get("thinktime").map_or(&self.loc, |s| &s.opt.loc);
                return Err(at(loc, "thinktime with rate_iops: iolab paces a group by a schedule or by bursts, not both; keep one"));
            }
            (Some(us), blocks) => {
                let ios = match blocks {
                    Some(s) => values::count(text(s)?).map_err(|why| bad_value(s, &why))?.max(1),
                    None => 1,
                };
                keys.insert("burst".into(), whole(ios));
                keys.insert("burst_idle".into(), time_text(us).into());
            }
            (None, Some(s)) => findings
                .note(&s.opt.loc, &format!("{}: has no effect without thinktime (as in fio)", s.opt.shown())),
            (None, None) => {}
        }
        Ok(())
    }

    /// io_uring's own options, which fio takes only with `ioengine=io_uring`.
    pub(crate) fn uring_options(
        &self,
        engine: &str,
        keys: &mut Table,
        findings: &mut Findings,
    ) -> Result<(), FioJobError> {
        for (fio, iolab) in [
            ("hipri", "hipri"),
            ("fixedbufs", "fixed_buffers"),
            ("registerfiles", "fixed_files"),
            ("sqthread_poll", "sqpoll"),
        ] {
            let Some(s) = self.get(fio) else { continue };
            if engine != "uring" {
                findings.unsupported(
                    &s.opt.loc,
                    format!("{} (an io_uring option, and the engine is not io_uring)", s.opt.shown()),
                );
                continue;
            }
            let on = values::switch(s.opt.value.as_deref()).map_err(|why| bad_value(s, &why))?;
            keys.insert(iolab.into(), on.into());
        }
        if let Some(s) = self.get("sqthread_poll_cpu") {
            let cpu = values::count(text(s)?).map_err(|why| bad_value(s, &why))?;
            if engine != "uring" {
                findings.unsupported(
                    &s.opt.loc,
                    format!("{} (an io_uring option, and the engine is not io_uring)", s.opt.shown()),
                );
            } else {
                keys.insert("sqpoll_cpu".into(), whole(cpu));
            }
        }
        Ok(())
    }
}
