//! Standard output whose reader may go away early (`eiffel run --json | head -1`).
//!
//! Rust ignores `SIGPIPE`, so a write to a closed pipe fails with `EPIPE`, and
//! `println!` panics on it. Two remedies, by command:
//! - commands that write only to standard output restore `SIGPIPE`'s default
//!   action ([`die_on_broken_pipe`]): the process ends quietly with the signal, and
//!   a shell reports status 141, as for `cat`;
//! - commands that also write to sockets (`shape`, `stats`) keep `SIGPIPE`
//!   ignored, print their results with [`print`], and `main` turns a broken pipe
//!   into a quiet exit with status 0.

use std::io::{self, Write};

/// Restores the default action of `SIGPIPE` (end the process).
pub(crate) fn die_on_broken_pipe() {
    // SAFETY: `signal` with `SIG_DFL` installs no handler, so no code runs in signal
    // context; it only changes this process's disposition of SIGPIPE, and runs at
    // the start of `main` before any other thread exists.
    #[allow(unsafe_code)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Writes `text` to standard output and flushes it; a closed pipe is an error that
/// [`is_broken_pipe`] recognises.
pub(crate) fn print(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// Whether `err` is (or wraps) a write to a pipe whose reader has gone.
pub(crate) fn is_broken_pipe(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        cur = e.source();
    }
    false
}
