//! Mbufs from an `rte_mempool`, handled in bursts.

use std::ffi::CString;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::eal::Eal;
use crate::error::{last_error, DpdkError};
use crate::sys;

/// Most mbufs one [`Burst`] holds.
pub const MAX_BURST: usize = 64;

/// Bytes of data room per mbuf: the schedulers read only the length fields, so
/// the packets carry no payload and the pool stays small.
const DATA_ROOM: u16 = 256;

/// A pool of packet buffers (`rte_pktmbuf_pool_create`), freed on drop.
#[derive(Debug)]
pub struct Mempool {
    pool: NonNull<sys::rte_mempool>,
    mbufs: u32,
}

impl Mempool {
    /// A pool of `mbufs` packet buffers with no per-lcore cache.
    pub fn new(_eal: &Eal, mbufs: u32) -> Result<Mempool, DpdkError> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!("eiffel{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let cname = CString::new(name.as_str()).expect("no NUL in the name");
        // SAFETY: EAL runs (the `Eal` reference proves it); the name is a valid C
        // string, unique in this process; the sizes are in range.
        let pool =
            unsafe { sys::rte_pktmbuf_pool_create(cname.as_ptr(), mbufs, 0, 0, DATA_ROOM, 0) };
        let pool = NonNull::new(pool).ok_or_else(|| DpdkError::Mempool {
            name,
            mbufs,
            reason: last_error(),
        })?;
        Ok(Mempool { pool, mbufs })
    }

    /// Mbufs the pool was created with.
    #[must_use]
    pub fn capacity(&self) -> u32 {
        self.mbufs
    }

    /// Mbufs currently free in the pool.
    #[must_use]
    pub fn available(&self) -> u32 {
        // SAFETY: the pool is valid until drop.
        unsafe { sys::rte_mempool_avail_count(self.pool.as_ptr()) }
    }

    /// Fills `burst` up to `n` mbufs (at most [`MAX_BURST`]) from the pool,
    /// lengths unset.
    pub fn alloc<'p>(&'p self, burst: &mut Burst<'p>, n: usize) -> Result<(), DpdkError> {
        let n = n.min(MAX_BURST);
        if burst.len >= n {
            return Ok(());
        }
        let want = n - burst.len;
        // SAFETY: the destination has room for `want` pointers past `len`; on
        // success the shim wrote `want` valid mbufs of this pool there.
        let rc = unsafe {
            sys::eiffel_dpdk_mbuf_alloc_bulk(
                self.pool.as_ptr(),
                burst.mbufs.as_mut_ptr().add(burst.len),
                want as u32,
            )
        };
        if rc != 0 {
            return Err(DpdkError::PoolEmpty(want));
        }
        burst.len = n;
        Ok(())
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // SAFETY: every Burst and SchedPort borrowing this pool is gone (their
        // lifetimes end before the pool's), so no mbuf of it is in use.
        unsafe { sys::rte_mempool_free(self.pool.as_ptr()) }
    }
}

/// Up to [`MAX_BURST`] mbufs owned by the caller, from a pool that outlives
/// them; the ones still held are freed on drop.
#[derive(Debug)]
pub struct Burst<'p> {
    mbufs: [*mut sys::rte_mbuf; MAX_BURST],
    len: usize,
    pool: PhantomData<&'p Mempool>,
}

impl Default for Burst<'_> {
    fn default() -> Self {
        Burst {
            mbufs: [std::ptr::null_mut(); MAX_BURST],
            len: 0,
            pool: PhantomData,
        }
    }
}

impl<'p> Burst<'p> {
    /// An empty burst.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Mbufs held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets mbuf `i`'s packet length.
    ///
    /// # Panics
    /// If `i >= len()`.
    #[inline]
    pub fn set_len(&mut self, i: usize, bytes: u32) {
        assert!(i < self.len, "mbuf {i} of a burst of {}", self.len);
        // SAFETY: the first `len` entries are valid mbufs owned by this burst.
        unsafe { sys::eiffel_dpdk_mbuf_set_len(self.mbufs[i], bytes) }
    }

    /// Mbuf `i`'s packet length.
    ///
    /// # Panics
    /// If `i >= len()`.
    #[inline]
    #[must_use]
    pub fn pkt_len(&self, i: usize) -> u32 {
        assert!(i < self.len, "mbuf {i} of a burst of {}", self.len);
        // SAFETY: as in set_len.
        unsafe { sys::eiffel_dpdk_mbuf_len(self.mbufs[i]) }
    }

    /// Returns every mbuf to its pool.
    pub fn free(&mut self) {
        if self.len > 0 {
            // SAFETY: the first `len` entries are mbufs owned by this burst; after
            // the call none is, and `len` says so.
            unsafe { sys::rte_pktmbuf_free_bulk(self.mbufs.as_mut_ptr(), self.len as u32) }
            self.len = 0;
        }
    }

    /// The raw mbuf `i` (for the scheduler's metadata calls).
    pub(crate) fn raw(&self, i: usize) -> *mut sys::rte_mbuf {
        assert!(i < self.len, "mbuf {i} of a burst of {}", self.len);
        self.mbufs[i]
    }

    /// Hands every mbuf over: the pointers and their count; the burst is empty.
    pub(crate) fn take(&mut self) -> (*mut *mut sys::rte_mbuf, usize) {
        let n = self.len;
        self.len = 0;
        (self.mbufs.as_mut_ptr(), n)
    }

    /// Room to receive up to `n` mbufs; call [`Burst::filled`] after.
    pub(crate) fn room(&mut self) -> *mut *mut sys::rte_mbuf {
        debug_assert_eq!(self.len, 0);
        self.mbufs.as_mut_ptr()
    }

    /// `n` mbufs were written by [`Burst::room`]'s user.
    pub(crate) fn filled(&mut self, n: usize) {
        debug_assert!(n <= MAX_BURST);
        self.len = n;
    }
}

impl Drop for Burst<'_> {
    fn drop(&mut self) {
        self.free();
    }
}
