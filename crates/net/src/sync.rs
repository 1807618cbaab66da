//! The one door to the atomics shared between threads (the frame pool's slot
//! states and counters): `std`'s normally, loom's model-checked versions under
//! `cfg(loom)`, so the loom tests explore the real code's interleavings.

#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicU64, AtomicU8, Ordering},
    Arc,
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{AtomicU64, AtomicU8, Ordering},
    Arc,
};
