//! The memory limit the policy targets check policies against, and the check
//! that what a policy's build allocates stays within its estimate.

use eiffel_policy::{Estimate, Limits};

/// Small, so that an input costs little, yet above a tree of the default
/// capacity (65,536 packets, about 5.3 MiB): a policy estimated above it is
/// refused (which exercises the refusal), one below is built and measured.
pub const LIMITS: Limits = Limits {
    max_memory: 8 << 20,
};

/// How far a build may exceed its estimate: by a quarter of the estimate plus
/// `SLACK` bytes (small fixed allocations the estimate leaves out). On the
/// examples and the grown corpus the build stays within 4% of its estimate.
pub const SLACK: u64 = 64 << 10;

/// Panics when `used` bytes (the peak of a build) exceed what `estimate`
/// allows, or when the estimate is above the limit it was checked against.
pub fn check(estimate: &Estimate, used: u64, text: &str) {
    let total = estimate.total();
    assert!(
        total <= LIMITS.max_memory,
        "estimate {total} B above the limit"
    );
    let allowed = total.saturating_add(total / 4).saturating_add(SLACK);
    assert!(
        used <= allowed,
        "the build allocated {used} B, its estimate is {total} B (allowed {allowed} B):\n{text}"
    );
}
