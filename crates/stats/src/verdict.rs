//! What limited a job (`Bottleneck`), and the verdict that says so in plain words with the
//! figures behind it and the advice it tested.

use serde::{Deserialize, Serialize};

/// What limited a job; `Undetermined` by default (a stored summary that does not say).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// A thread that submits and reaps I/O (or the cores, mostly busy with those threads).
    SubmittingCpu,
    /// Kernel work outside the submitting threads: io-wq workers, the SQPOLL thread.
    KernelCpu,
    /// A kernel thread outside iolab that serves the target: the loop driver's worker, an md
    /// RAID thread, dm-crypt; or, on saturated cores, the device's kernel work as a whole.
    KernelThread,
    /// A core saturated by hardirq and softirq work (completions).
    Interrupts,
    /// Another load: other processes' I/O on the device, or their CPU on saturated cores.
    OtherLoad,
    /// io_uring punted the job's I/O because the file's pages were being written back.
    Writeback,
    /// The hypervisor took the VM's CPU (steal).
    Steal,
    /// A target no block device serves (FUSE, NFS): the filesystem or its server.
    Target,
    /// The device: busy all the time with every request the job kept outstanding.
    Device,
    /// The device's request queue holds fewer requests than the job kept outstanding.
    Queue,
    /// The page cache (or a memory filesystem) served the I/O; the device was not measured.
    PageCache,
    /// The job ran at the rate it was asked for (open loop).
    RateLimit,
    /// A limit of the machine's configuration, not its hardware: a cgroup's CPU quota, an
    /// affinity mask narrower than the job's threads.
    ConfiguredLimit,
    /// Nothing was saturated: the job's own outstanding I/Os (QD x workers) limited it.
    Concurrency,
    /// A fleet's network: a host moved storage traffic near its measured link capacity, or its
    /// agents waited with nothing else busy.
    Network,
    /// A fleet's coordinator: hosts did not run together (start skew), or it fell behind.
    Coordinator,
    /// No evidence either way.
    #[default]
    Undetermined,
}

impl Bottleneck {
    /// How the report names it.
    pub fn name(self) -> &'static str {
        match self {
            Bottleneck::SubmittingCpu => "submitting CPU",
            Bottleneck::KernelCpu => "kernel CPU",
            Bottleneck::KernelThread => "kernel thread",
            Bottleneck::Interrupts => "interrupts",
            Bottleneck::OtherLoad => "another load",
            Bottleneck::Writeback => "writeback",
            Bottleneck::Steal => "steal",
            Bottleneck::Target => "target",
            Bottleneck::Device => "device",
            Bottleneck::Queue => "device queue",
            Bottleneck::PageCache => "page cache",
            Bottleneck::RateLimit => "rate limit",
            Bottleneck::ConfiguredLimit => "configured limit",
            Bottleneck::Concurrency => "concurrency",
            Bottleneck::Network => "network",
            Bottleneck::Coordinator => "coordinator",
            Bottleneck::Undetermined => "undetermined",
        }
    }
}

/// What limited a job, in plain words, with the figures that support it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verdict {
    pub cause: Bottleneck,
    /// One plain sentence.
    pub summary: String,
    /// The figures behind it, one per line.
    pub evidence: Vec<String>,
    /// The setting the verdict advises, and whether a trial confirmed it; `None`: no advice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<crate::advice::Advice>,
}

impl Verdict {
    /// A measured result's verdict until it is judged (after it is kept; never by the runner).
    pub fn not_judged() -> Verdict {
        Verdict::of(Bottleneck::Undetermined, String::new(), Vec::new())
    }

    /// A verdict that advises nothing.
    pub fn of(cause: Bottleneck, summary: String, evidence: Vec<String>) -> Verdict {
        Verdict { cause, summary, evidence, advice: None }
    }
}
