//! The approximate gradient queue's index (Eiffel, NSDI'19, section 3.1.2, Fig. 5,
//! Appendix B).
//!
//! The exact gradient queue gives bucket `j` the weight `2^j`, which limits one
//! curvature to a machine word's worth of buckets. The approximate queue flattens
//! the weights to `2^(j / alpha)`, so one pair of sums `(a, b)` covers thousands of
//! buckets and a lookup is a single division, at the price of exactness: the
//! weight of the extreme bucket no longer dominates, and `b / a` lands near, not
//! on, the extreme index.
//!
//! ## Orientation and the shift
//! The paper states a maximum queue; we want the lowest bucket, so bucket `i` of `N`
//! gets the weight `w_i = 2^((N - 1 - i) / alpha)` (the lowest bucket is the
//! heaviest). With `r = 2^(1/alpha)`, if every bucket from the minimum `m` upwards is
//! non-empty, the weighted mean index is
//!
//! ```text
//! b / a = m + sum_k k r^-k / sum_k r^-k = m + 1 / (r - 1)        (infinite run)
//! ```
//!
//! so the estimate is `round(b / a - D)` with the constant shift
//! `D = 1 / (2^(1/alpha) - 1)`. This is the paper's `u(alpha) = 1 / (1 - 2^(1/alpha))`
//! with the sign that the mirrored orientation gives it (`D = -u(alpha)`; for
//! `alpha = 16`, `D = 22.6`, the paper's shift of 22). A finite run (fewer buckets
//! above the minimum than the weights need to decay, the paper's `g(alpha, M)` term)
//! only pulls the mean *down*, so the estimate can fall below the minimum but never
//! above it: with every bucket above the minimum occupied the estimate is at most
//! the minimum, and the search below finds the minimum exactly. This is the
//! "exact when occupancy is dense" property.
//!
//! ## The search when the estimate misses
//! When the estimated bucket is empty the queue searches linearly for a non-empty
//! bucket, first upwards from the estimate (towards lower priority: a dense run
//! leaves the estimate below the minimum, so this finds the minimum), then, if
//! nothing lies above, downwards. Empty buckets between occupied ones (holes) pull
//! the mean up and can make the estimate land on, or search up to, a non-empty
//! bucket above the minimum: that is the approximation error the paper measures in
//! Fig. 14. [`ApproxStats`] counts the misses and their search distances.
//!
//! Random holes make the mean noisy by a few buckets, so with the paper's rule an
//! estimate one or two buckets high skips the minimum, which then stays behind
//! ("a straggler") until the run above it has moved far enough for its weight to
//! dominate, typically hundreds of pops later. The optional *look-back*
//! ([`QueueConfig::lookback`]) starts the search `W` buckets below the estimate and
//! takes the first non-empty bucket from there: overshoots up to `W` buckets then
//! resolve exactly, for one or two extra bitmap words. `W = 0` (the default) is the
//! paper's algorithm; the benchmark reports both.
//!
//! ## Constants and arithmetic
//! Weights are integers with `k` fraction bits, `w_i = round(2^(k + (N-1-i)/alpha))`,
//! rounded once when the table is built, and `a`, `b` are exact 128-bit sums, so
//! adding and removing buckets never drifts. `k` is as large as fits, between 24 and
//! 52 bits (the lightest weight then has a relative rounding error below 2^-25).
//! `alpha` must keep `b <= (N - 1) * sum w < 2^128` with at least 24 fraction bits;
//! the default is the smallest such alpha (smaller alpha weighs the buckets near the
//! minimum more and is more accurate). The estimate divides in `f64` after shifting
//! both sums to 63 bits (at least 40 significant bits remain for `N <= 2^24`).
//!
//! Costs: `set`/`clear` are two 128-bit additions and a bit flip; `first` is one
//! division plus, on a miss, a scan of the occupancy bitmap a word (64 buckets) at a
//! time.
//!
//! Deviations from the paper: the linear search scans the occupancy bitmap a word at
//! a time rather than bucket by bucket (same result, up to 64x fewer steps); the
//! sums are exact integers instead of floating point so that long runs of inserts
//! and removals cannot accumulate rounding error.

use alloc::vec;
use alloc::vec::Vec;

use crate::api::{ApproxStats, ConfigError, QueueConfig};
use crate::bits::{first_set, last_set, mask_from, mask_through, split};
use crate::index::BucketIndex;

/// Most buckets an [`ApproxIndex`] supports.
pub const MAX_APPROX_BUCKETS: usize = 1 << 24;

/// Approximate gradient index over `N` buckets.
#[derive(Clone)]
pub struct ApproxIndex {
    /// `w_i = round(2^(k + (N - 1 - i) / alpha))`.
    weights: Vec<u128>,
    /// `i * w_i`, so that updating `b` needs no multiplication.
    index_weights: Vec<u128>,
    /// Sum of `w_i` over non-empty buckets.
    a: u128,
    /// Sum of `i * w_i` over non-empty buckets.
    b: u128,
    /// Bit `i` set iff bucket `i` is non-empty; searched on a miss.
    occupied: Vec<u64>,
    /// `D = 1 / (2^(1/alpha) - 1)`, subtracted from `b / a`.
    shift: f64,
    /// `0.5 - D`: added to `b / a` before truncation (rounding to nearest).
    bias: f64,
    /// Buckets below the estimate where the search starts.
    lookback: usize,
    alpha: u32,
    stats: ApproxStats,
}

impl core::fmt::Debug for ApproxIndex {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ApproxIndex")
            .field("buckets", &self.weights.len())
            .field("alpha", &self.alpha)
            .field("shift", &self.shift)
            .field("a", &self.a)
            .field("b", &self.b)
            .field("estimate", &self.estimate())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// `x^n` by repeated squaring (no floating-point library in `no_std`).
fn powi(mut x: f64, mut n: u32) -> f64 {
    let mut acc = 1.0;
    while n > 0 {
        if n & 1 == 1 {
            acc *= x;
        }
        x *= x;
        n >>= 1;
    }
    acc
}

/// `2^(1/alpha)` by Newton's method on `x^alpha = 2`, starting above the root so the
/// iteration decreases monotonically onto it.
fn root_of_two(alpha: u32) -> f64 {
    if alpha == 1 {
        return 2.0;
    }
    let n = f64::from(alpha);
    let mut x = 1.0 + 1.0 / n;
    for _ in 0..64 {
        let next = x - (powi(x, alpha) - 2.0) / (n * powi(x, alpha - 1));
        if next >= x {
            break;
        }
        x = next;
    }
    x
}

/// Bits needed to hold `n`.
fn bits(n: u64) -> u32 {
    64 - n.leading_zeros()
}

/// A quick upper bound on the bits of `b`'s largest value for `n` buckets and
/// `alpha`: `w_0 <= 2^ceil((n-1)/alpha)`, `sum w <= w_0 * 3 alpha` (because
/// `r / (r - 1) <= 2 alpha / ln 2 < 3 alpha`), `b <= (n - 1) sum w`.
fn bound_bits(n: usize, alpha: u32) -> u64 {
    ((n as u64 - 1).div_ceil(u64::from(alpha)))
        + u64::from(bits(3 * u64::from(alpha)))
        + u64::from(bits(n as u64))
}

/// Fewest fraction bits a weight table may carry: below this the rounding of the
/// lightest weights distorts the estimate.
const MIN_PRECISION_BITS: u64 = 24;

/// Most fraction bits used: beyond f64's 53-bit mantissa they add nothing.
const MAX_PRECISION_BITS: u64 = 52;

/// The weight table for `n` buckets: `w_i = round(2^(k + (n - 1 - i) / alpha))` with
/// `k` fraction bits (as many as fit, from 24 to 52), or `None` if even 24 fraction
/// bits would let `b` overflow 128 bits.
fn weight_table(n: usize, alpha: u32) -> Option<Vec<u128>> {
    let room = 126u64.checked_sub(bound_bits(n, alpha))?;
    if room < MIN_PRECISION_BITS {
        return None;
    }
    let k = room.min(MAX_PRECISION_BITS) as u32;
    // 2^(j / alpha) = 2^(j div alpha) * r^(j mod alpha): the fractional powers come
    // from a table of alpha entries, the rest is an exact power of two, so no error
    // accumulates along the table.
    let r = root_of_two(alpha);
    let fractions: Vec<f64> = (0..alpha).map(|m| powi(r, m)).collect();
    let mut weights = vec![0u128; n];
    for (i, w) in weights.iter_mut().enumerate() {
        let j = (n - 1 - i) as u32;
        let mantissa = powi(2.0, k) * fractions[(j % alpha) as usize];
        *w = ((mantissa + 0.5) as u128) << (j / alpha);
    }
    let mut sum: u128 = 0;
    for &w in &weights {
        sum = sum.checked_add(w)?;
    }
    sum.checked_mul(n as u128 - 1)?;
    Some(weights)
}

impl ApproxIndex {
    /// The smallest alpha whose sums fit for `n` buckets: a binary search on the
    /// exact check, between 1 and the first alpha the quick bound accepts.
    #[must_use]
    pub fn min_alpha(n: usize) -> u32 {
        // NB: the search builds a weight table of `n` entries per step, and
        // every queue built asks for it: a simulated network of 400 ports spent
        // 8% of its run here. The last answer is remembered (one word: `n` and
        // alpha), as the queues of one program mostly share a size.
        #[cfg(target_has_atomic = "64")]
        {
            use core::sync::atomic::{AtomicU64, Ordering};
            static LAST: AtomicU64 = AtomicU64::new(0);
            let key = n as u64;
            let last = LAST.load(Ordering::Relaxed);
            if key < 1 << 32 && last >> 32 == key && last as u32 != 0 {
                return last as u32;
            }
            let alpha = Self::search_alpha(n);
            if key < 1 << 32 {
                LAST.store(key << 32 | u64::from(alpha), Ordering::Relaxed);
            }
            alpha
        }
        #[cfg(not(target_has_atomic = "64"))]
        Self::search_alpha(n)
    }

    /// The binary search of [`ApproxIndex::min_alpha`].
    fn search_alpha(n: usize) -> u32 {
        let mut hi = 1u32;
        while weight_table(n, hi).is_none() {
            hi = hi.saturating_mul(2);
        }
        let mut lo = 1u32;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if weight_table(n, mid).is_some() {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// The configured alpha.
    #[must_use]
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// The shift `D` subtracted from `b / a` (the paper's `-u(alpha)`).
    #[must_use]
    pub fn shift(&self) -> f64 {
        self.shift
    }

    /// The estimated bucket before any search: `round(b / a - D)` clamped to the
    /// buckets, or `None` when empty. Public so that tests and benchmarks can compare
    /// it with independently computed values.
    #[must_use]
    #[inline]
    pub fn estimate(&self) -> Option<usize> {
        if self.a == 0 {
            return None;
        }
        // Shift both sums to 63 bits so each converts to f64 with one signed
        // conversion instruction.
        let top = 128 - (self.a | self.b).leading_zeros();
        let sh = top.saturating_sub(63);
        let b = (self.b >> sh) as i64 as f64;
        let a = (self.a >> sh) as i64 as f64;
        let e = b / a + self.bias;
        let last = self.weights.len() - 1;
        Some(if e <= 0.0 { 0 } else { (e as usize).min(last) })
    }

    /// The curvature sums `(a, b)`.
    #[must_use]
    pub fn sums(&self) -> (u128, u128) {
        (self.a, self.b)
    }

    /// The weight of bucket `i`.
    #[must_use]
    pub fn weight(&self, i: usize) -> u128 {
        self.weights[i]
    }

    #[inline]
    fn is_set(&self, i: usize) -> bool {
        let (w, b) = split(i);
        self.occupied[w] >> b & 1 == 1
    }

    /// First non-empty bucket at or after `from`.
    #[inline]
    fn scan_up(&self, from: usize) -> Option<usize> {
        let (mut w, b) = split(from);
        let mut word = mask_from(self.occupied[w], b);
        loop {
            if let Some(bit) = first_set(word) {
                return Some(w * 64 + bit);
            }
            w += 1;
            word = *self.occupied.get(w)?;
        }
    }

    /// Last non-empty bucket at or before `from`.
    #[inline]
    fn scan_down(&self, from: usize) -> Option<usize> {
        let (mut w, b) = split(from);
        let mut word = mask_through(self.occupied[w], b);
        loop {
            if let Some(bit) = last_set(word) {
                return Some(w * 64 + bit);
            }
            w = w.checked_sub(1)?;
            word = self.occupied[w];
        }
    }

    /// The estimate, then the search: `(chosen bucket, estimate)`.
    #[inline]
    fn locate(&self) -> Option<(usize, usize)> {
        let e = self.estimate()?;
        let start = e.saturating_sub(self.lookback);
        if start == e && self.is_set(e) {
            return Some((e, e));
        }
        let found = self
            .scan_up(start)
            .or_else(|| self.scan_down(e))
            .expect("a non-empty index has a set bucket");
        Some((found, e))
    }
}

impl BucketIndex for ApproxIndex {
    fn build(buckets: usize, cfg: &QueueConfig) -> Result<Self, ConfigError> {
        ConfigError::at_most_buckets(buckets, MAX_APPROX_BUCKETS)?;
        let min = ApproxIndex::min_alpha(buckets);
        let alpha = cfg.alpha.unwrap_or(min);
        let weights = if alpha == 0 {
            None
        } else {
            weight_table(buckets, alpha)
        };
        let weights = weights.ok_or(ConfigError::AlphaTooSmall {
            requested: alpha,
            min,
        })?;
        let index_weights = weights
            .iter()
            .enumerate()
            .map(|(i, &w)| w * i as u128)
            .collect();
        let shift = 1.0 / (root_of_two(alpha) - 1.0);
        Ok(ApproxIndex {
            weights,
            index_weights,
            a: 0,
            b: 0,
            occupied: vec![0; buckets.div_ceil(64)],
            shift,
            bias: 0.5 - shift,
            lookback: cfg.lookback as usize,
            alpha,
            stats: ApproxStats::default(),
        })
    }

    #[inline]
    fn set(&mut self, i: usize) {
        debug_assert!(!self.is_set(i), "bucket {i} set twice");
        self.a += self.weights[i];
        self.b += self.index_weights[i];
        let (word, bit) = split(i);
        self.occupied[word] |= 1 << bit;
    }

    #[inline]
    fn clear(&mut self, i: usize) {
        debug_assert!(self.is_set(i), "bucket {i} cleared twice");
        self.a -= self.weights[i];
        self.b -= self.index_weights[i];
        let (word, bit) = split(i);
        self.occupied[word] &= !(1 << bit);
    }

    #[inline]
    fn first(&self) -> Option<usize> {
        self.locate().map(|(found, _)| found)
    }

    #[inline]
    fn first_for_pop(&mut self) -> Option<usize> {
        let (found, e) = self.locate()?;
        self.stats.lookups += 1;
        if found != e {
            let distance = found.abs_diff(e) as u64;
            self.stats.misses += 1;
            self.stats.miss_distance += distance;
            self.stats.max_miss_distance = self.stats.max_miss_distance.max(distance);
        }
        Some(found)
    }

    fn approx_stats(&self) -> ApproxStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_of_two_is_accurate() {
        for alpha in [1u32, 2, 3, 16, 100, 1000, 100_000] {
            let r = root_of_two(alpha);
            let back = powi(r, alpha);
            assert!((back - 2.0).abs() < 1e-9, "alpha {alpha}: r^alpha = {back}");
        }
        // The paper's example: alpha = 16 gives a shift of about 22.
        let d = 1.0 / (root_of_two(16) - 1.0);
        assert!((d - 22.58).abs() < 0.01, "D(16) = {d}");
    }

    #[test]
    fn min_alpha_fits_and_alpha_below_it_is_refused() {
        for n in [1usize, 64, 523, 5_000, 10_000, 1 << 16] {
            let min = ApproxIndex::min_alpha(n);
            let cfg = QueueConfig::new(n, 0);
            let idx = ApproxIndex::build(n, &cfg).unwrap();
            assert_eq!(idx.alpha(), min);
            if min > 1 {
                let refused = ApproxIndex::build(n, &cfg.alpha(min - 1)).err();
                assert_eq!(
                    refused,
                    Some(ConfigError::AlphaTooSmall {
                        requested: min - 1,
                        min
                    })
                );
            }
        }
        assert!(ApproxIndex::build(10, &QueueConfig::new(10, 0).alpha(0)).is_err());
    }

    #[test]
    fn weights_halve_every_alpha_buckets() {
        let idx = ApproxIndex::build(1000, &QueueConfig::new(1000, 0).alpha(16)).unwrap();
        let unit = idx.weight(999);
        assert!(unit >= 1 << 24, "at least 24 fraction bits");
        assert_eq!(idx.weight(999 - 16), 2 * unit);
        assert_eq!(idx.weight(999 - 160), 1024 * unit);
    }
}
