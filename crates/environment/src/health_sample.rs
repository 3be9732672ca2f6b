//! A drive's health as of one moment, for a burn-in's trend: the figures that change over hours
//! and weeks (temperature, media errors, endurance used, data written), taken from the NVMe
//! SMART / Health log, or, for SATA and SAS drives, from what sysfs offers without privilege
//! (the kernel's I/O error count, and the temperature where the drivetemp module is loaded).
//! A target with neither gets a reason, never a made-up sample.

use std::path::{Path, PathBuf};

use iolab_stats::health::HealthSample;

use crate::nvme_ioctl::{is_nvme_name, read_smart_log};
use crate::smart::SmartLog;
use crate::target::{device_node, TargetFacts};

/// The figures of an NVMe SMART / Health log read at `taken_at_unix_s`.
pub fn sample_of_smart(taken_at_unix_s: i64, device: &str, log: &SmartLog) -> HealthSample {
    HealthSample {
        taken_at_unix_s,
        source: "nvme".into(),
        device: device.to_string(),
        temperature_celsius: log.temperature_celsius,
        media_errors: Some(log.media_errors),
        percentage_used: Some(log.percentage_used),
        available_spare_pct: Some(log.available_spare_pct),
        data_written_bytes: Some(log.data_written_bytes),
        data_read_bytes: Some(log.data_read_bytes),
        critical_warning: Some(log.critical_warning),
        io_errors: None,
    }
}

/// How the health of the drive behind one target is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HealthSource {
    /// An NVMe drive: its SMART / Health log through the admin passthrough (root).
    Nvme { device: String, node: PathBuf },
    /// A SCSI/SATA drive's sysfs directory (`/sys/block/sda/device`), read without privilege.
    Sysfs { device: String, dir: PathBuf },
}

impl HealthSource {
    /// The source for the drive behind `target` (a device, or a file on one), or why there is
    /// none: the reason names the device and says what would be sampled.
    pub fn for_target(target: &Path) -> Result<HealthSource, String> {
        let facts = TargetFacts::capture(target);
        let Some(device) = facts.device else {
            let what = if facts.in_memory { "lives in memory" } else { "has no block device sysfs names" };
            return Err(format!("{} {what}: no drive, so no drive health to sample", target.display()));
        };
        let disk = device.disk.clone().unwrap_or_else(|| device.name.clone());
        if is_nvme_name(&disk) {
            return Ok(HealthSource::Nvme { device: disk, node: device_node(&device) });
        }
        let dir = PathBuf::from(format!("/sys/block/{disk}/device"));
        if dir.join("ioerr_cnt").exists() {
            return Ok(HealthSource::Sysfs { device: disk, dir });
        }
        let driver = device.driver.as_deref().map_or_else(String::new, |d| format!(" (driver {d})"));
        Err(format!(
            "{} is on {disk}{driver}, which is not an NVMe drive and offers no SATA/SAS health \
             counters in sysfs: no drive health to sample",
            target.display()
        ))
    }

    /// Reads the drive's health now. An NVMe read can fail (no root: admin commands need
    /// CAP_SYS_ADMIN); the reason says so.
    pub fn sample(&self, taken_at_unix_s: i64) -> Result<HealthSample, String> {
        match self {
            HealthSource::Nvme { device, node } => read_smart_log(node)
                .map(|log| sample_of_smart(taken_at_unix_s, device, &log))
                .map_err(|skip| skip.to_string()),
            HealthSource::Sysfs { device, dir } => Ok(sysfs_sample(taken_at_unix_s, device, dir)),
        }
    }
}

/// What sysfs says of a SCSI/SATA drive: `ioerr_cnt` (hex, failed commands since boot) and the
/// first drivetemp sensor (millidegrees Celsius), where present.
fn sysfs_sample(taken_at_unix_s: i64, device: &str, dir: &Path) -> HealthSample {
    let read = |path: PathBuf| std::fs::read_to_string(path).ok().map(|s| s.trim().to_string());
    let io_errors = read(dir.join("ioerr_cnt")).and_then(|text| parse_count(&text));
    let temperature_celsius = std::fs::read_dir(dir.join("hwmon"))
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .find_map(|hwmon| read(hwmon.path().join("temp1_input")))
        .and_then(|milli| milli.parse::<i64>().ok())
        .map(|milli| (milli / 1000) as i32);
    HealthSample {
        taken_at_unix_s,
        source: "sysfs".into(),
        device: device.to_string(),
        temperature_celsius,
        media_errors: None,
        percentage_used: None,
        available_spare_pct: None,
        data_written_bytes: None,
        data_read_bytes: None,
        critical_warning: None,
        io_errors,
    }
}

/// A sysfs counter: "0x1a" (SCSI's ioerr_cnt) or decimal.
fn parse_count(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smart::tests::fixture_bytes;

    #[test]
    fn a_sample_of_a_captured_smart_log_has_its_figures() {
        let page = fixture_bytes(include_str!("../fixtures/smart-log-ecclesia.hex"));
        let log = SmartLog::parse(&page).expect("the captured page parses");
        let sample = sample_of_smart(1_700_000_000, "nvme0n1", &log);
        assert_eq!(
            sample,
            HealthSample {
                taken_at_unix_s: 1_700_000_000,
                source: "nvme".into(),
                device: "nvme0n1".into(),
                temperature_celsius: Some(41),
                media_errors: Some(0),
                percentage_used: Some(0),
                available_spare_pct: Some(98),
                data_written_bytes: Some(15 * 512_000),
                data_read_bytes: Some(1044 * 512_000),
                critical_warning: Some(0),
                io_errors: None,
            }
        );
        // What the store keeps reads back the same.
        let json = serde_json::to_value(&sample).expect("serializes");
        assert_eq!(serde_json::from_value::<HealthSample>(json).expect("reads back"), sample);
    }

    #[test]
    fn a_target_without_nvme_is_skipped_with_a_reason() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let source = HealthSource::for_target(file.path());
        if let Ok(source) = source {
            // The temp dir is on an NVMe or SATA drive here: that drive is the source.
            return iolab_test_support::skip!(
                iolab_test_support::Missing::Other,
                "the temp dir is on a drive with health to sample ({source:?}), not on one without"
            );
        }
        // This machine has no NVMe drive under its temp dir (a virtio disk or tmpfs): the
        // sampler says so, naming the target, instead of sampling nothing in silence.
        let reason = source.expect_err("no source");
        assert!(reason.contains("not an NVMe drive") || reason.contains("lives in memory"), "{reason}");
        assert!(reason.contains(&file.path().display().to_string()), "{reason}");
        assert!(reason.ends_with("no drive health to sample"), "{reason}");
    }

    #[test]
    fn an_nvme_drive_is_sampled_or_says_why_not() {
        let Some(node) = std::fs::read_dir("/sys/class/block")
            .ok()
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .find(|name| is_nvme_name(name) && !name.contains('p'))
            .map(|name| PathBuf::from("/dev").join(name))
            .filter(|node| node.exists())
        else {
            return iolab_test_support::skip!(
                iolab_test_support::Missing::Other,
                "this machine has no NVMe drive (no nvme namespace in /sys/class/block): the live \
                 health sample is tested on the captured log page only"
            );
        };
        let source = HealthSource::for_target(&node).expect("an NVMe namespace is a health source");
        assert!(matches!(source, HealthSource::Nvme { .. }), "{source:?}");
        match source.sample(1) {
            Ok(sample) => assert_eq!((sample.source.as_str(), sample.media_errors.is_some()), ("nvme", true)),
            // Without root the admin command is refused, and the reason says what it needs.
            Err(reason) => {
                assert!(reason.contains("CAP_SYS_ADMIN") || reason.contains("refused"), "{reason}")
            }
        }
    }

    #[test]
    fn sysfs_counters_are_read_hex_or_decimal() {
        assert_eq!(parse_count("0x1a"), Some(26));
        assert_eq!(parse_count("7"), Some(7));
        assert_eq!(parse_count("x"), None);
    }

    #[test]
    fn a_sysfs_drive_gives_its_error_count_and_temperature() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("ioerr_cnt"), "0x3\n").expect("write");
        std::fs::create_dir_all(dir.path().join("hwmon/hwmon4")).expect("mkdir");
        std::fs::write(dir.path().join("hwmon/hwmon4/temp1_input"), "38000\n").expect("write");
        let source = HealthSource::Sysfs { device: "sda".into(), dir: dir.path().to_path_buf() };
        let sample = source.sample(5).expect("sysfs reads");
        assert_eq!((sample.io_errors, sample.temperature_celsius), (Some(3), Some(38)));
        assert_eq!((sample.source.as_str(), sample.media_errors), ("sysfs", None));
    }
}
