//! `eiffel check FILE`: validates a policy file and prints the compiled tree.

use std::path::PathBuf;

use clap::Args;
use eiffel_policy::describe::describe;
use eiffel_policy::Policy;

/// Arguments of `eiffel check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The policy file.
    pub file: PathBuf,
}

/// Validates the policy; prints the compiled tree, or returns the error.
pub fn run(args: &CheckArgs) -> Result<(), Box<dyn std::error::Error>> {
    let policy = Policy::load(&args.file)?;
    let tree = policy.build();
    print!("{}", describe(&policy, &tree));
    Ok(())
}
