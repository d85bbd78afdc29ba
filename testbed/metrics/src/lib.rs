//! xdcc-metrics: what a run's measurements mean, defined once.
//!
//! The kernel testbed (`testbed/runner/report.py`, through the
//! `xdcc-metrics` binary) and the simulator (`xdcc-sim`, as a library) both
//! turn their runs into a [`Run`] record — cumulative per-flow and per-port
//! counters sampled over time, plus one line per sized flow — and call
//! [`analyze`]. So a testbed number and a simulator number with the same name
//! are the same quantity computed by the same code.
//!
//! The definitions (a run of `duration_s` seconds):
//!
//! * **Steady window**: the period when every long flow runs, from the latest
//!   long-flow start to the earliest stop; metrics use its second half (the
//!   first half is convergence). Without long flows: the run's second half.
//! * **Flow rate**: bytes acknowledged over the steady window (cumulative
//!   counter, linear between samples) / its length.
//! * **Utilization** of a port: bytes it sent between its first and last
//!   sample inside the window / (line rate × the time between them).
//! * **Queue mean and p99**: over the port's queue samples inside the window.
//!   On a port that emulates propagation delay (netem on the WAN border), the
//!   packets still on the emulated wire are not queue ([`queues`]).
//! * **Percentiles**: nearest rank ([`percentile`]).
//! * **Jain's index**: of the long flows' mean rates (two or more flows).
//! * **Jain over time**: per [`BIN_S`] bin, over the flows active for the
//!   whole bin. **Convergence time**: from the moment the last long flow has
//!   started to the start of the first bin after the last bin whose index is
//!   below [`CONVERGED_JAIN`] ([`convergence`]); none if the last bin is.
//! * **Drops**: the port's drop counter over the run; **retransmits**: the
//!   long flows' retransmission counters at their last sample.
//! * **FCT**: per traffic kind, path class and size class ([`SIZE_CLASSES`]):
//!   count, mean and p99 of the completed flows; failed and unfinished flows
//!   are counted apart.
//! * **Phases**: each period between long-flow starts and stops (1 s or
//!   longer), per port: utilization and queue over its second half.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

mod run;
pub use run::{analyze, phases, queues, steady_window, Analysis, ClassStats, Cpu, Event, Fct, FctRow, Flow, Gaps, Metrics, Phase, Port, PortPhase, Run, TimeSeries, STUCK_FRAC};

/// Bin of the rate and Jain time series (seconds).
pub const BIN_S: f64 = 0.5;
/// "Converged": Jain's index at or above this.
pub const CONVERGED_JAIN: f64 = 0.9;
/// FCT size classes: [low, high) bytes and the name a report shows.
pub const SIZE_CLASSES: [(f64, f64, &str); 4] =
    [(0.0, 1e5, "<100KB"), (1e5, 1e6, "100KB-1MB"), (1e6, 1e7, "1-10MB"), (1e7, f64::INFINITY, ">10MB")];

/// Jain's fairness index of `x` (1 = perfectly fair, 1/n = one takes all);
/// None for no values, 1 when all are zero.
pub fn jain(x: &[f64]) -> Option<f64> {
    if x.is_empty() {
        return None;
    }
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        return Some(1.0);
    }
    Some(s * s / (x.len() as f64 * s2))
}

/// Nearest-rank percentile, `p` in percent (0..=100): the smallest value with
/// at least `p` % of the values at or below it. None for no values.
pub fn percentile(x: &[f64], p: f64) -> Option<f64> {
    if x.is_empty() {
        return None;
    }
    let mut v = x.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = (p / 100.0 * v.len() as f64).ceil() as usize;
    Some(v[rank.clamp(1, v.len()) - 1])
}

/// Arithmetic mean; None for no values.
pub fn mean(x: &[f64]) -> Option<f64> {
    (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64)
}

/// Mean of `x` and the half-width of its 95 % confidence interval
/// (Student's t, `n - 1` degrees of freedom; 0 for fewer than two values).
pub fn mean_ci95(x: &[f64]) -> (f64, f64) {
    let n = x.len();
    let Some(m) = mean(x) else { return (f64::NAN, 0.0) };
    if n < 2 {
        return (m, 0.0);
    }
    let var = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    // Two-sided 97.5 % quantiles of t for 1..=30 degrees of freedom, then
    // the normal 1.96.
    const T975: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    let t = T975.get(n - 2).copied().unwrap_or(1.96);
    (m, t * (var / n as f64).sqrt())
}

/// Convergence time: `points` are (window start, Jain's index over the
/// window, None when fewer than two flows ran through it) in time order.
/// From `t_from` to the start of the first window after the last one below
/// `threshold` (windows starting before `t_from` and windows without an
/// index do not count); 0 when none is below, None when the last one is or
/// there is no window.
pub fn convergence(points: &[(f64, Option<f64>)], t_from: f64, threshold: f64) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points.iter().filter(|(t, _)| *t >= t_from).filter_map(|&(t, j)| Some((t, j?))).collect();
    if pts.is_empty() {
        return None;
    }
    match pts.iter().rposition(|&(_, j)| j < threshold) {
        None => Some(0.0),
        Some(k) if k + 1 == pts.len() => None,
        Some(k) => Some(pts[k + 1].0 - t_from),
    }
}

/// The FCT size class of a flow of `bytes`.
pub fn size_class(bytes: f64) -> &'static str {
    SIZE_CLASSES.iter().find(|(lo, hi, _)| *lo <= bytes && bytes < *hi).map_or(SIZE_CLASSES[3].2, |c| c.2)
}

/// One sample: the first `N` numbers of a JSON array (the testbed's sample
/// rows carry more columns, e.g. the CC's name; those are ignored).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row<const N: usize>(pub [f64; N]);

impl<const N: usize> Row<N> {
    /// Sample time (s), the first column.
    pub fn t(&self) -> f64 {
        self.0[0]
    }
}

impl<'de, const N: usize> Deserialize<'de> for Row<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct RowVisitor<const N: usize>;
        impl<'de, const N: usize> Visitor<'de> for RowVisitor<N> {
            type Value = Row<N>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "an array of at least {N} numbers")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Row<N>, A::Error> {
                let mut out = [0.0; N];
                for (i, v) in out.iter_mut().enumerate() {
                    *v = seq.next_element::<f64>()?.ok_or_else(|| de::Error::invalid_length(i, &self))?;
                }
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(Row(out))
            }
        }
        d.deserialize_seq(RowVisitor::<N>)
    }
}

impl<const N: usize> Serialize for Row<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(N))?;
        for v in &self.0 {
            seq.serialize_element(v)?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[5.0, 5.0, 5.0, 5.0]), Some(1.0));
        assert_eq!(jain(&[1.0, 0.0, 0.0, 0.0]), Some(0.25));
        assert_eq!(jain(&[0.0, 0.0]), Some(1.0));
        assert_eq!(jain(&[]), None);
    }

    #[test]
    fn nearest_rank_percentile() {
        let x: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&x, 99.0), Some(99.0));
        assert_eq!(percentile(&x, 50.0), Some(50.0));
        assert_eq!(percentile(&x, 100.0), Some(100.0));
        assert_eq!(percentile(&x, 0.0), Some(1.0));
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), Some(2.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn confidence_interval_uses_students_t() {
        // sd 1, n 3: 4.303 / sqrt(3).
        let (m, h) = mean_ci95(&[1.0, 2.0, 3.0]);
        assert!((m - 2.0).abs() < 1e-12 && (h - 4.303 / 3f64.sqrt()).abs() < 1e-9, "{m} ± {h}");
        assert_eq!(mean_ci95(&[5.0]), (5.0, 0.0));
        assert!(mean_ci95(&[]).0.is_nan());
        // Many samples: the normal quantile.
        let x: Vec<f64> = (0..100).map(|i| (i % 2) as f64).collect();
        let sd = (25.0f64 / 99.0).sqrt();
        assert!((mean_ci95(&x).1 - 1.96 * sd / 10.0).abs() < 1e-9);
    }

    #[test]
    fn convergence_is_the_first_window_after_the_last_unfair_one() {
        let series: Vec<(f64, Option<f64>)> = (0..20).map(|k| (k as f64 * 0.5, Some(if k < 6 { 0.5 } else { 0.97 }))).collect();
        assert_eq!(convergence(&series, 0.0, 0.9), Some(3.0));
        // Measured from a later start; windows before it do not count.
        assert_eq!(convergence(&series, 1.0, 0.9), Some(2.0));
        assert_eq!(convergence(&series, 4.0, 0.9), Some(0.0));
        // Unfair at the end: never.
        assert_eq!(convergence(&[(0.0, Some(0.5)), (0.5, Some(0.5))], 0.0, 0.9), None);
        // Windows without an index are skipped; none at all: no answer.
        assert_eq!(convergence(&[(0.0, Some(0.5)), (0.5, None), (1.0, Some(0.95))], 0.0, 0.9), Some(1.0));
        assert_eq!(convergence(&[(0.0, None)], 0.0, 0.9), None);
    }

    #[test]
    fn size_classes() {
        assert_eq!(size_class(50_000.0), "<100KB");
        assert_eq!(size_class(100_000.0), "100KB-1MB");
        assert_eq!(size_class(9_999_999.0), "1-10MB");
        assert_eq!(size_class(64e6), ">10MB");
    }

    #[test]
    fn rows_take_the_leading_numbers() {
        let r: Row<3> = serde_json::from_str(r#"[0.5, 100, 2, 7, "dctcp"]"#).unwrap();
        assert_eq!(r, Row([0.5, 100.0, 2.0]));
        assert_eq!(serde_json::to_string(&r).unwrap(), "[0.5,100.0,2.0]");
        let e = serde_json::from_str::<Row<3>>("[0.5, 100]").unwrap_err().to_string();
        assert!(e.contains("at least 3 numbers"), "{e}");
        assert!(serde_json::from_str::<Row<2>>(r#"[0.5, "x"]"#).is_err());
    }
}
