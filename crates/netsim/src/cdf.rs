//! Empirical flow-size distributions: piecewise-linear CDFs read from data
//! files, sampled by inverse transform.
//!
//! The data file format (TOML):
//!
//! ```toml
//! name = "web-search"
//! source = "where the values come from"
//! unit = "1460B"                 # the sizes below are in units of this many bytes
//! points = [[6, 0.0], [6, 0.15], [13, 0.2], [20000, 1.0]]   # [size, P(X <= size)]
//! ```
//!
//! Sizes and probabilities must not decrease, the last probability must be 1,
//! and the first is the probability of exactly the first size. Between points
//! the CDF is linear in the size (as in ns-2's empirical random variable, which
//! the pFabric simulations used), so the mean is exact:
//! `s_0 c_0 + sum_i (s_i + s_{i+1}) / 2 (c_{i+1} - c_i)`.
//!
//! Two distributions ship with the simulator ([`Cdf::web_search`], [`Cdf::data_mining`]),
//! from `examples/scenarios/cdf/`.

use rand::Rng;
use serde::Deserialize;

use eiffel_policy::units::{self, SizeUnit, UnitError};

/// The web search distribution (DCTCP, SIGCOMM 2010), as used by pFabric.
pub const WEB_SEARCH: &str = include_str!("../data/web-search.toml");

/// The data mining distribution (VL2, SIGCOMM 2009), as used by pFabric.
pub const DATA_MINING: &str = include_str!("../data/data-mining.toml");

/// A flow-size distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct Cdf {
    name: String,
    /// `(bytes, probability)`, both non-decreasing, the last probability 1.
    points: Vec<(f64, f64)>,
    mean: f64,
}

/// A distribution file that cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CdfError {
    /// Not TOML of the expected shape.
    #[error("{0}")]
    Syntax(#[from] toml::de::Error),
    /// The unit is not a size.
    #[error("unit: {0}")]
    Unit(#[from] UnitError),
    /// Points that do not form a CDF.
    #[error("points: {0}")]
    Points(#[from] PointsError),
}

/// Why a list of `(size, probability)` points is not a CDF.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PointsError {
    /// The list is empty.
    #[error("no points")]
    Empty,
    /// A size below one byte (or not a number).
    #[error("point {index}: size {size} must be at least one byte")]
    Size {
        /// Index of the point.
        index: usize,
        /// Its size in bytes.
        size: f64,
    },
    /// A probability outside `0..=1`.
    #[error("point {index}: probability {probability} outside 0..=1")]
    Probability {
        /// Index of the point.
        index: usize,
        /// Its probability.
        probability: f64,
    },
    /// A size or probability smaller than the previous point's.
    #[error("point {index}: sizes and probabilities must not decrease")]
    Decreasing {
        /// Index of the point.
        index: usize,
    },
    /// The last probability is not 1.
    #[error("the last probability must be 1, not {last}")]
    Incomplete {
        /// The last probability.
        last: f64,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    #[serde(default)]
    source: String,
    unit: String,
    points: Vec<(f64, f64)>,
}

impl Cdf {
    /// Parses a distribution file.
    ///
    /// # Errors
    /// See [`CdfError`].
    pub fn parse(text: &str) -> Result<Cdf, CdfError> {
        let f: File = toml::from_str(text)?;
        let _ = f.source;
        let unit = units::parse::<SizeUnit>(&f.unit)?.get() as f64;
        let points: Vec<(f64, f64)> = f.points.iter().map(|&(s, c)| (s * unit, c)).collect();
        Cdf::from_points(&f.name, points)
    }

    /// A distribution from `(bytes, probability)` points.
    ///
    /// # Errors
    /// Points that do not form a CDF.
    pub fn from_points(name: &str, points: Vec<(f64, f64)>) -> Result<Cdf, CdfError> {
        let bad = |e: PointsError| Err(CdfError::Points(e));
        if points.is_empty() {
            return bad(PointsError::Empty);
        }
        for (index, &(size, probability)) in points.iter().enumerate() {
            if !(size.is_finite() && size >= 1.0) {
                return bad(PointsError::Size { index, size });
            }
            if !(0.0..=1.0).contains(&probability) {
                return bad(PointsError::Probability { index, probability });
            }
            if index > 0 && (size < points[index - 1].0 || probability < points[index - 1].1) {
                return bad(PointsError::Decreasing { index });
            }
        }
        let last = points[points.len() - 1].1;
        if (last - 1.0).abs() > 1e-12 {
            return bad(PointsError::Incomplete { last });
        }
        let mut mean = points[0].0 * points[0].1;
        for w in points.windows(2) {
            mean += (w[0].0 + w[1].0) / 2.0 * (w[1].1 - w[0].1);
        }
        Ok(Cdf {
            name: name.to_string(),
            points,
            mean,
        })
    }

    /// The web search distribution.
    #[must_use]
    pub fn web_search() -> Cdf {
        Cdf::parse(WEB_SEARCH).expect("the shipped web search distribution is valid")
    }

    /// The data mining distribution.
    #[must_use]
    pub fn data_mining() -> Cdf {
        Cdf::parse(DATA_MINING).expect("the shipped data mining distribution is valid")
    }

    /// The name given in the file.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Mean size in bytes.
    #[must_use]
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Largest size in bytes.
    #[must_use]
    pub fn max(&self) -> u64 {
        self.points[self.points.len() - 1].0.ceil() as u64
    }

    /// The size at probability `u` in `[0, 1)`.
    #[must_use]
    pub fn quantile(&self, u: f64) -> u64 {
        let p = &self.points;
        if u <= p[0].1 {
            return p[0].0.round().max(1.0) as u64;
        }
        let i = p.partition_point(|&(_, c)| c <= u).min(p.len() - 1);
        let (s0, c0) = p[i - 1];
        let (s1, c1) = p[i];
        let s = if c1 > c0 {
            s0 + (s1 - s0) * (u - c0) / (c1 - c0)
        } else {
            s1
        };
        s.round().max(1.0) as u64
    }

    /// A random size.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        self.quantile(rng.gen::<f64>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn shipped_distributions() {
        let ws = Cdf::web_search();
        // The mean the pFabric scripts use for this table: 1138 x 1460 B.
        assert!(
            (ws.mean() / 1460.0 - 1138.0).abs() < 5.0,
            "{}",
            ws.mean() / 1460.0
        );
        assert_eq!(ws.max(), 20_000 * 1460);
        let dm = Cdf::data_mining();
        // 5117 x 1460 B in the same scripts.
        assert!(
            (dm.mean() / 1460.0 / 5117.0 - 1.0).abs() < 0.01,
            "{}",
            dm.mean() / 1460.0
        );
        assert_eq!(dm.quantile(0.3), 1460);
    }

    #[test]
    fn sampling_matches_the_mean() {
        let ws = Cdf::web_search();
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let n = 400_000;
        let sum: f64 = (0..n).map(|_| ws.sample(&mut rng) as f64).sum();
        assert!((sum / f64::from(n) / ws.mean() - 1.0).abs() < 0.02);
    }

    #[test]
    fn interpolation_and_errors() {
        let c = Cdf::from_points("t", vec![(100.0, 0.5), (300.0, 1.0)]).unwrap();
        assert_eq!(c.quantile(0.25), 100);
        assert_eq!(c.quantile(0.75), 200);
        assert_eq!(c.mean(), 50.0 + 100.0);
        assert!(Cdf::from_points("t", vec![(100.0, 0.5)]).is_err());
        assert!(Cdf::from_points("t", vec![(100.0, 0.5), (50.0, 1.0)]).is_err());
        assert!(matches!(
            Cdf::parse("name = \"x\"\nunit = \"1460\"\npoints = [[1, 1.0]]"),
            Err(CdfError::Unit(_))
        ));
    }
}
