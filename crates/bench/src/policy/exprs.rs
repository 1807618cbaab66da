//! The `expr` case of `eiffel bench policy`: each built-in rank function against
//! the same policy written as rank expressions (`rank = "..."`), same tree, same
//! queue, same packets, measured in the same run.
//!
//! Each policy is compiled from policy-file text (the expression variant by the
//! same `eiffel-policy` compiler users load files with). A step dequeues one
//! packet at the current time (which advances by one packet time at 10 Gbit/s)
//! and enqueues the next packet of a leaf and flow drawn at random, so the
//! backlog stays at [`PER_FLOW`] packets per flow
//! and ranks move on both enqueue and dequeue.

use std::hint::black_box;

use eiffel_policy::{Policy, PolicyError};
use eiffel_sched::{Nanos, Packet, PolicyTree, Scheduler};

use super::workload::{PACKET_TIME, PER_FLOW};

/// One compared discipline: its name, the node's built-in keys (its
/// `discipline`, or a `flow_limit`), the expression keys that replace them, and
/// whether it is a per-flow leaf of [`FLOWS`] flows (otherwise a root over
/// [`LEAVES`] FIFO leaves).
pub struct Case {
    /// Name in the report.
    pub name: &'static str,
    builtin: &'static str,
    keys: &'static str,
    per_flow: bool,
    queue: &'static str,
}

/// Flows of the per-flow cases.
pub const FLOWS: u32 = 1024;

/// Leaves of the tree cases.
pub const LEAVES: u32 = 64;

const WFQ_KEYS: &str = r#"state = { start = 0, finish = 0 }
rank = "start = max(vtime, finish)"
rank_on_dequeue = "finish = start + len * 65536 / weight; start = finish""#;

/// Token-bucket pacing of every flow at 10 Mbit/s with a 3000-byte bucket, as
/// `examples/policies/tbf-expr.toml` writes it (1024 such flows offer 10.24
/// Gbit/s to the 10 Gbit/s the workload sends: flows are held and released).
const TBF_KEYS: &str = r#"discipline = "fifo"
constants = { rate = 10000000, extra = 1500 }
release_state = { tat = 0, frac = 0 }
release = "if((tat < extra * 8000000000 / rate) + (tat == extra * 8000000000 / rate) * (frac <= extra * 8000000000 % rate), 0, tat - extra * 8000000000 / rate + (frac > extra * 8000000000 % rate))"
release_on_dequeue = "frac = if(tat + 1 < now, 1, max(frac, tat + 1 == now)); tat = max(tat, now - 1); frac = frac + len * 8000000000 % rate; tat = tat + len * 8000000000 / rate + frac / rate; frac = frac % rate; if((tat < extra * 8000000000 / rate) + (tat == extra * 8000000000 / rate) * (frac <= extra * 8000000000 % rate), 0, tat - extra * 8000000000 / rate + (frac > extra * 8000000000 % rate))""#;

/// The compared disciplines.
pub const CASES: [Case; 7] = [
    Case {
        name: "wfq, 64 children",
        builtin: "discipline = \"wfq\"",
        keys: WFQ_KEYS,
        per_flow: false,
        queue: "queue = \"cffs\"\ngranularity = 32768\nbuckets = 4096",
    },
    Case {
        name: "wfq, 1024 flows",
        builtin: "discipline = \"wfq\"",
        keys: WFQ_KEYS,
        per_flow: true,
        queue: "queue = \"cffs\"\ngranularity = 32768\nbuckets = 4096",
    },
    Case {
        name: "strict, 64 children",
        builtin: "discipline = \"strict\"",
        keys: "rank = \"priority\"",
        per_flow: false,
        queue: "queue = \"ffs\"\ngranularity = 1\nbuckets = 64",
    },
    Case {
        name: "edf, 1024 flows",
        builtin: "discipline = \"edf\"",
        keys: "rank = \"head.deadline\"",
        per_flow: true,
        queue: "queue = \"cffs\"\ngranularity = 10000\nbuckets = 16384",
    },
    Case {
        name: "srpt, 1024 flows",
        builtin: "discipline = \"srpt\"",
        keys: "rank = \"head.remaining\"",
        per_flow: true,
        queue: "queue = \"hffs\"\ngranularity = 1500\nbuckets = 44739",
    },
    Case {
        name: "pfabric, 1024 flows",
        builtin: "discipline = \"pfabric\"",
        keys: "rank = \"min_remaining\"",
        per_flow: true,
        queue: "queue = \"hffs\"\ngranularity = 1500\nbuckets = 44739",
    },
    Case {
        name: "token bucket, 1024 flows",
        builtin: "discipline = \"fifo\"\nflow_limit = \"10Mbit\"\nflow_burst = \"3000B\"",
        keys: TBF_KEYS,
        per_flow: true,
        queue: "",
    },
];

impl Case {
    /// The policy text with the built-in discipline, or with the expressions.
    fn text(&self, expr: bool) -> String {
        let order = if expr {
            self.keys.to_string()
        } else {
            self.builtin.to_string()
        };
        let capacity = FLOWS.max(LEAVES) * PER_FLOW + 64;
        let mut t = format!(
            "capacity = {capacity}\n\n[[node]]\nname = \"root\"\n{order}\n{}\n",
            self.queue
        );
        if self.per_flow {
            t += &format!("flows = {FLOWS}\n");
        } else {
            // A weight means something only under wfq, a priority only under
            // strict (the compiler refuses the other).
            let strict = self.builtin == "discipline = \"strict\"";
            for i in 0..LEAVES {
                let setting = if strict {
                    format!("priority = {}", i % 8)
                } else {
                    format!("weight = {}", 1 + i % 4)
                };
                t += &format!("\n[[node]]\nname = \"l{i}\"\nparent = \"root\"\n{setting}\n");
            }
            t += "\n[classify]\ndefault = \"l0\"\n";
            for i in 1..LEAVES {
                t += &format!("[[classify.rule]]\nleaf = \"l{i}\"\nclass = {i}\n");
            }
        }
        t
    }

    /// The compiled policy, built-in or expressions.
    ///
    /// # Errors
    /// A policy the compiler refuses (a bug in the case's text).
    pub fn policy(&self, expr: bool) -> Result<Policy, PolicyError> {
        let file = if expr { "expr.toml" } else { "builtin.toml" };
        Policy::parse(&self.text(expr), file)
    }
}

/// The workload over one policy.
pub struct ExprWorkload {
    tree: PolicyTree,
    now: Nanos,
    rng: u64,
    per_flow: bool,
    /// Per flow or leaf: bytes left in its current transfer.
    left: Vec<u64>,
}

impl ExprWorkload {
    /// The policy's tree with [`PER_FLOW`] packets queued per flow or leaf.
    #[must_use]
    pub fn new(case: &Case, policy: &Policy) -> Self {
        let units = if case.per_flow { FLOWS } else { LEAVES };
        let mut w = ExprWorkload {
            tree: policy.build(),
            now: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
            per_flow: case.per_flow,
            left: vec![0; units as usize],
        };
        for _ in 0..PER_FLOW {
            for u in 0..units {
                let p = w.packet(u);
                w.tree.enqueue(p, 0).expect("room for the initial backlog");
            }
        }
        w
    }

    fn next(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// The next packet of flow (or leaf) `u`.
    fn packet(&mut self, u: u32) -> Packet {
        let r = self.next();
        let len = 64 + (r % 1437) as u32;
        let left = &mut self.left[u as usize];
        if *left < u64::from(len) {
            *left = 1500 * (1 + (r >> 20) % 1000);
        }
        let remaining = *left;
        *left -= u64::from(len);
        let (flow, class) = if self.per_flow { (u, 0) } else { (0, u + 1) };
        let mut p = Packet::new(flow, len).class(class).at(self.now);
        p.deadline = self.now + (r >> 32) % 10_000_000;
        p.remaining = remaining;
        p
    }

    /// Sends one packet and queues the next of a random flow or leaf.
    #[inline]
    pub fn step(&mut self) {
        let sent = self.tree.dequeue(self.now);
        black_box(sent);
        self.now += PACKET_TIME;
        let u = (self.next() % self.left.len() as u64) as u32;
        let p = self.packet(u);
        let _ = black_box(self.tree.enqueue(p, self.now));
    }
}

#[cfg(test)]
mod tests {
    use super::CASES;

    /// Every case compiles with its built-in discipline and with its expressions
    /// (the compiler refuses settings that mean nothing under a discipline).
    #[test]
    fn every_case_compiles_both_ways() {
        for case in &CASES {
            for expr in [false, true] {
                if let Err(e) = case.policy(expr) {
                    panic!("{} (expressions: {expr}): {e}", case.name);
                }
            }
        }
    }
}
