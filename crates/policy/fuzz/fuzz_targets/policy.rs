//! A policy file of arbitrary text: parsing never panics; an error names the
//! file and a line of it; an accepted policy builds its tree, describes it, and
//! its memory estimate stays within the limit it was checked against.
#![no_main]

use eiffel_policy::describe::describe;
use eiffel_policy::{Limits, Policy, PolicyError};
use libfuzzer_sys::fuzz_target;

/// Far below libFuzzer's 2 GB RSS limit, and small enough to keep iterations
/// fast: an estimate that undercounts what a policy allocates by 30 times
/// shows up as an out-of-memory crash.
const LIMITS: Limits = Limits {
    max_memory: 64 << 20,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Policy::parse_with(text, "fuzz.toml", &LIMITS) {
        Ok(policy) => {
            assert!(policy.estimate().total() <= LIMITS.max_memory);
            let tree = policy.build();
            let _ = describe(&policy, &tree);
            let _ = policy.classifier();
        }
        Err(PolicyError::Invalid { file, line, .. }) => {
            assert_eq!(file, "fuzz.toml");
            assert!(line >= 1 && line <= text.lines().count().max(1) + 1);
        }
        Err(e @ PolicyError::Io { .. }) => panic!("no file was read: {e}"),
    }
});
