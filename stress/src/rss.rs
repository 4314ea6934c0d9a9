//! Resident memory of the harness and the server, sampled during the run, and the
//! judgement of whether it grew without bound.

use serde::{Deserialize, Serialize};

/// Resident set size of process `pid` in KiB (`VmRSS`), `None` if it is gone.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The samples of one process and what they say.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RssSeries {
    /// `(seconds since start, KiB)`.
    pub samples: Vec<(f64, u64)>,
    /// First sample.
    pub start_kib: u64,
    /// Highest sample.
    pub peak_kib: u64,
    /// Last sample.
    pub end_kib: u64,
    /// Growth from the settled baseline to the end.
    pub growth_kib: i64,
    /// Least-squares slope over the second half of the run.
    pub slope_kib_per_s: f64,
    /// The run's memory kept growing past the limit.
    pub growing: bool,
    /// How the judgement was made, in words.
    pub note: String,
}

/// Judges samples `(t, kib)`: memory "grows without bound" when, after the first 20 %
/// of the run (start-up), the last quarter's peak exceeds the settled baseline (peak
/// of 20–50 %) by more than `limit_kib` and by more than 25 %, and the second half
/// still slopes upwards. A run that allocates once and then holds steady passes.
pub fn judge(samples: Vec<(f64, u64)>, limit_kib: u64) -> RssSeries {
    let mut s = RssSeries {
        start_kib: samples.first().map_or(0, |x| x.1),
        peak_kib: samples.iter().map(|x| x.1).max().unwrap_or(0),
        end_kib: samples.last().map_or(0, |x| x.1),
        ..RssSeries::default()
    };
    let span = samples.last().map_or(0.0, |x| x.0) - samples.first().map_or(0.0, |x| x.0);
    if samples.len() < 8 || span <= 0.0 {
        s.note = format!("{} samples: too few to judge growth", samples.len());
        s.samples = samples;
        return s;
    }
    let t0 = samples[0].0;
    let at = |f: f64| t0 + span * f;
    let peak_in = |a: f64, b: f64| {
        samples
            .iter()
            .filter(|x| x.0 >= at(a) && x.0 <= at(b))
            .map(|x| x.1)
            .max()
    };
    let baseline = peak_in(0.2, 0.5).unwrap_or(s.start_kib);
    let tail = peak_in(0.75, 1.0).unwrap_or(s.end_kib);
    let second_half: Vec<(f64, u64)> = samples.iter().copied().filter(|x| x.0 >= at(0.5)).collect();
    s.slope_kib_per_s = slope(&second_half);
    s.growth_kib = tail as i64 - baseline as i64;
    s.growing = s.growth_kib > limit_kib as i64
        && tail as f64 > baseline as f64 * 1.25
        && s.slope_kib_per_s > 0.0;
    s.note = format!(
        "baseline {baseline} KiB (peak of 20-50 % of the run), last quarter peak {tail} KiB, \
         limit +{limit_kib} KiB and +25 %"
    );
    s.samples = samples;
    s
}

fn slope(xs: &[(f64, u64)]) -> f64 {
    let n = xs.len() as f64;
    if xs.len() < 2 {
        return 0.0;
    }
    let mx = xs.iter().map(|x| x.0).sum::<f64>() / n;
    let my = xs.iter().map(|x| x.1 as f64).sum::<f64>() / n;
    let num: f64 = xs.iter().map(|x| (x.0 - mx) * (x.1 as f64 - my)).sum();
    let den: f64 = xs.iter().map(|x| (x.0 - mx).powi(2)).sum();
    if den == 0.0 {
        0.0
    } else {
        num / den
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_rss() {
        assert!(rss_kib(std::process::id()).is_some_and(|k| k > 0));
        assert_eq!(rss_kib(u32::MAX), None);
    }

    #[test]
    fn steady_memory_passes_and_a_leak_fails() {
        let steady: Vec<(f64, u64)> = (0..40)
            .map(|i| {
                (
                    i as f64 * 0.25,
                    if i < 4 { 10_000 * i } else { 40_000 + (i % 3) },
                )
            })
            .collect();
        let j = judge(steady, 65_536);
        assert!(!j.growing, "{j:?}");
        let leak: Vec<(f64, u64)> = (0..40)
            .map(|i| (i as f64 * 0.25, 50_000 + 20_000 * i))
            .collect();
        let j = judge(leak, 65_536);
        assert!(j.growing, "{j:?}");
        assert!(j.slope_kib_per_s > 0.0);
    }

    #[test]
    fn few_samples_are_not_judged() {
        let j = judge(vec![(0.0, 1), (1.0, 1_000_000)], 1);
        assert!(!j.growing);
        assert!(j.note.contains("too few"));
    }
}
