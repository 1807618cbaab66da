//! Times the two phases of `eiffel bench sched`'s BALANCED cycle apart: the
//! enqueue of 20 packets to each flow, then the dequeue of all of them, in ns
//! per packet on the thread's CPU clock (generator included), the best of seven
//! chunks of the pairs asked for:
//!
//! ```sh
//! cargo build --release -p eiffel-bench --example phase_cost
//! taskset -c 1 target/release/examples/phase_cost qfq 512 7000000
//! ```
//!
//! Arguments: `none`, `drr` or `qfq`; the number of flows (weight 1); the
//! number of pairs.

use eiffel_bench::clock::CpuInstant;
use eiffel_bench::sched::workload::{Generator, Ring, Sched, Target};
use eiffel_sched::{Drr, Qfq};

const CHUNKS: u64 = 7;

#[inline(never)]
fn enqueue_phase<T: Target>(t: &mut T, g: &mut Generator, burst: u64) {
    for _ in 0..burst {
        t.push(g.balanced_packet());
    }
}

#[inline(never)]
fn dequeue_phase<T: Target>(t: &mut T) -> u64 {
    let mut sink = 0u64;
    while let Some(p) = t.pop() {
        sink = sink.wrapping_add(u64::from(p.len));
    }
    sink
}

/// The best ns per packet of each phase over the chunks.
fn run<T: Target>(mut t: T, flows: u32, pairs: u64) -> (f64, f64) {
    let mut g = Generator::new(flows, 1);
    let burst = 20 * u64::from(flows);
    // One untimed cycle: the pool and records written once.
    enqueue_phase(&mut t, &mut g, burst);
    std::hint::black_box(dequeue_phase(&mut t));
    let (mut best_enq, mut best_deq) = (f64::MAX, f64::MAX);
    for _ in 0..CHUNKS {
        let (mut enq, mut deq, mut done) = (0u128, 0u128, 0u64);
        while done < pairs / CHUNKS {
            let a = CpuInstant::now();
            enqueue_phase(&mut t, &mut g, burst);
            enq += a.elapsed().as_nanos();
            let b = CpuInstant::now();
            std::hint::black_box(dequeue_phase(&mut t));
            deq += b.elapsed().as_nanos();
            done += burst;
        }
        best_enq = best_enq.min(enq as f64 / done as f64);
        best_deq = best_deq.min(deq as f64 / done as f64);
    }
    (best_enq, best_deq)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: phase_cost none|drr|qfq FLOWS PAIRS";
    let (Some(name), Some(flows), Some(pairs)) = (args.get(1), args.get(2), args.get(3)) else {
        return Err(usage.into());
    };
    let flows: u32 = flows.parse()?;
    let pairs: u64 = pairs.parse()?;
    if flows == 0 || pairs < CHUNKS {
        return Err(usage.into());
    }
    let cap = 20 * flows as usize + 16;
    let (enq, deq) = match name.as_str() {
        "none" => run(Ring::new(cap), flows, pairs),
        "drr" => run(
            Sched::equal_flows(Drr::new(flows, cap)?, flows)?,
            flows,
            pairs,
        ),
        "qfq" => run(
            Sched::equal_flows(Qfq::with_max_packet(flows, cap, 1500)?, flows)?,
            flows,
            pairs,
        ),
        _ => return Err(usage.into()),
    };
    println!("{name} balanced {flows} flows: enqueue {enq:.2} ns, dequeue {deq:.2} ns per packet");
    Ok(())
}
