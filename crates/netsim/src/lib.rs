//! A packet-level discrete-event network simulator with an Eiffel policy tree
//! at every output port.

pub mod cdf;
pub mod event;
pub mod packet;
pub mod port;
pub mod routing;
pub mod setup;
pub mod sim;
pub mod slots;
pub mod time;
pub mod topology;
pub mod transport;
pub mod workload;
