//! Linux packet I/O, header parsing and classification for Eiffel.

pub mod afpacket;
pub mod classify;
pub mod forward;
pub mod pool;
#[allow(unsafe_code)]
mod sys;
pub mod testbed;
pub mod wire;
