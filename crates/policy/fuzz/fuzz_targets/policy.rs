//! A policy file of arbitrary text: parsing never panics; an error names the
//! file and a line of it; an accepted policy builds its tree and classifier,
//! and the bytes that build really allocates (counted by the global allocator)
//! stay within its memory estimate (see [`fits`]); it also describes itself.
#![no_main]

#[path = "common/counting.rs"]
mod counting;
#[path = "common/estimate.rs"]
mod estimate;

use eiffel_policy::describe::describe;
use eiffel_policy::{Policy, PolicyError};
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Policy::parse_with(text, "fuzz.toml", &estimate::LIMITS) {
        Ok(policy) => {
            let ((tree, _classifier), used) =
                counting::peak_during(|| (policy.build(), policy.classifier()));
            estimate::check(&policy.estimate(), used, text);
            let _ = describe(&policy, &tree);
        }
        Err(PolicyError::Invalid { file, line, .. }) => {
            assert_eq!(file, "fuzz.toml");
            assert!(line >= 1 && line <= text.lines().count().max(1) + 1);
        }
        Err(e @ PolicyError::Io { .. }) => panic!("no file was read: {e}"),
    }
});
