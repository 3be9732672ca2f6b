//! The NVMe SMART / Health Information log page (log identifier 02h, NVMe Base Specification
//! 2.0, section 5.16.1.3): a pure parser over its 512 bytes and the difference between two
//! reads, taken before and after a run. Reading it from a device is [`crate::nvme_ioctl`]'s job.

use iolab_stats::format::thousands;
use serde::{Deserialize, Serialize};

use crate::format::{decimal_bytes, plural};

/// The size of the log page: 128 dwords.
pub const SMART_LOG_BYTES: usize = 512;

/// One "data unit" of the read and written counters: 1000 units of 512 bytes, whatever the
/// namespace's block size (the spec counts in thousands, rounded up).
pub const DATA_UNIT_BYTES: u64 = 512 * 1000;

/// The NVMe health counters of a controller, as of one moment.
///
/// The spec's counters are 128-bit; they are kept as `u64`, saturating, which no drive reaches
/// (2^64 data units is 9.4 zettabytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmartLog {
    /// Critical Warning bits (byte 0): 0 spare below threshold, 1 temperature out of range,
    /// 2 reliability degraded, 3 read-only, 4 volatile backup failed, 5 persistent memory region
    /// read-only. Zero on a healthy drive.
    pub critical_warning: u8,
    /// Composite Temperature in kelvins, as the drive reports it.
    pub temperature_kelvin: u16,
    /// The same in degrees Celsius (kelvins − 273, as nvme-cli and smartctl print it); `None`
    /// when the drive reports 0 K, which means it has no such sensor.
    pub temperature_celsius: Option<i32>,
    /// Available Spare: the spare capacity left, in percent of the spare at manufacture.
    pub available_spare_pct: u8,
    /// Available Spare Threshold: below this percentage the drive raises critical warning bit 0.
    pub available_spare_threshold_pct: u8,
    /// Percentage Used: the vendor's estimate of the endurance consumed; may exceed 100.
    pub percentage_used: u8,
    /// Data Units Read (each [`DATA_UNIT_BYTES`]).
    pub data_units_read: u64,
    /// Data Units Written (each [`DATA_UNIT_BYTES`]).
    pub data_units_written: u64,
    /// `data_units_read` in bytes.
    pub data_read_bytes: u64,
    /// `data_units_written` in bytes.
    pub data_written_bytes: u64,
    /// Host Read Commands completed.
    pub host_read_commands: u64,
    /// Host Write Commands completed.
    pub host_write_commands: u64,
    /// Controller Busy Time, in minutes with I/O outstanding.
    pub controller_busy_minutes: u64,
    /// Power Cycles.
    pub power_cycles: u64,
    /// Power On Hours.
    pub power_on_hours: u64,
    /// Unsafe Shutdowns: power lost without a shutdown notification.
    pub unsafe_shutdowns: u64,
    /// Media and Data Integrity Errors: unrecovered data errors.
    pub media_errors: u64,
    /// Number of Error Information Log Entries over the controller's life.
    pub error_log_entries: u64,
    /// Warning Composite Temperature Time: minutes spent above the warning threshold.
    pub warning_temperature_minutes: u32,
    /// Critical Composite Temperature Time: minutes spent above the critical threshold.
    pub critical_temperature_minutes: u32,
}

/// What the critical warning bits mean, lowest bit first.
const CRITICAL_WARNINGS: [&str; 6] = [
    "available spare below threshold",
    "temperature out of range",
    "reliability degraded",
    "read-only",
    "volatile memory backup failed",
    "persistent memory region read-only",
];

/// Why bytes are not a SMART log page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an NVMe SMART log page is {SMART_LOG_BYTES} bytes, got {0}")]
pub struct ShortLog(pub usize);

impl SmartLog {
    /// Parses the 512 bytes of log page 02h; a shorter slice is refused.
    pub fn parse(page: &[u8]) -> Result<Self, ShortLog> {
        let page: &[u8; SMART_LOG_BYTES] =
            page.get(..SMART_LOG_BYTES).and_then(|p| p.try_into().ok()).ok_or(ShortLog(page.len()))?;
        Ok(SmartLog::from_page(page))
    }

    /// Reads the fields of a whole page: every bit pattern is a valid page.
    pub fn from_page(page: &[u8; SMART_LOG_BYTES]) -> Self {
        let u128_at = |at: usize| {
            let mut le = [0u8; 16];
            le.copy_from_slice(&page[at..at + 16]);
            u64::try_from(u128::from_le_bytes(le)).unwrap_or(u64::MAX)
        };
        let u32_at = |at: usize| u32::from_le_bytes([page[at], page[at + 1], page[at + 2], page[at + 3]]);
        let temperature_kelvin = u16::from_le_bytes([page[1], page[2]]);
        let data_units_read = u128_at(32);
        let data_units_written = u128_at(48);
        SmartLog {
            critical_warning: page[0],
            temperature_kelvin,
            temperature_celsius: celsius(temperature_kelvin),
            available_spare_pct: page[3],
            available_spare_threshold_pct: page[4],
            percentage_used: page[5],
            data_units_read,
            data_units_written,
            data_read_bytes: data_units_read.saturating_mul(DATA_UNIT_BYTES),
            data_written_bytes: data_units_written.saturating_mul(DATA_UNIT_BYTES),
            host_read_commands: u128_at(64),
            host_write_commands: u128_at(80),
            controller_busy_minutes: u128_at(96),
            power_cycles: u128_at(112),
            power_on_hours: u128_at(128),
            unsafe_shutdowns: u128_at(144),
            media_errors: u128_at(160),
            error_log_entries: u128_at(176),
            warning_temperature_minutes: u32_at(192),
            critical_temperature_minutes: u32_at(196),
        }
    }

    /// The names of the critical warning bits that are set.
    pub fn critical_warnings(&self) -> Vec<&'static str> {
        CRITICAL_WARNINGS
            .iter()
            .enumerate()
            .filter(|(bit, _)| self.critical_warning & (1 << bit) != 0)
            .map(|(_, name)| *name)
            .collect()
    }

    /// One line: "NVMe health: 38 °C, 3% used, 12.3 TB written, 0 media errors, 5 unsafe
    /// shutdowns", with any critical warning first.
    pub fn describe(&self) -> String {
        let warnings = self.critical_warnings();
        let critical =
            if warnings.is_empty() { String::new() } else { format!("CRITICAL: {}; ", warnings.join(", ")) };
        format!(
            "NVMe health: {critical}{}, {}% used, {} written, {}, {}",
            temperature(self.temperature_celsius),
            self.percentage_used,
            decimal_bytes(self.data_written_bytes),
            plural(self.media_errors, "media error"),
            plural(self.unsafe_shutdowns, "unsafe shutdown"),
        )
    }
}

/// What a run did to a drive's health counters: `after − before` of two [`SmartLog`]s.
///
/// The drive's own write count includes what the host wrote plus nothing of its internal
/// garbage collection (that is in vendor logs only), so `data_written_bytes` is the host's
/// writes rounded to the drive's 512,000-byte units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthDelta {
    /// Data the drive counted as read during the run, in bytes (multiples of 512,000).
    pub data_read_bytes: u64,
    /// Data the drive counted as written during the run, in bytes (multiples of 512,000).
    pub data_written_bytes: u64,
    /// Host read commands completed during the run.
    pub host_read_commands: u64,
    /// Host write commands completed during the run.
    pub host_write_commands: u64,
    /// New media and data integrity errors: anything above zero deserves a look.
    pub media_errors: u64,
    /// New unsafe shutdowns (a power loss during the run).
    pub unsafe_shutdowns: u64,
    /// New error log entries.
    pub error_log_entries: u64,
    /// Composite temperature before the run, °C (`None`: no sensor).
    pub temperature_before_celsius: Option<i32>,
    /// Composite temperature after the run, °C.
    pub temperature_after_celsius: Option<i32>,
    /// Percentage Used after minus before (endurance the run consumed, in whole percent).
    pub percentage_used_change: i16,
    /// Minutes newly spent above the warning temperature: the drive may have throttled.
    pub warning_temperature_minutes: u32,
}

impl HealthDelta {
    /// The change from `before` to `after`. Counters only grow; one that went down (a
    /// different drive, or a counter reset by a format) gives zero rather than a wrapped number.
    pub fn between(before: &SmartLog, after: &SmartLog) -> Self {
        HealthDelta {
            data_read_bytes: after.data_read_bytes.saturating_sub(before.data_read_bytes),
            data_written_bytes: after.data_written_bytes.saturating_sub(before.data_written_bytes),
            host_read_commands: after.host_read_commands.saturating_sub(before.host_read_commands),
            host_write_commands: after.host_write_commands.saturating_sub(before.host_write_commands),
            media_errors: after.media_errors.saturating_sub(before.media_errors),
            unsafe_shutdowns: after.unsafe_shutdowns.saturating_sub(before.unsafe_shutdowns),
            error_log_entries: after.error_log_entries.saturating_sub(before.error_log_entries),
            temperature_before_celsius: before.temperature_celsius,
            temperature_after_celsius: after.temperature_celsius,
            percentage_used_change: i16::from(after.percentage_used) - i16::from(before.percentage_used),
            warning_temperature_minutes: after
                .warning_temperature_minutes
                .saturating_sub(before.warning_temperature_minutes),
        }
    }

    /// One line: "NVMe during the run: 1.2 TB written, 0 B read, 2,300,000 write / 0 read
    /// commands, 38 °C → 52 °C, +0% used, 0 new media errors".
    pub fn describe(&self) -> String {
        let mut parts = vec![
            format!("{} written", decimal_bytes(self.data_written_bytes)),
            format!("{} read", decimal_bytes(self.data_read_bytes)),
            format!(
                "{} write / {} read commands",
                thousands(self.host_write_commands as f64),
                thousands(self.host_read_commands as f64)
            ),
            format!(
                "{} → {}",
                temperature(self.temperature_before_celsius),
                temperature(self.temperature_after_celsius)
            ),
            format!("{:+}% used", self.percentage_used_change),
            plural(self.media_errors, "new media error"),
        ];
        if self.unsafe_shutdowns > 0 {
            parts.push(plural(self.unsafe_shutdowns, "new unsafe shutdown"));
        }
        if self.warning_temperature_minutes > 0 {
            parts.push(format!(
                "{} min above the warning temperature (the drive may have throttled)",
                self.warning_temperature_minutes
            ));
        }
        format!("NVMe during the run: {}", parts.join(", "))
    }
}

/// Celsius of a composite temperature in kelvins; 0 K is "not reported".
fn celsius(kelvin: u16) -> Option<i32> {
    (kelvin != 0).then(|| i32::from(kelvin) - 273)
}

fn temperature(celsius: Option<i32>) -> String {
    celsius.map_or_else(|| "temperature not reported".to_string(), |c| format!("{c} °C"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The bytes of a hex fixture: "offset: b0 b1 ..." lines, '#' comments.
    pub(crate) fn fixture_bytes(text: &str) -> Vec<u8> {
        text.lines()
            .filter(|line| !line.trim_start().starts_with('#') && !line.trim().is_empty())
            .flat_map(|line| line.split_once(':').map_or(line, |(_, bytes)| bytes).split_whitespace())
            .map(|byte| u8::from_str_radix(byte, 16).expect("hex byte"))
            .collect()
    }

    fn captured() -> Vec<u8> {
        fixture_bytes(include_str!("../fixtures/smart-log-ecclesia.hex"))
    }

    #[test]
    fn parses_a_log_captured_from_a_real_drive() {
        let page = captured();
        assert_eq!(page.len(), SMART_LOG_BYTES);
        // What nvme-cli printed for the same drive (quoted in the fixture's header).
        assert_eq!(
            SmartLog::parse(&page),
            Ok(SmartLog {
                critical_warning: 0,
                temperature_kelvin: 314,
                temperature_celsius: Some(41),
                available_spare_pct: 98,
                available_spare_threshold_pct: 10,
                percentage_used: 0,
                data_units_read: 1044,
                data_units_written: 15,
                data_read_bytes: 1044 * 512_000,
                data_written_bytes: 15 * 512_000,
                host_read_commands: 1_027_083,
                host_write_commands: 1905,
                controller_busy_minutes: 0,
                power_cycles: 4,
                power_on_hours: 408,
                unsafe_shutdowns: 1,
                media_errors: 0,
                error_log_entries: 0,
                warning_temperature_minutes: 0,
                critical_temperature_minutes: 0,
            })
        );
    }

    /// A page with every field set to a distinct value, so an offset off by one shows.
    fn page_with(fields: &[(usize, &[u8])]) -> Vec<u8> {
        let mut page = vec![0u8; SMART_LOG_BYTES];
        for (at, bytes) in fields {
            page[*at..*at + bytes.len()].copy_from_slice(bytes);
        }
        page
    }

    #[test]
    fn every_field_is_read_from_its_offset_little_endian() {
        let page = page_with(&[
            (0, &[0b0000_0101]),
            (1, &300u16.to_le_bytes()),
            (3, &[7, 5, 120]),
            (32, &(1u128 << 40).to_le_bytes()),
            (48, &0x0102_0304_0506u128.to_le_bytes()),
            (64, &11u128.to_le_bytes()),
            (80, &12u128.to_le_bytes()),
            (96, &13u128.to_le_bytes()),
            (112, &14u128.to_le_bytes()),
            (128, &15u128.to_le_bytes()),
            (144, &16u128.to_le_bytes()),
            (160, &17u128.to_le_bytes()),
            (176, &18u128.to_le_bytes()),
            (192, &19u32.to_le_bytes()),
            (196, &20u32.to_le_bytes()),
        ]);
        let log = SmartLog::parse(&page).expect("512 bytes");
        assert_eq!((log.temperature_kelvin, log.temperature_celsius), (300, Some(27)));
        assert_eq!(
            (log.available_spare_pct, log.available_spare_threshold_pct, log.percentage_used),
            (7, 5, 120)
        );
        assert_eq!((log.data_units_read, log.data_units_written), (1 << 40, 0x0102_0304_0506));
        assert_eq!(log.data_read_bytes, (1u64 << 40) * 512_000);
        assert_eq!(
            [
                log.host_read_commands,
                log.host_write_commands,
                log.controller_busy_minutes,
                log.power_cycles,
                log.power_on_hours,
                log.unsafe_shutdowns,
                log.media_errors,
                log.error_log_entries
            ],
            [11, 12, 13, 14, 15, 16, 17, 18]
        );
        assert_eq!((log.warning_temperature_minutes, log.critical_temperature_minutes), (19, 20));
        assert_eq!(log.critical_warnings(), ["available spare below threshold", "reliability degraded"]);
    }

    #[test]
    fn counters_beyond_64_bits_saturate() {
        let page = page_with(&[(48, &(u128::from(u64::MAX) + 5).to_le_bytes())]);
        let log = SmartLog::parse(&page).expect("512 bytes");
        assert_eq!((log.data_units_written, log.data_written_bytes), (u64::MAX, u64::MAX));
    }

    #[test]
    fn zero_kelvin_means_no_sensor() {
        let log = SmartLog::parse(&[0u8; SMART_LOG_BYTES]).expect("512 bytes");
        assert_eq!(log.temperature_celsius, None);
        assert!(
            log.describe().starts_with("NVMe health: temperature not reported, 0% used"),
            "{}",
            log.describe()
        );
    }

    #[test]
    fn a_short_page_is_refused() {
        assert_eq!(SmartLog::parse(&[0u8; 511]), Err(ShortLog(511)));
    }

    fn log(written_units: u64, media_errors: u64, kelvin: u16, used: u8) -> SmartLog {
        let mut log = SmartLog::parse(&captured()).expect("fixture");
        log.data_units_written = written_units;
        log.data_written_bytes = written_units * DATA_UNIT_BYTES;
        log.media_errors = media_errors;
        log.temperature_kelvin = kelvin;
        log.temperature_celsius = celsius(kelvin);
        log.percentage_used = used;
        log
    }

    #[test]
    fn the_delta_is_what_the_run_did() {
        let before = log(15, 0, 311, 3);
        let mut after = log(2_015, 2, 325, 4);
        after.host_write_commands += 1_000_000;
        after.unsafe_shutdowns += 1;
        let delta = HealthDelta::between(&before, &after);
        assert_eq!(
            delta,
            HealthDelta {
                data_read_bytes: 0,
                data_written_bytes: 2000 * 512_000,
                host_read_commands: 0,
                host_write_commands: 1_000_000,
                media_errors: 2,
                unsafe_shutdowns: 1,
                error_log_entries: 0,
                temperature_before_celsius: Some(38),
                temperature_after_celsius: Some(52),
                percentage_used_change: 1,
                warning_temperature_minutes: 0,
            }
        );
        assert_eq!(
            delta.describe(),
            "NVMe during the run: 1.0 GB written, 0 B read, 1,000,000 write / 0 read commands, \
             38 °C → 52 °C, +1% used, 2 new media errors, 1 new unsafe shutdown"
        );
        // A counter that went down (another drive, a reset) is no negative wrap.
        assert_eq!(HealthDelta::between(&after, &before).data_written_bytes, 0);
        assert_eq!(HealthDelta::between(&after, &before).percentage_used_change, -1);
    }

    #[test]
    fn describes_health_in_one_line() {
        let mut health = log(24_023_438, 0, 311, 3);
        health.unsafe_shutdowns = 5;
        assert_eq!(
            health.describe(),
            "NVMe health: 38 °C, 3% used, 12.3 TB written, 0 media errors, 5 unsafe shutdowns"
        );
        health.critical_warning = 0b10;
        health.media_errors = 1;
        assert_eq!(
            health.describe(),
            "NVMe health: CRITICAL: temperature out of range; 38 °C, 3% used, 12.3 TB written, \
             1 media error, 5 unsafe shutdowns"
        );
    }
}
