//! What an I/O blender lost to itself (`iolab run JOB --each-alone`): each concurrent group of
//! a job measured alone, then all together, and how much of its throughput each kept and how
//! much its tail grew beside the others. The hyperconverged question: what does the backup
//! stream cost the database.

use iolab_stats::central::share_pct;
use iolab_stats::result::{GroupResult, JobResult, OpSummary};
use serde::{Deserialize, Serialize};

/// A group that kept less than this share of its IOPS alone lost to the others.
pub const KEPT_PCT: f64 = 90.0;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BlendRow {
    pub group: String,
    pub access: String,
    pub alone_iops: f64,
    pub together_iops: f64,
    /// Together as a share of alone, 0..100+.
    pub kept_pct: f64,
    pub alone_p99_ns: Option<u64>,
    pub together_p99_ns: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BlendSummary {
    pub rows: Vec<BlendRow>,
    pub sum_alone_iops: f64,
    pub together_iops: f64,
    /// Together as a share of the sum of each group alone, 0..100+.
    pub kept_pct: f64,
    /// The findings in plain words, the group that lost most first.
    pub verdict: Vec<String>,
}

/// `alone[i]` ran group i of the job by itself; `together` ran every group at once, in order.
pub fn summarize(alone: &[&JobResult], together: &JobResult) -> BlendSummary {
    let rows: Vec<BlendRow> = alone
        .iter()
        .zip(&together.groups)
        .map(|(alone, group)| {
            let by_itself = alone.groups.first().map_or(&alone.total, |g| &g.total);
            row(group, by_itself)
        })
        .collect();
    let sum: f64 = rows.iter().map(|r| r.alone_iops).sum();
    let kept_pct = share_pct(together.total.iops, sum);
    BlendSummary {
        verdict: verdict(&rows),
        rows,
        sum_alone_iops: sum,
        together_iops: together.total.iops,
        kept_pct,
    }
}

fn row(together: &GroupResult, alone: &OpSummary) -> BlendRow {
    BlendRow {
        group: together.name.clone(),
        access: together.access.clone(),
        alone_iops: alone.iops,
        together_iops: together.total.iops,
        kept_pct: share_pct(together.total.iops, alone.iops),
        alone_p99_ns: alone.percentile(99.0),
        together_p99_ns: together.total.percentile(99.0),
    }
}

/// "db (randread 4KiB) kept 41% of its IOPS beside the others (12,000 of 29,300) and its p99
/// grew 3.2x (180us to 576us)", for each group that lost; or that every group kept its pace.
fn verdict(rows: &[BlendRow]) -> Vec<String> {
    let mut losers: Vec<&BlendRow> = rows.iter().filter(|r| r.kept_pct < KEPT_PCT).collect();
    losers.sort_by(|a, b| a.kept_pct.total_cmp(&b.kept_pct));
    if losers.is_empty() {
        return vec![format!(
            "every group kept at least {KEPT_PCT:.0}% of its IOPS alone: the groups do not slow each other here"
        )];
    }
    losers
        .iter()
        .map(|r| {
            let tail = match (r.alone_p99_ns, r.together_p99_ns) {
                (Some(a), Some(t)) if a > 0 => format!(
                    " and its p99 grew {:.1}x ({} to {})",
                    t as f64 / a as f64,
                    iolab_stats::format::latency(a as f64),
                    iolab_stats::format::latency(t as f64)
                ),
                _ => String::new(),
            };
            format!(
                "{} ({}) kept {:.0}% of its IOPS beside the others ({} of {}){tail}",
                r.group,
                r.access,
                r.kept_pct,
                iolab_stats::format::thousands(r.together_iops),
                iolab_stats::format::thousands(r.alone_iops)
            )
        })
        .collect()
}
