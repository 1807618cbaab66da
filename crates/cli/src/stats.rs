//! `eiffel stats`: the live counters of a running `eiffel shape`, read from its
//! control socket, as a `tc -s class show`-like view or JSON; `--reload` asks it to
//! reload its policy file.
//!
//! # Control socket
//! A Unix stream socket. The client writes one request line, the daemon answers
//! with one JSON document and closes the connection:
//!
//! | request | answer |
//! |---|---|
//! | `stats` | the [`Snapshot`] |
//! | `reload` | `{"ok": true, "moved": N, "to_default": N, "dropped": N, "link_rate_bps": N}` or `{"ok": false, "error": "..."}` |
//!
//! Where the socket is: `--socket PATH`, else `<dir>/<name>.sock` with `<name>`
//! from `--name` (default `<in>-<out>`, e.g. `eth0-eth1`) and `<dir>` the first of
//! `$XDG_RUNTIME_DIR/eiffel`, `/run/eiffel` (as root), `/tmp/eiffel-<uid>`.
//! `eiffel stats` without `--socket` or `--name` uses the only socket in `<dir>`.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use eiffel_net::shape::stats::NodeStats;
use eiffel_net::shape::Snapshot;
use eiffel_policy::units::fmt_rate;
use serde::{Deserialize, Serialize};

/// Arguments of `eiffel stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The control socket of the `eiffel shape` to ask.
    #[arg(long, value_name = "PATH", conflicts_with = "name")]
    pub socket: Option<PathBuf>,
    /// The instance name given to `eiffel shape --name` (default `<in>-<out>`).
    #[arg(long)]
    pub name: Option<String>,
    /// Print the snapshot as JSON.
    #[arg(long)]
    pub json: bool,
    /// Reload the policy file instead (same as sending SIGHUP).
    #[arg(long)]
    pub reload: bool,
}

/// The answer to a `reload` request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReloadAnswer {
    /// Whether the new policy runs.
    pub ok: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Queued packets moved into the new tree.
    #[serde(default)]
    pub moved: u64,
    /// Of those, packets whose leaf vanished.
    #[serde(default)]
    pub to_default: u64,
    /// Queued packets the new tree refused.
    #[serde(default)]
    pub dropped: u64,
    /// The link rate now.
    #[serde(default)]
    pub link_rate_bps: u64,
}

/// The directory default socket paths live in.
pub fn socket_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return Path::new(&dir).join("eiffel");
    }
    let uid = std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid());
    if uid == 0 {
        PathBuf::from("/run/eiffel")
    } else {
        PathBuf::from(format!("/tmp/eiffel-{uid}"))
    }
}

/// The socket path for instance `name`.
pub fn socket_path(name: &str) -> PathBuf {
    socket_dir().join(format!("{name}.sock"))
}

fn find_socket(args: &StatsArgs) -> Result<PathBuf, String> {
    if let Some(p) = &args.socket {
        return Ok(p.clone());
    }
    if let Some(n) = &args.name {
        return Ok(socket_path(n));
    }
    let dir = socket_dir();
    let socks: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| {
            format!(
                "no running `eiffel shape` found ({}: {e}); give --socket or --name",
                dir.display()
            )
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sock"))
        .collect();
    match socks.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "no running `eiffel shape` found in {}; give --socket or --name",
            dir.display()
        )),
        many => Err(format!(
            "several `eiffel shape` instances in {}: {}; say which with --name",
            dir.display(),
            many.iter()
                .filter_map(|p| p.file_stem())
                .map(|s| s.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Sends `request` to the daemon at `path` and returns its answer.
pub fn ask(path: &Path, request: &str) -> Result<String, String> {
    let mut s = UnixStream::connect(path).map_err(|e| {
        format!(
            "cannot reach `eiffel shape` at {}: {e} (is it running?)",
            path.display()
        )
    })?;
    let timeout = Some(Duration::from_secs(30));
    let _ = s.set_read_timeout(timeout);
    let _ = s.set_write_timeout(timeout);
    s.write_all(format!("{request}\n").as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(answer)
}

/// Reads one request line from a control connection.
pub fn read_request(stream: &UnixStream) -> std::io::Result<String> {
    let mut line = String::new();
    BufReader::new(stream).take(256).read_line(&mut line)?;
    Ok(line.trim().to_owned())
}

/// The daemon's answer as JSON: its own `{"error": ...}` or text that is not
/// JSON becomes an error that shows it.
fn parse_answer(path: &Path, text: &str) -> Result<serde_json::Value, String> {
    let value = parse_json(path, text)?;
    match value.get("error") {
        Some(e) if !value.get("ok").is_some_and(|ok| ok == true) => Err(format!(
            "`eiffel shape` at {} answered with an error: {}",
            path.display(),
            e.as_str().map_or_else(|| e.to_string(), str::to_owned)
        )),
        _ => Ok(value),
    }
}

/// The daemon's answer as JSON, or an error that shows the text.
fn parse_json(path: &Path, text: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|e| {
        let shown: String = text
            .chars()
            .take(200)
            .flat_map(char::escape_debug)
            .collect();
        format!(
            "unexpected answer from {} (not JSON: {e}): \"{shown}\"",
            path.display()
        )
    })
}

/// Runs `eiffel stats`.
pub fn run(args: &StatsArgs) -> Result<(), Box<dyn std::error::Error>> {
    let path = find_socket(args)?;
    if args.reload {
        return reload(args, &path);
    }
    let text = ask(&path, "stats")?;
    let value = parse_answer(&path, &text)?;
    let snap: Snapshot = serde_json::from_value(value)
        .map_err(|e| format!("unexpected answer from {}: {e}", path.display()))?;
    if args.json {
        crate::out::print(&format!("{}\n", text.trim_end()))?;
    } else {
        crate::out::print(&render(&snap))?;
    }
    Ok(())
}

/// `eiffel stats --reload`: a refused reload, or an answer that is not one, is
/// a failure.
fn reload(args: &StatsArgs, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let text = ask(path, "reload")?;
    let value = parse_json(path, &text)?;
    let answer: ReloadAnswer = serde_json::from_value(value)
        .map_err(|e| format!("unexpected answer from {}: {e}", path.display()))?;
    if args.json {
        crate::out::print(&format!("{}\n", serde_json::to_string_pretty(&answer)?))?;
    }
    if !answer.ok {
        let why = answer.error.as_deref().unwrap_or("no reason given");
        return Err(format!("reload refused, the old policy keeps running: {why}").into());
    }
    if !args.json {
        crate::out::print(&format!(
            "policy reloaded: {} queued packets moved ({} to the default leaf), {} dropped; link {}\n",
            answer.moved,
            answer.to_default,
            answer.dropped,
            fmt_rate(answer.link_rate_bps as f64)
        ))?;
    }
    Ok(())
}

fn drops_text(drops: &std::collections::BTreeMap<String, u64>) -> String {
    let total: u64 = drops.values().sum();
    if total == 0 {
        return "dropped 0".into();
    }
    let parts: Vec<String> = drops.iter().map(|(k, v)| format!("{k} {v}")).collect();
    format!("dropped {total}: {}", parts.join(", "))
}

fn node_head(n: &NodeStats) -> String {
    let mut attrs = vec![n.discipline.clone()];
    if n.depth > 0 {
        attrs.push(format!("weight {}", n.weight));
        if n.priority > 0 {
            attrs.push(format!("prio {}", n.priority));
        }
    }
    if let Some(l) = n.limit_bps {
        attrs.push(format!("limit {}", fmt_rate(l as f64)));
    }
    format!(
        "{} {} ({})",
        if n.leaf { "leaf" } else { "node" },
        n.path,
        attrs.join(", ")
    )
}

/// Nanoseconds as seconds.
fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Renders a snapshot like `tc -s class show`: one block per node, then the
/// interfaces, the scheduler, the classifier, the pool and the balance.
pub fn render(s: &Snapshot) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "eiffel shape {} -> {}  policy {}  link {}  up {:.1}s",
        s.input,
        s.output,
        s.policy,
        fmt_rate(s.link_rate_bps as f64),
        secs(s.uptime_ns)
    );
    if !s.io.is_empty() {
        let _ = writeln!(o, "packet I/O {}", s.io);
    }
    render_nodes(&mut o, s);
    render_paths(&mut o, s);
    render_state(&mut o, s);
    o
}

/// One block per node: what it sent, dropped and holds, and its rate.
fn render_nodes(o: &mut String, s: &Snapshot) {
    for n in &s.nodes {
        let _ = writeln!(o, "{}", node_head(n));
        let _ = writeln!(
            o,
            " Sent {} bytes {} pkt ({})",
            n.bytes,
            n.packets,
            drops_text(&n.drops)
        );
        let _ = writeln!(
            o,
            " backlog {}b {}p{}",
            n.backlog_bytes,
            n.backlog_packets,
            if n.throttled { " throttled" } else { "" }
        );
        if s.rate_interval_ns > 0 {
            let _ = writeln!(
                o,
                " rate {} {:.0}pps (over {:.1}s)",
                fmt_rate(n.rate_bps),
                n.rate_pps,
                secs(s.rate_interval_ns)
            );
        }
    }
}

/// The data path: ingress, scheduler, egress and the reverse direction.
fn render_paths(o: &mut String, s: &Snapshot) {
    let i = &s.ingress;
    let _ = writeln!(
        o,
        "ingress {}: received {} pkt {} bytes, to scheduler {}, {}, kernel ring drops {}",
        s.input,
        i.received,
        i.bytes,
        i.to_scheduler,
        drops_text(&i.drops),
        i.kernel_drops
    );
    let r = &s.reverse;
    if i.checksum_pending + r.checksum_completed + r.checksum_left + r.checksum_offloaded > 0 {
        let _ = writeln!(
            o,
            " checksums left for hardware: completed {} in, {} back; left to the kernel {} in, \
             {} back; unfinished {} in, {} back",
            i.checksum_completed,
            r.checksum_completed,
            i.checksum_offloaded,
            r.checksum_offloaded,
            i.checksum_left,
            r.checksum_left
        );
    }
    if i.gso + r.gso > 0 {
        let _ = writeln!(o, " GSO super-frames whole: {} in, {} back", i.gso, r.gso);
    }
    let c = &s.scheduler;
    let _ = writeln!(
        o,
        "scheduler: received {}, released {}, {}, backlog {}b {}p",
        c.received,
        c.released,
        drops_text(&c.drops),
        c.backlog_bytes,
        c.backlog_packets
    );
    let _ = writeln!(
        o,
        " arbiter: {} rounds, {} sleeps ({} ended by the next departure, {} by an arrival or command), link idle {:.3}s ({:.3}s of it holding only frames not yet eligible)",
        c.rounds,
        c.sleeps,
        c.timer_wakeups,
        c.notified_wakeups,
        secs(c.link_idle_ns),
        secs(c.link_held_ns)
    );
    let e = &s.egress;
    let _ = writeln!(
        o,
        "egress {}: sent {} pkt {} bytes, {}",
        s.output,
        e.sent,
        e.bytes,
        drops_text(&e.drops)
    );
    let r = &s.reverse;
    let _ = writeln!(
        o,
        "reverse {} -> {}: received {}, sent {} pkt {} bytes, {}, kernel ring drops {}",
        s.output,
        s.input,
        r.received,
        r.sent,
        r.bytes,
        drops_text(&r.drops),
        r.kernel_drops
    );
}

/// The flow table, the pool, the reloads and the balance.
fn render_state(o: &mut String, s: &Snapshot) {
    let f = &s.classifier;
    let malformed: u64 = f.malformed.values().sum();
    let _ = writeln!(
        o,
        "flows: {}/{} in the table, {} created, {} expired, {} evicted; malformed frames {}",
        f.flows, f.capacity, f.created, f.expired, f.evicted, malformed
    );
    let _ = writeln!(
        o,
        "pool: {} of {} slots of {} bytes in use",
        s.pool.in_use, s.pool.slots, s.pool.slot_size
    );
    let rl = &s.reloads;
    let _ = write!(
        o,
        "reloads: {} applied ({} packets moved, {} to the default leaf, {} dropped), {} refused",
        rl.applied, rl.moved, rl.to_default, rl.dropped, rl.refused
    );
    match &rl.last_error {
        Some(e) => {
            let _ = writeln!(o, " (last: {e})");
        }
        None => o.push('\n'),
    }
    let a = &s.accounting;
    let _ = writeln!(
        o,
        "balance: received {} = transmitted {} + dropped {} + queued {}{}",
        a.received,
        a.transmitted,
        a.dropped,
        a.queued,
        if a.balanced() { "" } else { "  (UNBALANCED)" }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_nodes_like_tc() {
        let mut s = Snapshot {
            input: "m0".into(),
            output: "m1".into(),
            policy: "p.toml".into(),
            link_rate_bps: 40_000_000,
            rate_interval_ns: 1_000_000_000,
            ..Snapshot::default()
        };
        let mut leaf = NodeStats {
            path: "root/a".into(),
            name: "a".into(),
            depth: 1,
            leaf: true,
            discipline: "fifo".into(),
            weight: 3,
            bytes: 1514,
            packets: 1,
            backlog_packets: 2,
            backlog_bytes: 3028,
            throttled: true,
            rate_bps: 12_000.0,
            rate_pps: 1.0,
            ..NodeStats::default()
        };
        leaf.drops.insert("queue_full".into(), 4);
        s.nodes.push(leaf);
        s.accounting.received = 7;
        s.accounting.transmitted = 1;
        s.accounting.dropped = 4;
        s.accounting.queued = 2;
        let text = render(&s);
        assert!(text.contains("leaf root/a (fifo, weight 3)"), "{text}");
        assert!(text.contains(" Sent 1514 bytes 1 pkt (dropped 4: queue_full 4)"));
        assert!(text.contains(" backlog 3028b 2p throttled"));
        assert!(
            text.contains("40 Mbit/s") || text.contains("40Mbit"),
            "{text}"
        );
        assert!(text.contains("balance: received 7 = transmitted 1 + dropped 4 + queued 2\n"));
        s.accounting.queued = 3;
        assert!(render(&s).contains("UNBALANCED"));
    }

    #[test]
    fn socket_paths_follow_the_runtime_dir() {
        let p = socket_path("m0-m1");
        assert!(p.ends_with("m0-m1.sock"));
    }
}
