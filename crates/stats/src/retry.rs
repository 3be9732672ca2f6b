//! A study's point measured again because something besides the target disturbed it: the
//! attempts dropped, each with the verdict that dropped it (issue 30 item 5).

use serde::{Deserialize, Serialize};

use crate::verdict::{Bottleneck, Verdict};

/// An attempt at a point that was measured again: another load or a stolen CPU shared what it
/// measured, so its figures were not the target's alone.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DisturbedAttempt {
    pub cause: Bottleneck,
    /// The attempt's verdict, in one sentence.
    pub summary: String,
    /// What the attempt measured, all operations.
    pub iops: f64,
}

impl DisturbedAttempt {
    /// The attempt that measured `iops` and was judged `verdict`, when that verdict disturbs
    /// the measure; `None` otherwise.
    pub fn of(verdict: &Verdict, iops: f64) -> Option<DisturbedAttempt> {
        verdict.cause.disturbs_the_measure().then(|| DisturbedAttempt {
            cause: verdict.cause,
            summary: verdict.summary.clone(),
            iops,
        })
    }
}

impl Bottleneck {
    /// Another load or a stolen CPU: the run measured something besides the target, and a
    /// study's point judged so is measured again, then, if still disturbed, kept but left out
    /// of what the study concludes.
    pub fn disturbs_the_measure(self) -> bool {
        matches!(self, Bottleneck::OtherLoad | Bottleneck::Steal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_another_load_or_a_stolen_cpu_disturbs_a_measure() {
        let disturbing: Vec<Bottleneck> = [
            Bottleneck::OtherLoad,
            Bottleneck::Steal,
            Bottleneck::Device,
            Bottleneck::Writeback,
            Bottleneck::ConfiguredLimit,
            Bottleneck::Undetermined,
        ]
        .into_iter()
        .filter(|c| c.disturbs_the_measure())
        .collect();
        assert_eq!(disturbing, [Bottleneck::OtherLoad, Bottleneck::Steal]);
        let verdict = Verdict::of(Bottleneck::Steal, "The hypervisor took 30%".into(), Vec::new());
        let attempt = DisturbedAttempt::of(&verdict, 1234.0).expect("disturbed");
        assert_eq!(
            (attempt.cause, attempt.summary.as_str(), attempt.iops),
            (Bottleneck::Steal, "The hypervisor took 30%", 1234.0)
        );
        assert!(
            DisturbedAttempt::of(&Verdict::of(Bottleneck::Device, String::new(), Vec::new()), 1.0).is_none()
        );
    }
}
