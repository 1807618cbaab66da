//! Topologies: hosts and switches joined by full-duplex links, and the builders
//! for the papers' networks.
//!
//! A link between nodes `a` and `b` is two *ports*, `a->b` and `b->a`: the output
//! queue and transmitter at one end of each direction. A port has its rate, its
//! propagation delay and optionally its own buffer size (otherwise the scheme's).
//! A host has exactly one link (its NIC) and never forwards; switches forward
//! along shortest paths ([`crate::routing`]).
//!
//! | builder | papers | nodes |
//! |---|---|---|
//! | [`Topology::leaf_spine`] | Eiffel Fig. 15, pFabric: 9 leaves, 4 spines, 16 hosts each, 10/40 Gbit/s | `h0..`, `leaf0..`, `spine0..` |
//! | [`Topology::fat_tree`] | calendar queues section 4.2: k-ary fat tree (k = 8: 128 hosts) | `h0..`, `edge{p}.{i}`, `agg{p}.{i}`, `core{i}` |
//! | [`Topology::dumbbell`] | one bottleneck | `s0..`, `r0..`, `left`, `right` |
//! | [`Topology::parking_lot`] | QFQ section 6 (a chain of routers with hosts at each) | `h{r}.{i}`, `r0..` |
//! | [`TopologyBuilder`] | anything (`custom` in scenarios) | named in the scenario |

use std::collections::HashMap;

use crate::time::{Duration, Rate};

/// Whether a node is an end host or a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// An end host: one link, runs transports.
    Host,
    /// A switch: forwards packets.
    Switch,
}

/// Rate, propagation delay and optional buffer of a link (both directions).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkParams {
    /// Transmission rate.
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Bytes each direction's output queue holds; `None`: the scheme's default.
    pub buffer: Option<u64>,
}

impl LinkParams {
    /// A link of `rate` and `delay` with the scheme's buffer.
    #[must_use]
    pub const fn new(rate: Rate, delay: Duration) -> LinkParams {
        LinkParams {
            rate,
            delay,
            buffer: None,
        }
    }
}

/// A node.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Unique name.
    pub name: String,
    /// Host or switch.
    pub kind: NodeKind,
    /// Its output ports.
    pub ports: Vec<u32>,
}

/// One direction of a link: an output queue at `from` feeding `to`.
#[derive(Clone, Debug, PartialEq)]
pub struct PortSpec {
    /// Node whose output queue this is.
    pub from: u32,
    /// Node at the far end.
    pub to: u32,
    /// Rate, delay, buffer.
    pub link: LinkParams,
}

/// A topology that is not usable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// Two nodes with one name.
    #[error("node `{0}` is defined twice")]
    DuplicateNode(String),
    /// A link names a node that does not exist.
    #[error("link end `{0}` is not a node")]
    UnknownNode(String),
    /// A link from a node to itself.
    #[error("link from `{0}` to itself")]
    SelfLink(String),
    /// A host with no link or several.
    #[error("host `{name}` has {links} links; a host has exactly one")]
    HostLinks {
        /// The host.
        name: String,
        /// Its links.
        links: usize,
    },
    /// Fewer than two hosts.
    #[error("a topology needs at least two hosts, found {0}")]
    TooFewHosts(usize),
    /// Part of the network cannot reach the rest.
    #[error("the topology is disconnected: `{a}` cannot reach `{b}`")]
    Disconnected {
        /// A node.
        a: String,
        /// A node it cannot reach.
        b: String,
    },
    /// Routing tables too large to build.
    #[error(
        "{hosts} hosts and {nodes} nodes need about {bytes} of routing tables, above the {max} supported: use fewer hosts"
    )]
    TooLarge {
        /// Hosts.
        hosts: usize,
        /// Nodes (hosts and switches).
        nodes: usize,
        /// The tables' size, formatted.
        bytes: String,
        /// The limit, formatted.
        max: String,
    },
    /// A path longer than the simulator supports.
    #[error("the path from `{a}` to `{b}` has {hops} hops, more than the {max} supported")]
    TooLong {
        /// Source host.
        a: String,
        /// Destination host.
        b: String,
        /// Its hop count.
        hops: usize,
        /// The limit.
        max: usize,
    },
    /// A builder parameter out of range.
    #[error("{0}")]
    Invalid(String),
    /// A rate of zero.
    #[error("link `{0}` has a rate of zero")]
    ZeroRate(String),
}

/// Hosts, switches and ports.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    nodes: Vec<Node>,
    ports: Vec<PortSpec>,
    hosts: Vec<u32>,
    host_index: Vec<u32>,
    /// NIC port of each host (looked up for every packet a host sends).
    host_ports: Vec<u32>,
}

/// Marks a node that is not a host in [`Topology::host_index`].
pub const NOT_A_HOST: u32 = u32::MAX;

/// Incremental construction; [`TopologyBuilder::finish`] validates.
#[derive(Debug, Default)]
pub struct TopologyBuilder {
    nodes: Vec<Node>,
    ports: Vec<PortSpec>,
    names: HashMap<String, u32>,
}

impl TopologyBuilder {
    /// An empty topology.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a node; its index.
    ///
    /// # Errors
    /// The name is taken.
    pub fn node(&mut self, name: &str, kind: NodeKind) -> Result<u32, TopologyError> {
        if self.names.contains_key(name) {
            return Err(TopologyError::DuplicateNode(name.to_string()));
        }
        let id = self.nodes.len() as u32;
        self.nodes.push(Node {
            name: name.to_string(),
            kind,
            ports: Vec::new(),
        });
        self.names.insert(name.to_string(), id);
        Ok(id)
    }

    /// The index of node `name`.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<u32> {
        self.names.get(name).copied()
    }

    /// Joins `a` and `b` by a full-duplex link.
    ///
    /// # Errors
    /// A self-link or a zero rate.
    pub fn link(&mut self, a: u32, b: u32, link: LinkParams) -> Result<(), TopologyError> {
        if a == b {
            return Err(TopologyError::SelfLink(self.nodes[a as usize].name.clone()));
        }
        if link.rate.is_zero() {
            return Err(TopologyError::ZeroRate(format!(
                "{}-{}",
                self.nodes[a as usize].name, self.nodes[b as usize].name
            )));
        }
        for (from, to) in [(a, b), (b, a)] {
            let id = self.ports.len() as u32;
            self.ports.push(PortSpec { from, to, link });
            self.nodes[from as usize].ports.push(id);
        }
        Ok(())
    }

    /// Joins nodes by name.
    ///
    /// # Errors
    /// An unknown name, a self-link or a zero rate.
    pub fn link_names(&mut self, a: &str, b: &str, link: LinkParams) -> Result<(), TopologyError> {
        let ia = self
            .find(a)
            .ok_or_else(|| TopologyError::UnknownNode(a.to_string()))?;
        let ib = self
            .find(b)
            .ok_or_else(|| TopologyError::UnknownNode(b.to_string()))?;
        self.link(ia, ib, link)
    }

    /// Validates: every host has one link, at least two hosts, connected.
    ///
    /// # Errors
    /// See [`TopologyError`].
    pub fn finish(self) -> Result<Topology, TopologyError> {
        let mut hosts = Vec::new();
        let mut host_index = vec![NOT_A_HOST; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            if n.kind == NodeKind::Host {
                if n.ports.len() != 1 {
                    return Err(TopologyError::HostLinks {
                        name: n.name.clone(),
                        links: n.ports.len(),
                    });
                }
                host_index[i] = hosts.len() as u32;
                hosts.push(i as u32);
            }
        }
        if hosts.len() < 2 {
            return Err(TopologyError::TooFewHosts(hosts.len()));
        }
        let host_ports = hosts
            .iter()
            .map(|&h| self.nodes[h as usize].ports[0])
            .collect();
        let topo = Topology {
            nodes: self.nodes,
            ports: self.ports,
            hosts,
            host_index,
            host_ports,
        };
        topo.check_connected()?;
        Ok(topo)
    }
}

impl Topology {
    /// Nodes by index.
    #[must_use]
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Ports by index.
    #[must_use]
    pub fn ports(&self) -> &[PortSpec] {
        &self.ports
    }

    /// Host node indices, in order (host `i` is node `hosts()[i]`).
    #[must_use]
    pub fn hosts(&self) -> &[u32] {
        &self.hosts
    }

    /// The host number of node `n`, or [`NOT_A_HOST`].
    #[must_use]
    pub fn host_index(&self, n: u32) -> u32 {
        self.host_index[n as usize]
    }

    /// The port in the opposite direction of `port`: links are full duplex and
    /// their two directions are numbered `2i` and `2i + 1`.
    #[must_use]
    #[inline]
    pub fn twin(&self, port: u32) -> u32 {
        port ^ 1
    }

    /// The NIC port of host number `h`.
    #[must_use]
    #[inline]
    pub fn host_port(&self, h: u32) -> u32 {
        self.host_ports[h as usize]
    }

    /// The node called `name`.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<u32> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as u32)
    }

    /// The host number of the host called `name`.
    #[must_use]
    pub fn find_host(&self, name: &str) -> Option<u32> {
        self.find(name)
            .map(|n| self.host_index(n))
            .filter(|&h| h != NOT_A_HOST)
    }

    /// `from->to` for port `p`.
    #[must_use]
    pub fn port_name(&self, p: u32) -> String {
        let ps = &self.ports[p as usize];
        format!(
            "{}->{}",
            self.nodes[ps.from as usize].name, self.nodes[ps.to as usize].name
        )
    }

    /// The port called `from->to`.
    #[must_use]
    pub fn find_port(&self, name: &str) -> Option<u32> {
        let (a, b) = name.split_once("->")?;
        let (a, b) = (self.find(a.trim())?, self.find(b.trim())?);
        self.nodes[a as usize]
            .ports
            .iter()
            .copied()
            .find(|&p| self.ports[p as usize].to == b)
    }

    /// The largest propagation delay plus full-frame transmission time of any
    /// port: how far ahead most events are scheduled.
    #[must_use]
    pub fn max_hop_time(&self, mtu: u64) -> Duration {
        self.ports
            .iter()
            .map(|p| p.link.delay + p.link.rate.tx_time_ceil(mtu))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn check_connected(&self) -> Result<(), TopologyError> {
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![0u32];
        seen[0] = true;
        while let Some(n) = stack.pop() {
            for &p in &self.nodes[n as usize].ports {
                let to = self.ports[p as usize].to;
                if !seen[to as usize] {
                    seen[to as usize] = true;
                    stack.push(to);
                }
            }
        }
        if let Some(b) = seen.iter().position(|s| !s) {
            return Err(TopologyError::Disconnected {
                a: self.nodes[0].name.clone(),
                b: self.nodes[b].name.clone(),
            });
        }
        Ok(())
    }

    /// A leaf-spine fabric: `leaves` leaf switches with `hosts_per_leaf` hosts
    /// each, every leaf joined to every one of `spines` spine switches (Eiffel
    /// Fig. 15 and pFabric: 9 x 16 hosts, 4 spines, 10 Gbit/s host links, 40
    /// Gbit/s fabric links).
    ///
    /// # Errors
    /// A count of zero.
    pub fn leaf_spine(
        leaves: usize,
        spines: usize,
        hosts_per_leaf: usize,
        host: LinkParams,
        fabric: LinkParams,
    ) -> Result<Topology, TopologyError> {
        if leaves == 0 || spines == 0 || hosts_per_leaf == 0 {
            return Err(TopologyError::Invalid(
                "leaf-spine: leaves, spines and hosts_per_leaf must be positive".into(),
            ));
        }
        let mut b = TopologyBuilder::new();
        let mut hosts = Vec::with_capacity(leaves * hosts_per_leaf);
        for i in 0..leaves * hosts_per_leaf {
            hosts.push(b.node(&format!("h{i}"), NodeKind::Host)?);
        }
        let leaf: Vec<u32> = (0..leaves)
            .map(|i| b.node(&format!("leaf{i}"), NodeKind::Switch))
            .collect::<Result<_, _>>()?;
        let spine: Vec<u32> = (0..spines)
            .map(|i| b.node(&format!("spine{i}"), NodeKind::Switch))
            .collect::<Result<_, _>>()?;
        for (i, &h) in hosts.iter().enumerate() {
            b.link(h, leaf[i / hosts_per_leaf], host)?;
        }
        for &l in &leaf {
            for &s in &spine {
                b.link(l, s, fabric)?;
            }
        }
        b.finish()
    }

    /// A k-ary fat tree (Al-Fares et al.): `k` pods of `k/2` edge and `k/2`
    /// aggregation switches, `(k/2)^2` core switches, `k/2` hosts per edge switch
    /// (`k^3/4` hosts: 128 for `k = 8`).
    ///
    /// # Errors
    /// `k` odd or below 2.
    pub fn fat_tree(
        k: usize,
        host: LinkParams,
        edge_agg: LinkParams,
        agg_core: LinkParams,
    ) -> Result<Topology, TopologyError> {
        if k < 2 || k % 2 != 0 {
            return Err(TopologyError::Invalid(format!(
                "fat tree: k must be even and at least 2, got {k}"
            )));
        }
        let half = k / 2;
        let mut b = TopologyBuilder::new();
        let hosts: Vec<u32> = (0..k * half * half)
            .map(|i| b.node(&format!("h{i}"), NodeKind::Host))
            .collect::<Result<_, _>>()?;
        let core: Vec<u32> = (0..half * half)
            .map(|i| b.node(&format!("core{i}"), NodeKind::Switch))
            .collect::<Result<_, _>>()?;
        for p in 0..k {
            let edge: Vec<u32> = (0..half)
                .map(|i| b.node(&format!("edge{p}.{i}"), NodeKind::Switch))
                .collect::<Result<_, _>>()?;
            let agg: Vec<u32> = (0..half)
                .map(|i| b.node(&format!("agg{p}.{i}"), NodeKind::Switch))
                .collect::<Result<_, _>>()?;
            for (e, &es) in edge.iter().enumerate() {
                for j in 0..half {
                    b.link(hosts[(p * half + e) * half + j], es, host)?;
                }
                for &a in &agg {
                    b.link(es, a, edge_agg)?;
                }
            }
            for (a, &asw) in agg.iter().enumerate() {
                for j in 0..half {
                    b.link(asw, core[a * half + j], agg_core)?;
                }
            }
        }
        b.finish()
    }

    /// A dumbbell: `senders` hosts on switch `left`, `receivers` hosts on switch
    /// `right`, one bottleneck link between the switches.
    ///
    /// # Errors
    /// No senders or receivers.
    pub fn dumbbell(
        senders: usize,
        receivers: usize,
        access: LinkParams,
        bottleneck: LinkParams,
    ) -> Result<Topology, TopologyError> {
        if senders == 0 || receivers == 0 {
            return Err(TopologyError::Invalid(
                "dumbbell: senders and receivers must be positive".into(),
            ));
        }
        let mut b = TopologyBuilder::new();
        let left = b.node("left", NodeKind::Switch)?;
        let right = b.node("right", NodeKind::Switch)?;
        for i in 0..senders {
            let h = b.node(&format!("s{i}"), NodeKind::Host)?;
            b.link(h, left, access)?;
        }
        for i in 0..receivers {
            let h = b.node(&format!("r{i}"), NodeKind::Host)?;
            b.link(h, right, access)?;
        }
        b.link(left, right, bottleneck)?;
        b.finish()
    }

    /// A parking lot: `routers` switches in a chain `r0 - r1 - ...`, each with
    /// `hosts_per_router` hosts `h{r}.{i}` (QFQ's section 6 is a three-router
    /// chain with flows entering and leaving at different routers).
    ///
    /// # Errors
    /// Fewer than two routers or no hosts.
    pub fn parking_lot(
        routers: usize,
        hosts_per_router: usize,
        access: LinkParams,
        core: LinkParams,
    ) -> Result<Topology, TopologyError> {
        if routers < 2 || hosts_per_router == 0 {
            return Err(TopologyError::Invalid(
                "parking lot: at least two routers and one host per router".into(),
            ));
        }
        let mut b = TopologyBuilder::new();
        let r: Vec<u32> = (0..routers)
            .map(|i| b.node(&format!("r{i}"), NodeKind::Switch))
            .collect::<Result<_, _>>()?;
        for (i, &ri) in r.iter().enumerate() {
            for j in 0..hosts_per_router {
                let h = b.node(&format!("h{i}.{j}"), NodeKind::Host)?;
                b.link(h, ri, access)?;
            }
        }
        for w in r.windows(2) {
            b.link(w[0], w[1], core)?;
        }
        b.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(g: u64) -> LinkParams {
        LinkParams::new(Rate::from_gbps(g), Duration::from_nanos(1_000))
    }

    #[test]
    fn leaf_spine_of_the_paper() {
        let t = Topology::leaf_spine(9, 4, 16, p(10), p(40)).unwrap();
        assert_eq!(t.hosts().len(), 144);
        assert_eq!(t.nodes().len(), 144 + 13);
        assert_eq!(t.ports().len(), 2 * (144 + 36));
        assert_eq!(t.port_name(t.host_port(0)), "h0->leaf0");
        assert_eq!(
            t.find_port("leaf8->spine3")
                .map(|q| t.port_name(q))
                .unwrap(),
            "leaf8->spine3"
        );
    }

    #[test]
    fn fat_tree_k8() {
        let t = Topology::fat_tree(8, p(10), p(10), p(10)).unwrap();
        assert_eq!(t.hosts().len(), 128);
        assert_eq!(t.nodes().len(), 128 + 16 + 64);
        // Every core switch has one link per pod.
        let core = t.find("core0").unwrap();
        assert_eq!(t.nodes()[core as usize].ports.len(), 8);
        assert!(Topology::fat_tree(3, p(10), p(10), p(10)).is_err());
    }

    #[test]
    fn invalid_topologies_are_refused() {
        let mut b = TopologyBuilder::new();
        b.node("a", NodeKind::Host).unwrap();
        assert_eq!(
            b.node("a", NodeKind::Switch),
            Err(TopologyError::DuplicateNode("a".into()))
        );
        b.node("b", NodeKind::Host).unwrap();
        b.node("s", NodeKind::Switch).unwrap();
        b.node("island", NodeKind::Switch).unwrap();
        b.link_names("a", "s", p(1)).unwrap();
        b.link_names("b", "s", p(1)).unwrap();
        assert!(matches!(
            b.link_names("a", "nowhere", p(1)),
            Err(TopologyError::UnknownNode(_))
        ));
        assert!(matches!(
            b.finish(),
            Err(TopologyError::Disconnected { .. })
        ));

        let mut b = TopologyBuilder::new();
        b.node("a", NodeKind::Host).unwrap();
        b.node("b", NodeKind::Host).unwrap();
        b.node("s", NodeKind::Switch).unwrap();
        b.link_names("a", "s", p(1)).unwrap();
        b.link_names("a", "b", p(1)).unwrap();
        b.link_names("b", "s", p(1)).unwrap();
        assert!(matches!(b.finish(), Err(TopologyError::HostLinks { .. })));
    }
}
