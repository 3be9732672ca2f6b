use super::*;

/// Writes `files` (relative path, content) under `root`.
fn tree(root: &Path, files: &[(&str, &[u8])]) {
    for (path, content) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, content).expect("file");
    }
}

fn queue(scheduler: &str, rotational: bool) -> QueueInfo {
    QueueInfo {
        nr_requests: Some(1023),
        hw_queue_depth: Some(1023),
        hw_queues: Some(8),
        scheduler: Some(scheduler.into()),
        rotational: Some(rotational),
        ..QueueInfo::default()
    }
}

#[test]
fn reads_an_nvme_partition_with_its_disk_model_and_firmware() {
    // The shape of /sys/devices/pci0000:00/.../nvme/nvme0/nvme0n1 on Linux 6.x.
    let sys = tempfile::tempdir().expect("temp dir");
    let disk = sys.path().join("nvme0/nvme0n1");
    tree(
        &disk,
        &[
            ("size", b"3907029168\n"),
            ("queue/logical_block_size", b"512\n"),
            ("queue/physical_block_size", b"512\n"),
            ("queue/write_cache", b"write back\n"),
            ("nvme0n1p2/partition", b"2\n"),
            ("nvme0n1p2/size", b"2097152\n"),
        ],
    );
    let controller = disk.join("device");
    tree(
        &controller,
        &[
            ("model", b"Samsung SSD 990 PRO 2TB                 \n"),
            ("firmware_rev", b"4B2QJXD7\n"),
            ("serial", b"S6Z2NF0W123456A     \n"),
            ("transport", b"pcie\n"),
        ],
    );
    std::fs::create_dir_all(controller.join("device")).expect("pci dir");
    std::os::unix::fs::symlink("../../../bus/pci/drivers/nvme", controller.join("device/driver"))
        .expect("link");

    let partition = read_device(&disk.join("nvme0n1p2"), "259:2", queue("none", false));
    assert_eq!(
        partition,
        DeviceFacts {
            name: "nvme0n1p2".into(),
            major_minor: "259:2".into(),
            disk: Some("nvme0n1".into()),
            driver: Some("nvme".into()),
            model: Some("Samsung SSD 990 PRO 2TB".into()),
            vendor: None,
            firmware_rev: Some("4B2QJXD7".into()),
            serial: Some("S6Z2NF0W123456A".into()),
            capacity_bytes: Some(2_097_152 * 512),
            logical_block_bytes: Some(512),
            physical_block_bytes: Some(512),
            queue: queue("none", false),
            write_cache: Some("write back".into()),
            loop_device: None,
        }
    );
    let whole = read_device(&disk, "259:0", queue("none", false));
    assert_eq!((whole.disk, whole.capacity_bytes), (None, Some(3_907_029_168 * 512)));
    let target = TargetFacts {
        path: "/dev/nvme0n1".into(),
        kind: TargetKind::BlockDevice,
        filesystem: None,
        mount_point: None,
        in_memory: false,
        device: Some(read_device(&disk, "259:0", queue("none", false))),
        nvme_health: None,
        nvme_health_skipped: None,
    };
    assert_eq!(
        target.describe(),
        "/dev/nvme0n1: Samsung SSD 990 PRO 2TB fw 4B2QJXD7, 2.0 TB, 512/512 B sectors, none, \
         nr_requests 1023, write back"
    );
}

#[test]
fn reads_a_scsi_disk_with_its_revision_and_vpd_serial() {
    let sys = tempfile::tempdir().expect("temp dir");
    let disk = sys.path().join("sda");
    let mut vpd = vec![0x00, 0x80, 0x00, 0x14];
    vpd.extend_from_slice(b"  WD-WCC4N1234567    ");
    tree(
        &disk,
        &[
            ("size", b"7814037168\n"),
            ("queue/logical_block_size", b"512\n"),
            ("queue/physical_block_size", b"4096\n"),
            ("queue/write_cache", b"write through\n"),
            ("device/model", b"WDC WD40EFRX-68N\n"),
            ("device/vendor", b"ATA     \n"),
            ("device/rev", b"0A82\n"),
            ("device/vpd_pg80", &vpd),
        ],
    );
    std::os::unix::fs::symlink("../../bus/scsi/drivers/sd", disk.join("device/driver")).expect("link");
    let sda = read_device(&disk, "8:0", queue("mq-deadline", true));
    assert_eq!(sda.driver.as_deref(), Some("sd"));
    assert_eq!(sda.vendor.as_deref(), Some("ATA"));
    assert_eq!(sda.firmware_rev.as_deref(), Some("0A82"));
    assert_eq!(sda.serial.as_deref(), Some("WD-WCC4N1234567"));
    assert_eq!(sda.physical_block_bytes, Some(4096));
    assert_eq!(
        sda.describe(),
        "ATA WDC WD40EFRX-68N fw 0A82, 4.0 TB, 512/4096 B sectors, mq-deadline, nr_requests 1023, \
         write through, rotational"
    );
}

#[test]
fn reads_a_loop_device_and_its_backing_file() {
    let sys = tempfile::tempdir().expect("temp dir");
    let disk = sys.path().join("loop3");
    tree(
        &disk,
        &[
            ("size", b"2048\n"),
            ("loop/backing_file", b"/dev/shm/disk.img\n"),
            ("loop/dio", b"0\n"),
            ("queue/write_cache", b"write back\n"),
        ],
    );
    let loop3 = read_device(&disk, "7:3", QueueInfo::default());
    assert_eq!(
        loop3.loop_device,
        Some(LoopFacts { backing_file: Some("/dev/shm/disk.img".into()), direct_io: Some(false) })
    );
    assert_eq!((&loop3.driver, &loop3.model, &loop3.serial), (&None, &None, &None));
    assert_eq!(loop3.describe(), "loop3, 1.0 MB, write back, loop over /dev/shm/disk.img (dio off)");
}

#[test]
fn the_queue_is_stored_flat_as_before_and_older_facts_still_read() {
    let sys = tempfile::tempdir().expect("temp dir");
    let device = read_device(sys.path(), "8:0", queue("mq-deadline", true));
    let json = serde_json::to_value(&device).expect("JSON");
    assert_eq!(json["nr_requests"], 1023, "{json}");
    assert_eq!(
        (&json["hw_queues"], &json["scheduler"], &json["rotational"]),
        (&8.into(), &"mq-deadline".into(), &true.into())
    );
    assert!(json.get("queue").is_none(), "{json}");
    assert_eq!(serde_json::from_value::<DeviceFacts>(json.clone()).expect("read back"), device);
    // Facts stored before the queue was read lack its fields: they read as unknown.
    let mut older = json;
    for key in ["nr_requests", "hw_queue_depth", "hw_queues", "scheduler", "rotational"] {
        older.as_object_mut().expect("an object").remove(key);
    }
    let older: DeviceFacts = serde_json::from_value(older).expect("older facts");
    assert_eq!(older.queue, QueueInfo::default());
}

#[test]
fn a_vpd_page_gives_its_serial() {
    assert_eq!(vpd_serial(&[0, 0x80, 0, 4, b'A', b'B', b'C', b' ']).as_deref(), Some("ABC"));
    assert_eq!(vpd_serial(&[0, 0x80, 0, 0]), None);
    assert_eq!(vpd_serial(&[0, 0x80]), None);
}

#[test]
fn finds_the_mount_of_a_device_number() {
    let mountinfo = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684084k
40 27 254:0 /srv/data /mnt/my\\040data rw,relatime shared:5 - ext4 /dev/vda rw
";
    let at = |dev, path: &str| find_mount(mountinfo, dev, Path::new(path));
    assert_eq!(at("254:0", "/work/x"), Some(Mount { filesystem: "ext4".into(), mount_point: "/".into() }));
    assert_eq!(
        at("254:0", "/mnt/my data/f"),
        Some(Mount { filesystem: "ext4".into(), mount_point: "/mnt/my data".into() })
    );
    assert_eq!(at("0:23", "/dev/shm/f").map(|m| m.filesystem), Some("tmpfs".into()));
    assert_eq!(at("9:9", "/x"), None);
}

#[test]
fn a_file_here_is_served_by_the_device_under_its_filesystem() {
    let file = tempfile::NamedTempFile::new_in(".").expect("temp file in the current directory");
    let facts = TargetFacts::capture(file.path());
    assert_eq!(facts.kind, TargetKind::File);
    assert!(facts.filesystem.is_some(), "{facts:?}");
    if !matches!(backing(file.path()), Backing::Device(_)) {
        return iolab_test_support::skip!(
            iolab_test_support::Missing::Other,
            "the current directory has no block device sysfs lists (tmpfs, btrfs, overlay)"
        );
    }
    let device = facts.device.as_ref().expect("the device behind the file");
    assert!(!device.name.is_empty());
    assert!(device.logical_block_bytes.is_some_and(|n| n >= 512), "{device:?}");
    assert!(device.physical_block_bytes.is_some_and(|n| n >= 512), "{device:?}");
    assert!(device.capacity_bytes.is_some_and(|n| n > 0), "{device:?}");
    assert!(!facts.in_memory);
    assert!(facts.describe().contains(&format!("/dev/{}", device.name)), "{}", facts.describe());
}

#[test]
fn a_file_on_tmpfs_lives_in_memory() {
    let Ok(file) = tempfile::NamedTempFile::new_in("/dev/shm") else {
        return iolab_test_support::skip!(iolab_test_support::Missing::Other, "no /dev/shm here");
    };
    let facts = TargetFacts::capture(file.path());
    if facts.filesystem.as_deref() != Some("tmpfs") {
        return iolab_test_support::skip!(iolab_test_support::Missing::Other, "/dev/shm is not a tmpfs here");
    }
    assert!(facts.in_memory && facts.device.is_none(), "{facts:?}");
    assert!(
        facts.describe().ends_with(": on tmpfs, in memory; no device sees its I/O"),
        "{}",
        facts.describe()
    );
    // Not created yet: the facts of its directory.
    let absent = TargetFacts::capture(&file.path().with_extension("not-yet"));
    assert_eq!(
        (absent.kind, absent.in_memory, absent.filesystem.as_deref()),
        (TargetKind::Absent, true, Some("tmpfs"))
    );
}
