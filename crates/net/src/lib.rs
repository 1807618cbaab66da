//! Linux packet I/O for Eiffel.
//!
//! Takes frames off a Linux interface, reduces each to an [`eiffel_sched::Packet`]
//! descriptor for a scheduler (classified by `eiffel-classify`, the sans-IO
//! crate of header parsing, rules and the flow table), and puts the frames the
//! scheduler releases back on the wire. The payload stays in a preallocated buffer
//! pool; only descriptors travel.
//!
//! # Layers
//! Sans-IO (no system call, no clock; `now` is passed in):
//! - [`pool`]: the buffer pool whose slot index is `Packet::buffer`.
//! - [`frames`]: the same for a data path split over threads: one receive thread
//!   fills slots, transmit and drop paths drain them, without a lock.
//!
//! Operating system (Linux only):
//! - [`afpacket`]: TPACKET_V3 receive rings, TPACKET_V2 transmit rings with one
//!   `send(2)` per batch, `ppoll(2)` waits with nanosecond timeouts.
//! - [`vnet`]: the `virtio_net_hdr` of GSO super-frames (parse, build, wire
//!   length of the segments).
//! - [`offload`]: interfaces' offload flags and the offload mode of a bump.
//! - [`forward`]: a single-threaded two-port forwarder (receive, classify, schedule,
//!   transmit): the reference data path.
//!
//! The network-namespace test bed of the end-to-end tests is a crate of its own,
//! `eiffel-testbed`.
//!
//! All `unsafe` code (socket options, `mmap`, ring access, `ppoll`, the frame slots
//! shared between threads) lives in one private module, `sys`, whose
//! ownership protocols for the shared ring memory and the frame slots are documented
//! there; the rest of the crate is safe Rust.
//!
//! # Supported
//! | feature | status |
//! | --- | --- |
//! | AF_PACKET receive, TPACKET_V3 mmap ring, poll-driven | yes |
//! | AF_PACKET batched transmit, TPACKET_V2 mmap ring, one `send` per batch | yes |
//! | own transmissions ignored (`PACKET_IGNORE_OUTGOING`, and `PACKET_FANOUT_FLAG_IGNORE_OUTGOING` for a fanout group), promiscuous mode | yes |
//! | VLAN tags stripped by the kernel restored on forwarding (single and double) | yes |
//! | Ethernet II, 802.1Q, 802.1ad (QinQ), IPv4 (+options, AH), IPv6 (+extension headers), TCP, UDP | parsed |
//! | ARP, ICMP, other EtherTypes and protocols | forwarded, classified by the fields they have |
//! | IP fragments | one flow per address pair and protocol (no ports), kept in order |
//! | malformed or truncated frames | counted by layer; forwarded in the default leaf or dropped (configurable) |
//! | jumbo frames | yes, with transmit slots and pool slots sized above MTU + 18 |
//! | GRO / GSO / TSO super-frames | AF_PACKET with `virtio_net_hdr` (`PACKET_VNET_HDR`, [`vnet`]): received whole, scheduled as one unit charged its segments' wire bytes, segmented by the kernel on transmission; without it (or over AF_XDP) counted and dropped |
//! | frames with hardware checksum pending (`TP_STATUS_CSUMNOTREADY`) | TCP/UDP checksums completed in software while copied, counted; others forwarded as they are and counted |
//! | AF_XDP, one UMEM for both interfaces, libxdp's default XSK program, native or generic XDP | yes, when built with libxdp (`xdp` module) |
//! | multiple queues / `PACKET_FANOUT` | yes: `RxConfig::fanout`, and `ShapeConfig::queues` receive threads each with its own mailbox |

pub mod afpacket;
pub mod forward;
pub mod frames;
pub mod offload;
pub mod pool;
pub mod shape;
mod sync;
#[allow(unsafe_code)]
mod sys;
pub mod vnet;
pub mod xdp;
