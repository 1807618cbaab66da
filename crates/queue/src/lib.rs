//! Integer priority queues for packet scheduling.
#![no_std]
extern crate alloc;
