//! Scenario files: every mistake is an error naming the file, the line and the
//! key; the example scenarios parse; memory estimates refuse what would not
//! fit; datagram delays and coflow completion times come out exact on an idle
//! network.

use std::path::{Path, PathBuf};

use eiffel_netsim::routing;
use eiffel_netsim::scenario::{Scenario, ScenarioError};
use eiffel_netsim::sweep::{self, SweepError, SweepOptions};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios")
}

const BASE: &str = r#"name = "t"
[topology]
kind = "dumbbell"
senders = 2
receivers = 2
access_link = { rate = "10Gbit", delay = "1us" }
bottleneck = { rate = "1Gbit", delay = "10us" }
[[traffic]]
name = "a"
kind = "flows"
src = "s0"
dst = "r0"
size = "100KB"
[[scheme]]
name = "tcp"
transport = "tcp"
policy = "fifo"
"#;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(text, "bad.toml", &examples())
}

/// `text` fails with an error on `line` naming `key` and containing `what`.
fn fails(text: &str, line: usize, key: &str, what: &str) {
    let e = parse(text).expect_err("must be refused");
    let msg = e.to_string();
    let prefix = format!("bad.toml:{line}:");
    assert!(msg.starts_with(&prefix), "expected line {line}: {msg}");
    assert!(
        msg.contains(&format!("key `{key}`")),
        "expected key {key}: {msg}"
    );
    assert!(msg.contains(what), "expected `{what}`: {msg}");
}

#[test]
fn the_base_scenario_parses() {
    let s = parse(BASE).unwrap();
    assert_eq!(s.topology.hosts().len(), 4);
    assert_eq!(s.schemes.len(), 1);
}

#[test]
fn a_sweep_is_narrowed_by_scheme_load_and_seed() {
    let two =
        format!("{BASE}[[scheme]]\nname = \"dctcp\"\ntransport = \"dctcp\"\npolicy = \"fifo\"\n");
    let mut s = parse(&two).unwrap();
    assert!(matches!(
        s.keep_schemes(&["udp"]),
        Err(ScenarioError::UnknownScheme { ref name, ref known }) if name == "udp" && known == "tcp, dctcp"
    ));
    assert!(matches!(
        s.keep_schemes::<&str>(&[]),
        Err(ScenarioError::Empty("scheme"))
    ));
    assert_eq!(s.schemes.len(), 2, "a refused selection changes nothing");
    s.keep_schemes(&["dctcp"]).unwrap();
    assert_eq!(s.schemes.len(), 1);
    assert_eq!(s.schemes[0].name, "dctcp");
    assert!(matches!(s.set_loads(&[0.5, 2.5]), Err(ScenarioError::Load(l)) if l == 2.5));
    assert!(matches!(
        s.set_loads(&[f64::NAN]),
        Err(ScenarioError::Load(_))
    ));
    assert!(matches!(
        s.set_seeds(&[]),
        Err(ScenarioError::Empty("seed"))
    ));
    s.set_loads(&[0.3, 0.6]).unwrap();
    s.set_seeds(&[4, 5, 6]).unwrap();
    assert_eq!(sweep::plan(&s).len(), 6);
}

#[test]
fn mistakes_name_file_line_and_key() {
    fails(
        &BASE.replace("size = \"100KB\"", "size = \"100KB\"\ncolour = 3"),
        14,
        "traffic[0].colour",
        "unknown field",
    );
    fails(
        &BASE.replace("rate = \"1Gbit\"", "rate = 1000000000"),
        7,
        "topology.bottleneck.rate",
        "bare number",
    );
    fails(
        &BASE.replace("dst = \"r0\"", "dst = \"r9\""),
        12,
        "traffic[0].dst",
        "`r9` is not a host",
    );
    fails(
        &BASE.replace("dst = \"r0\"", "dst = \"left\""),
        12,
        "traffic[0].dst",
        "is a switch",
    );
    fails(
        &BASE.replace("dst = \"r0\"", "dst = \"s0\""),
        12,
        "traffic[0].dst",
        "to itself",
    );
    fails(
        &BASE.replace("kind = \"flows\"", "kind = \"trickle\""),
        10,
        "traffic[0].kind",
        "unknown traffic kind",
    );
    fails(
        &BASE.replace("transport = \"tcp\"", "transport = \"quic\""),
        16,
        "scheme[0].transport",
        "unknown transport",
    );
    fails(
        &BASE.replace("policy = \"fifo\"", "policy = \"policies/none.toml\""),
        17,
        "scheme[0].policy",
        "cannot read policy",
    );
    fails(
        &BASE.replace("senders = 2", "senders = 0"),
        4,
        "topology.senders",
        "must be in 1..=",
    );
    fails(
        &BASE.replace("size = \"100KB\"", "size = \"100KB\"\nrate = \"1Mbit\""),
        10,
        "traffic[0].rate",
        "udp",
    );
    fails(
        &format!("{BASE}[report]\nsample_ports = [\"left->r0\"]\n"),
        19,
        "report.sample_ports",
        "is not a port",
    );
    fails(
        &format!("{BASE}[[report.panel]]\ntitle = \"x\"\nmetric = \"speed\"\n"),
        20,
        "report.panel[0].metric",
        "unknown metric",
    );
    fails(
        &BASE.replace("name = \"t\"\n", "name = \"t\"\nloads = [0.5, 3.0]\n"),
        2,
        "loads",
        "outside (0, 2]",
    );
}

#[test]
fn a_policy_file_error_names_the_policy_file() {
    let dir = std::env::temp_dir().join(format!("netsim-policy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bad.toml"), "[[node]]\nname = \"q\"\nlimit = 7\n").unwrap();
    let text = BASE.replace("policy = \"fifo\"", "policy = \"bad.toml\"");
    let e = Scenario::parse(&text, "s.toml", &dir)
        .unwrap_err()
        .to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(e.contains("bad.toml:3:9: key `node[0].limit`"), "{e}");
}

#[test]
fn a_distribution_file_error_names_the_distribution_file() {
    let dir = std::env::temp_dir().join(format!("netsim-cdf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cdf = "name = \"d\"\nunit = \"1KB\"\npoints = [\n  [2, 0.5],\n  [1, 1.0],\n]\n";
    std::fs::write(dir.join("d.toml"), cdf).unwrap();
    std::fs::write(
        dir.join("u.toml"),
        "name = \"u\"\nunit = \"1460\"\npoints = [[1, 1.0]]\n",
    )
    .unwrap();
    let poisson = "name = \"a\"\nkind = \"poisson\"\nsizes = \"FILE\"\nflows = 10\n";
    let text = BASE.replace(
        "name = \"a\"\nkind = \"flows\"\nsrc = \"s0\"\ndst = \"r0\"\nsize = \"100KB\"\n",
        poisson,
    );
    assert!(text.contains("FILE"));
    let err = |f: &str| {
        Scenario::parse(&text.replace("FILE", f), "s.toml", &dir)
            .unwrap_err()
            .to_string()
    };
    let (points, unit) = (err("d.toml"), err("u.toml"));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(points.contains("d.toml:5:3: key `points[1]`"), "{points}");
    assert!(points.contains("must not decrease"), "{points}");
    assert!(unit.contains("u.toml:2:8: key `unit`"), "{unit}");
}

#[test]
fn disconnected_topologies_and_unknown_nodes_are_refused() {
    let custom = r#"[topology]
kind = "custom"
hosts = ["a", "b"]
switches = ["s", "t"]
[[topology.link]]
ends = ["a", "s"]
rate = "1Gbit"
delay = "1us"
[[topology.link]]
ends = ["b", "t"]
rate = "1Gbit"
delay = "1us"
[[traffic]]
name = "x"
kind = "flows"
src = "a"
dst = "b"
size = "1KB"
[[scheme]]
name = "tcp"
transport = "tcp"
policy = "fifo"
"#;
    let e = parse(custom).unwrap_err().to_string();
    assert!(e.starts_with("bad.toml:1:"), "{e}");
    assert!(
        e.contains("key `topology`") && e.contains("disconnected"),
        "{e}"
    );
    let e = parse(&custom.replace("ends = [\"b\", \"t\"]", "ends = [\"b\", \"u\"]"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("key `topology.link[1].ends`") && e.contains("`u` is not a node"),
        "{e}"
    );
}

#[test]
fn topologies_too_large_to_route_are_refused_before_they_are_built() {
    let fig15 = std::fs::read_to_string(examples().join("eiffel-fig15.toml")).unwrap();
    let huge = fig15
        .replace("leaves = 9", "leaves = 4096")
        .replace("hosts_per_leaf = 16", "hosts_per_leaf = 4096");
    assert_ne!(huge, fig15);
    let started = std::time::Instant::now();
    let e = Scenario::parse(&huge, "huge.toml", &examples())
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("huge.toml:"), "{e}");
    assert!(
        e.contains("key `topology`")
            && e.contains("16777216 hosts")
            && e.contains("routing tables"),
        "{e}"
    );
    println!("{e} ({:?})", started.elapsed());
    let link = "{ rate = \"1Gbit\", delay = \"1us\" }";
    for text in [
        format!(
            "[topology]\nkind = \"fat-tree\"\nk = 64\nhost_link = {link}\n\
             edge_link = {link}\ncore_link = {link}\n"
        ),
        format!(
            "[topology]\nkind = \"parking-lot\"\nrouters = 1024\nhosts_per_router = 65536\n\
             access_link = {link}\nrouter_link = {link}\n"
        ),
    ] {
        let e = Scenario::parse(&text, "big.toml", &examples())
            .unwrap_err()
            .to_string();
        assert!(e.contains("routing tables"), "{text}: {e}");
    }
    assert!(routing::table_bytes(144 + 13, 144, 2 * (144 + 36), 9) < routing::MAX_TABLE_BYTES);
}

#[test]
fn the_examples_parse() {
    for name in ["eiffel-fig15.toml", "qfq-delay.toml", "pcq-fattree.toml"] {
        let s = Scenario::load(examples().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!s.report.panels.is_empty(), "{name} draws a figure");
        let mut q = s.clone();
        q.make_quick();
        assert!(sweep::plan(&q).len() <= sweep::plan(&s).len());
    }
}

#[test]
fn runs_that_would_not_fit_are_refused_with_the_estimate() {
    let s = Scenario::load(examples().join("eiffel-fig15.toml")).unwrap();
    let opts = SweepOptions {
        max_memory: 10_000_000,
        ..SweepOptions::default()
    };
    let e = sweep::run(&s, opts, &|_| {}).unwrap_err();
    assert!(matches!(e, SweepError::Memory { .. }));
    let m = e.to_string();
    assert!(
        m.contains("needs about") && m.contains("--max-memory"),
        "{m}"
    );
    let loads = sweep::workloads(&s);
    let (need, largest, _) = sweep::estimate(&s, &loads, 2);
    println!("{m}\nestimate {need} B, largest run {largest} B");
    assert!(largest > 10_000_000 && need >= largest);
}

#[test]
fn datagram_delays_are_exact_on_an_idle_path() {
    // 1000-byte packets every 100 us: never queued. One way: 8 us + 0.8 us at
    // 10 Gbit/s, 10 us + 8 us at 1 Gbit/s, 1 us + 0.8 us: 28.6 us.
    let text = BASE.replace(
        "size = \"100KB\"",
        "transport = \"udp-cbr\"\nrate = \"80Mbit\"\npacket = \"1000B\"\nobserve = true\nstop = \"10ms\"",
    );
    let text = text.replace(
        "access_link = { rate = \"10Gbit\", delay = \"1us\" }",
        "access_link = { rate = \"10Gbit\", delay = \"8us\" }",
    );
    let text = format!("duration = \"10ms\"\n{text}");
    let s = Scenario::parse(&text, "udp.toml", &examples()).unwrap();
    let r = sweep::run(
        &s,
        SweepOptions {
            check: true,
            ..SweepOptions::default()
        },
        &|_| {},
    )
    .unwrap();
    let d = &r.delays[0];
    assert_eq!(d.packets, 100);
    assert!(
        (d.mean_delay_ms - 0.0356).abs() < 1e-9,
        "{}",
        d.mean_delay_ms
    );
    assert_eq!(d.max_delay_ms, d.mean_delay_ms);
    assert_eq!(d.jitter_ms, 0.0);
    assert_eq!(d.per_hop_ms.len(), 3);
}

#[test]
fn incast_rounds_are_coflows() {
    let text = r#"[topology]
kind = "dumbbell"
senders = 8
receivers = 1
access_link = { rate = "10Gbit", delay = "1us" }
bottleneck = { rate = "10Gbit", delay = "1us" }
[[traffic]]
name = "incast"
kind = "incast"
senders = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"]
receiver = "r0"
size = "64KB"
rounds = 3
interval = "2ms"
[[scheme]]
name = "dctcp"
transport = "dctcp"
policy = "fifo"
buffer = "100KB"
min_rto = "1ms"
[report]
check = true
"#;
    let s = Scenario::parse(text, "incast.toml", &examples()).unwrap();
    let r = sweep::run(&s, SweepOptions::default(), &|_| {}).unwrap();
    let c = &r.coflows[0];
    assert_eq!((c.coflows, c.completed), (3, 3));
    // 8 x 64 KB through one 10 Gbit/s link: at least 0.42 ms each.
    assert!(
        c.mean_cct_ms > 0.42 && c.mean_cct_ms < 2.0,
        "{}",
        c.mean_cct_ms
    );
    println!(
        "incast CCT {:.3} ms mean, {:.3} ms p99",
        c.mean_cct_ms, c.p99_cct_ms
    );
}
