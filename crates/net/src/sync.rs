//! The one door to the atomics shared between threads (the frame pool's slot
//! states and counters): `std`'s normally, loom's model-checked versions under
//! `cfg(loom)`, so the loom tests explore the real code's interleavings.

#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering},
    Arc, Mutex, MutexGuard,
};

#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering},
    Arc, Mutex, MutexGuard,
};
