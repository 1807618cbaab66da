//! `eiffel run POLICY --pcap IN --write-pcap OUT`: a capture made here replayed
//! through the live-uplink example policy, the departures read back, and a
//! truncated capture refused with its byte offset.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use eiffel_pcap::Capture;
use etherparse::PacketBuilder;
use pcap_file::pcap::{PcapPacket, PcapWriter};

fn eiffel() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_eiffel"));
    c.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    c
}

/// A UDP frame from `src` with DSCP `dscp`.
fn udp(src: [u8; 4], dscp: u8, payload: usize) -> Vec<u8> {
    let mut ip = etherparse::Ipv4Header::new(0, 64, etherparse::IpNumber::UDP, src, [10, 9, 9, 9])
        .expect("header");
    ip.dscp = etherparse::IpDscp::try_new(dscp).expect("dscp");
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ip(etherparse::IpHeaders::Ipv4(ip, Default::default()))
        .udp(5000, 5001);
    let mut out = Vec::new();
    b.write(&mut out, &vec![0u8; payload]).expect("frame");
    out
}

/// 200 ms: voice (EF) at 20 Mbit/s, tenant A at 60, tenant B at 60, into the
/// policy's 100 Mbit/s root.
fn capture(path: &Path) -> usize {
    let mut frames = Vec::new();
    for (src, dscp, bps) in [
        ([10, 0, 0, 9], 46, 20e6),
        ([10, 1, 0, 1], 0, 60e6),
        ([10, 2, 0, 1], 0, 60e6),
    ] {
        let f = udp(src, dscp, 1200);
        let gap = (f.len() * 8) as f64 / bps * 1e9;
        let mut t = 0.0;
        while t < 2e8 {
            frames.push((1_700_000_000_000_000_000 + t as u64, f.clone()));
            t += gap;
        }
    }
    frames.sort_by_key(|f| f.0);
    let mut w = PcapWriter::new(std::fs::File::create(path).expect("create")).expect("header");
    for (at, data) in &frames {
        w.write_packet(&PcapPacket::new(
            Duration::from_nanos(*at),
            data.len() as u32,
            data,
        ))
        .expect("packet");
    }
    frames.len()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("eiffel-cli-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    dir.join(name)
}

#[test]
fn replays_a_capture_and_writes_the_departures() {
    let input = tmp("in.pcap");
    let output = tmp("out.pcapng");
    let n = capture(&input);
    let out = eiffel()
        .args([
            "run",
            "examples/policies/live-uplink.toml",
            "--json",
            "--pcap",
        ])
        .arg(&input)
        .arg("--write-pcap")
        .arg(&output)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let t = &v["totals"];
    let (enq, deq, drop, queued) = (
        t["enqueued"].as_u64().unwrap(),
        t["dequeued"].as_u64().unwrap(),
        t["dropped"].as_u64().unwrap(),
        t["queued"].as_u64().unwrap(),
    );
    assert_eq!(enq, n as u64);
    assert_eq!(enq, deq + drop + queued);
    assert_eq!(v["capture"]["frames"].as_u64(), Some(n as u64));
    let voice = v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "root/voice")
        .expect("voice");
    let tput = voice["throughput_bps"].as_f64().unwrap();
    assert!(tput < 10.5e6, "voice is capped at 10 Mbit/s: {tput}");
    let back = Capture::read(&output).expect("read back");
    assert_eq!(back.frames().len() as u64, deq);
    let input_bytes: std::collections::BTreeSet<Vec<u8>> = {
        let c = Capture::read(&input).expect("input");
        c.frames().iter().map(|f| c.data(f).to_vec()).collect()
    };
    assert!(back
        .frames()
        .iter()
        .all(|f| input_bytes.contains(back.data(f))));

    // The text report names the capture.
    let out = eiffel()
        .args(["run", "examples/policies/live-uplink.toml", "--pcap"])
        .arg(&input)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("{n} packets")), "{text}");
    assert!(text.contains("root/tenants/tenant_a"), "{text}");

    // Cut short: an error naming the byte offset, exit status 1.
    let bytes = std::fs::read(&input).expect("read");
    let cut = tmp("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).expect("write");
    let out = eiffel()
        .args(["run", "examples/policies/live-uplink.toml", "--pcap"])
        .arg(&cut)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("truncated capture: the packet record at byte"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    for p in [input, output, cut] {
        std::fs::remove_file(p).ok();
    }
}
