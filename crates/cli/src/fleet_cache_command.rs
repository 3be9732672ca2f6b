//! `iolab fleet ... cache`: the cache study on every host at once, each host's working sets
//! shares of its own region (iolab_studies::cache_fleet), each host's tiers judged on its own
//! curve, the fleet's merged curve beside them, kept as one run (kind `fleet cache`).

use std::process::ExitCode;

use iolab_analysis::cache::{find_tiers, CacheRule, CacheSummary, CacheTiers};
use iolab_analysis::cache_fleet::{fleet_sentences, FleetCache, FleetCacheSummary, HostCache};
use iolab_report::{fleet_cache_json, fleet_cache_text};
use iolab_studies::cache::{CacheFound, CacheStudy};

use crate::args::{CacheArgs, StoreArgs};
use crate::flow::{Delivery, Measurement};
use crate::place::Place;
use crate::{exit, job_source};

pub fn run(args: CacheArgs, store: &StoreArgs, place: &mut Place<'_>) -> ExitCode {
    let rule =
        CacheRule { rise_pct: args.rise_pct, precision_pct: args.precision_pct, ..CacheRule::default() };
    let study = match job_source::study_input(args.target, &args.workload.options).and_then(|input| {
        let study = CacheStudy::new(
            &input,
            args.sizes.unwrap_or_default(),
            rule,
            Some(args.promotion_time),
            !args.no_pollution,
        )
        .map_err(|e| e.to_string())?;
        study.check_fleet().map_err(|e| e.to_string())?;
        Ok(study)
    }) {
        Ok(study) => study,
        Err(message) => return exit::usage(message),
    };
    Measurement::new("cache", &study.plan).run(
        store,
        place,
        |lab, progress| study.run_fleet(lab, progress),
        |found, report| {
            let hosts: Vec<HostCache> = found
                .hosts
                .into_iter()
                .map(|host| HostCache {
                    host: host.host,
                    failure: host.failure,
                    summary: summary(host.found, study.rule, find_tiers),
                })
                .collect();
            let named: Vec<(&str, &CacheTiers)> = hosts
                .iter()
                .filter(|h| h.failure.is_none())
                .map(|h| (h.host.as_str(), &h.summary.found))
                .collect();
            let sentences = fleet_sentences(&named);
            // A sum of caches on separate hosts is no tier anyone has: the merged curve is shown,
            // its tiers are judged per host.
            let merged = summary(found.merged, study.rule, |_, _| CacheTiers {
                tiers: Vec::new(),
                judged: false,
                note: Some("tiers are judged per host (each host has its own cache): see fleet.hosts".into()),
            });
            let summary = FleetCacheSummary {
                merged,
                fleet: FleetCache { refinement: "union".into(), hosts, sentences },
            };
            Ok(Delivery::study(&study.plan.output, fleet_cache_json(&summary, report), || {
                fleet_cache_text(&summary, report)
            }))
        },
    )
}

fn summary(
    found: CacheFound,
    rule: CacheRule,
    judge: impl Fn(&[iolab_analysis::cache::CachePoint], &CacheRule) -> CacheTiers,
) -> CacheSummary {
    CacheSummary {
        found: judge(&found.points, &rule),
        rule,
        region_bytes: found.region_bytes,
        points: found.points,
        promotion: found.promotion,
        pollution: found.pollution,
        notes: found.notes,
    }
}
