//! Per-frame costs of the live path's sans-IO steps under criterion:
//! - completing a TCP checksum left for hardware in a full-size frame with
//!   `eiffel_classify::checksum::complete`, against `etherparse` (slice the frame,
//!   then `TcpHeader::calc_checksum_ipv4` over the payload), the crate a user would
//!   pick;
//! - parsing a frame's headers into a flow key: the direct reading of common
//!   frames (`wire::parse`) against etherparse's strict slicing alone
//!   (`wire::parse_general`);
//! - classifying a frame, without rank annotations and with all of them (rank
//!   from DSCP, deadline from a UDP payload field, attained bytes per flow);
//! - classifying frames of 65,536 flows in random order through a table of
//!   65,536 flows (beyond the caches), one at a time and in bursts of 32
//!   (`classify_burst`: the lookups' cache misses overlap).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use eiffel_classify::{
    AnnotateSpec, ClassifySpec, DeadlineField, DeadlineSpec, FlowTableConfig, MalformedAction,
    RankFrom, RemainingFrom,
};
use eiffel_sched::Duration;
use etherparse::{PacketBuilder, SlicedPacket, TransportSlice};

fn tcp_frame(payload: usize) -> Vec<u8> {
    let b = PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4([198, 18, 0, 1], [198, 18, 0, 2], 64)
        .tcp(40000, 5201, 1, 65535);
    let mut out = Vec::new();
    b.write(&mut out, &vec![0x5a; payload]).unwrap();
    out
}

fn udp_frames(flows: u32) -> Vec<Vec<u8>> {
    (0..flows)
        .map(|i| {
            let [_, _, hi, lo] = i.to_be_bytes();
            let b = PacketBuilder::ethernet2([1; 6], [2; 6])
                .ipv4([198, 18, hi, 1], [198, 18, 0, 2], 64)
                .udp(10_000 + u16::from(lo), 5201);
            let mut out = Vec::new();
            b.write(&mut out, &[0u8; 18]).unwrap();
            out
        })
        .collect()
}

/// What etherparse offers for the same job: slice, compute, write back.
fn etherparse_complete(frame: &mut [u8]) -> Option<()> {
    let (at, sum) = {
        let sliced = SlicedPacket::from_ethernet(frame).ok()?;
        let Some(etherparse::NetSlice::Ipv4(ip)) = &sliced.net else {
            return None;
        };
        let Some(TransportSlice::Tcp(tcp)) = &sliced.transport else {
            return None;
        };
        let header = tcp.to_header();
        let sum = header
            .calc_checksum_ipv4(&ip.header().to_header(), tcp.payload())
            .ok()?;
        let at = tcp.slice().as_ptr() as usize - frame.as_ptr() as usize + 16;
        (at, sum)
    };
    frame[at..at + 2].copy_from_slice(&sum.to_be_bytes());
    Some(())
}

fn checksum(c: &mut Criterion) {
    let mut g = c.benchmark_group("checksum_tcp_1514B");
    g.throughput(Throughput::Elements(1));
    let mut frame = tcp_frame(1460);
    g.bench_function("eiffel_complete", |b| {
        b.iter(|| eiffel_classify::checksum::complete(black_box(&mut frame)))
    });
    g.bench_function("etherparse", |b| {
        b.iter(|| etherparse_complete(black_box(&mut frame)))
    });
    g.finish();
}

fn spec(annotate: AnnotateSpec) -> ClassifySpec {
    ClassifySpec {
        default: "flows".into(),
        flow_table: FlowTableConfig {
            max_flows: 4096,
            idle_timeout: Duration::from_secs(30),
        },
        malformed: MalformedAction::Forward,
        rules: Vec::new(),
        annotate,
    }
}

fn classify(c: &mut Criterion) {
    let frames = udp_frames(1024);
    let mut g = c.benchmark_group("classify_64B_1024_flows");
    g.throughput(Throughput::Elements(frames.len() as u64));
    let all = AnnotateSpec {
        rank: RankFrom::Dscp,
        deadline: Some(DeadlineSpec {
            field: Some(DeadlineField::UdpPayload { offset: 0 }),
            unit: Duration::from_micros(1),
            budget: Some(Duration::from_millis(10)),
            class_budgets: Vec::new(),
        }),
        remaining: RemainingFrom::Attained,
    };
    for (name, annotate) in [("plain", AnnotateSpec::default()), ("annotated", all)] {
        let mut cl = spec(annotate).classifier(|_| Some(0)).unwrap();
        let mut now = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                for f in &frames {
                    now += 100;
                    black_box(cl.classify(f, now).ok());
                }
            })
        });
    }
    g.finish();
}

fn parse(c: &mut Criterion) {
    let frames = udp_frames(1024);
    let mut g = c.benchmark_group("parse_64B");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.bench_function("eiffel_parse", |b| {
        b.iter(|| {
            for f in &frames {
                black_box(eiffel_classify::wire::parse(black_box(f)).ok());
            }
        })
    });
    g.bench_function("etherparse_slicing", |b| {
        b.iter(|| {
            for f in &frames {
                black_box(eiffel_classify::wire::parse_general(black_box(f)).ok());
            }
        })
    });
    g.finish();
}

/// A fixed pseudo-random permutation of `0..n` (xorshift, Fisher-Yates).
fn shuffled(n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

fn classify_large_table(c: &mut Criterion) {
    const FLOWS: u32 = 65_536;
    let frames = udp_frames(FLOWS);
    let order = shuffled(frames.len());
    let slices: Vec<&[u8]> = order.iter().map(|&i| frames[i].as_slice()).collect();
    let mut g = c.benchmark_group("classify_64B_65536_flows");
    g.throughput(Throughput::Elements(slices.len() as u64));
    let mut table = spec(AnnotateSpec::default());
    table.flow_table.max_flows = FLOWS;
    let mut one = table.classifier(|_| Some(0)).unwrap();
    let mut burst = one.clone();
    let mut now = 0;
    g.bench_function("single", |b| {
        b.iter(|| {
            now += 100;
            for f in &slices {
                black_box(one.classify(f, now).ok());
            }
        })
    });
    g.bench_function("burst", |b| {
        b.iter(|| {
            now += 100;
            burst.classify_burst(&slices, now, |_, r| {
                black_box(r.ok());
            });
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = checksum, parse, classify, classify_large_table
}
criterion_main!(benches);
