//! A small log-scale histogram for per-port queueing delays.
//!
//! Every port records one value per packet sent, so the recording must stay in
//! cache: with hundreds of ports, `hdrhistogram`'s count arrays (tens of KB
//! each) made the increment a cache miss that took two thirds of the port's
//! dequeue time (measured with `perf record` on the Eiffel Fig. 15 fabric).
//! This one has four buckets per power of two (1.5 KB): a quantile is reported
//! as its bucket's upper bound, at most 25% above the true value (a bucket
//! spans `[4 + i, 5 + i) * 2^k` for `i` in 0..4), and exact below 8.

/// Buckets per power of two.
const SUB: u32 = 4;
/// Octaves covered: values up to 2^48 ns (three days).
const OCTAVES: u32 = 48;

/// Counts of values in log-spaced buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogHistogram {
    counts: Box<[u64]>,
    total: u64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram {
            counts: vec![0; (SUB * OCTAVES) as usize].into_boxed_slice(),
            total: 0,
        }
    }
}

/// The bucket of `v`: values below 8 have their own buckets; above, the octave
/// (position of the highest bit) and the next two bits.
#[inline]
fn bucket(v: u64) -> usize {
    if v < 8 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let sub = (v >> (msb - 2)) & 3;
    (((msb - 1) * SUB) as u64 + sub).min(u64::from(SUB * OCTAVES - 1)) as usize
}

/// The largest value in bucket `b`.
fn upper(b: usize) -> u64 {
    if b < 8 {
        return b as u64;
    }
    let b = b as u64;
    let msb = b / u64::from(SUB) + 1;
    let sub = b % u64::from(SUB);
    ((4 + sub + 1) << (msb - 2)) - 1
}

impl LogHistogram {
    /// Records `v`.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[bucket(v)] += 1;
        self.total += 1;
    }

    /// Values recorded.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether nothing was recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The upper bound of the bucket holding quantile `q` (0 when empty).
    #[must_use]
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return upper(b);
            }
        }
        upper(self.counts.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_bounded() {
        let mut prev_upper = 0;
        for b in 1..(SUB * OCTAVES) as usize {
            let u = upper(b);
            assert!(u > prev_upper, "bucket {b}");
            prev_upper = u;
        }
        for v in [0u64, 1, 7, 8, 9, 15, 16, 1000, 123_456_789, 1 << 40] {
            let b = bucket(v);
            assert!(upper(b) >= v, "{v} above its bucket's bound");
            if v >= 8 {
                assert!(
                    upper(b) as f64 <= v as f64 * 1.25,
                    "{v}: bound {}",
                    upper(b)
                );
                assert!(upper(b - 1) < v, "{v} belongs to an earlier bucket");
            }
        }
    }

    #[test]
    fn quantiles() {
        let mut h = LogHistogram::default();
        for v in 1..=1000u64 {
            h.record(v);
        }
        let p99 = h.quantile(0.99);
        assert!((990..=1250).contains(&p99), "{p99}");
        assert_eq!(h.quantile(0.001), 1);
        assert_eq!(h.len(), 1000);
    }
}
