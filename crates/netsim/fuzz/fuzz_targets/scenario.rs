//! A scenario file of arbitrary text, with relative paths from the project's
//! example scenarios (so it may name their distribution and policy files):
//! parsing never panics; a mistake in the scenario itself is reported at a line
//! of it; an accepted scenario survives `--quick` and its listing of schemes.
#![no_main]

use std::path::Path;

use eiffel_netsim::scenario::{Scenario, ScenarioError};
use eiffel_policy::PolicyError;
use libfuzzer_sys::fuzz_target;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../examples/scenarios");

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Scenario::parse(text, "fuzz.toml", Path::new(DIR)) {
        Ok(mut s) => {
            s.make_quick();
            let names: Vec<String> = s.schemes.iter().map(|x| x.name.clone()).collect();
            s.keep_schemes(&names).expect("its own schemes");
        }
        Err(ScenarioError::File(PolicyError::Invalid { file, line, .. })) if file == "fuzz.toml" => {
            assert!(line >= 1 && line <= text.lines().count().max(1) + 1);
        }
        Err(_) => {}
    }
});
