//! Reads the kernel's pressure stall totals at the start and the end of a job's window:
//! machine-wide (/proc/pressure) and, under cgroup v2, for this process's own cgroup. The
//! parsing and the figures are `iolab_stats::pressure`; a kernel without PSI, or a file that
//! cannot be read, is said in the report, never fatal.

use std::path::{Path, PathBuf};

use iolab_stats::limits::{cgroup_mount, cgroup_path};
use iolab_stats::pressure::{PressureReport, Stall, StallTotals, RESOURCES};

use crate::kernel_file::read_parsed;

/// The pressure files found at the window's start, with their totals then.
pub struct PressureStart {
    files: Vec<(String, Option<String>, PathBuf, StallTotals)>,
    unread: Vec<String>,
}

impl PressureStart {
    pub fn read() -> PressureStart {
        let mut unread = Vec::new();
        let mut files = Vec::new();
        let scopes = std::iter::once((None, PathBuf::from("/proc/pressure"))).chain(own_cgroup_v2());
        for (cgroup, dir) in scopes {
            for resource in RESOURCES {
                let path = match &cgroup {
                    None => dir.join(resource),
                    Some(_) => dir.join(format!("{resource}.pressure")),
                };
                if let Some(totals) = read(&path, &mut unread) {
                    files.push((resource.to_string(), cgroup.clone(), path, totals));
                }
            }
        }
        PressureStart { files, unread }
    }

    /// The stalls over the window now ending, `window_s` long.
    pub fn finish(self, window_s: f64) -> PressureReport {
        let PressureStart { files, mut unread } = self;
        let stalls = files
            .into_iter()
            .filter_map(|(resource, cgroup, path, start)| {
                let (some_pct, full_pct) = read(&path, &mut unread)?.since(&start, window_s);
                Some(Stall { resource, cgroup, some_pct, full_pct })
            })
            .collect();
        PressureReport { stalls, unread }
    }
}

fn read(path: &Path, unread: &mut Vec<String>) -> Option<StallTotals> {
    read_parsed(path, "stall totals", StallTotals::parse, unread)
}

/// This process's cgroup v2 directory, when it is in a cgroup below the root of a cgroup2
/// mount (the root's pressure is the machine's).
fn own_cgroup_v2() -> Option<(Option<String>, PathBuf)> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = cgroup_mount(&mountinfo, None)?;
    let cgroup = cgroup_path(&cgroups, None).filter(|c| c != "/")?;
    let dir = Path::new(&mount).join(cgroup.trim_start_matches('/'));
    dir.join("cpu.pressure").exists().then_some((Some(cgroup), dir))
}
