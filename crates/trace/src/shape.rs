//! What a trace is as a workload (`iolab trace show`): its mix of operations and sizes, how
//! sequential it is, where on the device it goes (zone shares, a zoned and a zipf fit, each
//! with its error), how its requests arrive (gaps and burstiness), how many were outstanding,
//! and the device's service times per operation and size. Every figure is computed from the
//! requests, none assumed from how the trace was made.

use std::collections::HashMap;

use serde::Serialize;

use crate::{Request, Trace, TraceOp};

/// Fine zones the region is cut into to see where the I/Os go.
pub const ZONES: usize = 100;
/// The most zones a zoned fit uses.
const MAX_FIT_ZONES: usize = 5;
/// Sizes listed by name; the rest are "other".
const LISTED_SIZES: usize = 8;
/// How many recent request ends per stream count as "where the next sequential request starts".
const SEQUENTIAL_STREAMS: usize = 16;

#[derive(Debug, Clone, Serialize)]
pub struct Shape {
    pub requests: u64,
    pub duration_s: f64,
    /// Requests per second over the trace's duration (0 for an untimed trace).
    pub iops: f64,
    pub bytes: u64,
    pub ops: Vec<OpShare>,
    /// Reads among the requests that move data, in percent.
    pub read_pct: f64,
    /// Data requests by size, largest share first; one entry with `bytes` 0 holds the rest.
    pub sizes: Vec<SizeShare>,
    /// Data requests that start where one of the recent requests ended, in percent.
    pub sequential_pct: f64,
    pub placement: Placement,
    pub arrivals: Option<Arrivals>,
    pub outstanding: Option<Outstanding>,
    pub service: Vec<ServiceClass>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OpShare {
    pub op: TraceOp,
    pub requests: u64,
    pub pct: f64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct SizeShare {
    /// 0: every size not listed.
    pub bytes: u32,
    pub pct: f64,
}

/// Where the data requests went, over the region from `start` to `end` (the device when its
/// size is known, else the span the requests touched).
#[derive(Debug, Clone, Serialize)]
pub struct Placement {
    pub start: u64,
    pub end: u64,
    /// The share of the data requests whose offset falls in each of `ZONES` equal zones.
    pub zone_pct: Vec<f64>,
    /// The hottest zones that take 80% of the requests, as a share of the region, in percent.
    pub hottest_for_80_pct: f64,
    /// Contiguous zones from the start, each `(io_pct, size_pct)` in whole percents: what
    /// `--distribution zoned:` would be given.
    pub zoned_fit: Vec<(u32, u32)>,
    /// The share of the requests the zoned fit puts in another fine zone than the trace did
    /// (total variation distance), in percent.
    pub zoned_error_pct: f64,
    /// The zipf exponent whose hottest blocks take the shares the trace's hottest blocks take,
    /// and the largest difference in those shares, in points. `None` with no repeated block.
    pub zipf_fit: Option<(f64, f64)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Arrivals {
    pub mean_gap_us: f64,
    pub p50_gap_us: f64,
    pub p90_gap_us: f64,
    pub p99_gap_us: f64,
    /// The gaps' coefficient of variation: about 1 for independent arrivals (Poisson), below 1
    /// for evenly spaced ones, above 1 for bursts.
    pub gap_cv: f64,
    /// Requests per second in the busiest and the quietest whole second, and in the busiest
    /// 10 ms.
    pub busiest_second_iops: f64,
    pub quietest_second_iops: f64,
    pub peak_10ms_iops: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Outstanding {
    /// Averaged over the trace's time.
    pub mean: f64,
    pub max: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServiceClass {
    pub op: TraceOp,
    /// 0: sizes not listed.
    pub bytes: u32,
    pub requests: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

pub fn shape(trace: &Trace) -> Shape {
    let requests = &trace.requests;
    let duration_s = trace.header.duration_ns as f64 / 1e9;
    let data: Vec<&Request> = requests.iter().filter(|r| r.op.moves_data()).collect();
    let mut ops = Vec::new();
    for op in [TraceOp::Read, TraceOp::Write, TraceOp::Discard, TraceOp::Flush] {
        let of: Vec<_> = requests.iter().filter(|r| r.op == op).collect();
        if !of.is_empty() {
            ops.push(OpShare {
                op,
                requests: of.len() as u64,
                pct: pct(of.len(), requests.len()),
                bytes: of.iter().map(|r| u64::from(r.len)).sum(),
            });
        }
    }
    let reads = data.iter().filter(|r| r.op == TraceOp::Read).count();
    let sizes = size_mix(&data);
    let listed: Vec<u32> = sizes.iter().map(|s| s.bytes).filter(|&b| b > 0).collect();
    Shape {
        requests: requests.len() as u64,
        duration_s,
        iops: if trace.header.timed && duration_s > 0.0 { requests.len() as f64 / duration_s } else { 0.0 },
        bytes: requests.iter().filter(|r| r.op.moves_data()).map(|r| u64::from(r.len)).sum(),
        ops,
        read_pct: pct(reads, data.len()),
        sizes,
        sequential_pct: sequential_pct(&data),
        placement: placement(&data, trace.header.device_bytes),
        arrivals: trace.header.timed.then(|| arrivals(requests)).flatten(),
        outstanding: outstanding(trace),
        service: service(requests, &listed),
    }
}

fn pct(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn size_mix(data: &[&Request]) -> Vec<SizeShare> {
    let mut counts: HashMap<u32, usize> = HashMap::new();
    for r in data {
        *counts.entry(r.len).or_default() += 1;
    }
    let mut by_count: Vec<(u32, usize)> = counts.into_iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut sizes: Vec<SizeShare> = by_count
        .iter()
        .take(LISTED_SIZES)
        .map(|&(bytes, n)| SizeShare { bytes, pct: pct(n, data.len()) })
        .collect();
    let rest: usize = by_count.iter().skip(LISTED_SIZES).map(|&(_, n)| n).sum();
    if rest > 0 {
        sizes.push(SizeShare { bytes: 0, pct: pct(rest, data.len()) });
    }
    sizes
}

/// A request is sequential when it starts where one of the last `SEQUENTIAL_STREAMS` data
/// requests to its stream ended: interleaved sequential streams count as sequential.
fn sequential_pct(data: &[&Request]) -> f64 {
    let mut recent: HashMap<u16, Vec<u64>> = HashMap::new();
    let mut sequential = 0;
    for r in data {
        let ends = recent.entry(r.stream).or_default();
        if let Some(i) = ends.iter().position(|&end| end == r.offset) {
            sequential += 1;
            ends.remove(i);
        } else if ends.len() == SEQUENTIAL_STREAMS {
            ends.remove(0);
        }
        ends.push(r.end());
    }
    pct(sequential, data.len())
}

fn placement(data: &[&Request], device_bytes: Option<u64>) -> Placement {
    let end = device_bytes.unwrap_or_else(|| data.iter().map(|r| r.end()).max().unwrap_or(0)).max(1);
    let start = if device_bytes.is_some() { 0 } else { data.iter().map(|r| r.offset).min().unwrap_or(0) };
    let span = (end - start).max(1) as u128;
    let mut counts = vec![0usize; ZONES];
    for r in data {
        let zone = (u128::from(r.offset.saturating_sub(start)) * ZONES as u128 / span) as usize;
        counts[zone.min(ZONES - 1)] += 1;
    }
    let zone_pct: Vec<f64> = counts.iter().map(|&c| pct(c, data.len())).collect();
    let mut hottest = zone_pct.clone();
    hottest.sort_by(|a, b| b.total_cmp(a));
    let (mut taken, mut zones_for_80) = (0.0, 0);
    for share in hottest {
        if taken >= 80.0 - 1e-9 {
            break;
        }
        taken += share;
        zones_for_80 += 1;
    }
    let (zoned_fit, zoned_error_pct) = zoned_fit(&zone_pct);
    Placement {
        start,
        end,
        hottest_for_80_pct: 100.0 * zones_for_80 as f64 / ZONES as f64,
        zone_pct,
        zoned_fit,
        zoned_error_pct,
        zipf_fit: zipf_fit(data, start, end),
    }
}

/// The contiguous segmentation of the fine zones, into at most `MAX_FIT_ZONES` segments of
/// even density, that misplaces the fewest requests; more segments only where each takes the
/// error down by at least a point.
fn zoned_fit(zone_pct: &[f64]) -> (Vec<(u32, u32)>, f64) {
    let n = zone_pct.len();
    let prefix: Vec<f64> = std::iter::once(0.0)
        .chain(zone_pct.iter().scan(0.0, |s, &x| {
            *s += x;
            Some(*s)
        }))
        .collect();
    // Error of one segment i..j at its mean density: half the L1 distance.
    let cost = |i: usize, j: usize| {
        let mean = (prefix[j] - prefix[i]) / (j - i) as f64;
        zone_pct[i..j].iter().map(|x| (x - mean).abs()).sum::<f64>() / 2.0
    };
    let mut best: Option<(Vec<usize>, f64)> = None;
    for k in 1..=MAX_FIT_ZONES.min(n) {
        // dp[m][j]: least error of zones 0..j in m segments; cut[m][j]: where the last began.
        let mut dp = vec![vec![f64::INFINITY; n + 1]; k + 1];
        let mut cut = vec![vec![0usize; n + 1]; k + 1];
        dp[0][0] = 0.0;
        for m in 1..=k {
            for j in m..=n {
                for i in (m - 1)..j {
                    let e = dp[m - 1][i] + cost(i, j);
                    if e < dp[m][j] {
                        dp[m][j] = e;
                        cut[m][j] = i;
                    }
                }
            }
        }
        let mut bounds = vec![n];
        let mut j = n;
        for m in (1..=k).rev() {
            j = cut[m][j];
            bounds.push(j);
        }
        bounds.reverse();
        let error = dp[k][n];
        match &best {
            Some((_, e)) if e - error < 1.0 => break,
            _ => best = Some((bounds, error)),
        }
    }
    let Some((bounds, error)) = best else { return (Vec::new(), 0.0) };
    let segments: Vec<(f64, f64)> = bounds
        .windows(2)
        .map(|w| (prefix[w[1]] - prefix[w[0]], 100.0 * (w[1] - w[0]) as f64 / n as f64))
        .collect();
    let io = whole_percents(&segments.iter().map(|s| s.0).collect::<Vec<_>>());
    let size = whole_percents(&segments.iter().map(|s| s.1).collect::<Vec<_>>());
    (io.into_iter().zip(size).collect(), error)
}

/// Rounds shares that add up to 100 to whole percents that still do (largest remainders).
fn whole_percents(shares: &[f64]) -> Vec<u32> {
    let total: f64 = shares.iter().sum();
    if total <= 0.0 {
        return vec![0; shares.len()];
    }
    let scaled: Vec<f64> = shares.iter().map(|s| s * 100.0 / total).collect();
    let mut out: Vec<u32> = scaled.iter().map(|s| s.floor() as u32).collect();
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| (scaled[b] - scaled[b].floor()).total_cmp(&(scaled[a] - scaled[a].floor())));
    let short = 100u32.saturating_sub(out.iter().sum());
    for &i in order.iter().cycle().take(short as usize) {
        out[i] += 1;
    }
    out
}

/// Fractions of the blocks whose share of the requests the zipf fit matches.
const HOT_FRACTIONS: [f64; 5] = [0.001, 0.01, 0.05, 0.2, 0.5];

/// Blocks are of the most common request size; the exponent is searched on a 0.01 grid from 0
/// to 3 for the least squared difference in the hottest blocks' shares.
fn zipf_fit(data: &[&Request], start: u64, end: u64) -> Option<(f64, f64)> {
    let block = {
        let mut counts: HashMap<u32, usize> = HashMap::new();
        data.iter().for_each(|r| *counts.entry(r.len).or_default() += 1);
        u64::from(counts.into_iter().max_by_key(|&(len, n)| (n, len))?.0).max(512)
    };
    let blocks = ((end - start) / block).max(1);
    let mut hits: HashMap<u64, u64> = HashMap::new();
    for r in data {
        *hits.entry((r.offset - start.min(r.offset)) / block).or_default() += 1;
    }
    if hits.values().all(|&h| h == 1) {
        return None;
    }
    let mut counts: Vec<u64> = hits.into_values().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let total = data.len() as f64;
    let observed: Vec<f64> = HOT_FRACTIONS
        .iter()
        .map(|f| {
            let top = ((f * blocks as f64).ceil() as usize).min(counts.len());
            counts[..top].iter().sum::<u64>() as f64 / total
        })
        .collect();
    let predicted = |theta: f64| -> Vec<f64> {
        let all = harmonic(blocks as f64, theta);
        HOT_FRACTIONS.iter().map(|f| harmonic((f * blocks as f64).ceil().max(1.0), theta) / all).collect()
    };
    let (theta, _) = (0..=300)
        .map(|i| {
            let theta = f64::from(i) / 100.0;
            let err: f64 = predicted(theta).iter().zip(&observed).map(|(p, o)| (p - o).powi(2)).sum();
            (theta, err)
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let worst = predicted(theta).iter().zip(&observed).map(|(p, o)| (p - o).abs()).fold(0.0, f64::max);
    Some((theta, 100.0 * worst))
}

/// The generalized harmonic number H(n, theta) = sum of k^-theta for k = 1..n (Euler-Maclaurin).
fn harmonic(n: f64, theta: f64) -> f64 {
    if n <= 1.0 {
        return n.max(0.0);
    }
    let tail = (1.0 + n.powf(-theta)) / 2.0;
    if (theta - 1.0).abs() < 1e-9 {
        n.ln() + tail
    } else {
        (n.powf(1.0 - theta) - 1.0) / (1.0 - theta) + tail
    }
}

/// The nearest-rank percentile `p` (0..100) of `sorted`; 0 when it is empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn arrivals(requests: &[Request]) -> Option<Arrivals> {
    if requests.len() < 2 {
        return None;
    }
    let mut gaps: Vec<f64> = requests.windows(2).map(|w| (w[1].at_ns - w[0].at_ns) as f64 / 1e3).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    gaps.sort_by(f64::total_cmp);
    let last = requests.last().map_or(0, |r| r.at_ns);
    let (busiest_second, quietest_second) = busiest_and_quietest(requests, 1_000_000_000, last);
    let (busiest_10ms, _) = busiest_and_quietest(requests, 10_000_000, last);
    Some(Arrivals {
        mean_gap_us: mean,
        p50_gap_us: percentile(&gaps, 50.0),
        p90_gap_us: percentile(&gaps, 90.0),
        p99_gap_us: percentile(&gaps, 99.0),
        gap_cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
        busiest_second_iops: busiest_second as f64,
        quietest_second_iops: quietest_second as f64,
        peak_10ms_iops: busiest_10ms as f64 * 100.0,
    })
}

/// The most and the fewest requests issued in one window of `window_ns` (from the trace's
/// start) among the whole windows before `last_ns`, the trace in issue order; a trace shorter
/// than a window counts its one window. Counted as the requests pass, never in an array as long
/// as the trace's time, which an iolog may make any length.
fn busiest_and_quietest(requests: &[Request], window_ns: u64, last_ns: u64) -> (u64, u64) {
    let whole = (last_ns / window_ns).max(1);
    let (mut busiest, mut quietest) = (0u64, u64::MAX);
    let (mut window, mut count) = (0u64, 0u64);
    for r in requests {
        let at = r.at_ns / window_ns;
        if at != window {
            if window < whole {
                busiest = busiest.max(count);
                quietest = quietest.min(count);
            }
            // Whole windows skipped without a request were quiet.
            if at > window + 1 && window + 1 < whole {
                quietest = 0;
            }
            (window, count) = (at, 0);
        }
        count += 1;
    }
    if window < whole {
        busiest = busiest.max(count);
        quietest = quietest.min(count);
    }
    (busiest, if quietest == u64::MAX { 0 } else { quietest })
}

/// Requests outstanding at the device over the trace's time, from issue and completion; a
/// request the trace saw no completion of (one still in flight at its end) counts to its end.
/// `None` when the source has no completions at all (an iolog).
pub fn outstanding(trace: &Trace) -> Option<Outstanding> {
    let requests = &trace.requests;
    if requests.iter().all(|r| r.service_ns.is_none()) {
        return None;
    }
    let mut edges: Vec<(u64, i64)> = Vec::with_capacity(requests.len() * 2);
    for r in requests {
        let end = r.service_ns.map_or(trace.header.duration_ns.max(r.at_ns), |ns| r.at_ns.saturating_add(ns));
        edges.push((r.at_ns, 1));
        edges.push((end, -1));
    }
    edges.sort_unstable();
    let (first, last) = (edges[0].0, edges[edges.len() - 1].0);
    let (mut now, mut most, mut area, mut at) = (0i64, 0i64, 0f64, first);
    for (t, step) in edges {
        area += now as f64 * (t - at) as f64;
        at = t;
        now += step;
        most = most.max(now);
    }
    let span = (last - first).max(1) as f64;
    Some(Outstanding { mean: area / span, max: most as u32 })
}

fn service(requests: &[Request], listed: &[u32]) -> Vec<ServiceClass> {
    let mut classes: HashMap<(TraceOp, u32), Vec<f64>> = HashMap::new();
    for r in requests {
        let Some(ns) = r.service_ns else { continue };
        let size = if !r.op.moves_data() || listed.contains(&r.len) { r.len } else { 0 };
        classes.entry((r.op, size)).or_default().push(ns as f64 / 1e3);
    }
    let mut out: Vec<ServiceClass> = classes
        .into_iter()
        .map(|((op, bytes), mut us)| {
            us.sort_by(f64::total_cmp);
            ServiceClass {
                op,
                bytes,
                requests: us.len() as u64,
                mean_us: us.iter().sum::<f64>() / us.len() as f64,
                p50_us: percentile(&us, 50.0),
                p99_us: percentile(&us, 99.0),
                max_us: us.last().copied().unwrap_or(0.0),
            }
        })
        .collect();
    out.sort_by(|a, b| a.op.cmp(&b.op).then(b.requests.cmp(&a.requests)));
    out
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod tests;
