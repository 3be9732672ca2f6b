//! The table of fio options this translation knows: those with an iolab equivalent, and those
//! that change only fio's reporting, which are dropped with a note. Every other option is
//! refused: a fio option that silently did nothing here would make a different workload.

/// fio's other spellings of an option, and the one used here.
pub fn canonical(key: &str) -> &str {
    match key {
        "blocksize" => "bs",
        "blockalign" => "ba",
        "readwrite" => "rw",
        "timeout" => "runtime",
        "io_limit" => "io_size",
        "wait_for_previous" => "stonewall",
        "randrepeat" | "rand_repeatable" => "randrepeat",
        other => other,
    }
}

/// Options translated into iolab keys (see docs/job-file.md, "fio job files").
pub const MAPPED: &[&str] = &[
    "name",
    "rw",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "bssplit",
    "ba",
    "iodepth",
    "numjobs",
    "size",
    "io_size",
    "offset",
    "filename",
    "directory",
    "nrfiles",
    "direct",
    "buffered",
    "runtime",
    "ramp_time",
    "time_based",
    "ioengine",
    "rate_iops",
    "rate_process",
    "percentage_random",
    "thinktime",
    "thinktime_blocks",
    "random_distribution",
    "verify",
    "randseed",
    "randrepeat",
    "norandommap",
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "kb_base",
    "loops",
    "file_service_type",
    "stonewall",
];

/// Why an option that does not change the workload is dropped; `None` for every other option.
pub fn dropped(key: &str) -> Option<&'static str> {
    Some(match key {
        "description" => "a description for fio's output; dropped",
        "group_reporting" | "new_group" => {
            "changes only how fio reports; iolab always reports each group and the job as a whole"
        }
        "unified_rw_reporting" => "changes only how fio reports; iolab reports reads, writes and both",
        "thread" => "fio's threads instead of processes; iolab's workers are always threads",
        "per_job_logs" | "write_bw_log" | "write_lat_log" | "write_iops_log" | "write_hist_log"
        | "log_avg_msec" | "log_hist_msec" | "log_max_value" | "log_offset" | "log_unix_epoch" => {
            "fio's log files; iolab keeps a per-interval series in its results instead (--json, the store)"
        }
        "clat_percentiles" | "lat_percentiles" | "slat_percentiles" | "percentile_list" => {
            "fio's percentile list; iolab reports p50 to p99.9999 from exact histograms"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_option_is_both_mapped_and_dropped() {
        for key in MAPPED {
            assert!(dropped(key).is_none(), "{key}");
            assert_eq!(canonical(key), *key, "{key} is its own canonical name");
        }
    }
}
