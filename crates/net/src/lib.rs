//! Linux packet I/O, header parsing and classification for Eiffel.

pub mod classify;
pub mod wire;
