//! What the `policy` and `dot` targets require of a parsed policy file.

use crate::{counting, estimate};
use eiffel_policy::describe::describe;
use eiffel_policy::{Policy, PolicyError};

/// An accepted policy builds its tree and classifier within its memory estimate
/// and describes itself; a refused one names `file` and a line of `text`; no
/// file was read.
pub fn judge(text: &str, file: &str, parsed: Result<Policy, PolicyError>) {
    match parsed {
        Ok(policy) => {
            let ((tree, _classifier), used) =
                counting::peak_during(|| (policy.build(), policy.classifier()));
            estimate::check(&policy.estimate(), used, text);
            let _ = describe(&policy, &tree);
        }
        Err(PolicyError::Invalid { file: named, line, .. }) => {
            assert_eq!(named, file);
            assert!(line >= 1 && line <= text.lines().count().max(1) + 1);
        }
        Err(e @ PolicyError::Io { .. }) => panic!("no file was read: {e}"),
    }
}
