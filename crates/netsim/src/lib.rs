//! A packet-level discrete-event network simulator with an Eiffel policy tree
//! at every output port.

pub mod cdf;
pub mod event;
pub mod histogram;
pub mod live;
pub mod packet;
pub mod plot;
pub mod port;
pub mod report;
pub mod routing;
pub mod scenario;
pub mod setup;
pub mod sim;
pub mod slots;
pub mod sweep;
pub mod time;
pub mod topology;
pub mod transport;
pub mod workload;
