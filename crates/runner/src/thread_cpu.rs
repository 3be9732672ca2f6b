//! Reads the CPU of every thread of this process from /proc/self/task over a measured window,
//! for `iolab_stats::threads`' accounting by class (submitting workers, SQPOLL, io-wq, other).
//! Since Linux 5.12 io_uring's threads are tasks of our own thread group, so they are listed here
//! with their names; a thread's schedstat gives its run time to the nanosecond where the kernel
//! has it, and stat's ticks split it into user and system time.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use iolab_spec::Nanos;
use iolab_stats::threads::{ThreadAccounting, ThreadClassCpu, ThreadSample};

use crate::proc_reader::{clk_tck, read_into};

/// Samples the CPU of every thread of this process from /proc/self/task over a window.
#[derive(Debug)]
pub struct ThreadCpuTracker {
    reader: TaskReader,
    accounting: ThreadAccounting,
}

impl ThreadCpuTracker {
    /// Reads every thread's CPU so far: the window starts now.
    pub fn start() -> io::Result<Self> {
        let mut reader = TaskReader {
            clk_tck: clk_tck(),
            schedstat: Path::new("/proc/thread-self/schedstat").exists(),
            samples: Vec::new(),
            stat: String::new(),
            schedstat_text: String::new(),
            path: String::new(),
        };
        let accounting = ThreadAccounting::new(reader.read_all()?);
        Ok(ThreadCpuTracker { reader, accounting })
    }

    /// Takes a sample. Call it about once a second, so that threads which exit before the
    /// window ends (idle io-wq workers do) are counted up to a recent point.
    pub fn update(&mut self) -> io::Result<()> {
        self.accounting.observe(self.reader.read_all()?);
        Ok(())
    }

    /// Ends the window with a last sample; `window` is its wall-clock length. Call it before
    /// joining the workers and closing the rings, or their last stretch is lost.
    pub fn finish(mut self, window: Nanos) -> io::Result<Vec<ThreadClassCpu>> {
        self.update()?;
        Ok(self.accounting.finish(window))
    }
}

/// Reads /proc/self/task, reusing its buffers from one sample to the next.
#[derive(Debug)]
struct TaskReader {
    clk_tck: u64,
    schedstat: bool,
    samples: Vec<ThreadSample>,
    stat: String,
    schedstat_text: String,
    path: String,
}

impl TaskReader {
    fn read_all(&mut self) -> io::Result<&[ThreadSample]> {
        self.samples.clear();
        for entry in std::fs::read_dir("/proc/self/task")? {
            let Some(tid) = entry?.file_name().to_str().and_then(|name| name.parse().ok()) else {
                continue;
            };
            match self.read_one(tid) {
                Ok(sample) => self.samples.push(sample),
                // The thread exited after the listing: the next sample will not list it either.
                Err(err) if vanished(&err) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(&self.samples)
    }

    fn read_one(&mut self, tid: u32) -> io::Result<ThreadSample> {
        self.path.clear();
        let _ = write!(self.path, "/proc/self/task/{tid}/stat");
        read_into(&self.path, &mut self.stat)?;
        let schedstat = if self.schedstat {
            self.path.truncate(self.path.len() - "stat".len());
            self.path.push_str("schedstat");
            read_into(&self.path, &mut self.schedstat_text)?;
            Some(self.schedstat_text.as_str())
        } else {
            None
        };
        ThreadSample::parse(&self.stat, schedstat, self.clk_tck).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unexpected contents of /proc/self/task/{tid}/stat: {:?}", self.stat),
            )
        })
    }
}

/// Errors of a thread that exited between the listing and the read.
fn vanished(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::NotFound || err.raw_os_error() == Some(nix::libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_stats::threads::{ThreadClass, WORKER_THREAD_PREFIX};

    const MS: u64 = 1_000_000;

    fn class_of(cpu: &[ThreadClassCpu], class: ThreadClass) -> &ThreadClassCpu {
        cpu.iter().find(|c| c.class == class).expect("class in the report")
    }

    /// CPU time of the calling thread so far, as this module reads it.
    fn own_cpu_ns() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("own stat");
        let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok();
        let own = ThreadSample::parse(&stat, schedstat.as_deref(), clk_tck()).expect("a stat line");
        own.run_ns.unwrap_or(own.user_ns + own.system_ns)
    }

    /// Thread 0 of the runner spins, is sampled once while alive, and is gone by `finish`.
    #[test]
    fn a_spinning_worker_thread_is_counted_after_it_exits() {
        use std::sync::mpsc;
        use std::time::{Duration, Instant};

        let started = Instant::now();
        let mut tracker = ThreadCpuTracker::start().expect("/proc/self/task readable");
        let (spun_tx, spun_rx) = mpsc::channel();
        let (exit_tx, exit_rx) = mpsc::channel::<()>();
        let worker = std::thread::Builder::new()
            .name(format!("{WORKER_THREAD_PREFIX}0"))
            .spawn(move || {
                // Spin for 200 ms of CPU, not of wall time: other tests share the cores.
                let mut x = 0u64;
                while own_cpu_ns() < 200 * MS {
                    let slice = Instant::now();
                    while slice.elapsed() < Duration::from_millis(5) {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
                    }
                }
                spun_tx.send(()).expect("test waits");
                let _ = exit_rx.recv();
            })
            .expect("spawn");
        spun_rx.recv().expect("worker spun");
        tracker.update().expect("sample");
        exit_tx.send(()).expect("worker waits");
        worker.join().expect("worker");

        let window = Nanos(started.elapsed().as_nanos() as u64);
        let cpu = tracker.finish(window).expect("sample");
        let workers = class_of(&cpu, ThreadClass::Worker);
        assert_eq!(workers.threads, 1);
        let busy_s = workers.user_s + workers.system_s;
        assert!(busy_s > 0.1, "worker used {busy_s} s: {cpu:?}");
        let busy_pct = 100.0 * busy_s / window.as_secs_f64();
        assert!(
            workers.busiest_thread_pct <= 100.0 && (workers.busiest_thread_pct - busy_pct).abs() < 1e-6,
            "busiest {}% of {window:?}: {cpu:?}",
            workers.busiest_thread_pct
        );
    }
}
