//! AF_XDP for the bump in the wire: which packet I/O a bump uses, why AF_XDP could
//! not be used, and how it runs when it is.
//!
//! With AF_XDP (`eiffel shape --io af_xdp`) every frame stays where the kernel
//! put it: both interfaces' sockets share one UMEM (`xsk_socket__create_shared`,
//! each socket with its own fill and completion ring), the receive thread
//! classifies a frame in place, and the transmit side hands the same chunk to the
//! other interface's transmit ring. The XDP program is libxdp's default XSK
//! program (redirect a queue's frames to the socket bound to it), attached in
//! native mode where the driver supports it and in generic mode otherwise, and
//! detached when the bump stops. A program of libxdp's left attached by a bump
//! that was killed is removed at the next start.
//!
//! Built only when libxdp and libbpf were found at build time (see the crate's
//! `build.rs`); [`available`] says whether they were.

use std::fmt;
use std::io;

/// Which packet I/O the bump uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IoChoice {
    /// AF_XDP where it works, else AF_PACKET (the reason is reported).
    #[default]
    Auto,
    /// AF_XDP, or an error naming the fallback.
    AfXdp,
    /// AF_PACKET memory-mapped rings.
    AfPacket,
}

/// Where an XDP program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum XdpMode {
    /// In the driver, before any socket buffer is allocated.
    Native,
    /// In the kernel's network stack (`XDP_MODE_SKB`), for drivers without
    /// native XDP.
    Generic,
}

impl fmt::Display for XdpMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
        })
    }
}

/// How one interface runs under AF_XDP.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct XdpPort {
    /// The interface.
    pub interface: String,
    /// Where its XDP program runs.
    pub mode: XdpMode,
    /// Whether its sockets run in zero-copy mode (else the kernel copies each
    /// frame into the UMEM, as on veth).
    pub zero_copy: bool,
    /// Receive queues with a socket bound.
    pub queues: u32,
    /// Whether a program left behind by an earlier run was removed at start.
    pub removed_stale: bool,
}

/// The packet I/O a running bump uses.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "io")]
pub enum IoReport {
    /// AF_XDP on both interfaces.
    AfXdp {
        /// The input's and the output's settings.
        ports: [XdpPort; 2],
    },
    /// AF_PACKET.
    AfPacket {
        /// Why AF_XDP was not used when it was the default choice.
        fallback: Option<String>,
    },
}

impl fmt::Display for IoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoReport::AfXdp { ports } => {
                write!(f, "af_xdp")?;
                for (i, p) in ports.iter().enumerate() {
                    let sep = if i == 0 { ":" } else { ";" };
                    let copy = if p.zero_copy {
                        "zero-copy"
                    } else {
                        "copy mode"
                    };
                    write!(
                        f,
                        "{sep} {} {} XDP, {copy}, {} queue{}",
                        p.interface,
                        p.mode,
                        p.queues,
                        if p.queues == 1 { "" } else { "s" }
                    )?;
                    if p.removed_stale {
                        write!(f, " (removed the XDP program a killed run left)")?;
                    }
                }
                Ok(())
            }
            IoReport::AfPacket { fallback: None } => write!(f, "af_packet"),
            IoReport::AfPacket {
                fallback: Some(why),
            } => write!(f, "af_packet (af_xdp unavailable: {why})"),
        }
    }
}

/// Whether this build has AF_XDP (libxdp and libbpf were found when it was built).
#[must_use]
pub fn available() -> bool {
    cfg!(eiffel_xdp)
}

const FALLBACK: &str = "`--io af_packet` works without it";

/// Why AF_XDP cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum XdpError {
    /// Built without libxdp.
    #[error(
        "this build has no AF_XDP: libxdp-dev and libbpf-dev were missing when it was built \
         (install them, e.g. with scripts/setup.d/xdp.sh, and rebuild); {FALLBACK}"
    )]
    NotBuilt,
    /// The interface does not exist.
    #[error("interface `{interface}` does not exist in this network namespace (list them with `ip link`)")]
    NoSuchInterface {
        /// The interface.
        interface: String,
    },
    /// Missing privileges.
    #[error(
        "{op} on `{interface}` needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF (or root); \
         {FALLBACK} and needs only CAP_NET_RAW"
    )]
    Permission {
        /// What was refused.
        op: &'static str,
        /// The interface.
        interface: String,
    },
    /// The interface cannot run XDP at all (not even generic mode).
    #[error("`{interface}` does not support XDP ({source}); {FALLBACK}")]
    Unsupported {
        /// The interface.
        interface: String,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// Another AF_XDP socket holds a queue.
    #[error(
        "queue {queue} of `{interface}` is in use by another AF_XDP socket (another bump or \
         XDP application on this interface); stop it, or {FALLBACK}"
    )]
    Busy {
        /// The interface.
        interface: String,
        /// The queue.
        queue: u32,
    },
    /// A program that is not libxdp's XSK program is attached.
    #[error(
        "`{interface}` already runs the XDP program `{program}`, which is not libxdp's XSK \
         program; detach it (`ip link set dev {interface} xdp off`) or {FALLBACK}"
    )]
    OtherProgram {
        /// The interface.
        interface: String,
        /// The attached program's name.
        program: String,
    },
    /// More receive threads than the input has queues.
    #[error(
        "`{interface}` has {has} receive queue(s), fewer than the {wanted} asked for \
         (create it with more, e.g. `ip link add ... numrxqueues {wanted} numtxqueues {wanted}`, or ask for fewer)"
    )]
    TooFewQueues {
        /// The interface.
        interface: String,
        /// Its receive queues.
        has: u32,
        /// `--queues`.
        wanted: usize,
    },
    /// Frames too large for a UMEM chunk.
    #[error("`{interface}` has MTU {mtu}: AF_XDP here takes frames of at most 3,840 bytes (MTU 3,822); {FALLBACK}")]
    MtuTooLarge {
        /// The interface.
        interface: String,
        /// Its MTU.
        mtu: u32,
    },
    /// Any other failure.
    #[error("{op} on `{interface}`: {source}; {FALLBACK}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The interface.
        interface: String,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl XdpError {
    /// Classifies an error of `op` on `interface` (queue `queue`, when binding).
    #[cfg_attr(not(eiffel_xdp), allow(dead_code))]
    pub(crate) fn from_io(
        op: &'static str,
        interface: &str,
        queue: Option<u32>,
        source: io::Error,
    ) -> XdpError {
        let interface = interface.to_owned();
        match source.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) => XdpError::Permission { op, interface },
            Some(libc::ENODEV | libc::ENXIO) => XdpError::NoSuchInterface { interface },
            Some(libc::EBUSY) if queue.is_some() => XdpError::Busy {
                interface,
                queue: queue.unwrap_or(0),
            },
            Some(libc::EOPNOTSUPP) => XdpError::Unsupported { interface, source },
            _ => XdpError::Io {
                op,
                interface,
                source,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_fallback() {
        let e = XdpError::from_io(
            "binding",
            "m0",
            Some(2),
            io::Error::from_raw_os_error(libc::EBUSY),
        );
        let text = e.to_string();
        assert!(
            text.contains("queue 2 of `m0`") && text.contains("--io af_packet"),
            "{text}"
        );
        let e = XdpError::from_io(
            "attaching",
            "m0",
            None,
            io::Error::from_raw_os_error(libc::EPERM),
        );
        assert!(matches!(e, XdpError::Permission { .. }));
        assert!(XdpError::NotBuilt.to_string().contains("libxdp-dev"));
    }

    #[test]
    fn reports_read_as_a_line() {
        let port = |name: &str| XdpPort {
            interface: name.into(),
            mode: XdpMode::Native,
            zero_copy: false,
            queues: 1,
            removed_stale: false,
        };
        let r = IoReport::AfXdp {
            ports: [port("m0"), port("m1")],
        };
        assert_eq!(
            r.to_string(),
            "af_xdp: m0 native XDP, copy mode, 1 queue; m1 native XDP, copy mode, 1 queue"
        );
        let r = IoReport::AfPacket {
            fallback: Some("no XDP".into()),
        };
        assert_eq!(r.to_string(), "af_packet (af_xdp unavailable: no XDP)");
    }
}
