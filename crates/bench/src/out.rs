//! The benchmarks' results on standard output, whose reader may go away early
//! (`eiffel bench queues | head -1`).
//!
//! `SIGPIPE` stays ignored (the live-traffic benchmark runs `eiffel shape`'s
//! threads in this process, whose sockets must see a gone peer as an error), so a
//! write to a closed pipe fails with `EPIPE`. [`out!`](crate::out!) and
//! [`outln!`](crate::outln!) return that error to the benchmark, which hands it
//! up; the `eiffel` binary ends quietly on it.

use std::io::{self, Write};

/// Writes `args` to standard output and flushes it (a reader that went away is
/// seen at once, not at exit).
///
/// # Errors
/// The write failed: `BrokenPipe` when the reader closed its end.
pub fn write(args: std::fmt::Arguments<'_>) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_fmt(args)?;
    stdout.flush()
}

/// `print!` that returns a failed write to the enclosing function (`?`).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))?
    };
}

/// `println!` that returns a failed write to the enclosing function (`?`).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))?
    };
}
