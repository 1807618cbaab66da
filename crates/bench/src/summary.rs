//! Repeated measurements of one point: the median, the spread, and a warning when
//! the spread is too wide to trust one number.

use serde::Serialize;

/// Largest spread, (max - min) / median, a point may have before the benchmark
/// warns that its runs disagree.
pub const SPREAD_LIMIT: f64 = 0.10;

/// Several runs of one measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The middle run (the mean of the two middle runs for an even count).
    pub median: f64,
    /// The smallest run.
    pub min: f64,
    /// The largest run.
    pub max: f64,
    /// (max - min) / median; 0 for one run.
    pub spread: f64,
    /// Every run, in the order measured.
    pub runs: Vec<f64>,
}

impl Summary {
    /// Summarises `runs` (at least one).
    ///
    /// # Panics
    /// If `runs` is empty.
    #[must_use]
    pub fn of(runs: &[f64]) -> Self {
        assert!(!runs.is_empty(), "a summary of no runs");
        let mut sorted = runs.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let (min, max) = (sorted[0], sorted[n - 1]);
        let spread = if median > 0.0 {
            (max - min) / median
        } else {
            0.0
        };
        Summary {
            median,
            min,
            max,
            spread,
            runs: runs.to_vec(),
        }
    }

    /// Whether the runs disagree by more than [`SPREAD_LIMIT`].
    #[must_use]
    pub fn too_wide(&self) -> bool {
        self.spread > SPREAD_LIMIT
    }

    /// The spread in percent, for tables: `"4%"`, or `"31%!"` when too wide.
    #[must_use]
    pub fn spread_cell(&self) -> String {
        let pct = self.spread * 100.0;
        if self.too_wide() {
            format!("{pct:.0}%!")
        } else {
            format!("{pct:.0}%")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        let s = Summary::of(&[10.0, 12.0, 11.0]);
        assert_eq!((s.median, s.min, s.max), (11.0, 10.0, 12.0));
        assert!((s.spread - 2.0 / 11.0).abs() < 1e-12);
        assert!(s.too_wide());
        assert_eq!(s.spread_cell(), "18%!");
        let even = Summary::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(even.median, 2.5);
        let one = Summary::of(&[5.0]);
        assert_eq!((one.spread, one.too_wide()), (0.0, false));
        assert_eq!(one.spread_cell(), "0%");
    }
}
