//! The `eiffel` command-line tool: policy runs on an emulated link (`eiffel run`),
//! policy checks (`eiffel check`), network-wide simulations (`eiffel sim`),
//! live traffic shaping between two interfaces
//! (`eiffel shape`, `eiffel stats`), and benchmarks that reproduce the papers'
//! measurements (`eiffel bench`).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod check;
mod out;
mod replay;
mod run;
mod shape;
mod sim;
mod stats;

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
    /// Simulate a network scenario (topology, traffic, schemes) packet by
    /// packet with a policy tree at every port, swept over loads and seeds.
    Sim(sim::SimArgs),
    /// Schedule live traffic between two interfaces by a policy file: a
    /// transparent bump in the wire (needs CAP_NET_RAW).
    Shape(shape::ShapeArgs),
    /// Live counters of a running `eiffel shape`, or reload its policy.
    Stats(stats::StatsArgs),
    /// Reproduce the papers' measurements on this machine.
    #[command(subcommand)]
    Bench(eiffel_bench::BenchCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if writes_only_to_stdout(&cli.command) {
        out::die_on_broken_pipe();
    }
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Sim(args) => sim::run(&args),
        Command::Shape(args) => shape::run(&args),
        Command::Stats(args) => stats::run(&args),
        Command::Bench(cmd) => eiffel_bench::run(cmd),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if out::is_broken_pipe(&*err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("eiffel: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Commands whose only pipe is standard output: a reader that goes away (`| head`)
/// ends them quietly by `SIGPIPE`, as it ends `cat`. `shape`, `stats` and `bench`
/// write to sockets too, where a gone peer must be an error and not a silent death,
/// so they keep `SIGPIPE` ignored and write their results through [`out`].
fn writes_only_to_stdout(command: &Command) -> bool {
    matches!(
        command,
        Command::Run(_) | Command::Check(_) | Command::Sim(_)
    )
}
