//! Shortest-path routing with ECMP by flow hash.
//!
//! Hosts never forward, and every host has one link. Hosts that hang off the
//! same switch are reached the same way up to that switch, so the table keeps
//! one column per *destination group*: the hosts of one switch (the switch is
//! the group's anchor), or a single host linked straight to another host (the
//! host is its own anchor). For every node and group the table lists the output
//! ports on a shortest path (hop count) towards the anchor; at the anchor the
//! packet leaves by the port of its destination host. A packet picks among the
//! candidates by a hash of its flow, its direction and the switch, so a flow
//! keeps one path (no reordering) and flows spread over equal-cost paths
//! (ECMP). The table is computed once per topology by a breadth-first search
//! from every anchor.
//!
//! Memory: one `(offset, count)` per node and group, the port lists, a hop
//! count per host and group and one entry per host: 6,656 ranges for a k = 8
//! fat tree (208 nodes, 32 edge switches), 525,136 for a leaf-spine of 5,612
//! hosts under 92 leaves.

use crate::topology::{NodeKind, Topology, TopologyError, NOT_A_HOST};

/// Longest path supported, in hops (ports crossed).
pub const MAX_HOPS: usize = 12;

/// Largest routing tables built, in bytes (as bounded by [`table_bytes`]):
/// about 29,000 hosts on a leaf-spine of 16 hosts a leaf, or a `k = 46` fat
/// tree (24,334 hosts).
pub const MAX_TABLE_BYTES: u64 = 1 << 30;

/// Marks a group whose anchor is its host (no last port).
const NO_PORT: u32 = u32::MAX;

/// Where a destination host sits in the table.
#[derive(Clone, Copy, Debug)]
struct Dest {
    /// Its group (column).
    group: u32,
    /// The port from the group's anchor switch to the host, or [`NO_PORT`].
    last: u32,
}

/// Next-hop candidates of every node towards every host.
#[derive(Clone, Debug)]
pub struct Routes {
    groups: usize,
    /// Per destination host.
    dest: Vec<Dest>,
    /// `(offset, count)` into `ports`, indexed by `node * groups + group`; a
    /// count of 0 at the group's anchor switch.
    next: Vec<(u32, u32)>,
    ports: Vec<u32>,
    /// Hops from each host to each group's anchor, `host * groups + group`.
    dist: Vec<u8>,
}

/// The bytes of the routing tables of a topology with `nodes` nodes (hosts
/// included), `hosts` hosts, `ports` ports and `groups` destination groups
/// (switches with hosts, plus hosts linked to a host), at most: a next-hop
/// range per node and group, a hop count per host and group, each port listed
/// at most once per group, and an entry per host.
#[must_use]
pub fn table_bytes(nodes: usize, hosts: usize, ports: usize, groups: usize) -> u64 {
    let (n, h, p, g) = (nodes as u128, hosts as u128, ports as u128, groups as u128);
    u64::try_from(g * (8 * n + h + 4 * p) + 8 * h).unwrap_or(u64::MAX)
}

/// Refuses a topology whose routing tables ([`table_bytes`]) would exceed
/// [`MAX_TABLE_BYTES`], before anything is allocated for it.
///
/// # Errors
/// [`TopologyError::TooLarge`] with the estimate.
pub fn check_size(
    nodes: usize,
    hosts: usize,
    ports: usize,
    groups: usize,
) -> Result<(), TopologyError> {
    let bytes = table_bytes(nodes, hosts, ports, groups);
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

/// Destination groups: each host's group and last port, and each group's
/// anchor node with its member hosts.
struct Groups {
    dest: Vec<Dest>,
    anchors: Vec<u32>,
    members: Vec<Vec<u32>>,
}

impl Groups {
    fn of(topo: &Topology) -> Groups {
        let mut by_node = vec![u32::MAX; topo.nodes().len()];
        let mut g = Groups {
            dest: Vec::with_capacity(topo.hosts().len()),
            anchors: Vec::new(),
            members: Vec::new(),
        };
        for (h, &node) in topo.hosts().iter().enumerate() {
            let uplink = topo.host_port(h as u32);
            let switch = topo.ports()[uplink as usize].to;
            let (anchor, last) = if topo.host_index(switch) == NOT_A_HOST {
                (switch, topo.twin(uplink))
            } else {
                (node, NO_PORT)
            };
            if by_node[anchor as usize] == u32::MAX {
                by_node[anchor as usize] = g.anchors.len() as u32;
                g.anchors.push(anchor);
                g.members.push(Vec::new());
            }
            let group = by_node[anchor as usize];
            g.members[group as usize].push(h as u32);
            g.dest.push(Dest { group, last });
        }
        g
    }
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
        let g = Groups::of(topo);
        let groups = g.anchors.len();
        check_size(n, hosts, topo.ports().len(), groups)?;
        let mut r = Routes {
            groups,
            dest: g.dest,
            next: vec![(0, 0); n * groups],
            ports: Vec::new(),
            dist: vec![0; hosts * groups],
        };
        let mut dist = vec![u32::MAX; n];
        let mut queue = Vec::with_capacity(n);
        for (group, &anchor) in g.anchors.iter().enumerate() {
            bfs(topo, anchor, &mut dist, &mut queue);
            r.fill_column(topo, group, anchor, &dist);
            let extra = u32::from(topo.host_index(anchor) == NOT_A_HOST);
            for (s, &src) in topo.hosts().iter().enumerate() {
                let members = &g.members[group];
                let Some(&dst) = members.iter().find(|&&d| d != s as u32) else {
                    continue;
                };
                let hops = dist[src as usize].saturating_add(extra);
                let name = |h: u32| topo.nodes()[topo.hosts()[h as usize] as usize].name.clone();
                if dist[src as usize] == u32::MAX {
                    return Err(TopologyError::Disconnected {
                        a: name(s as u32),
                        b: name(dst),
                    });
                }
                if hops as usize > MAX_HOPS {
                    return Err(TopologyError::TooLong {
                        a: name(s as u32),
                        b: name(dst),
                        hops: hops as usize,
                        max: MAX_HOPS,
                    });
                }
                r.dist[s * groups + group] = hops as u8;
            }
        }
        Ok(r)
    }

    /// Every node's candidate ports towards `anchor`, whose distances are
    /// `dist`: the ports to a switch (or to the anchor) one hop nearer.
    fn fill_column(&mut self, topo: &Topology, group: usize, anchor: u32, dist: &[u32]) {
        for (u, node) in topo.nodes().iter().enumerate() {
            if dist[u] == u32::MAX || dist[u] == 0 {
                continue;
            }
            let start = self.ports.len() as u32;
            for &p in &node.ports {
                let to = topo.ports()[p as usize].to;
                let forwards = to == anchor || topo.host_index(to) == NOT_A_HOST;
                if forwards && dist[to as usize] == dist[u] - 1 {
                    self.ports.push(p);
                }
            }
            self.next[u * self.groups + group] = (start, self.ports.len() as u32 - start);
        }
    }

    /// The output port at `node` towards host `dst` for a packet whose flow hash
    /// is `hash`.
    #[inline]
    #[must_use]
    pub fn next_port(&self, node: u32, dst: u32, hash: u64) -> u32 {
        let d = self.dest[dst as usize];
        let (off, cnt) = self.next[node as usize * self.groups + d.group as usize];
        let pick = match cnt {
            0 => {
                debug_assert!(d.last != NO_PORT, "no route from node {node} to host {dst}");
                return d.last;
            }
            1 => 0,
            _ => {
                (mix64(hash ^ u64::from(node).wrapping_mul(0x100_0000_01B3)) % u64::from(cnt))
                    as u32
            }
        };
        self.ports[(off + pick) as usize]
    }

    /// Ports crossed from host `src` to host `dst`.
    #[must_use]
    pub fn hops(&self, src: u32, dst: u32) -> usize {
        if src == dst {
            return 0;
        }
        let group = self.dest[dst as usize].group as usize;
        usize::from(self.dist[src as usize * self.groups + group])
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
        self.next.len() * 8 + self.ports.len() * 4 + self.dist.len() + self.dest.len() * 8
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

    /// Every node's candidates towards every host, by a search from the host
    /// itself (the table's definition, without destination groups).
    fn candidates_by_host(t: &Topology) -> Vec<Vec<Vec<u32>>> {
        let mut dist = vec![u32::MAX; t.nodes().len()];
        let mut queue = Vec::new();
        let mut out = Vec::new();
        for &dst in t.hosts() {
            bfs(t, dst, &mut dist, &mut queue);
            let per_node = (0..t.nodes().len())
                .map(|u| {
                    let ports = &t.nodes()[u].ports;
                    let near = |p: &&u32| {
                        let to = t.ports()[**p as usize].to;
                        dist[u] != u32::MAX
                            && dist[u] > 0
                            && (to == dst || t.host_index(to) == NOT_A_HOST)
                            && dist[to as usize] == dist[u] - 1
                    };
                    ports.iter().filter(near).copied().collect()
                })
                .collect();
            out.push(per_node);
        }
        out
    }

    #[test]
    fn grouped_tables_give_every_host_its_shortest_paths() {
        for t in [
            Topology::leaf_spine(5, 3, 4, p(10), p(40)).unwrap(),
            Topology::fat_tree(4, p(10), p(10), p(10)).unwrap(),
            Topology::parking_lot(4, 3, p(1), p(1)).unwrap(),
            Topology::dumbbell(3, 2, p(1), p(1)).unwrap(),
        ] {
            let r = Routes::new(&t).unwrap();
            let want = candidates_by_host(&t);
            for (d, per_node) in want.iter().enumerate() {
                for (u, ports) in per_node.iter().enumerate() {
                    if t.host_index(u as u32) != NOT_A_HOST || ports.is_empty() {
                        continue;
                    }
                    let got: std::collections::BTreeSet<u32> = (0..256u64)
                        .map(|h| r.next_port(u as u32, d as u32, mix64(h)))
                        .collect();
                    let want: std::collections::BTreeSet<u32> = ports.iter().copied().collect();
                    assert_eq!(got, want, "node {u} towards host {d}");
                }
            }
            for s in 0..t.hosts().len() as u32 {
                for d in 0..t.hosts().len() as u32 {
                    let path = r.path(&t, s, d, mix64(u64::from(s * 31 + d)));
                    let end = t.ports()[*path.last().unwrap() as usize].to;
                    if s != d {
                        assert_eq!(end, t.hosts()[d as usize], "{s} -> {d}");
                        assert_eq!(path.len(), r.hops(s, d), "{s} -> {d}");
                    }
                }
            }
        }
    }

    #[test]
    fn twin_ports_run_the_other_way() {
        let t = Topology::fat_tree(4, p(10), p(10), p(10)).unwrap();
        for (i, port) in t.ports().iter().enumerate() {
            let back = &t.ports()[t.twin(i as u32) as usize];
            assert_eq!((back.from, back.to), (port.to, port.from));
        }
    }

    #[test]
    fn hosts_linked_to_a_host_are_their_own_group() {
        let mut b = TopologyBuilder::new();
        b.node("a", NodeKind::Host).unwrap();
        b.node("b", NodeKind::Host).unwrap();
        b.link_names("a", "b", p(1)).unwrap();
        let t = b.finish().unwrap();
        let r = Routes::new(&t).unwrap();
        assert_eq!((r.hops(0, 1), r.hops(1, 0)), (1, 1));
        assert_eq!(r.path(&t, 0, 1, 7), vec![t.host_port(0)]);
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
