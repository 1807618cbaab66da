//! A DOT policy of arbitrary text: parsing never panics; an error names the
//! file and a line of it; an accepted policy builds its tree, describes it, and
//! its memory estimate stays within the limit it was checked against.
#![no_main]

use eiffel_policy::describe::describe;
use eiffel_policy::{Limits, Policy, PolicyError};
use libfuzzer_sys::fuzz_target;

/// Well below libFuzzer's 2 GB RSS limit (see the `policy` target).
const LIMITS: Limits = Limits {
    max_memory: 256 << 20,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Policy::parse_dot_with(text, "fuzz.dot", &LIMITS) {
        Ok(policy) => {
            assert!(policy.estimate().total() <= LIMITS.max_memory);
            let tree = policy.build();
            let _ = describe(&policy, &tree);
            let _ = policy.classifier();
        }
        Err(PolicyError::Invalid { file, line, .. }) => {
            assert_eq!(file, "fuzz.dot");
            assert!(line >= 1 && line <= text.lines().count().max(1) + 1);
        }
        Err(e @ PolicyError::Io { .. }) => panic!("no file was read: {e}"),
    }
});
