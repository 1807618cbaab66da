//! The packet stream both schedulers see: packets spread uniformly over the
//! pipes and over the 16 queues of a pipe, sizes uniform from 64 to 1500 bytes.

/// Smallest packet.
pub const MIN_LEN: u32 = 64;
/// Largest packet.
pub const MAX_LEN: u32 = 1500;

/// One packet of the stream: its queue (`pipe * 16 + queue in pipe`) and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Global queue index.
    pub queue: u32,
    /// Bytes.
    pub len: u32,
}

/// A precomputed cyclic stream, so that generating packets costs both
/// schedulers the same (one array read).
#[derive(Debug, Clone)]
pub struct Stream {
    arrivals: Vec<Arrival>,
    next: usize,
}

impl Stream {
    /// `len` arrivals (rounded up to a power of two) over `queues` queues, from
    /// a fixed seed.
    #[must_use]
    pub fn new(queues: usize, len: usize) -> Stream {
        let len = len.next_power_of_two();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let span = u64::from(MAX_LEN - MIN_LEN + 1);
        let arrivals = (0..len)
            .map(|_| Arrival {
                queue: (next() % queues as u64) as u32,
                len: MIN_LEN + (next() % span) as u32,
            })
            .collect();
        Stream { arrivals, next: 0 }
    }

    /// The next arrival.
    #[inline]
    pub fn next_arrival(&mut self) -> Arrival {
        let a = self.arrivals[self.next];
        self.next = (self.next + 1) & (self.arrivals.len() - 1);
        a
    }

    /// Starts over from the first arrival.
    pub fn rewind(&mut self) {
        self.next = 0;
    }
}
