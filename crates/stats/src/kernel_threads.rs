//! What a kernel thread works for, told by its name: the loop driver's workers, a RAID or
//! device-mapper thread, the softirq daemon of a CPU, a threaded interrupt handler, a
//! filesystem's journal or writeback. The verdict needs this to say "loop0's kernel worker ran
//! at 99% of one core" instead of "the cores were busy outside iolab".
//!
//! Names as the kernel shows them in /proc/<pid>/stat (6.x; older kernels differ only where
//! noted): a workqueue worker is "kworker/<cpu>:<id>[H]" or "kworker/u<pool>:<id>", followed by
//! '-' or '+' and the name of the workqueue whose work it last ran or is running ("kworker/u8:3-
//! loop0", "kworker/u8:0+flush-254:0"); a rescuer is "kworker/R-<workqueue>"; kernels before
//! 4.17 show no suffix at all, so such a worker lands in "other kernel threads". A kworker moves
//! between workqueues: its time in a window counts for the workqueue of its latest name.

use serde::{Deserialize, Serialize};

/// What a kernel thread serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelRole {
    /// A block driver's or the block layer's worker: the loop driver's workqueue, kblockd,
    /// nvme-wq, blkcg_punt_bio.
    BlockWorker,
    /// Software RAID (md) and device-mapper threads: md0_raid5, kcryptd, kdmflush, dmcrypt_write.
    RaidOrMapper,
    /// ksoftirqd/N: softirq work (block completions, network receive) deferred to a thread.
    Softirq,
    /// A threaded interrupt handler: irq/45-nvme0q1.
    Interrupt,
    /// A filesystem's own threads: jbd2, xfsaild, btrfs workers, ext4 conversion.
    Filesystem,
    /// Writeback of dirty pages: the flush-<maj:min> and writeback workqueues.
    Writeback,
    /// Memory reclaim and compaction: kswapd, kcompactd, khugepaged.
    Reclaim,
    /// Network filesystems' clients and servers: rpciod, nfsiod, nfsd, ceph-msgr.
    NetworkFs,
    /// Everything else: rcu, migration, generic workqueues ("events").
    Other,
}

impl KernelRole {
    /// How the report names the role.
    pub fn words(self) -> &'static str {
        match self {
            KernelRole::BlockWorker => "block device worker",
            KernelRole::RaidOrMapper => "software RAID / device-mapper",
            KernelRole::Softirq => "softirq",
            KernelRole::Interrupt => "interrupt handler",
            KernelRole::Filesystem => "filesystem",
            KernelRole::Writeback => "writeback",
            KernelRole::Reclaim => "memory reclaim",
            KernelRole::NetworkFs => "network filesystem",
            KernelRole::Other => "other kernel work",
        }
    }
}

/// What a device-serving thread names as its device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Serves {
    /// A kernel device name: "loop0", "md0", "vda1".
    Device(String),
    /// A device number "major:minor" (dm-crypt and writeback name devices so), for the caller
    /// to turn into a name through /sys/dev/block.
    DevNum(String),
    /// A CPU (ksoftirqd/N).
    Cpu(u32),
}

/// A kernel thread as the report groups it: its role, the group's name, and what it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelThread {
    pub role: KernelRole,
    /// The name its group is reported under: threads with the same name are one owner.
    pub group: String,
    pub serves: Option<Serves>,
}

impl KernelThread {
    /// Classifies the kernel thread named `name`.
    pub fn of(name: &str) -> KernelThread {
        if let Some(rest) = name.strip_prefix("kworker/") {
            return match workqueue_of(rest) {
                Some(wq) => workqueue(wq),
                None => other("kworker"),
            };
        }
        if let Some(cpu) = name.strip_prefix("ksoftirqd/") {
            return KernelThread {
                role: KernelRole::Softirq,
                group: "ksoftirqd".into(),
                serves: cpu.parse().ok().map(Serves::Cpu),
            };
        }
        if let Some(rest) = name.strip_prefix("irq/") {
            // "irq/45-nvme0q1": the handler's name after the number.
            let handler = rest.split_once('-').map_or("", |(_, handler)| handler);
            return KernelThread {
                role: KernelRole::Interrupt,
                group: name.to_string(),
                serves: (!handler.is_empty()).then(|| Serves::Device(handler.to_string())),
            };
        }
        if let Some(device) = md_device(name) {
            return KernelThread {
                role: KernelRole::RaidOrMapper,
                group: format!("{device} (md)"),
                serves: Some(Serves::Device(device.to_string())),
            };
        }
        for prefix in ["kcryptd/", "dmcrypt_write/", "kdmflush/"] {
            if let Some(devnum) = name.strip_prefix(prefix) {
                return mapper(prefix.trim_end_matches('/'), devnum);
            }
        }
        if is_numbered(name, "loop") {
            // Kernels before 5.12 gave each loop device one thread of its own, named after it.
            return block_worker(name, name);
        }
        if let Some(rest) = name.strip_prefix("jbd2/") {
            // "jbd2/vda1-8": the journal of the filesystem on vda1.
            let device = rest.rsplit_once('-').map_or(rest, |(device, _)| device);
            return KernelThread {
                role: KernelRole::Filesystem,
                group: format!("jbd2 ({device})"),
                serves: Some(Serves::Device(device.to_string())),
            };
        }
        let base = base_name(name);
        let role = match base {
            "xfsaild" | "xfs" | "txg_sync" | "txg_quiesce" | "f2fs_gc" | "f2fs_discard" | "f2fs_flush" => {
                KernelRole::Filesystem
            }
            _ if base.starts_with("btrfs-") || base.starts_with("z_") || base.starts_with("xfs-") => {
                KernelRole::Filesystem
            }
            "kswapd" | "kcompactd" | "khugepaged" => KernelRole::Reclaim,
            "nfsd" | "rpciod" | "nfsiod" | "lockd" | "ceph-msgr" | "ceph-watch-notify" => {
                KernelRole::NetworkFs
            }
            _ => KernelRole::Other,
        };
        KernelThread { role, group: base.to_string(), serves: None }
    }

    /// The device this thread serves, if it names one by kernel name.
    pub fn device(&self) -> Option<&str> {
        match &self.serves {
            Some(Serves::Device(name)) => Some(name),
            _ => None,
        }
    }
}

/// The workqueue part of a kworker's name after "kworker/": "u8:3-loop0" -> "loop0",
/// "R-kblockd" -> "kblockd", "0:1" -> none.
fn workqueue_of(rest: &str) -> Option<&str> {
    let at = rest.find(['-', '+'])?;
    let wq = &rest[at + 1..];
    (!wq.is_empty()).then_some(wq)
}

fn workqueue(wq: &str) -> KernelThread {
    if is_numbered(wq, "loop") {
        return block_worker(&format!("{wq} workers"), wq);
    }
    if let Some(devnum) = wq.strip_prefix("flush-") {
        return KernelThread {
            role: KernelRole::Writeback,
            group: format!("writeback ({wq})"),
            serves: Some(Serves::DevNum(devnum.to_string())),
        };
    }
    for prefix in ["kcryptd/", "kcryptd-", "kdmflush/", "kdmflush-", "dmcrypt_write/"] {
        if let Some(devnum) = wq.strip_prefix(prefix) {
            return mapper(prefix.trim_end_matches(['/', '-']), devnum);
        }
    }
    let base = base_name(wq);
    let role = match base {
        "writeback" => KernelRole::Writeback,
        "kblockd" | "blkcg_punt_bio" | "nvme-wq" | "nvme-reset-wq" | "nvme-delete-wq" | "ata_sff"
        | "scsi_tmf_" | "kthrotld" => KernelRole::BlockWorker,
        "md" | "md_misc" | "raid5wq" | "kcopyd" | "dm_bufio_cache" | "kverityd" => KernelRole::RaidOrMapper,
        "rpciod" | "nfsiod" | "xprtiod" | "ceph-msgr" => KernelRole::NetworkFs,
        _ if base.starts_with("xfs")
            || base.starts_with("ext4")
            || base.starts_with("btrfs")
            || base.ends_with("-rsv-conversion")
            || base.starts_with("jbd2") =>
        {
            KernelRole::Filesystem
        }
        _ => KernelRole::Other,
    };
    KernelThread { role, group: format!("kworker: {base}"), serves: None }
}

fn block_worker(group: &str, device: &str) -> KernelThread {
    KernelThread {
        role: KernelRole::BlockWorker,
        group: group.to_string(),
        serves: Some(Serves::Device(device.to_string())),
    }
}

fn mapper(what: &str, devnum: &str) -> KernelThread {
    KernelThread {
        role: KernelRole::RaidOrMapper,
        group: format!("{what} ({devnum})"),
        serves: Some(Serves::DevNum(devnum.to_string())),
    }
}

fn other(group: &str) -> KernelThread {
    KernelThread { role: KernelRole::Other, group: group.to_string(), serves: None }
}

/// "md0_raid5", "md127_resync" -> "md0", "md127".
fn md_device(name: &str) -> Option<&str> {
    let (device, _) = name.split_once('_')?;
    is_numbered(device, "md").then_some(device)
}

/// `name` is `prefix` followed by digits only.
fn is_numbered(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A name without its per-CPU or per-instance number: "migration/1" -> "migration",
/// "kswapd0" -> "kswapd", "scsi_tmf_0" -> "scsi_tmf_", "kdamond.0" -> "kdamond".
fn base_name(name: &str) -> &str {
    let name = name.split('/').next().unwrap_or(name);
    let trimmed = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let trimmed = trimmed.strip_suffix('.').unwrap_or(trimmed);
    if trimmed.is_empty() {
        name
    } else {
        trimmed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str) -> KernelRole {
        KernelThread::of(name).role
    }

    #[test]
    fn loop_workers_by_workqueue_and_by_old_thread_name() {
        for name in ["kworker/u8:3-loop0", "kworker/u8:0+loop0", "kworker/R-loop0", "loop0"] {
            let thread = KernelThread::of(name);
            assert_eq!(thread.role, KernelRole::BlockWorker, "{name}");
            assert_eq!(thread.device(), Some("loop0"), "{name}");
        }
        assert_eq!(KernelThread::of("kworker/u8:3-loop0").group, "loop0 workers");
        assert_eq!(KernelThread::of("kworker/u8:3-loop12").device(), Some("loop12"));
        // "loopback" is not a loop device.
        assert_eq!(KernelThread::of("kworker/u8:3-loopback").device(), None);
    }

    #[test]
    fn raid_and_mapper_threads_name_their_device() {
        let md = KernelThread::of("md127_raid5");
        assert_eq!((md.role, md.device()), (KernelRole::RaidOrMapper, Some("md127")));
        assert_eq!(KernelThread::of("md0_resync").device(), Some("md0"));
        for name in ["kcryptd/253:0", "dmcrypt_write/253:0", "kdmflush/253:0", "kworker/u8:1+kcryptd/253:0"] {
            let thread = KernelThread::of(name);
            assert_eq!(thread.role, KernelRole::RaidOrMapper, "{name}");
            assert_eq!(thread.serves, Some(Serves::DevNum("253:0".into())), "{name}");
        }
        assert_eq!(role("kworker/u8:2-raid5wq"), KernelRole::RaidOrMapper);
        // Not md: a name that only starts alike.
        assert_eq!(role("mdadm_x"), KernelRole::Other);
    }

    #[test]
    fn softirq_interrupts_and_writeback() {
        let softirq = KernelThread::of("ksoftirqd/1");
        assert_eq!((softirq.role, softirq.serves), (KernelRole::Softirq, Some(Serves::Cpu(1))));
        assert_eq!(softirq.group, "ksoftirqd");
        let irq = KernelThread::of("irq/45-nvme0q1");
        assert_eq!((irq.role, irq.device()), (KernelRole::Interrupt, Some("nvme0q1")));
        let flush = KernelThread::of("kworker/u8:0+flush-254:0");
        assert_eq!(flush.role, KernelRole::Writeback);
        assert_eq!(flush.serves, Some(Serves::DevNum("254:0".into())));
        assert_eq!(role("kworker/u4:2-writeback"), KernelRole::Writeback);
        assert_eq!(role("kworker/R-writeback"), KernelRole::Writeback);
    }

    #[test]
    fn filesystems_reclaim_network_and_the_rest() {
        let journal = KernelThread::of("jbd2/vda1-8");
        assert_eq!((journal.role, journal.device()), (KernelRole::Filesystem, Some("vda1")));
        assert_eq!(role("xfsaild/sdb"), KernelRole::Filesystem);
        assert_eq!(role("kworker/u4:1-ext4-rsv-conversion"), KernelRole::Filesystem);
        assert_eq!(role("btrfs-transaction"), KernelRole::Filesystem);
        assert_eq!(role("kswapd0"), KernelRole::Reclaim);
        assert_eq!(role("rpciod"), KernelRole::NetworkFs);
        assert_eq!(role("kworker/1:1H-kblockd"), KernelRole::BlockWorker);
        assert_eq!(role("kworker/0:2-events"), KernelRole::Other);
        // Before 4.17, kworkers had no workqueue suffix.
        assert_eq!(KernelThread::of("kworker/0:2"), other("kworker"));
        assert_eq!(KernelThread::of("migration/1").group, "migration");
        assert_eq!(KernelThread::of("kdamond.0").group, "kdamond");
        assert_eq!(KernelThread::of("rcu_preempt").group, "rcu_preempt");
    }
}
