//! Prometheus and OpenMetrics exposition of a [`Snapshot`], and
//! [`MetricsServer`], a small HTTP server that serves the latest snapshot on
//! `GET /metrics` (what `eiffel shape --metrics ADDR:PORT` runs).
//!
//! The server is off the data path: a thread of its own that reads the latest
//! snapshot the control loop took (it samples the tree every rate interval,
//! between two arbiter rounds). Nothing on the packet path waits for it.
//!
//! Per node (label `node`, the path): packets and bytes sent, packets offered,
//! drops by reason, backlog in packets and bytes, the measured rate in bits and
//! packets per second, the configured limit, and the sojourn-time histogram
//! (seconds, from classification to transmission). Per bump: the link rate,
//! uptime, and the balance `received = transmitted + dropped + queued`.
//!
//! The text format is Prometheus' 0.0.4 unless the scraper asks for
//! OpenMetrics (`Accept: application/openmetrics-text`), which differs in
//! counter family names and ends with `# EOF`.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::latency::LATENCY_BOUNDS_NS;
use super::stats::{NodeStats, Snapshot};

/// Which text format to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposition {
    /// Prometheus text format 0.0.4.
    Prometheus,
    /// OpenMetrics 1.0.0.
    OpenMetrics,
}

impl Exposition {
    /// The `Content-Type` of the format.
    #[must_use]
    pub fn content_type(self) -> &'static str {
        match self {
            Exposition::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Exposition::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes metric families of one snapshot.
struct Writer {
    out: String,
    format: Exposition,
}

impl Writer {
    /// The `# HELP`/`# TYPE` header of family `name` (without `_total`).
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let family = match (self.format, kind) {
            (Exposition::Prometheus, "counter") => format!("{name}_total"),
            _ => name.to_string(),
        };
        let _ = writeln!(self.out, "# HELP {family} {help}");
        let _ = writeln!(self.out, "# TYPE {family} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    /// A family with one sample per node.
    fn per_node(
        &mut self,
        nodes: &[NodeStats],
        name: &str,
        kind: &str,
        help: &str,
        value: impl Fn(&NodeStats) -> Option<f64>,
    ) {
        self.family(name, kind, help);
        let sample = if kind == "counter" {
            format!("{name}_total")
        } else {
            name.to_string()
        };
        for n in nodes {
            if let Some(v) = value(n) {
                self.sample(&sample, &[("node", &n.path)], v);
            }
        }
    }

    fn drops(&mut self, nodes: &[NodeStats]) {
        self.family(
            "eiffel_node_dropped_packets",
            "counter",
            "Packets dropped in the node's subtree, by reason.",
        );
        for n in nodes {
            for (reason, count) in &n.drops {
                let labels = [("node", n.path.as_str()), ("reason", reason.as_str())];
                self.sample("eiffel_node_dropped_packets_total", &labels, count);
            }
        }
    }

    fn latency(&mut self, nodes: &[NodeStats]) {
        self.family(
            "eiffel_node_latency_seconds",
            "histogram",
            "Sojourn time of the packets the node's leaves sent, from classification to transmission.",
        );
        for n in nodes.iter().filter(|n| !n.latency.counts.is_empty()) {
            let mut cumulative = 0;
            for (i, count) in n.latency.counts.iter().enumerate() {
                cumulative += count;
                let le = LATENCY_BOUNDS_NS
                    .get(i)
                    .map_or_else(|| "+Inf".to_string(), |b| format!("{}", *b as f64 / 1e9));
                let labels = [("node", n.path.as_str()), ("le", le.as_str())];
                self.sample("eiffel_node_latency_seconds_bucket", &labels, cumulative);
            }
            let node = [("node", n.path.as_str())];
            let sum = n.latency.sum_ns as f64 / 1e9;
            self.sample("eiffel_node_latency_seconds_sum", &node, sum);
            self.sample("eiffel_node_latency_seconds_count", &node, cumulative);
        }
    }

    fn nodes(&mut self, nodes: &[NodeStats]) {
        let c = |v: u64| Some(v as f64);
        self.per_node(
            nodes,
            "eiffel_node_sent_packets",
            "counter",
            "Packets that left the node.",
            |n| c(n.packets),
        );
        self.per_node(
            nodes,
            "eiffel_node_sent_bytes",
            "counter",
            "Bytes that left the node (Ethernet frames).",
            |n| c(n.bytes),
        );
        self.per_node(
            nodes,
            "eiffel_node_enqueued_packets",
            "counter",
            "Packets offered to the node's subtree.",
            |n| c(n.enqueued),
        );
        self.drops(nodes);
        self.per_node(
            nodes,
            "eiffel_node_backlog_packets",
            "gauge",
            "Packets queued in the node's subtree.",
            |n| c(n.backlog_packets),
        );
        self.per_node(
            nodes,
            "eiffel_node_backlog_bytes",
            "gauge",
            "Bytes queued in the node's subtree.",
            |n| c(n.backlog_bytes),
        );
        self.per_node(
            nodes,
            "eiffel_node_rate_bits_per_second",
            "gauge",
            "Bits per second sent over the last rate interval.",
            |n| Some(n.rate_bps),
        );
        self.per_node(
            nodes,
            "eiffel_node_rate_packets_per_second",
            "gauge",
            "Packets per second sent over the last rate interval.",
            |n| Some(n.rate_pps),
        );
        self.per_node(
            nodes,
            "eiffel_node_limit_bits_per_second",
            "gauge",
            "The node's configured rate limit.",
            |n| n.limit_bps.map(|l| l as f64),
        );
        self.latency(nodes);
    }

    fn bump(&mut self, s: &Snapshot) {
        self.family(
            "eiffel_info",
            "gauge",
            "The running bump: policy and interfaces.",
        );
        let labels = [
            ("policy", s.policy.as_str()),
            ("input", s.input.as_str()),
            ("output", s.output.as_str()),
        ];
        self.sample("eiffel_info", &labels, 1);
        self.family(
            "eiffel_link_rate_bits_per_second",
            "gauge",
            "Rate of the emulated link the scheduler releases onto.",
        );
        self.sample("eiffel_link_rate_bits_per_second", &[], s.link_rate_bps);
        self.family(
            "eiffel_uptime_seconds",
            "gauge",
            "Time since the bump started.",
        );
        self.sample("eiffel_uptime_seconds", &[], s.uptime_ns as f64 / 1e9);
        let a = &s.accounting;
        for (name, help, v) in [
            (
                "eiffel_received_packets",
                "Frames received on the input interface.",
                a.received,
            ),
            (
                "eiffel_transmitted_packets",
                "Frames transmitted on the output interface.",
                a.transmitted,
            ),
            (
                "eiffel_dropped_packets",
                "Frames dropped anywhere in the bump.",
                a.dropped,
            ),
        ] {
            self.family(name, "counter", help);
            self.sample(&format!("{name}_total"), &[], v);
        }
        self.family(
            "eiffel_queued_packets",
            "gauge",
            "Frames inside the bump: received = transmitted + dropped + queued.",
        );
        self.sample("eiffel_queued_packets", &[], a.queued);
    }

    /// The emulated link's idle time by cause.
    fn link(&mut self, s: &Snapshot) {
        let name = "eiffel_link_idle_seconds";
        self.family(
            name,
            "counter",
            "Time the emulated link stood idle: cause \"empty\", no frame queued; \
             \"held\", frames queued but none eligible (rate limits, release times).",
        );
        let c = &s.scheduler;
        let held = c.link_held_ns;
        let empty = c.link_idle_ns.saturating_sub(held);
        for (cause, ns) in [("empty", empty), ("held", held)] {
            self.sample(
                &format!("{name}_total"),
                &[("cause", cause)],
                ns as f64 / 1e9,
            );
        }
    }
}

/// The snapshot as a metrics page.
#[must_use]
pub fn render(s: &Snapshot, format: Exposition) -> String {
    let mut w = Writer {
        out: String::with_capacity(4096 + s.nodes.len() * 2048),
        format,
    };
    w.bump(s);
    w.link(s);
    w.nodes(&s.nodes);
    if format == Exposition::OpenMetrics {
        w.out.push_str("# EOF\n");
    }
    w.out
}

/// The latest snapshot, shared between the control loop and the server.
pub type Latest = Arc<Mutex<Option<Snapshot>>>;

/// Longest a client may take to send its request or read the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// Largest request read.
const MAX_REQUEST: usize = 8192;

/// The HTTP server of `--metrics`.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `addr` and serves the snapshot in `latest` on `/metrics`.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub fn start(addr: SocketAddr, latest: Latest) -> std::io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("eiffel-metrics".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if flag.load(Ordering::Acquire) {
                        break;
                    }
                    if let Ok(s) = stream {
                        answer(s, &latest);
                    }
                }
            })?;
        Ok(MetricsServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the port the system chose for port 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, CLIENT_TIMEOUT);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads the request head, at most [`MAX_REQUEST`] bytes.
fn read_head(s: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// Answers one connection.
fn answer(mut s: TcpStream, latest: &Latest) {
    let _ = s.set_read_timeout(Some(CLIENT_TIMEOUT));
    let _ = s.set_write_timeout(Some(CLIENT_TIMEOUT));
    let Some(head) = read_head(&mut s) else {
        return;
    };
    let mut words = head.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let open = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("accept:") && l.contains("application/openmetrics-text")
    });
    let format = if open {
        Exposition::OpenMetrics
    } else {
        Exposition::Prometheus
    };
    let (status, ctype, body) = match (method, path.split('?').next().unwrap_or("")) {
        ("GET", "/metrics") => match &*latest.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(snap) => ("200 OK", format.content_type(), render(snap, format)),
            None => (
                "503 Service Unavailable",
                "text/plain",
                "no snapshot yet\n".into(),
            ),
        },
        ("GET", "/") => (
            "200 OK",
            "text/plain",
            "eiffel shape: metrics at /metrics\n".into(),
        ),
        ("GET", _) => (
            "404 Not Found",
            "text/plain",
            "not found: try /metrics\n".into(),
        ),
        _ => ("405 Method Not Allowed", "text/plain", "only GET\n".into()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = s.write_all(head.as_bytes());
    let _ = s.write_all(body.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::stats::LatencyStats;

    fn snapshot() -> Snapshot {
        let mut s = Snapshot {
            policy: "p.toml".into(),
            input: "m0".into(),
            output: "m1".into(),
            link_rate_bps: 100_000_000,
            ..Snapshot::default()
        };
        s.scheduler.link_idle_ns = 2_500_000_000;
        s.scheduler.link_held_ns = 500_000_000;
        let mut counts = vec![0; LATENCY_BOUNDS_NS.len() + 1];
        counts[3] = 2;
        counts[LATENCY_BOUNDS_NS.len()] = 1;
        s.nodes.push(NodeStats {
            path: "root/a\"b".into(),
            packets: 3,
            bytes: 4500,
            drops: [("leaf_full".to_string(), 7)].into_iter().collect(),
            limit_bps: Some(10_000_000),
            latency: LatencyStats {
                counts,
                sum_ns: 3_500_000_000,
            },
            ..NodeStats::default()
        });
        s
    }

    #[test]
    fn prometheus_text() {
        let t = render(&snapshot(), Exposition::Prometheus);
        assert!(t.contains("# TYPE eiffel_node_sent_packets_total counter\n"));
        assert!(t.contains("eiffel_link_idle_seconds_total{cause=\"empty\"} 2\n"));
        assert!(t.contains("eiffel_link_idle_seconds_total{cause=\"held\"} 0.5\n"));
        assert!(
            t.contains("eiffel_node_sent_packets_total{node=\"root/a\\\"b\"} 3\n"),
            "{t}"
        );
        assert!(t.contains(
            "eiffel_node_dropped_packets_total{node=\"root/a\\\"b\",reason=\"leaf_full\"} 7\n"
        ));
        assert!(t.contains(
            "eiffel_node_latency_seconds_bucket{node=\"root/a\\\"b\",le=\"0.00005\"} 0\n"
        ));
        assert!(t.contains(
            "eiffel_node_latency_seconds_bucket{node=\"root/a\\\"b\",le=\"0.0001\"} 2\n"
        ));
        assert!(
            t.contains("eiffel_node_latency_seconds_bucket{node=\"root/a\\\"b\",le=\"+Inf\"} 3\n")
        );
        assert!(t.contains("eiffel_node_latency_seconds_count{node=\"root/a\\\"b\"} 3\n"));
        assert!(t.contains("eiffel_node_latency_seconds_sum{node=\"root/a\\\"b\"} 3.5\n"));
        assert!(t.contains("eiffel_node_limit_bits_per_second{node=\"root/a\\\"b\"} 10000000\n"));
        assert!(!t.contains("# EOF"));
    }

    #[test]
    fn openmetrics_text() {
        let t = render(&snapshot(), Exposition::OpenMetrics);
        assert!(t.contains("# TYPE eiffel_node_sent_packets counter\n"));
        assert!(t.contains("eiffel_node_sent_packets_total{"));
        assert!(t.ends_with("# EOF\n"));
    }

    /// Every metric the shipped Grafana dashboard queries is exported.
    #[test]
    fn the_grafana_dashboard_queries_exported_metrics() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/grafana/eiffel-shape.json");
        let dashboard = std::fs::read_to_string(&path).expect("the workspace's dashboard");
        let page = render(&snapshot(), Exposition::Prometheus);
        let mut names = 0;
        for (i, _) in dashboard.match_indices("eiffel_") {
            let name: String = dashboard[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name == "eiffel_shape" {
                continue;
            }
            names += 1;
            let exported = page
                .lines()
                .any(|l| l.starts_with(&name) && l[name.len()..].starts_with(['{', ' ']));
            assert!(
                exported,
                "the dashboard queries {name}, which is not exported"
            );
        }
        assert!(names >= 10);
    }

    #[test]
    fn serves_over_http() {
        let latest: Latest = Arc::default();
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), Arc::clone(&latest))
            .expect("bind");
        let get = |path: &str, accept: &str| {
            let mut c = TcpStream::connect(server.local_addr()).expect("connect");
            let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\n\r\n");
            c.write_all(req.as_bytes()).expect("send");
            let mut out = String::new();
            c.read_to_string(&mut out).expect("read");
            out
        };
        assert!(get("/metrics", "*/*").starts_with("HTTP/1.1 503"));
        *latest.lock().unwrap() = Some(snapshot());
        let r = get("/metrics", "*/*");
        assert!(
            r.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4"),
            "{r}"
        );
        assert!(r.contains("eiffel_link_rate_bits_per_second 100000000"));
        let r = get("/metrics", "application/openmetrics-text;version=1.0.0");
        assert!(
            r.contains("application/openmetrics-text") && r.ends_with("# EOF\n"),
            "{r}"
        );
        assert!(get("/nope", "*/*").starts_with("HTTP/1.1 404"));
        drop(server);
    }
}
