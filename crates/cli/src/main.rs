//! The `eiffel` command-line tool: benchmarks that reproduce the papers'
//! measurements, and (as the project grows) policy runs, checks and live shaping.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod bench;
mod output;

/// Eiffel: efficient and flexible software packet scheduling.
#[derive(Debug, Parser)]
#[command(name = "eiffel", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Reproduce the papers' measurements on this machine.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
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
