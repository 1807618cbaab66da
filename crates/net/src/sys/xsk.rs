//! AF_XDP sockets over one UMEM, through libxdp (`xsk_umem__create`,
//! `xsk_socket__create_shared`) and the C shim `csrc/xsk_shim.c` (the ring
//! helpers of `<xdp/xsk.h>` are `static inline`; the shim moves whole batches).
//!
//! # Ownership of the shared memory
//! - The UMEM area is an anonymous mapping owned by [`UmemArea`]; the kernel
//!   reads and writes the chunks it holds (lent through a fill ring, or queued on
//!   a transmit ring), and this process reaches them only through the frame pool's
//!   ownership protocol (`sys::frames`) or the reverse direction's private chunks.
//! - Each socket's four rings are the kernel's shared memory, described by
//!   libxdp's ring structs. Those structs live in a [`Socket`] (reference-counted,
//!   so they outlive every user; libxdp reads them again in
//!   `xsk_socket__delete`), and each ring is used by exactly one thread: the
//!   receive half ([`RxHalf`]: RX and fill rings) and the transmit half
//!   ([`TxHalf`]: TX and completion rings) are `Send`, not `Sync`, and no two
//!   halves share a ring.
//! - Drop order: a socket is deleted when its last half drops, and the UMEM
//!   (`xsk_umem__delete`, then `munmap`) when the last socket and the last pool
//!   that maps it are gone.

use std::ffi::{c_char, c_int, c_void, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// libxdp's `struct xsk_ring_prod` / `struct xsk_ring_cons` (`DEFINE_XSK_RING`).
#[repr(C)]
struct RingRaw {
    cached_prod: u32,
    cached_cons: u32,
    mask: u32,
    size: u32,
    producer: *mut u32,
    consumer: *mut u32,
    ring: *mut c_void,
    flags: *mut u32,
}

impl RingRaw {
    const EMPTY: RingRaw = RingRaw {
        cached_prod: 0,
        cached_cons: 0,
        mask: 0,
        size: 0,
        producer: ptr::null_mut(),
        consumer: ptr::null_mut(),
        ring: ptr::null_mut(),
        flags: ptr::null_mut(),
    };
}

/// `struct xdp_desc`: a frame's UMEM address and length.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct XdpDesc {
    pub(crate) addr: u64,
    pub(crate) len: u32,
    pub(crate) options: u32,
}

/// `struct xsk_umem_config`.
#[repr(C)]
struct UmemConfig {
    fill_size: u32,
    comp_size: u32,
    frame_size: u32,
    frame_headroom: u32,
    flags: u32,
}

/// `struct xsk_socket_config`.
#[repr(C)]
struct SocketConfig {
    rx_size: u32,
    tx_size: u32,
    libxdp_flags: u32,
    xdp_flags: u32,
    bind_flags: u16,
}

/// `XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD`: the program is attached separately.
const INHIBIT_PROG_LOAD: u32 = 1;
/// `XDP_USE_NEED_WAKEUP`.
const USE_NEED_WAKEUP: u16 = 1 << 3;
/// `SOL_XDP` and `XDP_OPTIONS` / `XDP_OPTIONS_ZEROCOPY`.
const SOL_XDP: c_int = 283;
const XDP_OPTIONS: c_int = 8;
const XDP_OPTIONS_ZEROCOPY: u32 = 1;
/// `XDP_STATISTICS`.
const XDP_STATISTICS: c_int = 7;

/// `struct xdp_statistics`: what the kernel counted on a socket.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct XdpStatistics {
    /// Frames dropped for reasons other than a full ring or an empty fill ring.
    pub(crate) rx_dropped: u64,
    pub(crate) rx_invalid_descs: u64,
    pub(crate) tx_invalid_descs: u64,
    /// Frames dropped because the RX ring was full.
    pub(crate) rx_ring_full: u64,
    /// Times a frame found the fill ring empty (and was dropped).
    pub(crate) rx_fill_ring_empty_descs: u64,
    pub(crate) tx_ring_empty_descs: u64,
}

/// The index of interface `name` (in this network namespace).
pub(crate) fn if_index(name: &str) -> io::Result<u32> {
    let c = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: a NUL-terminated name, read during the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(i)
}

/// libxdp's `enum xdp_attach_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum AttachMode {
    /// In the driver (`XDP_MODE_NATIVE`).
    Native = 1,
    /// Generic XDP, in the kernel's network stack (`XDP_MODE_SKB`).
    Skb = 2,
}

#[repr(C)]
struct XskUmem {
    _opaque: [u8; 0],
}
#[repr(C)]
struct XskSocket {
    _opaque: [u8; 0],
}
#[repr(C)]
struct XdpProgram {
    _opaque: [u8; 0],
}

#[link(name = "xdp")]
#[link(name = "bpf")]
extern "C" {
    fn xsk_umem__create(
        umem: *mut *mut XskUmem,
        area: *mut c_void,
        size: u64,
        fill: *mut RingRaw,
        comp: *mut RingRaw,
        config: *const UmemConfig,
    ) -> c_int;
    fn xsk_umem__delete(umem: *mut XskUmem) -> c_int;
    fn xsk_socket__create_shared(
        xsk: *mut *mut XskSocket,
        ifname: *const c_char,
        queue: u32,
        umem: *mut XskUmem,
        rx: *mut RingRaw,
        tx: *mut RingRaw,
        fill: *mut RingRaw,
        comp: *mut RingRaw,
        config: *const SocketConfig,
    ) -> c_int;
    fn xsk_socket__delete(xsk: *mut XskSocket);
    fn xsk_socket__fd(xsk: *const XskSocket) -> c_int;
    fn xsk_socket__update_xskmap(xsk: *mut XskSocket, map_fd: c_int) -> c_int;
}

extern "C" {
    fn eiffel_xsk_fill(fq: *mut RingRaw, addrs: *const u64, n: u32) -> u32;
    fn eiffel_xsk_rx(rx: *mut RingRaw, out: *mut XdpDesc, n: u32) -> u32;
    fn eiffel_xsk_tx(tx: *mut RingRaw, descs: *const XdpDesc, n: u32) -> u32;
    fn eiffel_xsk_complete(cq: *mut RingRaw, out: *mut u64, n: u32) -> u32;
    fn eiffel_xsk_needs_wakeup(r: *const RingRaw) -> c_int;
    fn eiffel_xsk_prod_free(r: *mut RingRaw, n: u32) -> u32;
    fn eiffel_xsk_prod_pending(r: *const RingRaw) -> u32;
    fn eiffel_xdp_quiet();
    fn eiffel_xdp_attach(
        ifindex: c_int,
        mode: c_int,
        queues: u32,
        map_fd: *mut c_int,
        prog: *mut *mut XdpProgram,
    ) -> c_int;
    fn eiffel_xdp_close(prog: *mut XdpProgram);
    fn eiffel_xdp_query(ifindex: c_int, name: *mut c_char, len: usize, mode: *mut c_int) -> c_int;
    fn eiffel_xdp_detach(ifindex: c_int) -> c_int;
}

/// A negative errno as an `io::Error`.
fn neg(err: c_int) -> io::Error {
    io::Error::from_raw_os_error(err.saturating_neg())
}

/// Silences libxdp's and libbpf's messages (errors come back as codes).
pub(crate) fn quiet() {
    // SAFETY: sets two function pointers in the libraries; no arguments.
    unsafe { eiffel_xdp_quiet() }
}

/// The UMEM's memory: an anonymous mapping, page-aligned as the kernel requires.
pub(crate) struct UmemArea {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory; who may touch which chunk is decided by the
// frame pools' protocol and the halves' ownership (module documentation).
unsafe impl Send for UmemArea {}
// SAFETY: as above.
unsafe impl Sync for UmemArea {}

impl UmemArea {
    /// Maps `len` bytes of zeroed memory.
    pub(crate) fn map(len: usize) -> io::Result<UmemArea> {
        // SAFETY: an anonymous private mapping at an address of the kernel's
        // choice; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave 0"))?;
        Ok(UmemArea { base, len })
    }

    /// The first byte.
    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Bytes mapped.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for UmemArea {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once, after every user (pools
        // and the UMEM registration hold an `Arc` to it).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

/// A range of UMEM chunks that one thread owns whenever the kernel does not
/// (the reverse direction's: between their RX and their TX), with access to the
/// frames in them.
pub(crate) struct OwnChunks {
    area: Arc<UmemArea>,
    start: u64,
    end: u64,
}

impl OwnChunks {
    /// The chunks `[start, end)` (UMEM offsets) of `area`.
    pub(crate) fn new(area: Arc<UmemArea>, start: u64, end: u64) -> OwnChunks {
        let end = end.min(area.len() as u64);
        OwnChunks { area, start, end }
    }

    /// The `len` bytes at UMEM offset `addr`, if they lie in this range.
    pub(crate) fn frame_mut(&mut self, addr: u64, len: u32) -> Option<&mut [u8]> {
        let stop = addr.checked_add(u64::from(len))?;
        if addr < self.start || stop > self.end {
            return None;
        }
        // SAFETY: the bytes lie inside the mapping (checked above), in this
        // owner's range, which no frame pool covers; the caller holds the chunk
        // between the kernel's RX and TX of it, when the kernel does not touch it;
        // `&mut self` makes this the only reference into the range.
        Some(unsafe {
            std::slice::from_raw_parts_mut(
                self.area.base().as_ptr().add(addr as usize),
                len as usize,
            )
        })
    }
}

/// A UMEM registered with the kernel (libxdp's `struct xsk_umem`).
pub(crate) struct Umem {
    raw: *mut XskUmem,
    /// The fill and completion ring structs given to `xsk_umem__create`; libxdp
    /// copies them into the first socket's.
    _first: Box<[RingRaw; 2]>,
    /// The registered memory, kept mapped while the kernel may use it.
    _area: Arc<UmemArea>,
}

// SAFETY: the handle is used to create sockets (under the caller's `&mut` via
// `Arc<Umem>` construction order) and deleted once in `Drop`.
unsafe impl Send for Umem {}
// SAFETY: after construction only `Drop` touches `raw`; sockets hold the `Arc`.
unsafe impl Sync for Umem {}

/// Ring sizes of a UMEM and its sockets (powers of two).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingSizes {
    pub(crate) fill: u32,
    pub(crate) comp: u32,
    pub(crate) rx: u32,
    pub(crate) tx: u32,
}

impl Umem {
    /// Registers `area` in chunks of `chunk` bytes.
    pub(crate) fn create(area: Arc<UmemArea>, chunk: u32, sizes: RingSizes) -> io::Result<Umem> {
        let mut first = Box::new([RingRaw::EMPTY, RingRaw::EMPTY]);
        let cfg = UmemConfig {
            fill_size: sizes.fill,
            comp_size: sizes.comp,
            frame_size: chunk,
            frame_headroom: 0,
            flags: 0,
        };
        let mut raw = ptr::null_mut();
        let [fill, comp] = &mut *first;
        // SAFETY: `area` is `len` bytes of page-aligned memory that outlives the
        // UMEM (held in `Umem::area`); the ring structs are boxed, so their
        // addresses stay valid while libxdp keeps them; `cfg` is read during the call.
        let err = unsafe {
            xsk_umem__create(
                &mut raw,
                area.base().as_ptr().cast(),
                area.len() as u64,
                fill,
                comp,
                &cfg,
            )
        };
        if err != 0 {
            return Err(neg(err));
        }
        Ok(Umem {
            raw,
            _first: first,
            _area: area,
        })
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: created in `create`; every socket holds an `Arc<Umem>`, so none
        // is left (libxdp would refuse with EBUSY and leak, never corrupt).
        unsafe {
            xsk_umem__delete(self.raw);
        }
    }
}

/// The four rings of one socket; each is touched by one half only.
struct Rings {
    rx: core::cell::UnsafeCell<RingRaw>,
    tx: core::cell::UnsafeCell<RingRaw>,
    fill: core::cell::UnsafeCell<RingRaw>,
    comp: core::cell::UnsafeCell<RingRaw>,
}

/// An AF_XDP socket bound to one queue of one interface.
struct Socket {
    raw: *mut XskSocket,
    rings: Box<Rings>,
    queue: u32,
    _umem: Arc<Umem>,
}

// SAFETY: see the module documentation: the halves split the rings between
// threads, and the socket itself is only deleted, once, by the last half.
unsafe impl Send for Socket {}
// SAFETY: as above: no ring is reached from two threads.
unsafe impl Sync for Socket {}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: created by `open`; the ring structs it reads are still in
        // `self.rings`; no half is left (this is the last reference).
        unsafe { xsk_socket__delete(self.raw) }
    }
}

/// What a socket is opened for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// Receive only (RX and fill rings).
    Receive,
    /// Receive and transmit.
    Both,
}

/// Opens a socket on queue `queue` of `ifname` over `umem` (sharing it when the
/// UMEM already has a socket), bound with `need_wakeup`, without loading any XDP
/// program. Returns the receive half and, for [`Use::Both`], the transmit half.
pub(crate) fn open(
    umem: &Arc<Umem>,
    ifname: &str,
    queue: u32,
    usage: Use,
    sizes: RingSizes,
) -> io::Result<(RxHalf, Option<TxHalf>)> {
    let name = CString::new(ifname).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let rings = Box::new(Rings {
        rx: core::cell::UnsafeCell::new(RingRaw::EMPTY),
        tx: core::cell::UnsafeCell::new(RingRaw::EMPTY),
        fill: core::cell::UnsafeCell::new(RingRaw::EMPTY),
        comp: core::cell::UnsafeCell::new(RingRaw::EMPTY),
    });
    let cfg = SocketConfig {
        rx_size: sizes.rx,
        tx_size: sizes.tx,
        libxdp_flags: INHIBIT_PROG_LOAD,
        xdp_flags: 0,
        bind_flags: USE_NEED_WAKEUP,
    };
    let tx = match usage {
        Use::Receive => ptr::null_mut(),
        Use::Both => rings.tx.get(),
    };
    let mut raw = ptr::null_mut();
    // SAFETY: every pointer is valid for the call: the name is NUL-terminated, the
    // ring structs are boxed and stay in the `Socket` (libxdp keeps pointers to
    // them until `xsk_socket__delete`), the UMEM outlives the socket (`_umem`).
    let err = unsafe {
        xsk_socket__create_shared(
            &mut raw,
            name.as_ptr(),
            queue,
            umem.raw,
            rings.rx.get(),
            tx,
            rings.fill.get(),
            rings.comp.get(),
            &cfg,
        )
    };
    if err != 0 {
        return Err(neg(err));
    }
    let socket = Arc::new(Socket {
        raw,
        rings,
        queue,
        _umem: Arc::clone(umem),
    });
    let tx = (usage == Use::Both).then(|| TxHalf {
        socket: Arc::clone(&socket),
    });
    Ok((RxHalf { socket }, tx))
}

/// The socket's descriptor, borrowed for as long as `socket` lives.
fn socket_fd(socket: &Socket) -> BorrowedFd<'_> {
    // SAFETY: `raw` is a live socket; its descriptor stays open until
    // `xsk_socket__delete`, which runs only when `socket` drops.
    unsafe { BorrowedFd::borrow_raw(xsk_socket__fd(socket.raw)) }
}

/// Whether the socket runs in zero-copy mode.
fn zero_copy(socket: &Socket) -> bool {
    let mut opts: u32 = 0;
    let mut len = std::mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: XDP_OPTIONS writes one u32 into `opts`; `len` says how much room.
    let r = unsafe {
        libc::getsockopt(
            socket_fd(socket).as_raw_fd(),
            SOL_XDP,
            XDP_OPTIONS,
            (&mut opts as *mut u32).cast(),
            &mut len,
        )
    };
    r == 0 && opts & XDP_OPTIONS_ZEROCOPY != 0
}

/// Wakes the kernel for a socket: `sendto` with no data (transmit) or `recvfrom`
/// with no buffer (fill ring), both non-blocking.
fn wake(socket: &Socket, transmit: bool) -> io::Result<()> {
    let fd = socket_fd(socket).as_raw_fd();
    // SAFETY: zero-length calls with null buffers and no address: the kernel only
    // processes the socket's rings.
    let r = unsafe {
        if transmit {
            libc::sendto(fd, ptr::null(), 0, libc::MSG_DONTWAIT, ptr::null(), 0)
        } else {
            libc::recvfrom(
                fd,
                ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        }
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The receiving side of a socket: its RX and fill rings.
pub(crate) struct RxHalf {
    socket: Arc<Socket>,
}

impl RxHalf {
    /// Gives chunk addresses to the kernel; returns how many the fill ring took.
    pub(crate) fn fill(&mut self, addrs: &[u64]) -> usize {
        let n = u32::try_from(addrs.len()).unwrap_or(u32::MAX);
        // SAFETY: this half is the fill ring's only user; `addrs` holds `n`
        // readable addresses.
        unsafe { eiffel_xsk_fill(self.socket.rings.fill.get(), addrs.as_ptr(), n) as usize }
    }

    /// Room on the fill ring, at most `n`.
    pub(crate) fn fill_room(&mut self, n: u32) -> u32 {
        // SAFETY: this half is the fill ring's only user.
        unsafe { eiffel_xsk_prod_free(self.socket.rings.fill.get(), n) }.min(n)
    }

    /// Whether the kernel wants a wake-up to look at the fill ring again.
    pub(crate) fn fill_needs_wakeup(&self) -> bool {
        // SAFETY: reads the flags word of a live ring.
        unsafe { eiffel_xsk_needs_wakeup(self.socket.rings.fill.get()) != 0 }
    }

    /// Wakes the kernel for the fill ring.
    pub(crate) fn wake(&self) -> io::Result<()> {
        wake(&self.socket, false)
    }

    /// Takes received descriptors into `out`; returns how many.
    pub(crate) fn recv(&mut self, out: &mut [XdpDesc]) -> usize {
        let n = u32::try_from(out.len()).unwrap_or(u32::MAX);
        // SAFETY: this half is the RX ring's only user; `out` has room for `n`.
        unsafe { eiffel_xsk_rx(self.socket.rings.rx.get(), out.as_mut_ptr(), n) as usize }
    }

    /// The queue the socket is bound to.
    pub(crate) fn queue(&self) -> u32 {
        self.socket.queue
    }

    /// Whether the socket runs in zero-copy mode.
    pub(crate) fn zero_copy(&self) -> bool {
        zero_copy(&self.socket)
    }

    /// The kernel's counters for this socket.
    pub(crate) fn statistics(&self) -> io::Result<XdpStatistics> {
        let mut st = XdpStatistics::default();
        let mut len = std::mem::size_of::<XdpStatistics>() as libc::socklen_t;
        // SAFETY: XDP_STATISTICS writes at most `len` bytes into `st`, a plain
        // struct of integers laid out as the kernel's.
        let r = unsafe {
            libc::getsockopt(
                socket_fd(&self.socket).as_raw_fd(),
                SOL_XDP,
                XDP_STATISTICS,
                (&mut st as *mut XdpStatistics).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(st)
    }

    /// Puts the socket in `map_fd`, an XSKMAP, at its queue.
    pub(crate) fn register(&self, map_fd: BorrowedFd<'_>) -> io::Result<()> {
        let fd = map_fd.as_raw_fd();
        // SAFETY: a live socket and a map descriptor borrowed for the call.
        let err = unsafe { xsk_socket__update_xskmap(self.socket.raw, fd) };
        if err != 0 {
            return Err(neg(err));
        }
        Ok(())
    }
}

impl AsFd for RxHalf {
    fn as_fd(&self) -> BorrowedFd<'_> {
        socket_fd(&self.socket)
    }
}

// SAFETY: the RX and fill rings are reached only through this half, which is not
// `Sync` (so from one thread at a time); the shared `Socket` is `Sync`.
unsafe impl Send for RxHalf {}

/// The transmitting side of a socket: its TX and completion rings.
pub(crate) struct TxHalf {
    socket: Arc<Socket>,
}

impl TxHalf {
    /// Queues descriptors for transmission; returns how many the ring took.
    pub(crate) fn send(&mut self, descs: &[XdpDesc]) -> usize {
        let n = u32::try_from(descs.len()).unwrap_or(u32::MAX);
        // SAFETY: this half is the TX ring's only user; `descs` holds `n` entries.
        unsafe { eiffel_xsk_tx(self.socket.rings.tx.get(), descs.as_ptr(), n) as usize }
    }

    /// Takes completed transmit addresses into `out`; returns how many.
    pub(crate) fn complete(&mut self, out: &mut [u64]) -> usize {
        let n = u32::try_from(out.len()).unwrap_or(u32::MAX);
        // SAFETY: this half is the completion ring's only user; `out` has room.
        unsafe { eiffel_xsk_complete(self.socket.rings.comp.get(), out.as_mut_ptr(), n) as usize }
    }

    /// Descriptors on the TX ring the kernel has not taken yet.
    pub(crate) fn pending(&self) -> u32 {
        // SAFETY: reads the producer and consumer words of a live ring.
        unsafe { eiffel_xsk_prod_pending(self.socket.rings.tx.get()) }
    }

    /// Whether the kernel wants a wake-up to transmit.
    pub(crate) fn needs_wakeup(&self) -> bool {
        // SAFETY: reads the flags word of a live ring.
        unsafe { eiffel_xsk_needs_wakeup(self.socket.rings.tx.get()) != 0 }
    }

    /// Asks the kernel to transmit what is queued (one `sendto`).
    pub(crate) fn kick(&self) -> io::Result<()> {
        wake(&self.socket, true)
    }
}

impl AsFd for TxHalf {
    fn as_fd(&self) -> BorrowedFd<'_> {
        socket_fd(&self.socket)
    }
}

// SAFETY: as for `RxHalf`, with the TX and completion rings.
unsafe impl Send for TxHalf {}

/// libxdp's default XSK program, attached to one interface.
pub(crate) struct Program {
    raw: *mut XdpProgram,
    map_fd: c_int,
}

// SAFETY: the handle is only closed, once, in `Drop`.
unsafe impl Send for Program {}
// SAFETY: the map descriptor is an integer the kernel synchronises.
unsafe impl Sync for Program {}

impl Program {
    /// Loads and attaches the program to `ifindex` in `mode`, with room for
    /// `queues` sockets.
    pub(crate) fn attach(ifindex: u32, mode: AttachMode, queues: u32) -> io::Result<Program> {
        let (mut map_fd, mut raw) = (-1, ptr::null_mut());
        // SAFETY: plain integers in, two out-pointers valid for the call.
        let err = unsafe {
            eiffel_xdp_attach(
                ifindex as c_int,
                mode as c_int,
                queues,
                &mut map_fd,
                &mut raw,
            )
        };
        if err != 0 {
            return Err(neg(err));
        }
        Ok(Program { raw, map_fd })
    }

    /// The socket map, borrowed for as long as the program lives.
    pub(crate) fn map(&self) -> BorrowedFd<'_> {
        // SAFETY: the map's descriptor belongs to the program's object, open until
        // `eiffel_xdp_close` in `Drop`.
        unsafe { BorrowedFd::borrow_raw(self.map_fd) }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: from `eiffel_xdp_attach`, closed once.
        unsafe { eiffel_xdp_close(self.raw) }
    }
}

/// What XDP program `ifindex` has: `None`, or its name and attach mode.
pub(crate) fn query(ifindex: u32) -> io::Result<Option<(String, i32)>> {
    let mut name = [0 as c_char; 64];
    let mut mode = 0;
    // SAFETY: `name` has room for 64 bytes (the shim NUL-terminates within them).
    let r = unsafe { eiffel_xdp_query(ifindex as c_int, name.as_mut_ptr(), name.len(), &mut mode) };
    match r {
        0 => Ok(None),
        1 => {
            let bytes: Vec<u8> = name
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            Ok(Some((String::from_utf8_lossy(&bytes).into_owned(), mode)))
        }
        e => Err(neg(e)),
    }
}

/// Detaches whatever XDP program `ifindex` has.
pub(crate) fn detach(ifindex: u32) -> io::Result<()> {
    // SAFETY: an integer in; libxdp looks the interface up itself.
    let r = unsafe { eiffel_xdp_detach(ifindex as c_int) };
    if r != 0 {
        return Err(neg(r));
    }
    Ok(())
}
