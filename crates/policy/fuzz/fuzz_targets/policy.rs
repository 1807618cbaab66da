//! A policy file of arbitrary text: parsing never panics; an error names the
//! file and a line of it; an accepted policy builds its tree and classifier,
//! and the bytes that build really allocates (counted by the global allocator)
//! stay within its memory estimate (see [`fits`]); it also describes itself.
#![no_main]

#[path = "common/counting.rs"]
mod counting;
#[path = "common/estimate.rs"]
mod estimate;
#[path = "common/judge.rs"]
mod judge;

use eiffel_policy::Policy;
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    judge::judge(text, "fuzz.toml", Policy::parse_with(text, "fuzz.toml", &estimate::LIMITS));
});
