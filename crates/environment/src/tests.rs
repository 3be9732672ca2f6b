//! Tests of the whole fingerprint: warnings and descriptions over hand-built environments, a
//! capture of this machine, and a loop device made for the test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use iolab_stats::result::QueueInfo;

use super::*;

fn host(governors: Option<&[(&str, &[u32])]>) -> HostFacts {
    HostFacts {
        hostname: Some("lab1".into()),
        kernel_release: Some("6.1.0".into()),
        cpu_model: Some("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz".into()),
        logical_cpus: Some(4),
        memory_bytes: Some(24 << 30),
        cpu_governors: governors.map(|list| {
            list.iter().map(|(g, cpus)| (g.to_string(), cpus.to_vec())).collect::<BTreeMap<_, _>>()
        }),
        boot_parameters: vec![],
        cpu_idle: None,
    }
}

fn nvme(scheduler: &str) -> DeviceFacts {
    DeviceFacts {
        name: "nvme0n1".into(),
        major_minor: "259:0".into(),
        disk: None,
        driver: Some("nvme".into()),
        model: Some("Samsung SSD 990 PRO 2TB".into()),
        vendor: None,
        firmware_rev: Some("4B2QJXD7".into()),
        serial: Some("S6Z2NF0W123456A".into()),
        capacity_bytes: Some(2_000_398_934_016),
        logical_block_bytes: Some(512),
        physical_block_bytes: Some(512),
        queue: QueueInfo {
            nr_requests: Some(1023),
            hw_queue_depth: Some(1023),
            hw_queues: Some(4),
            scheduler: Some(scheduler.into()),
            rotational: Some(false),
            ..QueueInfo::default()
        },
        write_cache: Some("write back".into()),
        loop_device: None,
    }
}

fn health(written_units: u64, kelvin: u16) -> SmartLog {
    let mut page = vec![0u8; SMART_LOG_BYTES];
    page[1..3].copy_from_slice(&kelvin.to_le_bytes());
    page[3] = 100;
    page[4] = 10;
    page[5] = 3;
    page[48..64].copy_from_slice(&u128::from(written_units).to_le_bytes());
    page[144..160].copy_from_slice(&5u128.to_le_bytes());
    SmartLog::parse(&page).expect("512 bytes")
}

fn target(path: &str, kind: TargetKind, device: Option<DeviceFacts>) -> TargetFacts {
    TargetFacts {
        path: path.into(),
        kind,
        filesystem: (kind != TargetKind::BlockDevice).then(|| "ext4".into()),
        mount_point: (kind != TargetKind::BlockDevice).then(|| "/".into()),
        in_memory: false,
        device,
        nvme_health: None,
        nvme_health_skipped: None,
    }
}

fn uses(path: &str, direct: bool, writes: bool) -> Vec<TargetUse> {
    vec![TargetUse { path: path.into(), direct, writes }]
}

#[test]
fn a_well_set_up_nvme_run_has_no_warnings() {
    let env = Environment {
        host: host(Some(&[("performance", &[0, 1, 2, 3])])),
        targets: vec![target("/dev/nvme0n1", TargetKind::BlockDevice, Some(nvme("none")))],
    };
    assert_eq!(warnings(&env, &uses("/dev/nvme0n1", true, true)), Vec::<String>::new());
    // No cpufreq at all (a VM): the host sets the clocks, nothing to say.
    let vm = Environment { host: host(None), ..env };
    assert_eq!(warnings(&vm, &uses("/dev/nvme0n1", true, true)), Vec::<String>::new());
}

#[test]
fn warns_about_every_setting_that_distorts_results() {
    let env = Environment {
        host: host(Some(&[("performance", &[0, 1]), ("powersave", &[2, 3])])),
        targets: vec![target("/dev/nvme0n1", TargetKind::BlockDevice, Some(nvme("mq-deadline")))],
    };
    assert_eq!(
        warnings(&env, &uses("/dev/nvme0n1", false, false)),
        [
            "CPUs 2-3 run the powersave cpufreq governor, which lowers clocks between I/Os and inflates \
             latency and CPU per I/O; set performance with \
             `echo performance | sudo tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`.",
            "/dev/nvme0n1 is used with buffered I/O, so the page cache serves reads and absorbs writes \
             and the results describe memory more than /dev/nvme0n1; drop --buffered (iolab uses \
             O_DIRECT by default).",
            "/dev/nvme0n1 is non-rotational but uses the mq-deadline I/O scheduler, which adds CPU time \
             and locking to every request and caps IOPS; set none with \
             `echo none | sudo tee /sys/block/nvme0n1/queue/scheduler`.",
        ]
    );
}

#[test]
fn a_scheduler_on_a_spinning_disk_is_not_a_warning() {
    let mut disk = nvme("mq-deadline");
    disk.queue.rotational = Some(true);
    let env = Environment {
        host: host(None),
        targets: vec![target("/dev/sda", TargetKind::BlockDevice, Some(disk))],
    };
    assert_eq!(warnings(&env, &uses("/dev/sda", true, false)), Vec::<String>::new());
}

#[test]
fn buffered_io_on_a_file_names_the_device_under_it() {
    let env = Environment {
        host: host(None),
        targets: vec![target("/data/scratch", TargetKind::File, Some(nvme("none")))],
    };
    let found = warnings(&env, &uses("/data/scratch", false, true));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("/data/scratch is used with buffered I/O"), "{}", found[0]);
    assert!(found[0].contains("the file on /dev/nvme0n1"), "{}", found[0]);
}

#[test]
fn write_through_matters_only_to_writes_on_hardware() {
    let mut sda = nvme("none");
    sda.name = "sda".into();
    sda.write_cache = Some("write through".into());
    let env = Environment {
        host: host(None),
        targets: vec![target("/dev/sda", TargetKind::BlockDevice, Some(sda.clone()))],
    };
    assert_eq!(warnings(&env, &uses("/dev/sda", true, false)), Vec::<String>::new());
    let found = warnings(&env, &uses("/dev/sda", true, true));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("/dev/sda reports its write cache as write through"), "{}", found[0]);
    // zram says "write through" and has no cache to speak of.
    sda.driver = None;
    let zram = Environment {
        host: host(None),
        targets: vec![target("/dev/sda", TargetKind::BlockDevice, Some(sda))],
    };
    assert_eq!(warnings(&zram, &uses("/dev/sda", true, true)), Vec::<String>::new());
}

#[test]
fn tmpfs_and_loop_without_dio_are_named() {
    let shm = TargetFacts {
        filesystem: Some("tmpfs".into()),
        in_memory: true,
        ..target("/dev/shm/f", TargetKind::File, None)
    };
    let mut loop0 = nvme("none");
    loop0.name = "loop0".into();
    loop0.driver = None;
    loop0.loop_device =
        Some(LoopFacts { backing_file: Some("/srv/disk.img".into()), direct_io: Some(false) });
    let env = Environment {
        host: host(None),
        targets: vec![shm, target("/dev/loop0", TargetKind::BlockDevice, Some(loop0))],
    };
    let all = [uses("/dev/shm/f", false, true), uses("/dev/loop0", true, true)].concat();
    assert_eq!(
        warnings(&env, &all),
        [
            // Buffered on tmpfs: one warning, not two.
            "/dev/shm/f is on tmpfs, so no device is measured and the results are memory speed; put the \
             target on the device you mean to test.",
            "/dev/loop0 is a loop device without direct I/O, so its I/O goes through the page cache of \
             /srv/disk.img and the results describe memory more than storage; re-create it with \
             `losetup --direct-io=on`.",
        ]
    );
}

#[test]
fn a_critical_warning_from_the_drive_is_a_warning() {
    let mut sick = health(100, 350);
    sick.critical_warning = 0b100;
    let env = Environment {
        host: host(None),
        targets: vec![TargetFacts {
            nvme_health: Some(sick),
            ..target("/dev/nvme0n1", TargetKind::BlockDevice, Some(nvme("none")))
        }],
    };
    let found = warnings(&env, &uses("/dev/nvme0n1", true, false));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("critical warning (reliability degraded)"), "{}", found[0]);
}

#[test]
fn describes_host_targets_and_health() {
    let env = Environment {
        host: host(Some(&[("performance", &[0, 1, 2, 3])])),
        targets: vec![
            TargetFacts {
                nvme_health: Some(health(24_023_438, 311)),
                ..target("/dev/nvme0n1", TargetKind::BlockDevice, Some(nvme("none")))
            },
            target("/data/scratch", TargetKind::File, Some(nvme("none"))),
            TargetFacts {
                nvme_health_skipped: Some("no privilege".into()),
                ..target("/dev/disk/by-id/nvme-x", TargetKind::BlockDevice, Some(nvme("none")))
            },
        ],
    };
    assert_eq!(
        env.describe(),
        [
            "host lab1 · kernel 6.1.0 · Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz x4 · 24.0 GiB · governor performance",
            "/dev/nvme0n1: Samsung SSD 990 PRO 2TB fw 4B2QJXD7, 2.0 TB, 512/512 B sectors, none, nr_requests 1023, write back",
            "NVMe health: 38 °C, 3% used, 12.3 TB written, 0 media errors, 5 unsafe shutdowns",
            "/data/scratch (ext4 on /dev/nvme0n1): Samsung SSD 990 PRO 2TB fw 4B2QJXD7, 2.0 TB, 512/512 B sectors, none, nr_requests 1023, write back",
            "/dev/disk/by-id/nvme-x (nvme0n1): Samsung SSD 990 PRO 2TB fw 4B2QJXD7, 2.0 TB, 512/512 B sectors, none, nr_requests 1023, write back",
            "NVMe health not read: no privilege",
        ]
    );
}

#[test]
fn health_deltas_pair_targets_by_path() {
    let with = |written, kelvin| TargetFacts {
        nvme_health: Some(health(written, kelvin)),
        ..target("/dev/nvme0n1", TargetKind::BlockDevice, Some(nvme("none")))
    };
    let before = Environment {
        host: host(None),
        targets: vec![with(1_000, 310), target("/x", TargetKind::File, None)],
    };
    let after = Environment {
        host: host(None),
        targets: vec![target("/x", TargetKind::File, None), with(3_000, 322)],
    };
    let deltas = before.health_deltas(&after);
    assert_eq!(deltas.len(), 1);
    assert_eq!((deltas[0].path.as_path(), deltas[0].device.as_str()), (Path::new("/dev/nvme0n1"), "nvme0n1"));
    assert_eq!(deltas[0].delta.data_written_bytes, 2_000 * DATA_UNIT_BYTES);
    assert_eq!(
        (deltas[0].delta.temperature_before_celsius, deltas[0].delta.temperature_after_celsius),
        (Some(37), Some(49))
    );
}

#[test]
fn the_fingerprint_round_trips_through_json_with_stable_names() {
    let env = Environment {
        host: host(Some(&[("performance", &[0, 1])])),
        targets: vec![TargetFacts {
            nvme_health: Some(health(10, 300)),
            ..target("/dev/nvme0n1", TargetKind::BlockDevice, Some(nvme("none")))
        }],
    };
    let json = serde_json::to_value(&env).expect("serializes");
    assert_eq!(json["host"]["memory_bytes"], 24u64 << 30);
    assert_eq!(json["host"]["cpu_governors"]["performance"], serde_json::json!([0, 1]));
    assert_eq!(json["targets"][0]["kind"], "block_device");
    assert_eq!(json["targets"][0]["device"]["capacity_bytes"], 2_000_398_934_016u64);
    assert_eq!(json["targets"][0]["nvme_health"]["data_written_bytes"], 10 * DATA_UNIT_BYTES);
    let back: Environment = serde_json::from_value(json).expect("deserializes");
    assert_eq!(back, env);
}

#[test]
fn capture_of_this_machine_has_host_facts_and_the_device_under_a_file() {
    let file = tempfile::NamedTempFile::new_in(".").expect("temp file in the current directory");
    let env = Environment::capture(&[file.path().to_path_buf()]);
    assert!(
        env.host.kernel_release.is_some()
            && env.host.logical_cpus.is_some()
            && env.host.memory_bytes.is_some()
    );
    assert_eq!(env.targets.len(), 1);
    let target = &env.targets[0];
    assert_eq!(target.kind, TargetKind::File);
    assert_eq!(env.describe().len(), 2, "{:?}", env.describe());
    match &target.device {
        Some(device) => {
            assert!(
                device.logical_block_bytes.is_some() && device.physical_block_bytes.is_some(),
                "{device:?}"
            );
            eprintln!("{}", env.describe().join("\n"));
        }
        None => {
            iolab_test_support::skip!(
                iolab_test_support::Missing::Other,
                "the device check: no block device sysfs lists under {}",
                file.path().display()
            )
        }
    }
    // The file is not NVMe here, or the health was read or skipped with a reason: never both.
    assert!(!(target.nvme_health.is_some() && target.nvme_health_skipped.is_some()));
}

/// A loop device this test attaches over a file in /dev/shm, detached when dropped.
struct TestLoop {
    node: PathBuf,
    _backing: tempfile::NamedTempFile,
}

impl TestLoop {
    /// The loop device, or what is missing for one and why.
    fn attach() -> Result<Self, (iolab_test_support::Missing, String)> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err((iolab_test_support::Missing::Root, "attaching a loop device needs root".into()));
        }
        let other = |what: String| (iolab_test_support::Missing::Other, what);
        let backing =
            tempfile::NamedTempFile::new_in("/dev/shm").map_err(|e| other(format!("no /dev/shm: {e}")))?;
        backing.as_file().set_len(1 << 20).map_err(|e| other(format!("sizing the backing file: {e}")))?;
        let output = std::process::Command::new("losetup")
            .args(["-f", "--show"])
            .arg(backing.path())
            .output()
            .map_err(|e| (iolab_test_support::Missing::Loop, format!("losetup: {e}")))?;
        if !output.status.success() {
            return Err((
                iolab_test_support::Missing::Loop,
                format!("losetup -f failed: {}", String::from_utf8_lossy(&output.stderr).trim()),
            ));
        }
        let node = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        Ok(TestLoop { node, _backing: backing })
    }
}

impl Drop for TestLoop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup").arg("-d").arg(&self.node).status();
    }
}

#[test]
fn a_loop_device_shows_its_backing_file_and_dio() {
    let test_loop = match TestLoop::attach() {
        Ok(test_loop) => test_loop,
        Err((missing, reason)) => return iolab_test_support::skip!(missing, "{reason}"),
    };
    let env = Environment::capture(std::slice::from_ref(&test_loop.node));
    let target = &env.targets[0];
    assert_eq!(target.kind, TargetKind::BlockDevice);
    let device = target.device.as_ref().expect("the loop device");
    assert_eq!(Path::new("/dev").join(&device.name), test_loop.node);
    let looped = device.loop_device.as_ref().expect("loop facts");
    assert_eq!(looped.backing_file.as_deref(), Some(test_loop._backing.path()));
    assert_eq!(looped.direct_io, Some(false));
    assert_eq!(device.capacity_bytes, Some(1 << 20));
    let found = warnings(&env, &[TargetUse { path: test_loop.node.clone(), direct: true, writes: false }]);
    assert!(found.iter().any(|w| w.contains("loop device without direct I/O")), "{found:?}");
}

#[test]
fn cores_slow_to_wake_are_named_in_the_host_line_and_never_a_warning() {
    let halting = CpuIdle {
        driver: Some("haltpoll".into()),
        governor: Some("haltpoll".into()),
        guest_halt_poll_ns: Some(0),
        states: vec![
            IdleState { name: "POLL".into(), exit_latency_us: 0, disabled: false },
            IdleState { name: "haltpoll idle".into(), exit_latency_us: 1, disabled: false },
        ],
        latency_limit_us: Some(2_000_000_000),
    };
    let host = |idle: CpuIdle| HostFacts { cpu_idle: Some(idle), ..host(None) };
    // Whether the wake-ups cost a run anything is the verdict's to test (rule cpu_wake).
    let env = Environment { host: host(halting.clone()), targets: vec![] };
    assert!(warnings(&env, &[]).is_empty());
    assert!(env.host.describe().ends_with("cores slow to wake from idle"), "{}", env.host.describe());
    let polling = CpuIdle { latency_limit_us: Some(0), ..halting };
    assert!(!host(polling).describe().contains("slow to wake"));
}
