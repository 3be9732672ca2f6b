//! A drive's health as of one moment, as a burn-in samples it every few minutes: the figures
//! whose trend over hours and weeks matters (temperature, media errors, endurance used, data
//! written). Read by iolab_environment (the NVMe SMART log, SATA/SAS sysfs), judged by
//! iolab_analysis::burnin.

use serde::{Deserialize, Serialize};

/// One reading of a drive's health. A figure its source does not give is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthSample {
    pub taken_at_unix_s: i64,
    /// Where the figures came from: "nvme" (the SMART / Health log) or "sysfs".
    pub source: String,
    /// The kernel's name of the drive ("nvme0n1", "sda").
    pub device: String,
    pub temperature_celsius: Option<i32>,
    /// NVMe Media and Data Integrity Errors over the drive's life.
    pub media_errors: Option<u64>,
    /// NVMe Percentage Used: the vendor's estimate of the endurance consumed.
    pub percentage_used: Option<u8>,
    pub available_spare_pct: Option<u8>,
    /// The drive's own count of data written over its life, in bytes.
    pub data_written_bytes: Option<u64>,
    pub data_read_bytes: Option<u64>,
    /// NVMe critical warning bits; 0 on a healthy drive.
    pub critical_warning: Option<u8>,
    /// The kernel's count of failed commands to a SCSI/SATA device since boot (`ioerr_cnt`).
    pub io_errors: Option<u64>,
}
