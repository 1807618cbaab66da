//! The live packets of a pFabric port, ordered by the bytes their flows had
//! remaining: the victim of a full buffer is the last one, the packet the
//! exact rule serves first is (in the flow of) the first one.
//!
//! A sorted vector: insertion and removal shift at most the port's queued
//! packets (24 full frames for pFabric's 36 KB buffers), a binary search finds
//! a packet, and both ends are O(1). Equal ranks are ordered by arrival at the
//! port (a per-port counter), so the order is total and deterministic.

/// One live packet: its rank, its arrival number at the port, its id.
type Entry = (u64, u32, u32);

/// Live packets sorted by `(rank, arrival)`.
#[derive(Clone, Debug, Default)]
pub struct LiveSet {
    items: Vec<Entry>,
    arrivals: u32,
}

impl LiveSet {
    /// An empty set expecting up to `n` packets.
    #[must_use]
    pub fn with_capacity(n: usize) -> LiveSet {
        LiveSet {
            items: Vec::with_capacity(n),
            arrivals: 0,
        }
    }

    /// Adds packet `id` of rank `rank`; returns the arrival number that
    /// [`remove`](Self::remove) needs.
    #[inline]
    pub fn insert(&mut self, rank: u64, id: u32) -> u32 {
        let a = self.arrivals;
        self.arrivals = self.arrivals.wrapping_add(1);
        let at = self.items.partition_point(|&(r, n, _)| (r, n) < (rank, a));
        self.items.insert(at, (rank, a, id));
        a
    }

    /// Removes the packet added with `rank` and arrival number `arrival`.
    #[inline]
    pub fn remove(&mut self, rank: u64, arrival: u32) {
        let at = self
            .items
            .partition_point(|&(r, n, _)| (r, n) < (rank, arrival));
        debug_assert!(
            self.items
                .get(at)
                .is_some_and(|&(r, n, _)| (r, n) == (rank, arrival)),
            "live packet of rank {rank}, arrival {arrival} is not in the set"
        );
        self.items.remove(at);
    }

    /// The packet with the largest rank (the latest among equals): `(rank, id)`.
    #[must_use]
    pub fn last(&self) -> Option<(u64, u32)> {
        self.items.last().map(|&(r, _, id)| (r, id))
    }

    /// Removes and returns the last packet's id.
    pub fn pop_last(&mut self) -> Option<u32> {
        self.items.pop().map(|(_, _, id)| id)
    }

    /// The smallest rank.
    #[must_use]
    pub fn first_rank(&self) -> Option<u64> {
        self.items.first().map(|&(r, _, _)| r)
    }

    /// `(rank, id)` of every live packet, smallest rank first.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.items.iter().map(|&(r, _, id)| (r, id))
    }

    /// Packets in the set.
    #[must_use]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether it is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_by_rank_then_arrival() {
        let mut s = LiveSet::with_capacity(4);
        let a = s.insert(50, 1);
        let b = s.insert(10, 2);
        let c = s.insert(50, 3);
        assert_eq!(s.first_rank(), Some(10));
        assert_eq!(
            s.last(),
            Some((50, 3)),
            "the later of equal ranks is the victim"
        );
        s.remove(50, c);
        assert_eq!(s.last(), Some((50, 1)));
        s.remove(10, b);
        assert_eq!(s.pop_last(), Some(1));
        assert!(s.is_empty());
        let _ = a;
    }
}
