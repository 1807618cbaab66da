//! Shortest-path routing with ECMP by flow hash.
//!
//! For every node and destination host the table lists the output ports on a
//! shortest path (hop count); hosts never forward. A packet picks among them by
//! a hash of its flow, its direction and the switch, so a flow keeps one path
//! (no reordering) and flows spread over equal-cost paths (ECMP). The table is
//! computed once per topology by a breadth-first search from every host.
//!
//! Memory: one `(offset, count)` per node and destination host plus the port
//! lists; 26,624 entries for a k = 8 fat tree.

use crate::topology::{NodeKind, Topology, TopologyError, NOT_A_HOST};

/// Longest path supported, in hops (ports crossed).
pub const MAX_HOPS: usize = 12;

/// Largest routing tables built, in bytes (as bounded by [`table_bytes`]):
/// about 7,000 hosts on a leaf-spine of 16 hosts a leaf, or a `k = 24` fat
/// tree (3,456 hosts).
pub const MAX_TABLE_BYTES: u64 = 1 << 30;

/// Next-hop candidates of every node towards every host.
#[derive(Clone, Debug)]
pub struct Routes {
    hosts: usize,
    /// `(offset, count)` into `ports`, indexed by `node * hosts + dst_host`.
    next: Vec<(u32, u32)>,
    ports: Vec<u32>,
    /// Hop count between hosts, `src * hosts + dst`.
    hops: Vec<u8>,
}

/// The bytes of the routing tables of a topology with `nodes` nodes (hosts
/// included), `hosts` hosts and `ports` ports, at most: a next-hop range per
/// node and host, a hop count per host pair, and each port listed at most once
/// per destination host.
#[must_use]
pub fn table_bytes(nodes: usize, hosts: usize, ports: usize) -> u64 {
    let (n, h, p) = (nodes as u128, hosts as u128, ports as u128);
    u64::try_from(h * (8 * n + h + 4 * p)).unwrap_or(u64::MAX)
}

/// Refuses a topology whose routing tables ([`table_bytes`]) would exceed
/// [`MAX_TABLE_BYTES`], before anything is allocated for it.
///
/// # Errors
/// [`TopologyError::TooLarge`] with the estimate.
pub fn check_size(nodes: usize, hosts: usize, ports: usize) -> Result<(), TopologyError> {
    let bytes = table_bytes(nodes, hosts, ports);
    if bytes > MAX_TABLE_BYTES {
        return Err(TopologyError::TooLarge {
            hosts,
            nodes,
            bytes: crate::report::human_bytes(bytes),
            max: crate::report::human_bytes(MAX_TABLE_BYTES),
        });
    }
    Ok(())
}

/// A 64-bit finalizer (SplitMix64): spreads flow keys over ECMP candidates.
#[inline]
#[must_use]
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Routes {
    /// Computes the table for `topo`.
    ///
    /// # Errors
    /// Tables above [`MAX_TABLE_BYTES`] ([`check_size`]), a host pair without a
    /// path (possible only for hand-made topologies whose hosts are joined
    /// through another host), or a path longer than [`MAX_HOPS`].
    pub fn new(topo: &Topology) -> Result<Routes, TopologyError> {
        let n = topo.nodes().len();
        let hosts = topo.hosts().len();
        check_size(n, hosts, topo.ports().len())?;
        let mut next = vec![(0u32, 0u32); n * hosts];
        let mut ports = Vec::new();
        let mut hops = vec![0u8; hosts * hosts];
        let mut dist = vec![u32::MAX; n];
        let mut queue = Vec::with_capacity(n);
        for (d, &dst) in topo.hosts().iter().enumerate() {
            bfs(topo, dst, &mut dist, &mut queue);
            for (u, node) in topo.nodes().iter().enumerate() {
                if dist[u] == u32::MAX || dist[u] == 0 {
                    continue;
                }
                let start = ports.len() as u32;
                for &p in &node.ports {
                    let to = topo.ports()[p as usize].to;
                    if dist[to as usize] == dist[u] - 1 {
                        ports.push(p);
                    }
                }
                next[u * hosts + d] = (start, ports.len() as u32 - start);
            }
            for (s, &src) in topo.hosts().iter().enumerate() {
                if s == d {
                    continue;
                }
                let h = dist[src as usize];
                let name = |i: u32| topo.nodes()[i as usize].name.clone();
                if h == u32::MAX {
                    return Err(TopologyError::Disconnected {
                        a: name(src),
                        b: name(dst),
                    });
                }
                if h as usize > MAX_HOPS {
                    return Err(TopologyError::TooLong {
                        a: name(src),
                        b: name(dst),
                        hops: h as usize,
                        max: MAX_HOPS,
                    });
                }
                hops[s * hosts + d] = h as u8;
            }
        }
        Ok(Routes {
            hosts,
            next,
            ports,
            hops,
        })
    }

    /// The output port at `node` towards host `dst` for a packet whose flow hash
    /// is `hash`.
    #[inline]
    #[must_use]
    pub fn next_port(&self, node: u32, dst: u32, hash: u64) -> u32 {
        let (off, cnt) = self.next[node as usize * self.hosts + dst as usize];
        debug_assert!(cnt > 0, "no route from node {node} to host {dst}");
        let pick = if cnt == 1 {
            0
        } else {
            (mix64(hash ^ u64::from(node).wrapping_mul(0x100_0000_01B3)) % u64::from(cnt)) as u32
        };
        self.ports[(off + pick) as usize]
    }

    /// Ports crossed from host `src` to host `dst`.
    #[must_use]
    pub fn hops(&self, src: u32, dst: u32) -> usize {
        usize::from(self.hops[src as usize * self.hosts + dst as usize])
    }

    /// The ports a packet of flow hash `hash` crosses from host `src` to `dst`.
    #[must_use]
    pub fn path(&self, topo: &Topology, src: u32, dst: u32, hash: u64) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.hops(src, dst));
        let mut port = topo.host_port(src);
        loop {
            out.push(port);
            let to = topo.ports()[port as usize].to;
            if topo.host_index(to) != NOT_A_HOST {
                return out;
            }
            port = self.next_port(to, dst, hash);
        }
    }

    /// Bytes of memory the table takes.
    #[must_use]
    pub fn memory(&self) -> usize {
        self.next.len() * 8 + self.ports.len() * 4 + self.hops.len()
    }
}

/// Hop distances to `dst` over switches (hosts other than `dst` do not forward).
fn bfs(topo: &Topology, dst: u32, dist: &mut [u32], queue: &mut Vec<u32>) {
    dist.fill(u32::MAX);
    queue.clear();
    dist[dst as usize] = 0;
    queue.push(dst);
    let mut head = 0;
    while head < queue.len() {
        let u = queue[head];
        head += 1;
        let is_host = topo.nodes()[u as usize].kind == NodeKind::Host;
        if is_host && u != dst {
            continue;
        }
        // Links are full duplex: the port u->v has a twin v->u, so walking u's
        // ports finds the nodes that can send to u.
        for &p in &topo.nodes()[u as usize].ports {
            let v = topo.ports()[p as usize].to;
            if dist[v as usize] == u32::MAX {
                dist[v as usize] = dist[u as usize] + 1;
                queue.push(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{Duration, Rate};
    use crate::topology::{LinkParams, TopologyBuilder};

    fn p(g: u64) -> LinkParams {
        LinkParams::new(Rate::from_gbps(g), Duration::from_nanos(1_000))
    }

    #[test]
    fn leaf_spine_paths_use_every_spine() {
        let t = Topology::leaf_spine(9, 4, 16, p(10), p(40)).unwrap();
        let r = Routes::new(&t).unwrap();
        assert_eq!(r.hops(0, 1), 2); // same rack: host -> leaf -> host
        assert_eq!(r.hops(0, 143), 4);
        let mut spines = std::collections::BTreeSet::new();
        for flow in 0..64u64 {
            let path = r.path(&t, 0, 143, mix64(flow));
            assert_eq!(path.len(), 4);
            spines.insert(t.port_name(path[1]));
            assert_eq!(t.port_name(path[3]), "leaf8->h143");
        }
        assert_eq!(spines.len(), 4, "ECMP spreads flows over all spines");
    }

    #[test]
    fn fat_tree_paths() {
        let t = Topology::fat_tree(8, p(10), p(10), p(10)).unwrap();
        let r = Routes::new(&t).unwrap();
        assert_eq!(r.hops(0, 1), 2); // same edge
        assert_eq!(r.hops(0, 4), 4); // same pod
        assert_eq!(r.hops(0, 127), 6); // across the core
    }

    #[test]
    fn hosts_do_not_forward() {
        // a - s1 - b, and b would be a shortcut to c if hosts forwarded.
        let mut b = TopologyBuilder::new();
        for h in ["a", "b", "c"] {
            b.node(h, NodeKind::Host).unwrap();
        }
        b.node("s1", NodeKind::Switch).unwrap();
        b.node("s2", NodeKind::Switch).unwrap();
        b.link_names("a", "s1", p(1)).unwrap();
        b.link_names("b", "s1", p(1)).unwrap();
        b.link_names("c", "s2", p(1)).unwrap();
        b.link_names("s1", "s2", p(1)).unwrap();
        let t = b.finish().unwrap();
        let r = Routes::new(&t).unwrap();
        assert_eq!(r.hops(0, 2), 3);
    }
}
