//! placeholder for the eiffel-pspat crate
