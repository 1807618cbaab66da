//! Packet captures for Eiffel: a pcap or pcapng capture replayed through a
//! policy on the emulated link, and the departures written back as a capture.
//!
//! - [`capture`]: [`Capture::read`], a pcap or pcapng file into frames with
//!   nanosecond timestamps; a truncated or corrupt file is an error naming the
//!   byte offset of the record, never a panic.
//! - [`replay`](mod@replay): [`replay()`], the frames arriving at their capture
//!   times, classified by the policy's rules, scheduled by its tree on an
//!   emulated link; the report is `eiffel run`'s.
//! - [`write`](mod@write): [`write_departures`], the packets sent with their departure
//!   times, as pcap or pcapng.
//!
//! ```no_run
//! use eiffel_pcap::{replay, write_departures, Capture, Format, ReplayOptions};
//! use eiffel_policy::Policy;
//!
//! let policy = Policy::load("examples/policies/live-uplink.toml")?;
//! let capture = Capture::read("trace.pcap")?;
//! let run = replay(&policy, &capture, ReplayOptions::default(), |_| {})?;
//! println!("{} sent, {} dropped", run.report.totals.dequeued, run.report.totals.dropped);
//! write_departures("out.pcap".as_ref(), Format::Pcap, &capture, &run.departures)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod capture;
pub mod replay;
pub mod write;

pub use capture::{Capture, CaptureError, Format, Frame};
pub use replay::{
    replay, run_options, CaptureSummary, Departure, Replay, ReplayError, ReplayOptions,
};
pub use write::{write_departures, WriteError};
