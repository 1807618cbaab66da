//! A three-namespace test bed for end-to-end tests: sender — middle — receiver.
//!
//! ```text
//!  [ns <id>-s]                 [ns <id>-m]                  [ns <id>-r]
//!   s0 198.18.0.1/24 ==veth==  m0  (no address)  m1  ==veth== r0 198.18.0.2/24
//!      fd00:e1f::1/64              (bump in the wire)            fd00:e1f::2/64
//! ```
//!
//! [`Testbed::new`] creates three network namespaces with unique names
//! (`<prefix>-<pid>-<n>-{s,m,r}`) and two veth pairs, created directly inside the
//! namespaces (no interface ever appears in the caller's namespace). Addresses come
//! from the benchmarking range 198.18.0.0/15 (RFC 2544) and a unique-local IPv6
//! prefix, and exist only inside the sender and receiver namespaces. The middle has
//! no address and IPv6 address generation turned off, so it emits nothing of its own:
//! whatever runs there (an `eiffel` forwarder, or the kernel bridge of
//! [`Testbed::bridge_middle`]) is a pure bump in the wire.
//!
//! Offloads are turned off on all four interfaces (`ethtool -K tx off tso off gso
//! off gro off`): senders compute checksums and segment in software, so every frame
//! on the wire is a real, MTU-sized frame with a complete checksum.
//! [`Testbed::with_offloads`] with [`Offloads::ChecksumOn`] leaves transmit checksum
//! offload on, so frames cross with their checksum unfinished and the bump must
//! complete them (see [`eiffel_net::afpacket`]); with [`Offloads::AllOn`] every
//! offload is on and super-frames up to 64 KB reach the middle.
//!
//! Cleanup always happens: dropping the [`Testbed`] kills every process left in its
//! namespaces and deletes them (which deletes the veths). [`Testbed::new`] first
//! removes stale namespaces of the same prefix left by processes that no longer exist
//! (a test killed before its destructor ran). Every command runs under a timeout.
//!
//! Also here: [`Testbed::htb`] builds a Linux HTB hierarchy (the comparison baseline
//! for the scheduler), iperf3 helpers that parse iperf3's JSON report, and
//! [`preflight`], which decides whether a test can run: with `EIFFEL_REQUIRE_NETNS=1`
//! a missing prerequisite fails the test; otherwise the test is skipped with a notice.
//!
//! Requires root (or `CAP_NET_ADMIN` + `CAP_SYS_ADMIN`), iproute2 (`ip`, `tc`),
//! `ethtool`; the tests also use `ping` and `iperf3`.

pub mod blast;

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Sender-side interface name (in the sender namespace).
pub const SENDER_IF: &str = "s0";
/// Middle interface facing the sender.
pub const MIDDLE_IN: &str = "m0";
/// Middle interface facing the receiver.
pub const MIDDLE_OUT: &str = "m1";
/// Receiver-side interface name (in the receiver namespace).
pub const RECEIVER_IF: &str = "r0";
/// The sender's IPv4 address.
pub const SENDER_V4: &str = "198.18.0.1";
/// The receiver's IPv4 address.
pub const RECEIVER_V4: &str = "198.18.0.2";
/// The sender's IPv6 address.
pub const SENDER_V6: &str = "fd00:e1f::1";
/// The receiver's IPv6 address.
pub const RECEIVER_V6: &str = "fd00:e1f::2";

/// Default limit for one setup command.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The environment variable that turns a missing prerequisite into a failure.
pub const REQUIRE_ENV: &str = "EIFFEL_REQUIRE_NETNS";

/// One of the three namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Traffic source.
    Sender,
    /// The bump in the wire.
    Middle,
    /// Traffic sink.
    Receiver,
}

impl Role {
    fn suffix(self) -> &'static str {
        match self {
            Role::Sender => "s",
            Role::Middle => "m",
            Role::Receiver => "r",
        }
    }

    fn index(self) -> usize {
        match self {
            Role::Sender => 0,
            Role::Middle => 1,
            Role::Receiver => 2,
        }
    }
}

/// A test-bed operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestbedError {
    /// A command could not be started.
    #[error("could not run `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A command exited with failure.
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A command ran past its time limit and was killed.
    #[error("`{command}` did not finish within {timeout:?} and was killed")]
    Timeout {
        /// The command line.
        command: String,
        /// The limit.
        timeout: Duration,
    },
    /// Output that could not be understood.
    #[error("{0}")]
    Parse(String),
    /// A bad argument.
    #[error("{0}")]
    Invalid(String),
}

/// Result of a finished command.
#[derive(Clone, Debug)]
pub struct CmdOutput {
    /// Exit status.
    pub status: ExitStatus,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

fn command_line(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `cmd` to completion, killing it after `timeout`.
///
/// # Errors
/// The command could not start, or ran past `timeout`.
pub fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Result<CmdOutput, TestbedError> {
    let line = command_line(&cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| TestbedError::Spawn {
            command: line.clone(),
            source,
        })?;
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(source) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TestbedError::Spawn {
                    command: line,
                    source,
                });
            }
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    match status {
        Some(status) => Ok(CmdOutput {
            status,
            stdout,
            stderr,
        }),
        None => Err(TestbedError::Timeout {
            command: line,
            timeout,
        }),
    }
}

/// Runs `cmd` and fails unless it exits successfully.
fn run_ok(cmd: Command, timeout: Duration) -> Result<CmdOutput, TestbedError> {
    let line = command_line(&cmd);
    let out = run_with_timeout(cmd, timeout)?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(TestbedError::Failed {
            command: line,
            status: out.status.to_string(),
            stderr: out.stderr.trim().to_owned(),
        })
    }
}

fn ip(args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(args);
    c
}

/// Whether `program` is found on `PATH` (or in `/usr/sbin`, `/sbin`).
#[must_use]
pub fn have_program(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .any(|dir| dir.join(program).is_file())
}

/// What is missing to run a test needing root and `programs`.
#[must_use]
pub fn missing_prerequisites(programs: &[&str]) -> Vec<String> {
    let mut missing = Vec::new();
    if !nix::unistd::geteuid().is_root() {
        missing.push("root privileges (run the tests as root)".to_owned());
    }
    for p in programs {
        if !have_program(p) {
            let package = match *p {
                "ip" | "tc" => "iproute2",
                "ping" => "iputils-ping",
                other => other,
            };
            missing.push(format!("`{p}` (apt-get install -y {package})"));
        }
    }
    missing
}

/// Decides whether the test `name` can run: `true` when root and every program are
/// available. Otherwise, with `EIFFEL_REQUIRE_NETNS=1` in the environment, panics
/// (failing the test) naming what is missing; without it, prints a notice and returns
/// `false` so the test can return early.
///
/// # Panics
/// When a prerequisite is missing and `EIFFEL_REQUIRE_NETNS=1`.
#[must_use]
pub fn preflight(name: &str, programs: &[&str]) -> bool {
    let missing = missing_prerequisites(programs);
    if missing.is_empty() {
        return true;
    }
    let list = missing.join(", ");
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!("{name}: {REQUIRE_ENV}=1 but the test cannot run; missing: {list}");
    }
    eprintln!("skipping {name}: missing {list} (set {REQUIRE_ENV}=1 to make this a failure)");
    false
}

type Reader = std::thread::JoinHandle<String>;

/// Reads a pipe to its end on a thread, so a chatty child never blocks on a full pipe.
fn drain(pipe: Option<impl Read + Send + 'static>) -> Reader {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// A background process in a namespace, killed when dropped.
#[derive(Debug)]
pub struct Background {
    child: Child,
    line: String,
    stdout: Option<Reader>,
    stderr: Option<Reader>,
}

impl Background {
    /// Waits up to `timeout` for the process to exit by itself and returns its output;
    /// kills it at the deadline.
    ///
    /// # Errors
    /// The process did not exit in time (it is killed).
    pub fn wait(mut self, timeout: Duration) -> Result<CmdOutput, TestbedError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    let join =
                        |r: Option<Reader>| r.and_then(|r| r.join().ok()).unwrap_or_default();
                    return Ok(CmdOutput {
                        status,
                        stdout: join(self.stdout.take()),
                        stderr: join(self.stderr.take()),
                    });
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => {
                    return Err(TestbedError::Timeout {
                        command: self.line.clone(),
                        timeout,
                    })
                }
            }
        }
    }
}

impl Background {
    /// The process id (the command itself: `ip netns exec` replaces itself with it).
    #[must_use]
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has exited.
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Options of an iperf3 client run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iperf3 {
    /// Server port.
    pub port: u16,
    /// UDP instead of TCP.
    pub udp: bool,
    /// Target bitrate (`-b`), e.g. `"50M"`; required for UDP to be meaningful.
    pub bitrate: Option<String>,
    /// Test length in seconds (`-t`).
    pub seconds: u32,
    /// Parallel streams (`-P`).
    pub streams: u32,
    /// Send size in bytes (`-l`), e.g. a UDP payload size.
    pub length: Option<u32>,
    /// Connect to the IPv6 address instead of the IPv4 one.
    pub ipv6: bool,
    /// Seconds at the start left out of the totals (`-O`), e.g. TCP's slow start.
    pub omit: u32,
}

impl Iperf3 {
    /// A TCP run of `seconds` to `port`, one stream.
    #[must_use]
    pub fn tcp(port: u16, seconds: u32) -> Iperf3 {
        Iperf3 {
            port,
            udp: false,
            bitrate: None,
            seconds,
            streams: 1,
            length: None,
            ipv6: false,
            omit: 0,
        }
    }

    /// A UDP run of `seconds` to `port` at `bitrate`.
    #[must_use]
    pub fn udp(port: u16, seconds: u32, bitrate: &str) -> Iperf3 {
        Iperf3 {
            udp: true,
            bitrate: Some(bitrate.to_owned()),
            ..Iperf3::tcp(port, seconds)
        }
    }
}

/// What an iperf3 client reported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Iperf3Report {
    /// Bytes the receiver got.
    pub bytes_received: u64,
    /// Receiver-side throughput, bits per second.
    pub bits_per_second: f64,
    /// TCP retransmissions (0 for UDP).
    pub retransmits: u64,
    /// UDP datagrams sent (0 for TCP).
    pub packets: u64,
    /// UDP datagrams lost (0 for TCP).
    pub lost_packets: u64,
    /// UDP datagrams that arrived after a later one (0 for TCP).
    pub out_of_order: u64,
    /// The TCP maximum segment size (payload bytes per full segment), if reported.
    pub tcp_mss: Option<u32>,
}

impl Iperf3Report {
    /// Parses iperf3's `--json` output.
    ///
    /// # Errors
    /// Output that is not an iperf3 report, or a report of a failed run.
    pub fn parse(json: &str) -> Result<Iperf3Report, TestbedError> {
        let v: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| TestbedError::Parse(format!("iperf3 output is not JSON ({e})")))?;
        if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
            return Err(TestbedError::Parse(format!("iperf3 failed: {err}")));
        }
        let end = v
            .get("end")
            .ok_or_else(|| TestbedError::Parse("iperf3 report has no `end` section".into()))?;
        let tcp_mss = v
            .get("start")
            .and_then(|s| s.get("tcp_mss_default"))
            .and_then(serde_json::Value::as_u64)
            .and_then(|m| u32::try_from(m).ok());
        let out_of_order = end
            .get("streams")
            .and_then(serde_json::Value::as_array)
            .map_or(0, |streams| {
                streams
                    .iter()
                    .filter_map(|s| s.get("udp")?.get("out_of_order")?.as_u64())
                    .sum()
            });
        let num = |section: &str, key: &str| {
            end.get(section)
                .and_then(|s| s.get(key))
                .and_then(serde_json::Value::as_f64)
        };
        if let Some(bytes) = num("sum_received", "bytes").filter(|_| end.get("sum").is_none()) {
            return Ok(Iperf3Report {
                bytes_received: bytes as u64,
                bits_per_second: num("sum_received", "bits_per_second").unwrap_or(0.0),
                retransmits: num("sum_sent", "retransmits").unwrap_or(0.0) as u64,
                packets: 0,
                lost_packets: 0,
                out_of_order: 0,
                tcp_mss,
            });
        }
        let sum = "sum";
        let packets = num(sum, "packets").unwrap_or(0.0) as u64;
        let lost = num(sum, "lost_packets").unwrap_or(0.0) as u64;
        let bytes = num("sum_received", "bytes")
            .or_else(|| num(sum, "bytes"))
            .ok_or_else(|| TestbedError::Parse("iperf3 report has no byte count".into()))?;
        Ok(Iperf3Report {
            bytes_received: bytes as u64,
            bits_per_second: num("sum_received", "bits_per_second")
                .or_else(|| num(sum, "bits_per_second"))
                .unwrap_or(0.0),
            retransmits: 0,
            packets,
            lost_packets: lost,
            out_of_order,
            tcp_mss: None,
        })
    }
}

/// One HTB class under the root class `1:1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HtbClass {
    /// Minor number: the class is `1:<minor>` (must not be 1).
    pub minor: u16,
    /// Guaranteed rate, in `tc` syntax (`"20mbit"`).
    pub rate: String,
    /// Ceiling rate; the root rate when `None`.
    pub ceil: Option<String>,
    /// Priority for borrowing (lower first).
    pub prio: Option<u8>,
    /// Packets the class's own queue holds (a `pfifo` of this limit); the
    /// interface's default queue when `None`.
    pub limit: Option<u32>,
    /// Traffic of this class: IPv4 packets matching all of these (`u32` filter);
    /// none means the class only gets the default traffic.
    pub matches: Vec<HtbMatch>,
}

/// A `u32` filter condition on IPv4 packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HtbMatch {
    /// IP protocol number.
    Protocol(u8),
    /// TCP/UDP source port.
    SrcPort(u16),
    /// TCP/UDP destination port.
    DstPort(u16),
    /// DSCP value.
    Dscp(u8),
}

/// An HTB hierarchy: root qdisc `1:`, root class `1:1` at `rate`, leaf classes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Htb {
    /// Rate (and ceiling) of the root class, in `tc` syntax.
    pub rate: String,
    /// Minor of the class that unmatched traffic goes to.
    pub default_minor: u16,
    /// Leaf classes.
    pub classes: Vec<HtbClass>,
}

/// Bytes and packets sent by one `tc` class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassStats {
    /// The class handle, e.g. `"1:10"`.
    pub class: String,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets sent.
    pub packets: u64,
    /// Packets dropped.
    pub drops: u64,
}

static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// Three namespaces and two veth pairs, removed on drop.
#[derive(Debug)]
pub struct Testbed {
    id: String,
    /// Namespaces created so far, in `Role::index` order (empty strings for ones not
    /// yet created).
    names: [String; 3],
    offloads: Offloads,
    /// Transmit and receive queues of each veth.
    queues: u16,
}

/// Offload settings of the test bed's interfaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offloads {
    /// Transmit checksum, TSO, GSO and GRO off: every frame complete and
    /// MTU-sized.
    AllOff,
    /// TSO, GSO and GRO off, transmit checksum offload left on (the veth
    /// default): TCP and UDP frames cross with their checksum unfinished
    /// (`CHECKSUM_PARTIAL`), as on a host set up by `ethtool -K DEV gro off gso off
    /// tso off` alone.
    ChecksumOn,
    /// Transmit checksum, TSO, GSO and GRO all on: senders hand 64 KB
    /// super-frames to the veth, the middle's GRO merges, and a bump must carry
    /// super-frames whole (or a bridge pass the GSO socket buffers on).
    AllOn,
}

impl Testbed {
    /// Builds the test bed. `prefix` (lowercase letters, digits and `-`, at most 24
    /// bytes) names its namespaces; stale namespaces with this prefix whose creating
    /// process is gone are removed first.
    ///
    /// # Errors
    /// A bad prefix, or a setup command that failed (what was created is removed).
    pub fn new(prefix: &str) -> Result<Testbed, TestbedError> {
        Testbed::with_offloads(prefix, Offloads::AllOff)
    }

    /// As [`Testbed::new`], with the given offload settings on the four
    /// interfaces.
    ///
    /// # Errors
    /// As for [`Testbed::new`].
    pub fn with_offloads(prefix: &str, offloads: Offloads) -> Result<Testbed, TestbedError> {
        Testbed::with_setup(prefix, offloads, 1)
    }

    /// As [`Testbed::new`], with veth pairs of `queues` transmit and receive
    /// queues each (1 to 16).
    ///
    /// # Errors
    /// As for [`Testbed::new`], and a queue count out of range.
    pub fn with_queues(prefix: &str, queues: u16) -> Result<Testbed, TestbedError> {
        if !(1..=16).contains(&queues) {
            return Err(TestbedError::Invalid(format!(
                "{queues} veth queues: use 1 to 16"
            )));
        }
        Testbed::with_setup(prefix, Offloads::AllOff, queues)
    }

    fn with_setup(prefix: &str, offloads: Offloads, queues: u16) -> Result<Testbed, TestbedError> {
        if prefix.is_empty()
            || prefix.len() > 24
            || !prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(TestbedError::Invalid(format!(
                "test-bed prefix `{prefix}`: use 1 to 24 lowercase letters, digits or `-`"
            )));
        }
        remove_stale(prefix);
        let id = format!(
            "{prefix}-{}-{}",
            std::process::id(),
            NEXT_ID.fetch_add(1, Ordering::Relaxed)
        );
        let mut bed = Testbed {
            id,
            names: Default::default(),
            offloads,
            queues,
        };
        bed.build()?;
        Ok(bed)
    }

    /// Creates the namespaces, the veth pairs, their offloads and addresses.
    fn build(&mut self) -> Result<(), TestbedError> {
        for role in [Role::Sender, Role::Middle, Role::Receiver] {
            let name = format!("{}-{}", self.id, role.suffix());
            run_ok(ip(&["netns", "add", &name]), SETUP_TIMEOUT)?;
            self.names[role.index()] = name;
            self.ip(role, &["link", "set", "lo", "up"])?;
        }
        self.add_veths()?;
        for dev in [MIDDLE_IN, MIDDLE_OUT] {
            self.ip(
                Role::Middle,
                &["link", "set", "dev", dev, "addrgenmode", "none"],
            )?;
        }
        self.set_offloads()?;
        self.add_addresses()?;
        for (role, dev) in self.interfaces() {
            self.ip(role, &["link", "set", "dev", dev, "up"])?;
        }
        Ok(())
    }

    /// The two veth pairs, sender to middle and middle to receiver, with
    /// `self.queues` queues each way.
    fn add_veths(&self) -> Result<(), TestbedError> {
        let (s, m, r) = (&self.names[0], &self.names[1], &self.names[2]);
        let q = self.queues.to_string();
        for (ns, a, b, peer_ns) in [
            (s, SENDER_IF, MIDDLE_IN, m),
            (m, MIDDLE_OUT, RECEIVER_IF, r),
        ] {
            run_ok(
                ip(&[
                    "-n",
                    ns,
                    "link",
                    "add",
                    a,
                    "numtxqueues",
                    &q,
                    "numrxqueues",
                    &q,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    b,
                    "numtxqueues",
                    &q,
                    "numrxqueues",
                    &q,
                    "netns",
                    peer_ns,
                ]),
                SETUP_TIMEOUT,
            )?;
        }
        Ok(())
    }

    /// Offloads on every interface as `self.offloads` says.
    fn set_offloads(&self) -> Result<(), TestbedError> {
        let (tx, seg) = match self.offloads {
            Offloads::AllOff => ("off", "off"),
            Offloads::ChecksumOn => ("on", "off"),
            Offloads::AllOn => ("on", "on"),
        };
        for (role, dev) in self.interfaces() {
            self.run_ok(
                role,
                &[
                    "ethtool", "-K", dev, "tx", tx, "tso", seg, "gso", seg, "gro", seg,
                ],
                SETUP_TIMEOUT,
            )?;
        }
        Ok(())
    }

    /// The sender's and the receiver's IPv4 and IPv6 addresses.
    fn add_addresses(&self) -> Result<(), TestbedError> {
        for (role, dev, v4, v6) in [
            (Role::Sender, SENDER_IF, SENDER_V4, SENDER_V6),
            (Role::Receiver, RECEIVER_IF, RECEIVER_V4, RECEIVER_V6),
        ] {
            self.ip(role, &["addr", "add", &format!("{v4}/24"), "dev", dev])?;
            self.ip(
                role,
                &["addr", "add", &format!("{v6}/64"), "dev", dev, "nodad"],
            )?;
        }
        Ok(())
    }

    fn interfaces(&self) -> [(Role, &'static str); 4] {
        [
            (Role::Sender, SENDER_IF),
            (Role::Middle, MIDDLE_IN),
            (Role::Middle, MIDDLE_OUT),
            (Role::Receiver, RECEIVER_IF),
        ]
    }

    /// The namespace name of `role`.
    #[must_use]
    pub fn namespace(&self, role: Role) -> &str {
        &self.names[role.index()]
    }

    /// `ip -n <ns> <args>`, which must succeed.
    ///
    /// # Errors
    /// The command failed or timed out.
    pub fn ip(&self, role: Role, args: &[&str]) -> Result<CmdOutput, TestbedError> {
        let mut c = ip(&["-n", self.namespace(role)]);
        c.args(args);
        run_ok(c, SETUP_TIMEOUT)
    }

    /// A command that runs `args` inside the namespace of `role`.
    #[must_use]
    pub fn command(&self, role: Role, args: &[&str]) -> Command {
        let mut c = ip(&["netns", "exec", self.namespace(role)]);
        c.args(args);
        c
    }

    /// Runs `args` in `role`'s namespace with a time limit and returns its output,
    /// whatever its exit status.
    ///
    /// # Errors
    /// The command could not start or timed out.
    pub fn run(
        &self,
        role: Role,
        args: &[&str],
        timeout: Duration,
    ) -> Result<CmdOutput, TestbedError> {
        run_with_timeout(self.command(role, args), timeout)
    }

    /// Runs `args` in `role`'s namespace and fails unless it succeeds in time.
    ///
    /// # Errors
    /// The command failed, could not start, or timed out.
    pub fn run_ok(
        &self,
        role: Role,
        args: &[&str],
        timeout: Duration,
    ) -> Result<CmdOutput, TestbedError> {
        run_ok(self.command(role, args), timeout)
    }

    /// Starts `args` in the background in `role`'s namespace; it is killed when the
    /// returned guard drops.
    ///
    /// # Errors
    /// The command could not start.
    pub fn spawn(&self, role: Role, args: &[&str]) -> Result<Background, TestbedError> {
        let mut cmd = self.command(role, args);
        let line = command_line(&cmd);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| TestbedError::Spawn {
                command: line.clone(),
                source,
            })?;
        Ok(Background {
            stdout: Some(drain(child.stdout.take())),
            stderr: Some(drain(child.stderr.take())),
            child,
            line,
        })
    }

    /// Moves the calling thread into `role`'s namespace: packet sockets it opens
    /// afterwards see that namespace's interfaces. Other threads are unaffected. Use
    /// a dedicated thread, and end it before dropping the test bed.
    ///
    /// # Errors
    /// The namespace could not be entered.
    pub fn enter(&self, role: Role) -> std::io::Result<()> {
        let ns = std::fs::File::open(format!("/run/netns/{}", self.namespace(role)))?;
        nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from)
    }

    /// Bridges `m0` and `m1` in the middle with a kernel bridge `br0` (the
    /// comparison baseline), with STP off and no forwarding delay.
    ///
    /// # Errors
    /// A failed `ip` command.
    pub fn bridge_middle(&self) -> Result<(), TestbedError> {
        self.ip(
            Role::Middle,
            &[
                "link",
                "add",
                "br0",
                "type",
                "bridge",
                "stp_state",
                "0",
                "forward_delay",
                "0",
            ],
        )?;
        self.ip(
            Role::Middle,
            &["link", "set", "dev", "br0", "addrgenmode", "none"],
        )?;
        for dev in [MIDDLE_IN, MIDDLE_OUT] {
            self.ip(Role::Middle, &["link", "set", "dev", dev, "master", "br0"])?;
        }
        self.ip(Role::Middle, &["link", "set", "dev", "br0", "up"])?;
        Ok(())
    }

    /// Installs `htb` as the root qdisc of `dev` in `role`'s namespace, with one `u32`
    /// filter per class that has conditions.
    ///
    /// # Errors
    /// A class with minor 1 or 0, or a failed `tc` command.
    pub fn htb(&self, role: Role, dev: &str, htb: &Htb) -> Result<(), TestbedError> {
        if let Some(c) = htb.classes.iter().find(|c| c.minor <= 1) {
            return Err(TestbedError::Invalid(format!(
                "HTB class minor {} is reserved (use 2 or more)",
                c.minor
            )));
        }
        let tc = |args: Vec<String>| {
            let mut full = vec!["tc".to_owned()];
            full.extend(args);
            let refs: Vec<&str> = full.iter().map(String::as_str).collect();
            self.run_ok(role, &refs, SETUP_TIMEOUT)
        };
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let default = htb.default_minor.to_string();
        tc(s(&[
            "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", &default,
        ]))?;
        tc(s(&[
            "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", &htb.rate,
            "ceil", &htb.rate,
        ]))?;
        for c in &htb.classes {
            let id = format!("1:{}", c.minor);
            let ceil = c.ceil.clone().unwrap_or_else(|| htb.rate.clone());
            let mut args = s(&[
                "class", "add", "dev", dev, "parent", "1:1", "classid", &id, "htb", "rate",
                &c.rate, "ceil", &ceil,
            ]);
            if let Some(p) = c.prio {
                args.extend(s(&["prio", &p.to_string()]));
            }
            tc(args)?;
        }
        for c in &htb.classes {
            if let Some(limit) = c.limit {
                let parent = format!("1:{}", c.minor);
                let handle = format!("{}:", c.minor);
                tc(s(&[
                    "qdisc",
                    "add",
                    "dev",
                    dev,
                    "parent",
                    &parent,
                    "handle",
                    &handle,
                    "pfifo",
                    "limit",
                    &limit.to_string(),
                ]))?;
            }
        }
        for c in htb.classes.iter().filter(|c| !c.matches.is_empty()) {
            let mut args = s(&[
                "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
            ]);
            for m in &c.matches {
                let (field, value, mask) = match *m {
                    HtbMatch::Protocol(p) => ("protocol", p.to_string(), "0xff"),
                    HtbMatch::SrcPort(p) => ("sport", p.to_string(), "0xffff"),
                    HtbMatch::DstPort(p) => ("dport", p.to_string(), "0xffff"),
                    HtbMatch::Dscp(d) => ("tos", format!("{:#x}", u32::from(d) << 2), "0xfc"),
                };
                args.extend(s(&["match", "ip", field, &value, mask]));
            }
            args.extend(s(&["flowid", &format!("1:{}", c.minor)]));
            tc(args)?;
        }
        Ok(())
    }

    /// Per-class counters of `dev`'s qdisc in `role`'s namespace (`tc -s class
    /// show`).
    ///
    /// # Errors
    /// A failed `tc` command or output that is not in the expected form.
    pub fn class_stats(&self, role: Role, dev: &str) -> Result<Vec<ClassStats>, TestbedError> {
        let out = self.run_ok(
            role,
            &["tc", "-s", "class", "show", "dev", dev],
            SETUP_TIMEOUT,
        )?;
        parse_class_stats(&out.stdout)
    }

    /// Starts a one-shot iperf3 server in the receiver, listening on `port`.
    ///
    /// # Errors
    /// iperf3 could not start.
    pub fn iperf3_server(&self, port: u16) -> Result<Background, TestbedError> {
        self.spawn(
            Role::Receiver,
            &[
                "iperf3",
                "--server",
                "--one-off",
                "--port",
                &port.to_string(),
            ],
        )
    }

    /// Runs an iperf3 client in the sender against the receiver, retrying the
    /// connection for up to 3 s while the server starts, and bounded by the run's
    /// length plus 10 s.
    ///
    /// # Errors
    /// iperf3 failed, timed out, or printed something unparseable.
    pub fn iperf3_client(&self, opts: &Iperf3) -> Result<Iperf3Report, TestbedError> {
        let mut args: Vec<String> = vec![
            "iperf3".into(),
            "--client".into(),
            (if opts.ipv6 { RECEIVER_V6 } else { RECEIVER_V4 }).into(),
            "--port".into(),
            opts.port.to_string(),
            "--time".into(),
            opts.seconds.to_string(),
            "--parallel".into(),
            opts.streams.to_string(),
            "--connect-timeout".into(),
            "1000".into(),
            "--json".into(),
        ];
        if opts.udp {
            args.push("--udp".into());
        }
        if let Some(b) = &opts.bitrate {
            args.extend(["--bitrate".into(), b.clone()]);
        }
        if let Some(l) = opts.length {
            args.extend(["--length".into(), l.to_string()]);
        }
        if opts.omit > 0 {
            args.extend(["--omit".into(), opts.omit.to_string()]);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let limit = Duration::from_secs(u64::from(opts.seconds) + 10);
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let out = self.run(Role::Sender, &refs, limit)?;
            match Iperf3Report::parse(&out.stdout) {
                Err(TestbedError::Parse(msg))
                    if msg.contains("unable to connect") && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(100));
                }
                other => return other,
            }
        }
    }
}

/// Parses `tc -s class show` text (iproute2 6.1 prints no JSON for HTB classes):
/// a `class <kind> <handle> ...` line followed by ` Sent <bytes> bytes <packets> pkt
/// (dropped <drops>, ...`.
fn parse_class_stats(text: &str) -> Result<Vec<ClassStats>, TestbedError> {
    let mut out = Vec::new();
    let mut class: Option<String> = None;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["class", _kind, handle, ..] => class = Some((*handle).to_owned()),
            ["Sent", bytes, "bytes", packets, "pkt", "(dropped", drops, ..] => {
                let class = class.take().ok_or_else(|| {
                    TestbedError::Parse(format!("tc class stats: `{line}` without a class line"))
                })?;
                let num = |w: &str| {
                    w.trim_end_matches(',').parse::<u64>().map_err(|_| {
                        TestbedError::Parse(format!("tc class stats: bad number in `{line}`"))
                    })
                };
                out.push(ClassStats {
                    class,
                    bytes: num(bytes)?,
                    packets: num(packets)?,
                    drops: num(drops)?,
                });
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Deletes namespace `name` after killing every process in it (never this one).
fn remove_namespace(name: &str) {
    if let Ok(out) = run_with_timeout(ip(&["netns", "pids", name]), SETUP_TIMEOUT) {
        let me = std::process::id();
        for pid in out
            .stdout
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
        {
            if pid != me {
                let _ = run_with_timeout(
                    {
                        let mut c = Command::new("kill");
                        c.args(["-KILL", &pid.to_string()]);
                        c
                    },
                    SETUP_TIMEOUT,
                );
            }
        }
    }
    let _ = run_with_timeout(ip(&["netns", "del", name]), SETUP_TIMEOUT);
}

/// Removes namespaces `<prefix>-<pid>-...` whose `<pid>` no longer runs.
fn remove_stale(prefix: &str) {
    let Ok(out) = run_with_timeout(ip(&["netns", "list"]), SETUP_TIMEOUT) else {
        return;
    };
    for name in out
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
    {
        let Some(rest) = name.strip_prefix(prefix).and_then(|r| r.strip_prefix('-')) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            remove_namespace(name);
        }
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        for name in self.names.iter().filter(|n| !n.is_empty()) {
            remove_namespace(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tcp_and_udp_reports() {
        let tcp = r#"{"start":{},"end":{"sum_sent":{"bytes":1000,"retransmits":3},
            "sum_received":{"bytes":900,"bits_per_second":7200.5}}}"#;
        let r = Iperf3Report::parse(tcp).unwrap();
        assert_eq!((r.bytes_received, r.retransmits), (900, 3));
        assert!((r.bits_per_second - 7200.5).abs() < 1e-9);
        let udp = r#"{"end":{"sum":{"bytes":5000,"bits_per_second":40000,"packets":50,
            "lost_packets":2},"streams":[{"udp":{"out_of_order":3}},{"udp":{"out_of_order":1}}]}}"#;
        let r = Iperf3Report::parse(udp).unwrap();
        assert_eq!((r.bytes_received, r.packets, r.lost_packets), (5000, 50, 2));
        assert_eq!(r.out_of_order, 4);
        let tcp = r#"{"start":{"tcp_mss_default":1448},"end":{"sum_sent":{"bytes":1},
            "sum_received":{"bytes":1,"bits_per_second":8}}}"#;
        assert_eq!(Iperf3Report::parse(tcp).unwrap().tcp_mss, Some(1448));
        let err = Iperf3Report::parse(r#"{"error":"unable to connect to server"}"#).unwrap_err();
        assert!(err.to_string().contains("unable to connect"));
        assert!(Iperf3Report::parse("garbage").is_err());
    }

    #[test]
    fn parses_tc_class_stats() {
        let text = "class htb 1:1 root rate 100Mbit ceil 100Mbit burst 1600b cburst 1600b \n \
             Sent 5000 bytes 40 pkt (dropped 0, overlimits 3 requeues 0) \n \
             backlog 0b 0p requeues 0\n\
             class htb 1:10 parent 1:1 prio 0 rate 20Mbit ceil 20Mbit burst 1600b\n \
             Sent 4242 bytes 7 pkt (dropped 2, overlimits 0 requeues 0) \n";
        let stats = parse_class_stats(text).unwrap();
        assert_eq!(
            stats,
            vec![
                ClassStats {
                    class: "1:1".into(),
                    bytes: 5000,
                    packets: 40,
                    drops: 0
                },
                ClassStats {
                    class: "1:10".into(),
                    bytes: 4242,
                    packets: 7,
                    drops: 2
                },
            ]
        );
        assert!(parse_class_stats(" Sent 1 bytes 1 pkt (dropped 0, x)").is_err());
    }

    #[test]
    fn rejects_bad_prefixes() {
        for p in ["", "UPPER", "has space", "way-too-long-prefix-for-names"] {
            assert!(
                matches!(Testbed::new(p), Err(TestbedError::Invalid(_))),
                "{p}"
            );
        }
    }

    #[test]
    fn times_out_commands() {
        let mut c = Command::new("sleep");
        c.arg("5");
        let err = run_with_timeout(c, Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, TestbedError::Timeout { .. }));
    }
}
