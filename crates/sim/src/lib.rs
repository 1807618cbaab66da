//! placeholder for the eiffel-sim crate
