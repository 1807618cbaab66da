//! placeholder for the eiffel-net crate
