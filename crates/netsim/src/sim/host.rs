//! The hosts: flows start, transports send and receive, timers fire.

use super::{FlowState, SchemeTransport, Sender, Sim};
use crate::event::{Event, EventKind, EventQueue};
use crate::packet::{flags, Pkt, NO_SLACK};
use crate::time::Time;
use crate::transport::pfabric::PfabricSender;
use crate::transport::tcp::TcpSender;
use crate::transport::udp::UdpSource;
use crate::transport::{Emit, ACK_LEN};
use crate::workload::{FlowTransport, NO_COFLOW};

impl<Q: EventQueue> Sim<'_, Q> {
    pub(super) fn start_flow(&mut self, f: u32) {
        self.unstarted -= 1;
        let now = self.now;
        let fl = &mut self.flows[f as usize];
        match fl.spec.transport {
            FlowTransport::Udp { rate, len, pattern } => {
                let mut src = UdpSource::new(rate, len, pattern, fl.spec.stop.min(self.cfg.end));
                let first = src.first(now, &mut self.rng);
                fl.sender = Sender::Udp(src);
                if let Some(t) = first {
                    self.push(t, Event::new(EventKind::Emit, f, 0));
                }
            }
            FlowTransport::Scheme => {
                self.out.clear();
                match self.cfg.transport {
                    SchemeTransport::Tcp(p) | SchemeTransport::Dctcp(p) => {
                        let dctcp = matches!(self.cfg.transport, SchemeTransport::Dctcp(_));
                        let mut s = TcpSender::new(fl.seg, &p, dctcp);
                        s.start(now, &mut self.out);
                        fl.sender = Sender::Tcp(s);
                    }
                    SchemeTransport::Pfabric(p) => {
                        let mut s = PfabricSender::new(fl.seg, &p);
                        s.start(now, &mut self.out);
                        fl.sender = Sender::Pfabric(s);
                    }
                }
                self.send_emitted(f);
                self.arm_timer(f);
            }
        }
    }

    /// Sends the segments the transport appended to `self.out`.
    fn send_emitted(&mut self, f: u32) {
        for i in 0..self.out.len() {
            let e = self.out[i];
            self.send_segment(f, e);
        }
        self.out.clear();
    }

    fn send_segment(&mut self, f: u32, e: Emit) {
        let fl = &self.flows[f as usize];
        let (remaining, ect) = match &fl.sender {
            Sender::Tcp(s) => (
                s.remaining(),
                matches!(self.cfg.transport, SchemeTransport::Dctcp(_)),
            ),
            Sender::Pfabric(s) => (s.remaining(), false),
            _ => (0, false),
        };
        let slack = if fl.spec.deadline == Time::NEVER {
            NO_SLACK
        } else {
            fl.spec.deadline.since(self.now).as_nanos()
        };
        let mut fl_flags = 0;
        if fl.observed != super::NOT_OBSERVED {
            fl_flags |= flags::OBSERVED;
        }
        if ect {
            fl_flags |= flags::ECT;
        }
        if e.retx {
            fl_flags |= flags::RETX;
        }
        let pkt = Pkt {
            sent: self.now,
            enqueued: self.now,
            remaining,
            slack,
            flow: f,
            seq: e.seq,
            sack: 0,
            qpos: 0,
            dst: fl.spec.dst,
            len: e.len,
            hop: 0,
            flags: fl_flags,
        };
        self.inject(f, pkt, fl.spec.src);
    }

    /// Creates `pkt` and offers it to host `host`'s NIC.
    fn inject(&mut self, f: u32, pkt: Pkt, host: u32) {
        let Some(id) = self.pkts.alloc(pkt) else {
            self.counters.store_full += 1;
            self.flows[f as usize].drops += 1;
            return;
        };
        self.counters.created += 1;
        let port = self.topo.host_port(host);
        self.forward(id, port);
    }

    pub(super) fn emit_datagram(&mut self, f: u32) {
        let now = self.now;
        let fl = &mut self.flows[f as usize];
        let Sender::Udp(src) = &mut fl.sender else {
            return;
        };
        let len = src.len();
        let seq = src.sent;
        let next = src.next(now, &mut self.rng);
        let pkt = Pkt {
            sent: now,
            enqueued: now,
            remaining: 0,
            slack: NO_SLACK,
            flow: f,
            seq,
            sack: 0,
            qpos: 0,
            dst: fl.spec.dst,
            len,
            hop: 0,
            flags: if fl.observed == super::NOT_OBSERVED {
                0
            } else {
                flags::OBSERVED
            },
        };
        let src_host = fl.spec.src;
        if let Some(t) = next {
            self.push(t, Event::new(EventKind::Emit, f, 0));
        }
        self.inject(f, pkt, src_host);
    }

    /// A packet reached its destination host.
    pub(super) fn deliver(&mut self, id: u32) {
        let p = *self.pkts.get(id);
        if p.has(flags::ACK) {
            self.counters.consumed += 1;
            self.pkts.free(id);
            self.on_ack(p);
            return;
        }
        let now = self.now;
        let fl = &mut self.flows[p.flow as usize];
        if let Sender::Udp(_) = fl.sender {
            fl.delivered += u64::from(p.len);
            if fl.observed != super::NOT_OBSERVED && p.sent >= self.cfg.measure_from {
                self.observed[fl.observed as usize].record(now.since(p.sent));
            }
            self.counters.consumed += 1;
            self.pkts.free(id);
            return;
        }
        let ack = fl.recv.on_data(p.seq);
        fl.delivered = fl.seg.bytes_before(ack);
        // The data packet's slot becomes the acknowledgement.
        self.counters.consumed += 1;
        self.counters.created += 1;
        let mut a = p;
        a.flags = flags::ACK | if p.has(flags::CE) { flags::ECE } else { 0 };
        a.seq = ack;
        a.sack = p.seq;
        a.dst = fl.spec.src;
        a.len = ACK_LEN;
        a.hop = 0;
        a.remaining = 0;
        a.slack = NO_SLACK;
        a.enqueued = now;
        *self.pkts.get_mut(id) = a;
        let port = self.topo.host_port(fl.spec.dst);
        self.forward(id, port);
    }

    fn on_ack(&mut self, p: Pkt) {
        let f = p.flow;
        let now = self.now;
        let fl = &mut self.flows[f as usize];
        if fl.finished != Time::NEVER {
            return;
        }
        self.out.clear();
        let done = match &mut fl.sender {
            Sender::Tcp(s) => {
                s.on_ack(now, p.seq, p.has(flags::ECE), p.sent, &mut self.out)
                    .done
            }
            Sender::Pfabric(s) => s.on_ack(now, p.seq, p.sack, &mut self.out),
            _ => false,
        };
        self.send_emitted(f);
        if done {
            self.complete(f);
        } else {
            self.arm_timer(f);
        }
    }

    fn complete(&mut self, f: u32) {
        let now = self.now;
        let fl = &mut self.flows[f as usize];
        fl.finished = now;
        if super::counts_as_finite(&fl.spec) {
            self.pending_finite -= 1;
        }
        let c = fl.spec.coflow;
        if c != NO_COFLOW {
            let left = &mut self.coflow_left[c as usize];
            *left -= 1;
            if *left == 0 {
                self.coflow_done[c as usize] = now;
            }
        }
    }

    fn rto_at(fl: &FlowState) -> Time {
        match &fl.sender {
            Sender::Tcp(s) => s.rto_at(),
            Sender::Pfabric(s) => s.rto_at(),
            _ => Time::NEVER,
        }
    }

    /// Files a timer event for the flow's deadline unless one at or before it
    /// is pending (that one re-files itself when it fires early).
    fn arm_timer(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        let at = Self::rto_at(fl);
        if at == Time::NEVER || fl.timer_ev <= at {
            return;
        }
        fl.timer_gen = fl.timer_gen.wrapping_add(1);
        fl.timer_ev = at;
        let gen = fl.timer_gen;
        self.push(at, Event::new(EventKind::Timer, f, gen));
    }

    pub(super) fn timer(&mut self, f: u32, gen: u32) {
        let now = self.now;
        let fl = &mut self.flows[f as usize];
        if gen != fl.timer_gen || fl.finished != Time::NEVER {
            return;
        }
        fl.timer_ev = Time::NEVER;
        let at = Self::rto_at(fl);
        if at > now {
            self.arm_timer(f);
            return;
        }
        self.out.clear();
        match &mut fl.sender {
            Sender::Tcp(s) => s.on_timeout(now, &mut self.out),
            Sender::Pfabric(s) => s.on_timeout(now, &mut self.out),
            _ => {}
        }
        self.send_emitted(f);
        self.arm_timer(f);
    }
}
