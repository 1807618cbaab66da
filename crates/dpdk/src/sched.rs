//! One `rte_sched` port: configuration, enqueue, dequeue, statistics.

use std::ffi::CString;
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::error::{check, DpdkError, SchedConfigError};
use crate::mbuf::{Burst, Mempool};
use crate::sys;

/// Queues per pipe: one per strict class and the best-effort class's four.
pub const QUEUES_PER_PIPE: usize = sys::RTE_SCHED_QUEUES_PER_PIPE as usize;
/// Queues of the best-effort class, served by weighted round robin.
pub const BE_QUEUES: usize = sys::RTE_SCHED_BE_QUEUES_PER_PIPE as usize;
/// Traffic classes per pipe: 12 strict-priority classes and one best effort
/// (DPDK's `RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE`, a macro expression bindgen
/// does not translate).
pub const TRAFFIC_CLASSES: usize = QUEUES_PER_PIPE - BE_QUEUES + 1;
/// The best-effort class (the lowest priority).
pub const BE_TC: usize = TRAFFIC_CLASSES - 1;

/// A subport's limits: a token bucket and a cap per traffic class (byte rates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubportProfile {
    /// Token bucket rate, bytes per second.
    pub tb_rate: u64,
    /// Token bucket size, bytes.
    pub tb_size: u64,
    /// Cap of each traffic class, bytes per second (at most `tb_rate`).
    pub tc_rate: [u64; TRAFFIC_CLASSES],
    /// Period over which the class caps are enforced, milliseconds.
    pub tc_period_ms: u64,
}

/// A pipe profile: its token bucket, its traffic classes' caps and the weights
/// of the best-effort queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipeProfile {
    /// Token bucket rate, bytes per second.
    pub tb_rate: u64,
    /// Token bucket size, bytes.
    pub tb_size: u64,
    /// Cap of each traffic class, bytes per second (at most `tb_rate`).
    pub tc_rate: [u64; TRAFFIC_CLASSES],
    /// Period over which the class caps are enforced, milliseconds.
    pub tc_period_ms: u64,
    /// Weights of the best-effort class's queues (byte-based WRR), 1..=255.
    pub wrr_weights: [u8; BE_QUEUES],
}

/// A port's hierarchy: subports of pipes of 16 queues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortConfig {
    /// Output rate, bytes per second: the rate of the port's byte clock.
    pub rate: u64,
    /// Largest frame, bytes.
    pub mtu: u32,
    /// Bytes added to every packet's length when charging credits.
    pub frame_overhead: u32,
    /// Subports.
    pub subports: u32,
    /// Pipes per subport (a power of two).
    pub pipes_per_subport: u32,
    /// Packets each queue of a traffic class holds (powers of two).
    pub qsize: [u16; TRAFFIC_CLASSES],
    /// Every subport's limits.
    pub subport: SubportProfile,
    /// Pipe profiles; pipe `p` of a subport uses profile `p % len`.
    pub pipe_profiles: Vec<PipeProfile>,
}

impl PortConfig {
    /// Queues in the whole port.
    #[must_use]
    pub fn queues(&self) -> usize {
        self.subports as usize * self.pipes_per_subport as usize * QUEUES_PER_PIPE
    }

    fn validate(&self) -> Result<(), DpdkError> {
        if !self.pipes_per_subport.is_power_of_two() {
            return Err(SchedConfigError::Pipes(self.pipes_per_subport).into());
        }
        if self.subports == 0 || !self.subports.is_power_of_two() {
            return Err(SchedConfigError::Subports(self.subports).into());
        }
        if self.pipe_profiles.is_empty() {
            return Err(SchedConfigError::NoProfile.into());
        }
        if let Some(&q) = self.qsize.iter().find(|q| !q.is_power_of_two()) {
            return Err(SchedConfigError::QueueSize(q).into());
        }
        Ok(())
    }
}

/// Where an mbuf is filed: subport, pipe, traffic class and queue in the class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueuePath {
    /// Subport.
    pub subport: u32,
    /// Pipe within the subport.
    pub pipe: u32,
    /// Traffic class, `0..=BE_TC`.
    pub tc: u32,
    /// Queue within the class (0 except for the best-effort class).
    pub queue: u32,
}

/// One queue's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Packets accepted.
    pub packets: u64,
    /// Packets dropped on enqueue (queue full).
    pub dropped: u64,
    /// Bytes accepted.
    pub bytes: u64,
    /// Bytes dropped.
    pub bytes_dropped: u64,
    /// Packets queued now.
    pub queued: u16,
}

/// An `rte_sched` port holding mbufs of one pool; freed (with the mbufs it
/// holds) on drop.
#[derive(Debug)]
pub struct SchedPort<'p> {
    port: NonNull<sys::rte_sched_port>,
    config: PortConfig,
    _name: CString,
    pool: PhantomData<&'p Mempool>,
}

fn subport_params(p: &SubportProfile) -> sys::rte_sched_subport_profile_params {
    sys::rte_sched_subport_profile_params {
        tb_rate: p.tb_rate,
        tb_size: p.tb_size,
        tc_rate: p.tc_rate,
        tc_period: p.tc_period_ms,
    }
}

fn pipe_params(p: &PipeProfile) -> sys::rte_sched_pipe_params {
    sys::rte_sched_pipe_params {
        tb_rate: p.tb_rate,
        tb_size: p.tb_size,
        tc_rate: p.tc_rate,
        tc_period: p.tc_period_ms,
        tc_ov_weight: 1,
        wrr_weights: p.wrr_weights,
    }
}

/// Why configuring a port's subports failed, and whether rte_sched freed it.
enum ConfigFailure {
    /// `rte_sched_subport_config` or `rte_sched_pipe_config` refused: rte_sched
    /// freed the whole port.
    PortFreed(DpdkError),
    /// Another call refused: the port is still allocated.
    PortKept(DpdkError),
}

impl ConfigFailure {
    fn into_error(self) -> DpdkError {
        match self {
            ConfigFailure::PortFreed(e) | ConfigFailure::PortKept(e) => e,
        }
    }
}

/// Configures every subport of `port` (best-effort oversubscription off) and
/// every pipe with its profile.
fn configure_subports(
    port: NonNull<sys::rte_sched_port>,
    config: &PortConfig,
) -> Result<(), ConfigFailure> {
    let mut profiles: Vec<sys::rte_sched_pipe_params> =
        config.pipe_profiles.iter().map(pipe_params).collect();
    let mut sp = sys::rte_sched_subport_params {
        n_pipes_per_subport_enabled: config.pipes_per_subport,
        qsize: config.qsize,
        pipe_profiles: profiles.as_mut_ptr(),
        n_pipe_profiles: profiles.len() as u32,
        n_max_pipe_profiles: profiles.len() as u32,
        cman_params: std::ptr::null_mut(),
    };
    let port = port.as_ptr();
    for s in 0..config.subports {
        // SAFETY: the port is valid; `sp` and the profile table it points to
        // live across the call and are copied by rte_sched.
        check("rte_sched_subport_config", unsafe {
            sys::rte_sched_subport_config(port, s, &mut sp, 0)
        })
        .map_err(ConfigFailure::PortFreed)?;
        // SAFETY: the subport was just configured.
        check("rte_sched_subport_tc_ov_config", unsafe {
            sys::rte_sched_subport_tc_ov_config(port, s, false)
        })
        .map_err(ConfigFailure::PortKept)?;
        for p in 0..config.pipes_per_subport {
            let profile = (p as usize % profiles.len()) as i32;
            // SAFETY: subport and pipe are in range, the profile exists.
            check("rte_sched_pipe_config", unsafe {
                sys::rte_sched_pipe_config(port, s, p, profile)
            })
            .map_err(ConfigFailure::PortFreed)?;
        }
    }
    Ok(())
}

impl<'p> SchedPort<'p> {
    /// Configures a port, its subports (best-effort oversubscription off) and
    /// every pipe, for mbufs of `pool`.
    pub fn new(pool: &'p Mempool, config: &PortConfig) -> Result<Self, DpdkError> {
        let _ = pool;
        config.validate()?;
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = CString::new(format!("eiffel-sched{n}")).expect("no NUL");
        let mut subport_profile = subport_params(&config.subport);
        let mut params = sys::rte_sched_port_params {
            name: name.as_ptr(),
            socket: 0,
            rate: config.rate,
            mtu: config.mtu,
            frame_overhead: config.frame_overhead,
            n_subports_per_port: config.subports,
            subport_profiles: &mut subport_profile,
            n_subport_profiles: 1,
            n_max_subport_profiles: 1,
            n_pipes_per_subport: config.pipes_per_subport,
        };
        // SAFETY: params and the profile it points to are valid for the call;
        // rte_sched copies what it keeps.
        let raw = unsafe { sys::rte_sched_port_config(&mut params) };
        let port = NonNull::new(raw).ok_or_else(|| DpdkError::Sched {
            call: "rte_sched_port_config",
            code: -22,
            reason: "refused the port parameters".into(),
        })?;
        // On a refused subport or pipe, rte_sched frees the port itself.
        if let Err(e) = configure_subports(port, config) {
            if !matches!(e, ConfigFailure::PortFreed(_)) {
                // SAFETY: the port is valid and nothing else refers to it.
                unsafe { sys::rte_sched_port_free(port.as_ptr()) }
            }
            return Err(e.into_error());
        }
        Ok(SchedPort {
            port,
            config: config.clone(),
            _name: name,
            pool: PhantomData,
        })
    }

    /// The configuration the port was built with.
    #[must_use]
    pub fn config(&self) -> &PortConfig {
        &self.config
    }

    /// Files mbuf `i` of `burst` for `path` (green, for `rte_sched`'s
    /// `rte_sched_port_pkt_write`).
    ///
    /// # Panics
    /// If `i` is not an mbuf of the burst.
    #[inline]
    pub fn write(&self, burst: &mut Burst<'p>, i: usize, path: QueuePath) {
        let m = burst.raw(i);
        // SAFETY: `m` is a valid mbuf owned by the burst; the port is valid; the
        // function masks the ids into the port's ranges.
        unsafe {
            sys::rte_sched_port_pkt_write(
                self.port.as_ptr(),
                m,
                path.subport,
                path.pipe,
                path.tc,
                path.queue,
                sys::rte_color_RTE_COLOR_GREEN,
            );
        }
    }

    /// Where mbuf `i` of `burst` is filed.
    ///
    /// # Panics
    /// If `i` is not an mbuf of the burst.
    #[must_use]
    pub fn path(&self, burst: &Burst<'p>, i: usize) -> QueuePath {
        let m = burst.raw(i);
        let mut p = QueuePath {
            subport: 0,
            pipe: 0,
            tc: 0,
            queue: 0,
        };
        // SAFETY: valid port and mbuf; the four outputs are valid u32s.
        unsafe {
            sys::rte_sched_port_pkt_read_tree_path(
                self.port.as_ptr(),
                m,
                &mut p.subport,
                &mut p.pipe,
                &mut p.tc,
                &mut p.queue,
            );
        }
        p
    }

    /// Offers every mbuf of `burst` (which ends empty); returns how many were
    /// queued. The others were dropped (queue full) and went back to the pool.
    #[inline]
    pub fn enqueue(&mut self, burst: &mut Burst<'p>) -> usize {
        let (ptrs, n) = burst.take();
        // SAFETY: `ptrs` holds `n` valid mbufs filed with `write`; ownership
        // passes to rte_sched, which queues or frees each.
        let queued = unsafe { sys::rte_sched_port_enqueue(self.port.as_ptr(), ptrs, n as u32) };
        queued as usize
    }

    /// Takes up to `n` scheduled mbufs into the empty `burst`; returns how many.
    ///
    /// # Panics
    /// If `burst` is not empty or `n` exceeds [`crate::MAX_BURST`].
    #[inline]
    pub fn dequeue(&mut self, burst: &mut Burst<'p>, n: usize) -> usize {
        assert!(burst.is_empty() && n <= crate::MAX_BURST);
        let room = burst.room();
        // SAFETY: `room` has space for MAX_BURST >= n pointers; rte_sched writes
        // that many mbufs it owned, whose ownership passes to the burst.
        let got = unsafe { sys::rte_sched_port_dequeue(self.port.as_ptr(), room, n as u32) };
        let got = got.max(0) as usize;
        burst.filled(got);
        got
    }

    /// Counters of the queue at `path` since the last read (reading resets them).
    pub fn queue_stats(&self, path: QueuePath) -> Result<QueueStats, DpdkError> {
        let c = &self.config;
        if path.subport >= c.subports
            || path.pipe >= c.pipes_per_subport
            || path.tc as usize > BE_TC
            || (path.tc as usize == BE_TC && path.queue as usize >= BE_QUEUES)
            || ((path.tc as usize) < BE_TC && path.queue != 0)
        {
            return Err(SchedConfigError::NoQueue(path).into());
        }
        let in_pipe = path.tc + path.queue;
        let qid =
            (path.subport * c.pipes_per_subport + path.pipe) * QUEUES_PER_PIPE as u32 + in_pipe;
        let mut raw = sys::rte_sched_queue_stats::default();
        let mut qlen: u16 = 0;
        // SAFETY: the queue id is in range (checked above); both outputs are
        // valid for writes.
        check("rte_sched_queue_read_stats", unsafe {
            sys::rte_sched_queue_read_stats(self.port.as_ptr(), qid, &mut raw, &mut qlen)
        })?;
        Ok(QueueStats {
            packets: raw.n_pkts,
            dropped: raw.n_pkts_dropped,
            bytes: raw.n_bytes,
            bytes_dropped: raw.n_bytes_dropped,
            queued: qlen,
        })
    }
}

impl Drop for SchedPort<'_> {
    fn drop(&mut self) {
        // SAFETY: the port is valid and dropped once; rte_sched frees the mbufs it
        // still holds back to their pool, which outlives this port.
        unsafe { sys::rte_sched_port_free(self.port.as_ptr()) }
    }
}
