//! `eiffel check FILE`: validates a policy file and prints the compiled tree.

use std::path::PathBuf;

use clap::Args;
use eiffel_policy::describe::describe;
use eiffel_policy::{Limits, Policy};

/// Arguments of `eiffel check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The policy file.
    pub file: PathBuf,
    /// Refuse a policy whose tree and flow table would need more memory than
    /// this, e.g. "8GiB".
    #[arg(long, value_parser = crate::run::parse_size, default_value = "4GiB")]
    pub max_memory: u64,
}

/// Validates the policy; prints the compiled tree, or returns the error.
pub fn run(args: &CheckArgs) -> Result<(), Box<dyn std::error::Error>> {
    let limits = Limits {
        max_memory: args.max_memory,
    };
    let policy = Policy::load_with(&args.file, &limits)?;
    let tree = policy.build();
    print!("{}", describe(&policy, &tree));
    Ok(())
}
