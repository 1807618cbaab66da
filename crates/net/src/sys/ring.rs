//! Memory shared with the kernel: the `mmap`ed TPACKET rings.
//!
//! # Ownership protocol (the invariant every `unsafe` block here relies on)
//! A ring is an array of units (V3 receive: *blocks*; V2 transmit: *frames*), each
//! starting with a 32-bit status word. The status word says who owns the rest of the
//! unit, and only the owner touches it:
//!
//! | ring | unit | user owns it when status is | user gives it back by storing |
//! | --- | --- | --- | --- |
//! | RX (TPACKET_V3) | block | `TP_STATUS_USER` bit set | `TP_STATUS_KERNEL` (0) |
//! | TX (TPACKET_V2) | frame | `TP_STATUS_AVAILABLE` (0) or `TP_STATUS_WRONG_FORMAT` | `TP_STATUS_SEND_REQUEST` |
//!
//! Status words are accessed only atomically: an `Acquire` load before reading or
//! writing a unit (pairs with the kernel's write barrier before it hands a unit over),
//! a `Release` store to hand it back (so the kernel sees every byte written before).
//! Everything else in a unit is read or written with plain accesses, and only while
//! user space owns the unit. Slices into an RX block borrow the [`RxBlocks`] that
//! holds it, so the borrow checker proves no slice outlives the block's ownership:
//! the block goes back to the kernel only through `&mut self`.
//!
//! Every offset the kernel writes into the ring (first frame of a block, next frame,
//! MAC offset, captured length) is bounds-checked against the block before use; a bad
//! one ends the block and is reported as [`Corrupt`], never read out of bounds.

use std::io;
use std::mem::{offset_of, size_of};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// A shared, read-write mapping of a packet socket's ring(s).
///
/// Invariant: `ptr` is the start of a live mapping of `len` bytes, page-aligned,
/// unmapped exactly once, in `drop`.
pub(crate) struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is memory owned by this value alone (no other Rust handle
// exists); moving it to another thread moves the only way to reach it.
unsafe impl Send for Mmap {}

impl Mmap {
    /// Maps `len` bytes of the rings set up on `fd`.
    pub(crate) fn new(fd: BorrowedFd<'_>, len: usize) -> io::Result<Mmap> {
        // SAFETY: a fresh shared mapping chosen by the kernel (address hint null)
        // overlaps no existing Rust object; the result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        NonNull::new(ptr.cast::<u8>())
            .map(|ptr| Mmap { ptr, len })
            .ok_or_else(|| io::Error::other("mmap returned a null mapping"))
    }

    /// A private anonymous mapping standing in for a ring, for tests.
    #[cfg(test)]
    fn anonymous(len: usize) -> Mmap {
        // SAFETY: a fresh private anonymous mapping overlaps no Rust object.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(ptr, libc::MAP_FAILED, "anonymous mmap failed");
        Mmap {
            ptr: NonNull::new(ptr.cast()).expect("non-null mapping"),
            len,
        }
    }

    /// The status word at `off`.
    ///
    /// Returns `None` unless `off` is 4-byte aligned and the word lies inside the
    /// mapping.
    fn status(&self, off: usize) -> Option<&AtomicU32> {
        if off % 4 != 0 || off.checked_add(4)? > self.len {
            return None;
        }
        // SAFETY: the word is inside the live mapping and 4-aligned (the mapping is
        // page-aligned); both the kernel and this module access status words only
        // atomically, and the reference cannot outlive `self`, hence the mapping.
        Some(unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(off).cast()) })
    }

    /// Reads a `T` at `off`, or `None` if it does not lie inside the mapping.
    ///
    /// # Safety
    /// The bytes must belong to a unit user space owns (see the module doc), so the
    /// kernel does not write them during the read.
    unsafe fn read<T: Copy>(&self, off: usize) -> Option<T> {
        if off.checked_add(size_of::<T>())? > self.len {
            return None;
        }
        // SAFETY: in bounds (checked above); `read_unaligned` has no alignment
        // requirement; no concurrent write by the caller's contract; `T: Copy` is a
        // plain integer at every call site, valid for any bit pattern.
        Some(unsafe { self.ptr.as_ptr().add(off).cast::<T>().read_unaligned() })
    }

    /// Writes a `T` at `off`; `false` if it does not lie inside the mapping.
    ///
    /// # Safety
    /// The bytes must belong to a unit user space owns.
    unsafe fn write<T: Copy>(&mut self, off: usize, value: T) -> bool {
        if off
            .checked_add(size_of::<T>())
            .is_none_or(|end| end > self.len)
        {
            return false;
        }
        // SAFETY: in bounds (checked above); `write_unaligned` has no alignment
        // requirement; the kernel does not access the bytes by the caller's contract.
        unsafe {
            self.ptr
                .as_ptr()
                .add(off)
                .cast::<T>()
                .write_unaligned(value)
        };
        true
    }

    /// The bytes `off..off + len`, or `None` if out of bounds.
    ///
    /// # Safety
    /// The bytes must belong to a unit user space owns for as long as the returned
    /// slice lives.
    unsafe fn bytes(&self, off: usize, len: usize) -> Option<&[u8]> {
        if off.checked_add(len)? > self.len {
            return None;
        }
        // SAFETY: in bounds; the kernel does not write these bytes while the slice
        // lives (caller's contract), and the slice borrows `self`, so the mapping
        // outlives it.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(off), len) })
    }

    /// The bytes `off..off + len` for writing, or `None` if out of bounds.
    ///
    /// # Safety
    /// As for [`Mmap::bytes`]; in addition the kernel must not read them while the
    /// slice lives.
    unsafe fn bytes_mut(&mut self, off: usize, len: usize) -> Option<&mut [u8]> {
        if off.checked_add(len)? > self.len {
            return None;
        }
        // SAFETY: in bounds; exclusively ours while the slice lives (caller's
        // contract and `&mut self`).
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(off), len) })
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe a live mapping created in `new` and not yet
        // unmapped; no reference into it survives `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// A kernel-written offset in a receive block pointed outside the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Corrupt;

/// One received frame, borrowed from its ring block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawFrame<'a> {
    /// Captured bytes, starting at the MAC header.
    pub data: &'a [u8],
    /// Length on the wire (may exceed `data.len()` when the frame was truncated).
    pub wire_len: u32,
    /// `tp_status` (TP_STATUS_VLAN_VALID, TP_STATUS_CSUMNOTREADY, ...).
    pub status: u32,
    /// VLAN TCI the kernel took out of the frame, valid with TP_STATUS_VLAN_VALID.
    pub vlan_tci: u16,
    /// VLAN TPID, valid with TP_STATUS_VLAN_TPID_VALID.
    pub vlan_tpid: u16,
    /// The `virtio_net_hdr` the kernel put right before the MAC header, on a
    /// ring opened with `PACKET_VNET_HDR`.
    pub vnet: Option<[u8; crate::vnet::VNET_HDR_LEN]>,
}

const BLOCK_HDR: usize = offset_of!(libc::tpacket_block_desc, hdr);
const BLOCK_STATUS: usize = BLOCK_HDR + offset_of!(libc::tpacket_hdr_v1, block_status);
const BLOCK_NUM_PKTS: usize = BLOCK_HDR + offset_of!(libc::tpacket_hdr_v1, num_pkts);
const BLOCK_FIRST: usize = BLOCK_HDR + offset_of!(libc::tpacket_hdr_v1, offset_to_first_pkt);
const F_NEXT: usize = offset_of!(libc::tpacket3_hdr, tp_next_offset);
const F_SNAPLEN: usize = offset_of!(libc::tpacket3_hdr, tp_snaplen);
const F_LEN: usize = offset_of!(libc::tpacket3_hdr, tp_len);
const F_STATUS: usize = offset_of!(libc::tpacket3_hdr, tp_status);
const F_MAC: usize = offset_of!(libc::tpacket3_hdr, tp_mac);
const F_VLAN_TCI: usize =
    offset_of!(libc::tpacket3_hdr, hv1) + offset_of!(libc::tpacket_hdr_variant1, tp_vlan_tci);
const F_VLAN_TPID: usize =
    offset_of!(libc::tpacket3_hdr, hv1) + offset_of!(libc::tpacket_hdr_variant1, tp_vlan_tpid);

/// The TPACKET_V3 receive ring: a cursor walking blocks the kernel hands over.
///
/// Invariants: `block < block_count`; when `held`, block `block` is owned by user
/// space (its status had `TP_STATUS_USER` at an `Acquire` load and nothing here has
/// given it back yet) and `left` frames remain from `offset` on; when not `held`,
/// `left == 0`.
pub(crate) struct RxBlocks {
    map: Mmap,
    block_size: usize,
    block_count: usize,
    block: usize,
    held: bool,
    left: u32,
    offset: usize,
    /// The last frame returned claimed more frames but no next offset: report the
    /// block as corrupt at the next call.
    broken_chain: bool,
    /// Frames carry a `virtio_net_hdr` before their MAC header.
    vnet: bool,
}

impl RxBlocks {
    /// Wraps a mapping of `block_count` blocks of `block_size` bytes.
    pub(crate) fn new(map: Mmap, block_size: usize, block_count: usize) -> io::Result<RxBlocks> {
        if block_size < size_of::<libc::tpacket_block_desc>()
            || block_count == 0
            || block_size.checked_mul(block_count) != Some(map.len)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "receive ring geometry does not match its mapping",
            ));
        }
        Ok(RxBlocks {
            map,
            block_size,
            block_count,
            block: 0,
            held: false,
            left: 0,
            offset: 0,
            broken_chain: false,
            vnet: false,
        })
    }

    /// Reads the `virtio_net_hdr` before each frame (the socket has
    /// `PACKET_VNET_HDR`).
    pub(crate) fn with_vnet(mut self) -> RxBlocks {
        self.vnet = true;
        self
    }

    fn base(&self) -> usize {
        self.block * self.block_size
    }

    /// Gives the current block back to the kernel and moves to the next one.
    fn release(&mut self) {
        debug_assert!(self.held, "releasing block {} that is not held", self.block);
        if let Some(status) = self.map.status(self.base() + BLOCK_STATUS) {
            status.store(libc::TP_STATUS_KERNEL, Ordering::Release);
        }
        self.held = false;
        self.left = 0;
        self.block = (self.block + 1) % self.block_count;
    }

    /// Gives the current block back if all its frames have been returned (so a
    /// caller that stops mid-ring does not keep a finished block from the kernel).
    pub(crate) fn release_finished(&mut self) {
        if self.held && self.left == 0 {
            self.release();
        }
    }

    /// Makes sure a block with frames left is held: the current one, or the next
    /// one the kernel has handed over (`None` when it has not).
    fn hold_block(&mut self) -> Option<Result<(), Corrupt>> {
        loop {
            self.release_finished();
            if self.held {
                return Some(Ok(()));
            }
            let status = self.map.status(self.base() + BLOCK_STATUS)?;
            if status.load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                return None;
            }
            self.held = true;
            // SAFETY: the Acquire load above saw TP_STATUS_USER: the block is ours.
            let header = unsafe {
                (
                    self.map.read::<u32>(self.base() + BLOCK_NUM_PKTS),
                    self.map.read::<u32>(self.base() + BLOCK_FIRST),
                )
            };
            let (Some(n), Some(first)) = header else {
                self.release();
                return Some(Err(Corrupt));
            };
            self.left = n;
            self.offset = first as usize;
        }
    }

    /// The next received frame, or `None` when the kernel has handed over nothing
    /// more. The frame borrows the ring: its block stays owned by user space until
    /// the next call.
    pub(crate) fn next_frame(&mut self) -> Option<Result<RawFrame<'_>, Corrupt>> {
        if self.broken_chain {
            return Some(Err(self.end_broken_chain()));
        }
        if let Err(e) = self.hold_block()? {
            return Some(Err(e));
        }
        let frame_at = self.offset;
        let Some(hdr) = self.frame_header(frame_at) else {
            return Some(Err(self.abandon_block()));
        };
        let Some(data_at) = self.data_offset(frame_at, &hdr) else {
            return Some(Err(self.abandon_block()));
        };
        self.left -= 1;
        if self.left > 0 {
            self.broken_chain = hdr.next == 0;
            self.offset = frame_at + hdr.next as usize;
        }
        let base = self.base();
        // SAFETY: the block is ours until `self` is next borrowed mutably, which the
        // returned frame's borrow of `self` rules out; the range lies inside the block
        // (checked by `data_offset`).
        let data = unsafe { self.map.bytes(base + data_at, hdr.snaplen as usize) }?;
        let vnet = if self.vnet {
            // SAFETY: as for `data`; the header lies between the frame's
            // tpacket3 header and its data (checked by `data_offset`), inside the
            // block.
            unsafe { self.map.read(base + data_at - crate::vnet::VNET_HDR_LEN) }
        } else {
            None
        };
        Some(Ok(RawFrame {
            data,
            wire_len: hdr.wire_len,
            status: hdr.status,
            vlan_tci: hdr.tci as u16,
            vlan_tpid: hdr.tpid,
            vnet,
        }))
    }

    /// Ends a block whose frame chain broke (more frames claimed, no next offset):
    /// skips the rest and gives the block back to the kernel.
    #[cold]
    fn end_broken_chain(&mut self) -> Corrupt {
        self.broken_chain = false;
        self.left = 0;
        self.release_finished();
        Corrupt
    }

    /// Skips the rest of the held block after a bad kernel-written offset; the
    /// block goes back to the kernel at the next call.
    #[cold]
    fn abandon_block(&mut self) -> Corrupt {
        self.left = 0;
        Corrupt
    }

    /// Bytes the `virtio_net_hdr` takes before each frame's data (0 without
    /// `PACKET_VNET_HDR`).
    #[inline]
    fn vnet_room(&self) -> usize {
        if self.vnet {
            crate::vnet::VNET_HDR_LEN
        } else {
            0
        }
    }

    /// Reads the `tpacket3_hdr` at `frame_at` in the held block, or `None` when it
    /// does not lie inside the block.
    #[inline]
    fn frame_header(&self, frame_at: usize) -> Option<Tpacket3Hdr> {
        debug_assert!(
            self.held,
            "reading a frame of block {} not held",
            self.block
        );
        if frame_at
            .checked_add(size_of::<libc::tpacket3_hdr>())
            .is_none_or(|end| end > self.block_size)
        {
            return None;
        }
        let at = self.base() + frame_at;
        // SAFETY: called only on the block `next_frame` holds (`held`): the block is
        // ours; the header lies inside the block (checked above).
        unsafe {
            Some(Tpacket3Hdr {
                next: self.map.read(at + F_NEXT)?,
                snaplen: self.map.read(at + F_SNAPLEN)?,
                wire_len: self.map.read(at + F_LEN)?,
                status: self.map.read(at + F_STATUS)?,
                mac: self.map.read(at + F_MAC)?,
                tci: self.map.read(at + F_VLAN_TCI)?,
                tpid: self.map.read(at + F_VLAN_TPID)?,
            })
        }
    }

    /// The block offset of the data of the frame at `frame_at`, or `None` when its
    /// captured bytes run past the block or into the headers before them.
    #[inline]
    fn data_offset(&self, frame_at: usize, hdr: &Tpacket3Hdr) -> Option<usize> {
        let data_at = frame_at + usize::from(hdr.mac);
        if data_at
            .checked_add(hdr.snaplen as usize)
            .is_none_or(|end| end > self.block_size)
            || data_at < frame_at + size_of::<libc::tpacket3_hdr>() + self.vnet_room()
        {
            return None;
        }
        Some(data_at)
    }
}

/// The fields of a frame's `tpacket3_hdr` that [`RxBlocks::next_frame`] uses.
#[derive(Clone, Copy, Debug)]
struct Tpacket3Hdr {
    /// `tp_next_offset`: the next frame, from this one (0: none).
    next: u32,
    /// `tp_snaplen`: bytes captured.
    snaplen: u32,
    /// `tp_len`: length on the wire.
    wire_len: u32,
    /// `tp_status`.
    status: u32,
    /// `tp_mac`: the MAC header, from the frame's start.
    mac: u16,
    /// `hv1.tp_vlan_tci`.
    tci: u32,
    /// `hv1.tp_vlan_tpid`.
    tpid: u16,
}

/// Offset of frame data in a TPACKET_V2 transmit frame:
/// `TPACKET_ALIGN(sizeof(struct tpacket2_hdr))`, where the kernel reads it when
/// `PACKET_TX_HAS_OFF` is not set.
pub(crate) const TX_DATA_OFFSET: usize =
    (size_of::<libc::tpacket2_hdr>() + libc::TPACKET_ALIGNMENT - 1)
        & !(libc::TPACKET_ALIGNMENT - 1);
const T_STATUS: usize = offset_of!(libc::tpacket2_hdr, tp_status);
const T_LEN: usize = offset_of!(libc::tpacket2_hdr, tp_len);
const T_SNAPLEN: usize = offset_of!(libc::tpacket2_hdr, tp_snaplen);

/// What happened to a transmit submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Submit {
    /// The frame was queued for the kernel; `rejected` says whether the slot it
    /// reused held a frame the kernel had refused (`TP_STATUS_WRONG_FORMAT`).
    Queued {
        /// The previous occupant of the slot was refused by the kernel.
        rejected: bool,
    },
    /// The fill function wrote nothing; the slot stays free.
    Declined,
    /// The next slot is still owned by the kernel: the ring is full.
    Full,
}

/// The TPACKET_V2 transmit ring: frames filled in order at `head`.
///
/// Invariants: `head < frame_count`; frames are laid out `frames_per_block` to a
/// block of `block_size` bytes, `frame_size` bytes apart.
pub(crate) struct TxFrames {
    map: Mmap,
    block_size: usize,
    frame_size: usize,
    frames_per_block: usize,
    frame_count: usize,
    head: usize,
}

impl TxFrames {
    /// Wraps a mapping of a transmit ring with the given geometry.
    pub(crate) fn new(
        map: Mmap,
        block_size: usize,
        frame_size: usize,
        frame_count: usize,
    ) -> io::Result<TxFrames> {
        let frames_per_block = block_size.checked_div(frame_size).unwrap_or(0);
        if frame_size <= TX_DATA_OFFSET
            || frames_per_block == 0
            || frame_count % frames_per_block != 0
            || (frame_count / frames_per_block).checked_mul(block_size) != Some(map.len)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "transmit ring geometry does not match its mapping",
            ));
        }
        Ok(TxFrames {
            map,
            block_size,
            frame_size,
            frames_per_block,
            frame_count,
            head: 0,
        })
    }

    /// Largest frame one slot holds.
    pub(crate) fn capacity(&self) -> usize {
        self.frame_size - TX_DATA_OFFSET
    }

    fn frame_offset(&self, i: usize) -> usize {
        (i / self.frames_per_block) * self.block_size
            + (i % self.frames_per_block) * self.frame_size
    }

    /// Whether the head slot is free (owned by user space).
    pub(crate) fn head_free(&self) -> bool {
        self.map
            .status(self.frame_offset(self.head) + T_STATUS)
            .is_some_and(|s| {
                s.load(Ordering::Acquire) & (libc::TP_STATUS_SEND_REQUEST | libc::TP_STATUS_SENDING)
                    == 0
            })
    }

    /// Fills the head slot with `fill` (which writes the frame into the slice it is
    /// given and returns its length, or `None` to decline) and hands it to the
    /// kernel. The frame leaves on the next [`super::kick_tx`].
    pub(crate) fn submit(&mut self, fill: impl FnOnce(&mut [u8]) -> Option<usize>) -> Submit {
        let at = self.frame_offset(self.head);
        let Some(status) = self.map.status(at + T_STATUS) else {
            return Submit::Full;
        };
        let prev = status.load(Ordering::Acquire);
        if prev & (libc::TP_STATUS_SEND_REQUEST | libc::TP_STATUS_SENDING) != 0 {
            return Submit::Full;
        }
        let cap = self.capacity();
        // SAFETY: the Acquire load saw neither SEND_REQUEST nor SENDING: the kernel
        // has finished with this frame and reads it again only after our Release
        // store below; the data area lies inside the frame (capacity excludes the
        // header), so it does not overlap the status word.
        let Some(buf) = (unsafe { self.map.bytes_mut(at + TX_DATA_OFFSET, cap) }) else {
            return Submit::Full;
        };
        let len = match fill(buf) {
            Some(len) if len > 0 && len <= cap => len as u32,
            _ => return Submit::Declined,
        };
        // SAFETY: the frame is still ours (no Release store yet); both fields lie in
        // the frame header.
        let written =
            unsafe { self.map.write(at + T_LEN, len) && self.map.write(at + T_SNAPLEN, len) };
        if !written {
            return Submit::Declined;
        }
        if let Some(status) = self.map.status(at + T_STATUS) {
            status.store(libc::TP_STATUS_SEND_REQUEST, Ordering::Release);
        }
        self.head = (self.head + 1) % self.frame_count;
        Submit::Queued {
            rejected: prev & libc::TP_STATUS_WRONG_FORMAT != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: usize = 4096;
    const FIRST: usize = 48;

    /// Writes a tpacket3 frame header at `at` (absolute) with data at `at + mac`.
    fn put_frame(
        m: &mut Mmap,
        at: usize,
        next: u32,
        data: &[u8],
        wire_len: u32,
        status: u32,
        tci: u32,
    ) {
        let mac = 80u16;
        // SAFETY: test-only mapping; no kernel shares it.
        unsafe {
            assert!(m.write(at + F_NEXT, next));
            assert!(m.write(at + F_SNAPLEN, data.len() as u32));
            assert!(m.write(at + F_LEN, wire_len));
            assert!(m.write(at + F_STATUS, status));
            assert!(m.write(at + F_MAC, mac));
            assert!(m.write(at + F_VLAN_TCI, tci));
            assert!(m.write(at + F_VLAN_TPID, 0x88a8u16));
            m.bytes_mut(at + usize::from(mac), data.len())
                .unwrap()
                .copy_from_slice(data);
        }
    }

    fn put_block(m: &mut Mmap, block: usize, num: u32, first: u32, status: u32) {
        let base = block * BLOCK;
        // SAFETY: test-only mapping; no kernel shares it.
        unsafe {
            assert!(m.write(base + BLOCK_NUM_PKTS, num));
            assert!(m.write(base + BLOCK_FIRST, first));
        }
        m.status(base + BLOCK_STATUS)
            .unwrap()
            .store(status, Ordering::Release);
    }

    fn block_status(r: &RxBlocks, block: usize) -> u32 {
        r.map
            .status(block * BLOCK + BLOCK_STATUS)
            .unwrap()
            .load(Ordering::Acquire)
    }

    #[test]
    fn rx_walks_frames_then_gives_the_block_back() {
        let mut m = Mmap::anonymous(2 * BLOCK);
        put_block(&mut m, 0, 2, FIRST as u32, libc::TP_STATUS_USER);
        put_frame(
            &mut m,
            FIRST,
            256,
            b"first frame",
            11,
            libc::TP_STATUS_VLAN_VALID,
            100,
        );
        put_frame(&mut m, FIRST + 256, 0, b"cut", 1500, 0, 0);
        let mut r = RxBlocks::new(m, BLOCK, 2).unwrap();
        let f = r.next_frame().unwrap().unwrap();
        assert_eq!(
            (f.data, f.wire_len, f.vlan_tci, f.vlan_tpid),
            (&b"first frame"[..], 11, 100, 0x88a8)
        );
        assert_eq!(f.status, libc::TP_STATUS_VLAN_VALID);
        assert_eq!(
            block_status(&r, 0),
            libc::TP_STATUS_USER,
            "held while its frames are read"
        );
        let f = r.next_frame().unwrap().unwrap();
        assert_eq!((f.data, f.wire_len), (&b"cut"[..], 1500));
        assert!(
            r.next_frame().is_none(),
            "block 1 still belongs to the kernel"
        );
        assert_eq!(block_status(&r, 0), libc::TP_STATUS_KERNEL);
        assert_eq!(r.block, 1);
    }

    #[test]
    fn rx_reads_the_vnet_header_before_the_frame() {
        let mut m = Mmap::anonymous(2 * BLOCK);
        put_block(&mut m, 0, 1, FIRST as u32, libc::TP_STATUS_USER);
        put_frame(&mut m, FIRST, 0, b"super", 5, 0, 0);
        let hdr = [1u8, 1, 66, 0, 0xa8, 0x05, 34, 0, 16, 0];
        // SAFETY: test-only mapping.
        unsafe {
            m.bytes_mut(FIRST + 80 - hdr.len(), hdr.len())
                .unwrap()
                .copy_from_slice(&hdr);
        }
        let mut r = RxBlocks::new(m, BLOCK, 2).unwrap().with_vnet();
        let f = r.next_frame().unwrap().unwrap();
        assert_eq!((f.data, f.vnet), (&b"super"[..], Some(hdr)));

        // A MAC offset leaving no room for the header is refused.
        let mut m = Mmap::anonymous(2 * BLOCK);
        put_block(&mut m, 0, 1, FIRST as u32, libc::TP_STATUS_USER);
        put_frame(&mut m, FIRST, 0, b"x", 1, 0, 0);
        // SAFETY: test-only mapping.
        unsafe { assert!(m.write(FIRST + F_MAC, 50u16)) };
        let mut r = RxBlocks::new(m, BLOCK, 2).unwrap().with_vnet();
        assert_eq!(r.next_frame().map(|f| f.err()), Some(Some(Corrupt)));
    }

    #[test]
    fn rx_empty_block_is_returned_at_once() {
        let mut m = Mmap::anonymous(2 * BLOCK);
        put_block(&mut m, 0, 0, FIRST as u32, libc::TP_STATUS_USER);
        put_block(&mut m, 1, 1, FIRST as u32, libc::TP_STATUS_USER);
        put_frame(&mut m, BLOCK + FIRST, 0, b"x", 1, 0, 0);
        let mut r = RxBlocks::new(m, BLOCK, 2).unwrap();
        assert_eq!(r.next_frame().unwrap().unwrap().data, b"x");
        assert_eq!(block_status(&r, 0), libc::TP_STATUS_KERNEL);
        r.release_finished();
        assert_eq!(block_status(&r, 1), libc::TP_STATUS_KERNEL);
    }

    #[test]
    fn rx_bad_kernel_offsets_are_reported_not_followed() {
        // First frame beyond the block.
        let mut m = Mmap::anonymous(2 * BLOCK);
        put_block(&mut m, 0, 1, BLOCK as u32, libc::TP_STATUS_USER);
        let mut r = RxBlocks::new(m, BLOCK, 2).unwrap();
        assert_eq!(r.next_frame().map(|f| f.err()), Some(Some(Corrupt)));
        assert!(r.next_frame().is_none());
        assert_eq!(block_status(&r, 0), libc::TP_STATUS_KERNEL);

        // Captured length running past the block.
        let mut m = Mmap::anonymous(2 * BLOCK);
        put_block(&mut m, 0, 1, FIRST as u32, libc::TP_STATUS_USER);
        put_frame(&mut m, FIRST, 0, b"abc", 3, 0, 0);
        // SAFETY: test-only mapping.
        unsafe { assert!(m.write(FIRST + F_SNAPLEN, BLOCK as u32)) };
        let mut r = RxBlocks::new(m, BLOCK, 2).unwrap();
        assert_eq!(r.next_frame().map(|f| f.err()), Some(Some(Corrupt)));

        // More frames claimed than the chain links.
        let mut m = Mmap::anonymous(2 * BLOCK);
        put_block(&mut m, 0, 3, FIRST as u32, libc::TP_STATUS_USER);
        put_frame(&mut m, FIRST, 0, b"only", 4, 0, 0);
        let mut r = RxBlocks::new(m, BLOCK, 2).unwrap();
        assert!(r.next_frame().unwrap().is_ok());
        assert_eq!(r.next_frame().map(|f| f.err()), Some(Some(Corrupt)));
        assert_eq!(block_status(&r, 0), libc::TP_STATUS_KERNEL);
    }

    #[test]
    fn rx_geometry_must_match_the_mapping() {
        assert!(RxBlocks::new(Mmap::anonymous(BLOCK), BLOCK, 2).is_err());
        assert!(RxBlocks::new(Mmap::anonymous(BLOCK), 16, 256).is_err());
    }

    fn tx_status(t: &TxFrames, i: usize) -> u32 {
        t.map
            .status(t.frame_offset(i) + T_STATUS)
            .unwrap()
            .load(Ordering::Acquire)
    }

    #[test]
    fn tx_fills_slots_in_order_until_the_kernel_owns_them_all() {
        let mut t = TxFrames::new(Mmap::anonymous(2 * BLOCK), BLOCK, 2048, 4).unwrap();
        assert_eq!(t.capacity(), 2048 - TX_DATA_OFFSET);
        assert_eq!(t.submit(|_| None), Submit::Declined);
        assert_eq!(t.submit(|_| Some(t_cap_plus_one())), Submit::Declined);
        for i in 0..4u8 {
            assert!(t.head_free());
            let r = t.submit(|buf| {
                buf[..3].copy_from_slice(&[i; 3]);
                Some(3)
            });
            assert_eq!(r, Submit::Queued { rejected: false });
            assert_eq!(tx_status(&t, usize::from(i)), libc::TP_STATUS_SEND_REQUEST);
        }
        assert!(!t.head_free());
        assert_eq!(t.submit(|_| Some(1)), Submit::Full);
        // SAFETY: test-only mapping.
        let (len, byte) = unsafe {
            (
                t.map.read::<u32>(t.frame_offset(2) + T_LEN).unwrap(),
                t.map
                    .read::<u8>(t.frame_offset(2) + TX_DATA_OFFSET)
                    .unwrap(),
            )
        };
        assert_eq!((len, byte), (3, 2));
        // The kernel refused frame 0 and finished frame 1.
        t.map
            .status(t.frame_offset(0) + T_STATUS)
            .unwrap()
            .store(libc::TP_STATUS_WRONG_FORMAT, Ordering::Release);
        t.map
            .status(t.frame_offset(1) + T_STATUS)
            .unwrap()
            .store(libc::TP_STATUS_AVAILABLE, Ordering::Release);
        assert_eq!(t.submit(|_| Some(1)), Submit::Queued { rejected: true });
        assert_eq!(t.submit(|_| Some(1)), Submit::Queued { rejected: false });
        assert_eq!(t.submit(|_| Some(1)), Submit::Full);
    }

    fn t_cap_plus_one() -> usize {
        2048 - TX_DATA_OFFSET + 1
    }

    #[test]
    fn tx_geometry_must_match_the_mapping() {
        assert!(TxFrames::new(Mmap::anonymous(BLOCK), BLOCK, 2048, 4).is_err());
        assert!(TxFrames::new(Mmap::anonymous(BLOCK), BLOCK, 16, 4).is_err());
        assert!(TxFrames::new(Mmap::anonymous(BLOCK), BLOCK, 2048, 3).is_err());
    }
}
