//! `eiffel shape --policy FILE --in IF1 --out IF2`: schedules the traffic that
//! enters IF1 and leaves IF2 by a policy file, as a transparent bump in the wire;
//! IF2-to-IF1 traffic passes untouched. The data path is `eiffel_net::shape`; this
//! module loads the policy, serves the control socket (see [`crate::stats`]),
//! handles signals and prints the final counters.
//!
//! Signals: SIGINT and SIGTERM stop (queued packets are sent for up to `--drain`,
//! then dropped under the `shutdown` reason, and the final counters printed);
//! SIGHUP reloads the policy file, like `eiffel stats --reload`.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use clap::Args;
use eiffel_net::offload::{OffloadChoice, Offloads, Segmentation};
use eiffel_net::shape::metrics::{Latest, MetricsServer};
use eiffel_net::shape::{Bump, LinkRate, LivePolicy, ShapeConfig, DEFAULT_LINK_RATE_BPS};
use eiffel_net::xdp::IoChoice;
use eiffel_policy::units::{self, fmt_rate, RateUnit, TimeUnit};
use eiffel_policy::{Limits, Policy};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::stats::{read_request, render, socket_path, ReloadAnswer};

/// Arguments of `eiffel shape`.
#[derive(Debug, Args)]
pub struct ShapeArgs {
    /// The policy file (see `eiffel check`).
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// Interface whose incoming traffic is scheduled.
    #[arg(long = "in", value_name = "IF1")]
    pub input: String,
    /// Interface the scheduled traffic leaves on.
    #[arg(long = "out", value_name = "IF2")]
    pub output: String,
    /// Rate of the emulated link the scheduler releases onto, e.g. `100Mbit`.
    /// Default: the policy root's rate limit (re-read at every reload), else
    /// 1 Gbit/s. Set it to the real egress rate so that the bump, not a queue
    /// further on, is the bottleneck.
    #[arg(long, value_name = "RATE")]
    pub link_rate: Option<String>,
    /// Instance name: the control socket is `<runtime dir>/<name>.sock`.
    /// Default `<in>-<out>`.
    #[arg(long)]
    pub name: Option<String>,
    /// The control socket's path (overrides `--name`).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// At a stop, how long queued packets may still leave before the rest is
    /// dropped.
    #[arg(long, default_value = "1s", value_name = "TIME")]
    pub drain: String,
    /// Interval of the per-node rate measurement.
    #[arg(long, default_value = "1s", value_name = "TIME")]
    pub rate_interval: String,
    /// The arbiter transmits itself instead of handing frames to a dispatcher
    /// thread (one thread fewer, for machines with few cores).
    #[arg(long)]
    pub inline_dispatch: bool,
    /// PSPAT's Tw: how long the arbiter and the dispatcher spin without work before
    /// they sleep.
    #[arg(long, default_value = "50us", value_name = "TIME")]
    pub idle_spin: String,
    /// Run the data path's threads (receive, arbiter, dispatcher, reverse) at this
    /// real-time FIFO priority (1-99), so that no other process on the machine can
    /// delay a departure; the kernel's qdiscs have that by running in softirq
    /// context. Needs CAP_SYS_NICE.
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub realtime: Option<i32>,
    /// Serve Prometheus/OpenMetrics metrics on `http://ADDR:PORT/metrics`
    /// (per node bytes, packets, drops by reason, backlog, rate, latency
    /// histogram), refreshed every rate interval.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Receive threads on `--in`, each with its own PSPAT mailbox (1-16). With
    /// AF_PACKET, this many rings in one PACKET_FANOUT group (flows spread by
    /// hash, each flow on one ring); with AF_XDP, every receive queue of the
    /// interface has a socket and thread `i` reads queues `i`, `i + N`, ...
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub queues: usize,
    /// Packet I/O: `af_xdp` (AF_XDP sockets sharing one UMEM, libxdp's XSK
    /// program, native XDP where the driver has it), `af_packet` (memory-mapped
    /// packet rings), or `auto`: AF_XDP where it works, else AF_PACKET with the
    /// reason printed.
    #[arg(long, value_enum, default_value_t = Io::Auto)]
    pub io: Io,
    /// GSO/TSO/GRO super-frames (frames the kernel merged, or a sender did not
    /// cut, up to 64 KiB): `gso` receives them whole over AF_PACKET with their
    /// virtio-net header, schedules each as one unit charged the bytes of its
    /// segments, and transmits it for the kernel to segment (AF_XDP cannot
    /// carry them); `off` takes frames up to the MTU and drops and counts
    /// larger ones; `auto` is `gso` when GRO, LRO, GSO or TSO is on on either
    /// interface (AF_PACKET is then chosen unless `--io af_xdp` is given), else
    /// `off`. The choice is printed at start.
    #[arg(long, value_enum, default_value_t = Offload::Auto)]
    pub offload: Offload,
    /// Print the final counters as JSON.
    #[arg(long)]
    pub json: bool,
    /// Refuse a policy (at start or reload) whose tree and flow table would
    /// need more memory than this, e.g. "8GiB".
    #[arg(long, value_parser = crate::run::parse_size, default_value = "4GiB")]
    pub max_memory: u64,
}

/// The packet I/O `--io` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Io {
    /// AF_XDP where it works, else AF_PACKET.
    Auto,
    /// AF_XDP, or an error naming the fallback.
    #[value(name = "af_xdp")]
    AfXdp,
    /// AF_PACKET rings.
    #[value(name = "af_packet")]
    AfPacket,
}

/// The offload mode `--offload` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Offload {
    /// `gso` when an offload is on on either interface, else `off`.
    Auto,
    /// Frames up to the MTU.
    Off,
    /// Super-frames whole, over AF_PACKET.
    Gso,
}

type Error = Box<dyn std::error::Error>;

/// The compiled policy as the bump takes it.
fn live(policy: &Policy) -> LivePolicy<'_> {
    LivePolicy {
        name: policy.file_name(),
        tree: policy.spec(),
        classify: policy.classify_spec(),
    }
}

fn duration(text: &str, what: &str) -> Result<Duration, Error> {
    let t = units::parse::<TimeUnit>(text).map_err(|e| format!("--{what}: {e}"))?;
    Ok(Duration::from_nanos(t.get()))
}

/// Warns about rules that can never match live traffic.
fn warn_workload_rules(policy: &Policy) {
    for (i, r) in policy.classify_spec().rules.iter().enumerate() {
        if r.flow.is_some() || r.class.is_some() {
            eprintln!(
                "eiffel shape: warning: classify.rule[{i}] (leaf `{}`) tests workload `flow`/`class` ids, which live frames do not carry",
                r.leaf
            );
        }
    }
}

/// Binds the control socket, refusing to take over a live one.
fn bind(path: &Path) -> Result<UnixListener, Error> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    check_socket_path(path)?;
    if is_socket(path) {
        if UnixStream::connect(path).is_ok() {
            return Err(format!(
                "{} is in use by another `eiffel shape`; give this one another --name or --socket",
                path.display()
            )
            .into());
        }
        // Left behind by an instance that died.
        let _ = std::fs::remove_file(path);
    }
    UnixListener::bind(path).map_err(|e| format!("cannot listen on {}: {e}", path.display()).into())
}

/// Whether `path` is a Unix socket (not following a symbolic link).
fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// Refuses a control-socket path that names anything but a socket: such a file
/// is never deleted or replaced.
fn check_socket_path(path: &Path) -> Result<(), Error> {
    if std::fs::symlink_metadata(path).is_ok() && !is_socket(path) {
        return Err(format!(
            "{} exists and is not a socket: it is left alone; give another --socket or --name",
            path.display()
        )
        .into());
    }
    Ok(())
}

/// The policy file and the limits every load of it (start and reloads) obeys.
struct Source<'a> {
    file: &'a Path,
    limits: Limits,
    link: LinkRate,
}

enum Event {
    Stop(&'static str),
    Reload,
}

/// A policy file for live traffic: flows with sub-policies are chosen by
/// workload flow ids, which live frames do not carry.
fn load_live(file: &Path, limits: &Limits) -> Result<Policy, Error> {
    let policy = Policy::load_with(file, limits)?;
    if policy.has_flow_subtrees() {
        return Err(format!(
            "{}: flows with sub-policies (`flows` on a node with children) pick their copy by workload flow id: `eiffel run` supports them, live traffic does not",
            file.display()
        )
        .into());
    }
    Ok(policy)
}

fn reload(bump: &Bump, src: &Source<'_>) -> ReloadAnswer {
    match load_live(src.file, &src.limits) {
        Err(e) => {
            bump.record_refused_reload(e.to_string());
            ReloadAnswer {
                ok: false,
                error: Some(e.to_string()),
                ..ReloadAnswer::default()
            }
        }
        Ok(p) => {
            warn_workload_rules(&p);
            if let Err(e) = check_link_rate(src.link, &p) {
                bump.record_refused_reload(e.clone());
                return ReloadAnswer {
                    ok: false,
                    error: Some(e),
                    ..ReloadAnswer::default()
                };
            }
            match bump.reload(live(&p)) {
                Ok(r) => ReloadAnswer {
                    ok: true,
                    error: None,
                    moved: r.moved,
                    to_default: r.to_default,
                    dropped: r.dropped,
                    link_rate_bps: r.link_rate_bps,
                },
                Err(e) => ReloadAnswer {
                    ok: false,
                    error: Some(e.to_string()),
                    ..ReloadAnswer::default()
                },
            }
        }
    }
}

fn log_reload(answer: &ReloadAnswer, file: &Path) {
    match &answer.error {
        None => eprintln!(
            "eiffel shape: reloaded {}: {} queued packets moved ({} to the default leaf), {} dropped; link {}",
            file.display(),
            answer.moved,
            answer.to_default,
            answer.dropped,
            fmt_rate(answer.link_rate_bps as f64)
        ),
        Some(e) => eprintln!("eiffel shape: reload refused, the old policy keeps running: {e}"),
    }
}

/// Answers one control connection.
fn serve(bump: &Bump, src: &Source<'_>, mut stream: UnixStream) {
    use std::io::Write as _;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let answer = match read_request(&stream).as_deref() {
        Ok("stats") => match bump.snapshot() {
            Ok(s) => serde_json::to_string(&s).unwrap_or_default(),
            Err(e) => serde_json::json!({ "error": e.to_string() }).to_string(),
        },
        Ok("reload") => {
            let a = reload(bump, src);
            log_reload(&a, src.file);
            serde_json::to_string(&a).unwrap_or_default()
        }
        Ok(other) => {
            serde_json::json!({ "error": format!("unknown request {other:?}") }).to_string()
        }
        Err(_) => return,
    };
    let _ = stream.write_all(answer.as_bytes());
}

/// Warns about receive offloads on the bump's interfaces when super-frames do
/// not cross (`--offload off`, or AF_XDP): what is merged beyond the MTU is
/// dropped. (Checksums senders leave for hardware are completed and need no
/// change.)
fn warn_offloads(args: &ShapeArgs, gso: bool) {
    if gso {
        return;
    }
    for dev in [&args.input, &args.output] {
        // A missing interface is reported by the start that follows.
        if let Ok(o) = Offloads::query(dev) {
            if o.merges_received() {
                eprintln!(
                    "eiffel shape: warning: receive offload (GRO/LRO) is on on `{dev}` and \
                     super-frames do not cross in this mode: frames merged beyond the MTU are \
                     dropped and counted as oversize; use `--io af_packet --offload gso`, or \
                     turn it off with `ethtool -K {dev} gro off lro off`"
                );
            }
        }
    }
}

/// The data path's configuration from the command line.
fn config(args: &ShapeArgs) -> Result<ShapeConfig, Error> {
    let mut cfg = ShapeConfig::new(&args.input, &args.output);
    cfg.inline_dispatch = args.inline_dispatch;
    cfg.queues = args.queues;
    cfg.realtime = args.realtime;
    cfg.io = match args.io {
        Io::Auto => IoChoice::Auto,
        Io::AfXdp => IoChoice::AfXdp,
        Io::AfPacket => IoChoice::AfPacket,
    };
    cfg.offload = match args.offload {
        Offload::Auto => OffloadChoice::Auto,
        Offload::Off => OffloadChoice::Off,
        Offload::Gso => OffloadChoice::Gso,
    };
    cfg.idle_spin = duration(&args.idle_spin, "idle-spin")?;
    cfg.link_rate = match &args.link_rate {
        Some(text) => LinkRate::Fixed(
            units::parse::<RateUnit>(text)
                .map_err(|e| format!("--link-rate: {e}"))?
                .get(),
        ),
        None => LinkRate::FromPolicy {
            default_bps: DEFAULT_LINK_RATE_BPS,
        },
    };
    Ok(cfg)
}

/// The link rates the live runtime accepts, bits per second.
const LINK_RATES: std::ops::RangeInclusive<u64> = 1_000..=10_000_000_000_000_000;

/// Refuses a link rate the runtime would refuse, naming where it comes from:
/// `--link-rate`, or the policy root's `limit`.
fn check_link_rate(link: LinkRate, policy: &Policy) -> Result<(), String> {
    let bps = link.for_policy(policy.spec());
    if LINK_RATES.contains(&bps) {
        return Ok(());
    }
    let from = match link {
        LinkRate::Fixed(_) => "--link-rate".to_string(),
        LinkRate::FromPolicy { .. } => format!(
            "the root's `limit` in {} (the link rate when --link-rate is not given)",
            policy.file_name()
        ),
    };
    Err(format!(
        "{from}: a link of {} is outside what the live data path runs, 1 kbit/s..=10 Pbit/s",
        fmt_rate(bps as f64)
    ))
}

/// Runs `eiffel shape` until SIGINT or SIGTERM.
pub fn run(args: &ShapeArgs) -> Result<(), Error> {
    let limits = Limits {
        max_memory: args.max_memory,
    };
    let policy = load_live(&args.policy, &limits)?;
    warn_workload_rules(&policy);
    let drain = duration(&args.drain, "drain")?;
    let interval = duration(&args.rate_interval, "rate-interval")?.max(Duration::from_millis(10));
    let cfg = config(args)?;
    let socket = args.socket.clone().unwrap_or_else(|| {
        socket_path(
            args.name
                .as_deref()
                .unwrap_or(&format!("{}-{}", args.input, args.output)),
        )
    });
    // Before any interface is opened.
    check_socket_path(&socket)?;
    check_link_rate(cfg.link_rate, &policy)?;
    // Signals are caught from here on, so a stop during start-up is not lost.
    let signals = Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let bump = Bump::start(&cfg, live(&policy))?;
    eprintln!("eiffel shape: packet I/O {}", bump.io());
    eprintln!("eiffel shape: offload {}", bump.offload());
    warn_offloads(args, bump.offload().mode == Segmentation::Gso);
    let listener = match bind(&socket) {
        Ok(l) => l,
        Err(e) => {
            bump.stop(drain);
            return Err(e);
        }
    };
    let metrics = match start_metrics(args.metrics, &bump) {
        Ok(m) => m,
        Err(e) => {
            bump.stop(drain);
            let _ = std::fs::remove_file(&socket);
            return Err(e);
        }
    };
    eprintln!(
        "eiffel shape: {} -> {} through {} (link {}); stats: eiffel stats --socket {}",
        args.input,
        args.output,
        args.policy.display(),
        fmt_rate(cfg.link_rate.for_policy(policy.spec()) as f64),
        socket.display()
    );

    let src = Source {
        file: &args.policy,
        limits,
        link: cfg.link_rate,
    };
    let latest = metrics.as_ref().map(|(_, latest)| latest);
    let reason = serve_until_stopped(&src, &bump, &listener, &socket, signals, interval, latest);
    drop(metrics);
    if is_socket(&socket) {
        let _ = std::fs::remove_file(&socket);
    }
    eprintln!("eiffel shape: {reason}: stopping (draining for up to {drain:?})");
    let last = bump.stop(drain);
    if args.json {
        crate::out::print(&format!("{}\n", serde_json::to_string_pretty(&last)?))?;
    } else {
        crate::out::print(&render(&last))?;
    }
    if !last.accounting.balanced() || last.accounting.queued != 0 {
        return Err(format!("frames unaccounted for at exit: {:?}", last.accounting).into());
    }
    Ok(())
}

/// The metrics server of `--metrics`, with the snapshot it serves.
fn start_metrics(
    addr: Option<std::net::SocketAddr>,
    bump: &Bump,
) -> Result<Option<(MetricsServer, Latest)>, Error> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let latest = Latest::default();
    publish(bump, &latest);
    let server = MetricsServer::start(addr, latest.clone())
        .map_err(|e| format!("--metrics {addr}: cannot listen: {e}"))?;
    eprintln!(
        "eiffel shape: metrics on http://{}/metrics",
        server.local_addr()
    );
    Ok(Some((server, latest)))
}

/// Takes a snapshot for the metrics server.
fn publish(bump: &Bump, latest: &Latest) {
    if let Ok(s) = bump.snapshot() {
        *latest
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(s);
    }
}

/// Serves the control socket and the signals, sampling the rates (and the
/// metrics' snapshot) every `interval`, until a stop; returns why it stopped.
fn serve_until_stopped(
    src: &Source<'_>,
    bump: &Bump,
    listener: &UnixListener,
    socket: &Path,
    mut signals: Signals,
    interval: Duration,
    latest: Option<&Latest>,
) -> &'static str {
    let (events, inbox) = mpsc::channel::<Event>();
    let handle = signals.handle();
    let closing = AtomicBool::new(false);
    std::thread::scope(|s| {
        let signal_events = events.clone();
        s.spawn(move || {
            for sig in signals.forever() {
                let event = match sig {
                    SIGHUP => Event::Reload,
                    SIGINT => Event::Stop("SIGINT"),
                    _ => Event::Stop("SIGTERM"),
                };
                if signal_events.send(event).is_err() {
                    break;
                }
            }
        });
        let closing = &closing;
        s.spawn(move || {
            for stream in listener.incoming() {
                if closing.load(Ordering::Acquire) {
                    break;
                }
                if let Ok(stream) = stream {
                    serve(bump, src, stream);
                }
            }
        });
        let reason = loop {
            match inbox.recv_timeout(interval) {
                Ok(Event::Stop(why)) => break why,
                Ok(Event::Reload) => log_reload(&reload(bump, src), src.file),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    bump.sample_rates();
                    if let Some(latest) = latest {
                        publish(bump, latest);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break "signal handling ended",
            }
        };
        closing.store(true, Ordering::Release);
        // Wake the accept loop so it sees `closing`.
        let _ = UnixStream::connect(socket);
        handle.close();
        reason
    })
}
