//! Waking a thread that sleeps in `ppoll(2)`: one end of a Unix socket pair sits in
//! its poll set; a byte written to the other end makes it readable.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;

/// The writing end.
#[derive(Debug)]
pub(crate) struct Waker {
    tx: UnixStream,
}

impl Waker {
    /// A waker and the end to poll for readability.
    pub(crate) fn pair() -> io::Result<(Waker, UnixStream)> {
        let (tx, rx) = UnixStream::pair()?;
        tx.set_nonblocking(true)?;
        rx.set_nonblocking(true)?;
        Ok((Waker { tx }, rx))
    }

    /// Makes the polled end readable. A full socket buffer means it already is.
    pub(crate) fn wake(&self) {
        let _ = (&self.tx).write(&[1]);
    }

    /// Empties the polled end after it was seen readable.
    pub(crate) fn drain(rx: &UnixStream) {
        let mut buf = [0u8; 64];
        while matches!((&*rx).read(&mut buf), Ok(n) if n > 0) {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::afpacket::{Interest, PollSet};
    use std::time::Duration;

    #[test]
    fn a_wake_makes_the_other_end_readable_until_drained() {
        let (w, rx) = Waker::pair().unwrap();
        let mut poll = PollSet::with_capacity(1);
        poll.add(&rx, Interest::Readable);
        assert_eq!(poll.wait(Some(Duration::from_millis(1))).unwrap(), 0);
        w.wake();
        w.wake();
        assert_eq!(poll.wait(Some(Duration::from_millis(100))).unwrap(), 1);
        Waker::drain(&rx);
        assert_eq!(poll.wait(Some(Duration::from_millis(1))).unwrap(), 0);
    }
}
