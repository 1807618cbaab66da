//! Forwarding rate of minimum-size frames through the AF_PACKET loop, against the
//! kernel bridge on the same topology, measured in the same run.
//!
//! ```text
//! sudo cargo run --release -p eiffel-net --example forward_rate -- [seconds] [frame bytes]
//! ```
//!
//! A generator thread in the sender namespace blasts UDP frames (default 60 bytes,
//! i.e. 64 on the wire with the FCS) through its own AF_PACKET transmit ring; a
//! counter thread in the receiver namespace counts those that arrive through its
//! receive ring. The middle is either the `eiffel_net::forward::Forwarder` with a
//! FIFO scheduler, or a kernel bridge. All threads share this machine's cores, so the
//! numbers describe the whole pipeline on this host, not the forwarder alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use eiffel_classify::{Classifier, FlowTableConfig, MalformedAction, RuleSet};
use eiffel_net::afpacket::{RxConfig, TxConfig};
use eiffel_net::forward::{ForwardConfig, Forwarder, Port};
use eiffel_sched::{Fifo, Scheduler};
use eiffel_testbed::blast::{count, generate, thread_cpu_ns, udp_frame};
use eiffel_testbed::{Role, Testbed, MIDDLE_IN, MIDDLE_OUT};

struct Run {
    offered: u64,
    delivered: u64,
    seconds: f64,
    detail: String,
}

fn forwarder(bed: &Testbed) -> Result<Forwarder<Fifo>, String> {
    bed.enter(Role::Middle).map_err(|e| e.to_string())?;
    let rx = RxConfig {
        block_size: 1 << 20,
        block_count: 32,
        ..RxConfig::default()
    };
    let tx = TxConfig {
        frame_count: 4096,
        ..TxConfig::default()
    };
    let a = Port::open(MIDDLE_IN, &rx, &tx).map_err(|e| e.to_string())?;
    let b = Port::open(MIDDLE_OUT, &rx, &tx).map_err(|e| e.to_string())?;
    let classifier = Classifier::new(
        RuleSet::default_only(0),
        FlowTableConfig {
            max_flows: 1024,
            idle_timeout: eiffel_sched::Duration::from_secs(10),
        },
        MalformedAction::Forward,
    )
    .map_err(|e| e.to_string())?;
    let cfg = ForwardConfig {
        batch: 256,
        ..ForwardConfig::default()
    };
    Forwarder::new(a, b, Fifo::new(4096), classifier, cfg).map_err(|e| e.to_string())
}

fn measure(use_bridge: bool, frame: &[u8], seconds: f64) -> Result<Run, String> {
    let bed = Testbed::new("eiffel-rate").map_err(|e| e.to_string())?;
    if use_bridge {
        bed.bridge_middle().map_err(|e| e.to_string())?;
    }
    let stop_fwd = AtomicBool::new(false);
    let stop_count = AtomicBool::new(false);
    let (bed, stop_fwd, stop_count) = (&bed, &stop_fwd, &stop_count);
    std::thread::scope(|s| {
        let (fwd_ready, fwd_wait) = std::sync::mpsc::channel();
        let fwd = (!use_bridge).then(|| {
            s.spawn(move || -> Result<String, String> {
                let mut f = forwarder(bed)?;
                let _ = fwd_ready.send(());
                let cpu = thread_cpu_ns();
                f.run(stop_fwd).map_err(|e| e.to_string())?;
                let cpu = thread_cpu_ns() - cpu;
                let ab = *f.a_to_b();
                let kernel_drops = f.port_a().rx.stats().kernel_drops;
                Ok(format!(
                    "forwarder: received {} sent {} dropped {} (pool {}, fifo {}), \
                     middle ring drops {kernel_drops}, forwarder thread CPU {:.0} ns/frame",
                    ab.received,
                    ab.sent,
                    ab.pool_full + f.scheduler().counters().dropped_total(),
                    ab.pool_full,
                    f.scheduler().counters().dropped_total(),
                    cpu as f64 / ab.received.max(1) as f64,
                ))
            })
        });
        if fwd.is_some() {
            fwd_wait
                .recv_timeout(Duration::from_secs(10))
                .map_err(|_| "forwarder did not start".to_owned())?;
        }
        let (count_ready, count_wait) = std::sync::mpsc::channel();
        let counter = s.spawn(move || count(bed, count_ready, stop_count));
        count_wait
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| "counter did not start".to_owned())?;
        let start = Instant::now();
        let offered = generate(bed, frame, start + Duration::from_secs_f64(seconds));
        let elapsed = start.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_millis(300));
        stop_fwd.store(true, Ordering::Relaxed);
        stop_count.store(true, Ordering::Relaxed);
        let detail = match fwd {
            Some(h) => h.join().map_err(|_| "forwarder panicked".to_owned())??,
            None => "kernel bridge br0".to_owned(),
        };
        let (delivered, _) = counter
            .join()
            .map_err(|_| "counter panicked".to_owned())?
            .map_err(|e| e.to_string())?;
        Ok(Run {
            offered: offered.map_err(|e| e.to_string())?.0,
            delivered,
            seconds: elapsed,
            detail,
        })
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: f64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let size: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(60)
        .clamp(60, 1514);
    let missing = eiffel_testbed::missing_prerequisites(&["ip", "ethtool"]);
    if !missing.is_empty() {
        eprintln!("forward_rate needs {}", missing.join(", "));
        std::process::exit(2);
    }
    let frame = udp_frame(size);
    let mut rows = Vec::new();
    for (name, bridge) in [
        ("af_packet forwarder (fifo)", false),
        ("kernel bridge", true),
    ] {
        match measure(bridge, &frame, seconds) {
            Ok(run) => {
                eprintln!("{name}: {}", run.detail);
                rows.push((name, run));
            }
            Err(e) => {
                eprintln!("{name}: {e}");
                std::process::exit(1);
            }
        }
    }
    println!(
        "{} B frames ({} B on the wire), {seconds} s per run, {} cores shared by generator, middle and receiver",
        frame.len(),
        frame.len() + 4,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "{:<28} {:>14} {:>16} {:>10}",
        "middle", "offered pps", "delivered pps", "delivered"
    );
    for (name, r) in &rows {
        println!(
            "{:<28} {:>14.0} {:>16.0} {:>9.1}%",
            name,
            r.offered as f64 / r.seconds,
            r.delivered as f64 / r.seconds,
            100.0 * r.delivered as f64 / r.offered.max(1) as f64
        );
    }
    let rate = |r: &Run| r.delivered as f64 / r.seconds;
    println!(
        "forwarder / bridge delivered rate: {:.2}",
        rate(&rows[0].1) / rate(&rows[1].1).max(1.0)
    );
}
