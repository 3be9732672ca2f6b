//! Reads every thread of the machine (but this process's own) from /proc, as cheaply as the
//! kernel allows: a thread's name, kind and start time are read once, from its stat file; after
//! that, each sample reads only its schedstat (three numbers, where stat makes the kernel gather
//! fifty), whose run time is also exact to the nanosecond. A kworker's name is read again each
//! time (it changes with the workqueue it serves); a tid whose run time went backwards was
//! reused, and is read afresh. Kernel threads are known to have one task, so their task
//! directory is not listed again.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use iolab_stats::machine::{MachineThread, ProcessIoSample};
use iolab_stats::proc_text::{parse_proc_io, TaskStat};

/// What is known of a thread from its first reading.
struct Known {
    pid: u32,
    starttime: u64,
    comm: String,
    process: String,
    kthread: bool,
    /// Its parent when first read (a process reparented since keeps the first).
    ppid: u32,
    /// Its CPU at the last reading, to tell a reused tid.
    cpu_ns: u64,
    /// The last `read_all` that saw it.
    round: u64,
}

pub struct ProcReader {
    own_pid: u32,
    ns_per_tick: u64,
    /// /proc/<tid>/schedstat exists (CONFIG_SCHED_INFO): run time to the nanosecond.
    schedstat: bool,
    known: HashMap<u32, Known>,
    round: u64,
    pub threads: Vec<MachineThread>,
    pub io: Vec<ProcessIoSample>,
    text: String,
    path: String,
}

impl ProcReader {
    pub fn new() -> Self {
        ProcReader {
            own_pid: std::process::id(),
            ns_per_tick: 1_000_000_000 / clk_tck(),
            schedstat: Path::new("/proc/thread-self/schedstat").exists(),
            known: HashMap::new(),
            round: 0,
            threads: Vec::new(),
            io: Vec::new(),
            text: String::new(),
            path: String::new(),
        }
    }

    /// Reads every thread and process now into `threads` and `io`.
    pub fn read_all(&mut self) -> io::Result<()> {
        self.round += 1;
        self.threads.clear();
        self.io.clear();
        for entry in std::fs::read_dir("/proc")? {
            let Some(pid) = entry?.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
                continue;
            };
            if pid != self.own_pid {
                // A process that exits while it is read is simply not in this sample.
                let _ = self.read_process(pid);
            }
        }
        let round = self.round;
        self.known.retain(|_, known| known.round == round);
        Ok(())
    }

    fn read_process(&mut self, pid: u32) -> io::Result<()> {
        // The leader first: its name is the process's.
        self.read_task(pid, pid)?;
        let (kthread, starttime, ppid) = match self.known.get(&pid) {
            Some(leader) => (leader.kthread, leader.starttime, leader.ppid),
            None => return Ok(()),
        };
        if !kthread {
            self.path.clear();
            let _ = write!(self.path, "/proc/{pid}/task");
            for entry in std::fs::read_dir(&self.path)? {
                let Some(tid) = entry?.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                if tid != pid {
                    let _ = self.read_task(pid, tid);
                }
            }
            self.path.clear();
            let _ = write!(self.path, "/proc/{pid}/io");
            if read_into(&self.path, &mut self.text).is_ok() {
                if let Some((read_bytes, write_bytes)) = parse_proc_io(&self.text) {
                    self.io.push(ProcessIoSample { pid, starttime, ppid, read_bytes, write_bytes });
                }
            }
        }
        Ok(())
    }

    fn read_task(&mut self, pid: u32, tid: u32) -> io::Result<()> {
        if self.schedstat {
            if let Some(cpu_ns) = self.known_task(pid, tid)? {
                let known =
                    self.known.get_mut(&tid).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
                known.cpu_ns = cpu_ns;
                known.round = self.round;
                self.threads.push(MachineThread {
                    pid,
                    tid,
                    starttime: known.starttime,
                    comm: known.comm.clone(),
                    process: known.process.clone(),
                    kthread: known.kthread,
                    cpu_ns,
                });
                return Ok(());
            }
        }
        self.path.clear();
        let _ = write!(self.path, "/proc/{pid}/task/{tid}/stat");
        read_into(&self.path, &mut self.text)?;
        let stat = TaskStat::parse(&self.text).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, format!("unexpected contents of {}", self.path))
        })?;
        let cpu_ns = if self.schedstat {
            self.run_ns(pid, tid)?
        } else {
            (stat.utime + stat.stime).saturating_mul(self.ns_per_tick)
        };
        let process = if tid == pid {
            stat.comm.clone()
        } else {
            self.known.get(&pid).map_or_else(|| stat.comm.clone(), |leader| leader.process.clone())
        };
        let thread = MachineThread {
            pid,
            tid,
            starttime: stat.starttime,
            comm: stat.comm,
            process,
            kthread: stat.kthread,
            cpu_ns,
        };
        self.known.insert(
            tid,
            Known {
                pid,
                starttime: thread.starttime,
                comm: thread.comm.clone(),
                process: thread.process.clone(),
                kthread: thread.kthread,
                ppid: stat.ppid,
                cpu_ns,
                round: self.round,
            },
        );
        self.threads.push(thread);
        Ok(())
    }

    /// A thread read before: its run time now, its name refreshed if it is a kworker; `None`
    /// when it is new to us or its tid was reused (its run time went backwards).
    fn known_task(&mut self, pid: u32, tid: u32) -> io::Result<Option<u64>> {
        let Some((was_ns, kworker)) =
            self.known.get(&tid).filter(|k| k.pid == pid).map(|k| (k.cpu_ns, k.comm.starts_with("kworker/")))
        else {
            return Ok(None);
        };
        let now_ns = self.run_ns(pid, tid)?;
        if now_ns < was_ns {
            return Ok(None);
        }
        if kworker {
            self.path.clear();
            let _ = write!(self.path, "/proc/{pid}/task/{tid}/comm");
            read_into(&self.path, &mut self.text)?;
            let comm = self.text.trim_end().to_string();
            if let Some(known) = self.known.get_mut(&tid) {
                known.comm = comm;
            }
        }
        Ok(Some(now_ns))
    }

    fn run_ns(&mut self, pid: u32, tid: u32) -> io::Result<u64> {
        self.path.clear();
        let _ = write!(self.path, "/proc/{pid}/task/{tid}/schedstat");
        read_into(&self.path, &mut self.text)?;
        self.text.split_whitespace().next().and_then(|ns| ns.parse().ok()).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, format!("unexpected contents of {}", self.path))
        })
    }
}

pub fn read_into(path: &str, text: &mut String) -> io::Result<()> {
    text.clear();
    File::open(path)?.read_to_string(text)?;
    Ok(())
}

/// Clock ticks per second of /proc's times (USER_HZ).
pub fn clk_tck() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|&t| t > 0)
        .map_or(100, |t| t as u64)
}

/// The base page size, in which vmstat counts pages.
pub fn page_bytes() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .filter(|&p| p > 0)
        .map_or(4096, |p| p as u64)
}
