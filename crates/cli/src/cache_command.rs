//! `iolab cache`: random reads over growing working sets, each warmed first, refined around
//! every step up in latency (iolab_studies::cache) until each cache or fast tier's size is
//! known within --precision-pct (iolab_analysis::cache), then promotion and pollution.

use std::process::ExitCode;

use iolab_analysis::cache::{find_tiers, CacheRule, CacheSummary};
use iolab_report::{cache_json, cache_text};
use iolab_studies::cache::CacheStudy;

use crate::args::{CacheArgs, StoreArgs};
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::{exit, job_source};

pub fn run(store: &StoreArgs, args: CacheArgs) -> ExitCode {
    let rule =
        CacheRule { rise_pct: args.rise_pct, precision_pct: args.precision_pct, ..CacheRule::default() };
    let study = match job_source::study_input(args.target, &args.workload.options).and_then(|input| {
        CacheStudy::new(
            &input,
            args.sizes.unwrap_or_default(),
            rule,
            Some(args.promotion_time),
            !args.no_pollution,
        )
        .map_err(|e| e.to_string())
    }) {
        Ok(study) => study,
        Err(message) => return exit::usage(message),
    };
    Measurement::new("cache", &study.plan).run(
        store,
        &mut Place::here(),
        |lab, progress| study.run(lab, progress),
        |found, report| {
            let summary = CacheSummary {
                found: find_tiers(&found.points, &study.rule),
                rule: study.rule,
                region_bytes: found.region_bytes,
                points: found.points,
                promotion: found.promotion,
                pollution: found.pollution,
                notes: found.notes,
            };
            Ok(Delivery::study(&study.plan.output, cache_json(&summary, report), || {
                cache_text(&summary, report)
            }))
        },
    )
}
