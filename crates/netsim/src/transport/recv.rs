//! The receiver of the window-based transports (TCP, DCTCP, pFabric).
//!
//! It keeps the next expected segment and a [`BitRing`] of segments received
//! beyond it (the reordering window, [`MAX_WINDOW`] segments), and answers every
//! data packet with a cumulative acknowledgement. A segment beyond the window
//! cannot arrive (no sender's window exceeds it) and would be ignored.

use super::{BitRing, MAX_WINDOW};

/// Receiver state of one flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Receiver {
    next: u32,
    ooo: BitRing,
    /// Data packets received that were already delivered (duplicates).
    pub duplicates: u32,
}

impl Receiver {
    /// Takes segment `seq`; returns the cumulative acknowledgement (the next
    /// segment expected).
    #[inline]
    pub fn on_data(&mut self, seq: u32) -> u32 {
        if seq == self.next {
            self.next += 1;
            while self.ooo.clear(self.next) {
                self.next += 1;
            }
        } else if seq > self.next && seq - self.next <= MAX_WINDOW {
            if !self.ooo.set(seq) {
                self.duplicates += 1;
            }
        } else {
            self.duplicates += 1;
        }
        self.next
    }

    /// The next segment expected: every segment before it has arrived.
    #[must_use]
    pub fn next(&self) -> u32 {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reorders_and_counts_duplicates() {
        let mut r = Receiver::default();
        assert_eq!(r.on_data(0), 1);
        assert_eq!(r.on_data(2), 1);
        assert_eq!(r.on_data(3), 1);
        assert_eq!(r.on_data(1), 4);
        assert_eq!(r.on_data(1), 4);
        assert_eq!(r.on_data(3), 4);
        assert_eq!(r.duplicates, 2);
        // Far ahead and wrapping: the ring is indexed modulo its size.
        assert_eq!(r.on_data(4 + MAX_WINDOW), 4);
        for s in 4..4 + MAX_WINDOW {
            r.on_data(s);
        }
        assert_eq!(r.next(), 5 + MAX_WINDOW);
    }
}
