//! The page size the schedulers' memory is on: 4 KB pages as allocated, or
//! 2 MB pages for every large mapping of the process (Linux's
//! `MADV_COLLAPSE`), applied the same way to both schedulers so that the
//! comparison stays like for like.
//!
//! At 64K queues both schedulers touch more memory per packet than the TLB
//! covers on 4 KB pages (Eiffel: 10 MB of nodes and 4 MB of packet slots;
//! `rte_sched`: its queue arrays and mbufs, 170 MB), so every miss to memory
//! may also wait for a page walk. DPDK's own answer, hugetlbfs, needs a mount
//! and pages reserved by root; `MADV_COLLAPSE` (Linux 6.1) needs neither: it
//! rebuilds a populated range of anonymous memory on transparent huge pages
//! whatever the system's THP setting, short of `never`. It covers both
//! schedulers' memory at once: Eiffel's tree and pool (heap mappings) and
//! EAL's memory. EAL maps its `--no-huge` memory from a memfd, shared memory,
//! which the kernel only puts on huge pages when `shmem_enabled` allows (often
//! `never`): such a mapping is first replaced, contents and address kept, by
//! private anonymous memory (nothing else maps that memfd: one process, no
//! devices). Where the collapse is refused (an older kernel, THP turned off)
//! the run stays on 4 KB pages and says so.

use std::io;

/// The page size requested for the timed runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Pages {
    /// As the process allocated them: 4 KB pages.
    #[default]
    #[value(name = "4k")]
    Small,
    /// Every mapping of 2 MB or more rebuilt on 2 MB pages before timing.
    #[value(name = "2m")]
    Huge,
}

impl Pages {
    /// Puts the process on these pages before a timed run: nothing for 4 KB
    /// pages; for 2 MB pages [`collapse`], warning and staying on 4 KB pages
    /// if the kernel refuses. Returns the bytes on 2 MB pages.
    #[must_use]
    pub fn apply(self) -> u64 {
        match self {
            Pages::Small => 0,
            Pages::Huge => match collapse() {
                Ok(bytes) => bytes,
                Err(e) => {
                    eprintln!(
                        "warning: cannot rebuild the schedulers' memory on 2 MB pages \
                         (madvise MADV_COLLAPSE: {e}; needs Linux 6.1 and transparent \
                         huge pages not `never`); timing on 4 KB pages"
                    );
                    0
                }
            },
        }
    }
}

/// Smallest mapping worth collapsing, and the unit of a collapse.
const HUGE: usize = 2 << 20;

/// One mapping of the process: its range, whether it is writable, and its
/// path (empty for anonymous memory).
struct Mapping {
    start: usize,
    end: usize,
    writable: bool,
    path: String,
}

fn mappings() -> io::Result<Vec<Mapping>> {
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    Ok(maps.lines().filter_map(parse_mapping).collect())
}

/// One line of `/proc/self/maps`: `start-end perms offset dev inode [path]`.
fn parse_mapping(line: &str) -> Option<Mapping> {
    let mut fields = line.split_whitespace();
    let (start, end) = fields.next()?.split_once('-')?;
    let perms = fields.next()?;
    let path = fields.nth(3).unwrap_or("").to_owned();
    Some(Mapping {
        start: usize::from_str_radix(start, 16).ok()?,
        end: usize::from_str_radix(end, 16).ok()?,
        writable: perms.starts_with("rw"),
        path,
    })
}

/// Whether a mapping holds data the schedulers allocated: anonymous memory,
/// the heap, or a memfd (EAL's memory without hugetlbfs).
fn is_data(m: &Mapping) -> bool {
    m.writable && (m.path.is_empty() || m.path == "[heap]" || m.path.starts_with("/memfd:"))
}

/// Rebuilds every data mapping of 2 MB or more on 2 MB pages (the whole
/// 2 MB-aligned part of it). Returns the bytes of the process on huge pages
/// afterwards, or the error of the first refusal when nothing was collapsed.
///
/// A memfd mapping is copied to private memory and moved over itself (see
/// `privatize`): call it while no other thread of the process uses such
/// memory (the benchmark runs one scheduler at a time on its thread), or that
/// thread's writes during the copy are lost.
pub fn collapse() -> io::Result<u64> {
    let mut refused = None;
    let mut collapsed = false;
    for m in mappings()?.iter().filter(|m| is_data(m)) {
        let start = m.start.next_multiple_of(HUGE);
        let end = m.end - m.end % HUGE;
        if end <= start {
            continue;
        }
        if m.path.starts_with("/memfd:") {
            if let Err(e) = privatize(m.start, m.end - m.start) {
                refused.get_or_insert(e);
                continue;
            }
        }
        match advise(start, end - start) {
            Ok(()) => collapsed = true,
            Err(e) => {
                refused.get_or_insert(e);
            }
        }
    }
    match (collapsed, refused) {
        (false, Some(e)) => Err(e),
        _ => huge_bytes(),
    }
}

#[allow(unsafe_code)]
fn advise(start: usize, len: usize) -> io::Result<()> {
    let addr = start as *mut libc::c_void;
    // SAFETY: the range lies within one mapping of this process (read from
    // /proc/self/maps just before). MADV_HUGEPAGE and MADV_COLLAPSE change
    // only which physical pages back it, never its contents or its validity.
    let rc = unsafe {
        // Not every range may become huge (a memfd where shared memory may
        // not): the collapse decides, this only marks anonymous ranges.
        let _ = libc::madvise(addr, len, libc::MADV_HUGEPAGE);
        libc::madvise(addr, len, libc::MADV_COLLAPSE)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Replaces the shared mapping `start..start + len` by private anonymous
/// memory holding the same bytes at the same addresses (only its resident
/// pages are copied: the rest reads as zeros either way). The new memory is
/// placed at the same offset within 2 MB as the old and marked for huge
/// pages before the copy, so the copy faults in 2 MB pages that the move
/// keeps whole.
#[allow(unsafe_code)]
fn privatize(start: usize, len: usize) -> io::Result<()> {
    const PAGE: usize = 4096;
    let mut resident = vec![0u8; len.div_ceil(PAGE)];
    let old = start as *mut libc::c_void;
    // SAFETY: `start..start + len` is one whole mapping of this process (read
    // from /proc/self/maps just before), page-aligned; `resident` has one
    // byte per page of it, as mincore writes.
    if unsafe { libc::mincore(old, len, resident.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh private anonymous mapping of `len + HUGE` bytes: no
    // existing memory is affected.
    let base = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len + HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // `new` is congruent to `start` modulo 2 MB; the bytes before and after
    // it are returned.
    let lead = (start.wrapping_sub(base as usize)) % HUGE;
    // SAFETY: `lead < HUGE`, so `new..new + len` lies within `base`'s
    // mapping; the unmapped ends are parts of it nothing refers to.
    let new = unsafe {
        let new = base.cast::<u8>().add(lead).cast::<libc::c_void>();
        if lead > 0 {
            libc::munmap(base, lead);
        }
        libc::munmap(new.cast::<u8>().add(len).cast(), HUGE - lead);
        let _ = libc::madvise(new, len, libc::MADV_HUGEPAGE);
        new
    };
    for (i, _) in resident.iter().enumerate().filter(|(_, r)| *r & 1 != 0) {
        // SAFETY: page `i` lies within both mappings of `len` bytes, which do
        // not overlap (`new` was just created); the benchmark thread is the
        // only one using the old mapping's memory, and it is here.
        unsafe {
            core::ptr::copy_nonoverlapping(
                (start + i * PAGE) as *const u8,
                new.cast::<u8>().add(i * PAGE),
                PAGE,
            );
        }
    }
    // SAFETY: moves the new mapping over the old one, atomically: the range
    // keeps its addresses and bytes, now in private memory; every pointer
    // into it stays valid.
    let moved = unsafe {
        libc::mremap(
            new,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            old,
        )
    };
    if moved == libc::MAP_FAILED {
        let e = io::Error::last_os_error();
        // SAFETY: `new` is the mapping created above, unused.
        unsafe { libc::munmap(new, len) };
        return Err(e);
    }
    Ok(())
}

/// Bytes of the process on huge pages: anonymous and shared.
fn huge_bytes() -> io::Result<u64> {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup")?;
    let kb = rollup
        .lines()
        .filter(|l| l.starts_with("AnonHugePages:") || l.starts_with("ShmemPmdMapped:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum::<u64>();
    Ok(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_maps_lines() {
        let m = parse_mapping(
            "7f00a0000000-7f00a0400000 rw-s 00000000 00:01 1234 /memfd:nohuge (deleted)",
        )
        .expect("a mapping");
        assert_eq!((m.start, m.end - m.start), (0x7f00_a000_0000, 4 << 20));
        assert!(is_data(&m));
        let m =
            parse_mapping("55d0c0000000-55d0c0021000 r-xp 00000000 08:01 42 /usr/bin/x").unwrap();
        assert!(!is_data(&m));
        let m = parse_mapping("7f00b0000000-7f00b8000000 rw-p 00000000 00:00 0").unwrap();
        assert!(is_data(&m) && m.path.is_empty());
    }
}
