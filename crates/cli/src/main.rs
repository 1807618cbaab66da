//! The `eiffel` command-line tool: policy runs on an emulated link (`eiffel run`),
//! policy checks (`eiffel check`), and benchmarks that reproduce the papers'
//! measurements (`eiffel bench`).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod bench;
mod check;
mod output;
mod run;

/// Eiffel: efficient and flexible software packet scheduling.
#[derive(Debug, Parser)]
#[command(name = "eiffel", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a workload through a policy over an emulated link, in virtual time
    /// (with no arguments: the built-in demo of the Eiffel paper's Fig. 6).
    Run(run::RunArgs),
    /// Validate a policy file and print the compiled tree.
    Check(check::CheckArgs),
    /// Reproduce the papers' measurements on this machine.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Bench(cmd) => bench::run(cmd),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("eiffel: {err}");
            ExitCode::FAILURE
        }
    }
}
