//! The bottleneck verdict of one job: what limited it, in one plain sentence, with the figures
//! that show it. The rules are small functions over typed facts (`facts.rs`), tried in a fixed
//! order; the first that holds wins. The order and every threshold are written down in
//! docs/bottleneck-verdict.md, which this module follows.
//!
//! Why this order: a result that measured RAM (page cache) must say so whatever else it shows;
//! a run disturbed by another load on its device measured that load too; a full device queue
//! explains a busy submitting thread (it had nothing more it could hand over), and a kernel
//! thread at its limit (a loop driver's worker, a RAID thread) explains a busy device; cores
//! that were the wall are named by who held them; and "raise --qd" is advice only once nothing
//! was saturated, the device idled, and no kernel thread of iolab's was at its limit.

mod advice;
mod cpu_rules;
mod device_rules;
mod evidence;
mod facts;
mod fallback_rules;
mod limit_rules;
mod words;
mod writeback;

use iolab_stats::advice::Change;
use iolab_stats::result::{Bottleneck, JobResult, Verdict};

pub use advice::CONFIRMING_GAIN_PCT;
pub use device_rules::{GENERATOR_WAIT_PCT, LATE_START_NS};
pub use facts::same_disk;
use facts::Facts;
pub use facts::{
    BUSY_DEVICE_PCT, CACHED_BYTES_SHARE, FOREIGN_IOS_SLACK, FOREIGN_QUEUE_SLACK, FULL_QUEUE_SHARE,
    HELD_SHARE, KERNEL_THREAD_LIMIT_PCT, PUNTED_FULL_QUEUE_SHARE, STARVED_SHARE,
};

/// What a rule found: the cause, one sentence, the figures that decided it (shown first), and
/// the setting it says would lift the limit (a hypothesis the job's trial tests).
pub struct Finding {
    pub cause: Bottleneck,
    pub summary: String,
    pub lead: Vec<String>,
    pub advice: Option<Hypothesis>,
}

/// A change the finding says would lift the limit, and what a trial of it would show.
pub struct Hypothesis {
    pub change: Change,
    /// The cause a confirming trial shows, with why, when it is not the finding's own.
    pub if_confirmed: Option<(Bottleneck, String)>,
    /// The cause a refuting trial shows, with why; `None`: undetermined, with what the figures
    /// ruled out.
    pub if_refuted: Option<(Bottleneck, String)>,
}

impl Finding {
    fn new(cause: Bottleneck, summary: String, lead: Vec<String>) -> Option<Finding> {
        Some(Finding { cause, summary, lead, advice: None })
    }

    /// The finding, advising `change` (none when the job has no such setting to change): a
    /// trial that gains confirms it, one that does not leaves the cause undetermined.
    fn advising(self, change: Option<Change>) -> Finding {
        let advice = change.map(|change| Hypothesis { change, if_confirmed: None, if_refuted: None });
        Finding { advice, ..self }
    }
}

/// A rule: a finding when it holds.
type Rule = fn(&Facts<'_>) -> Option<Finding>;

/// The rules in the order they are tried, each with the name docs/bottleneck-verdict.md gives it.
const RULES: &[(&str, Rule)] = &[
    ("nothing_completed", device_rules::nothing_completed),
    ("rate_limit", device_rules::rate_kept),
    ("replay_kept", device_rules::replay_kept),
    ("cpu_quota", limit_rules::cpu_quota),
    ("affinity", limit_rules::affinity_mask),
    ("io_throttle", limit_rules::io_throttle),
    ("dirty_throttle", limit_rules::dirty_throttle),
    ("memory_limit", limit_rules::memory_limit),
    ("null_engine", device_rules::null_engine),
    ("page_cache", device_rules::page_cache),
    ("writeback", device_rules::writeback_punting),
    ("other_load", device_rules::other_load_on_device),
    ("queue", device_rules::queue_full),
    ("kernel_thread", cpu_rules::kernel_thread_at_limit),
    ("device", device_rules::device_busy),
    ("io_wq_thread", cpu_rules::io_wq_thread_at_limit),
    ("interrupts", cpu_rules::interrupt_cpu),
    ("steal", cpu_rules::steal),
    ("submitting_thread", cpu_rules::submitting_thread),
    ("saturated_machine", cpu_rules::saturated_machine),
    ("crowded_lane", cpu_rules::crowded_lane),
    ("sqpoll", cpu_rules::sqpoll_starving),
    ("no_cpu_figures", fallback_rules::no_cpu_figures),
    ("target", fallback_rules::target_without_device),
    ("device_not_holding", fallback_rules::device_busy_not_holding),
    ("cpu_wake", fallback_rules::cpu_wake),
    ("concurrency", fallback_rules::concurrency),
];

/// What limited `job`, judged from its results alone (so a stored result can be judged again).
pub fn judge(job: &JobResult) -> Verdict {
    let facts = Facts::of(job);
    let finding = RULES
        .iter()
        .find_map(|(_, rule)| rule(&facts))
        .unwrap_or_else(|| fallback_rules::undetermined(&facts));
    let (finding, advice) = advice::settle(finding, &facts);
    // What the summary or the rule's own lines already say is not said again.
    let rest: Vec<String> = evidence::lines(&facts)
        .into_iter()
        .filter(|line| !finding.lead.contains(line) && !finding.summary.contains(line.as_str()))
        .collect();
    Verdict {
        cause: finding.cause,
        summary: finding.summary,
        evidence: finding.lead.into_iter().chain(rest).collect(),
        advice,
    }
}

/// The names of the rules, in the order they are tried.
pub fn rule_names() -> Vec<&'static str> {
    RULES.iter().map(|(name, _)| *name).collect()
}
