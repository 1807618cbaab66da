//! Runs one scheduler on one `eiffel bench sched` pattern for a fixed number of
//! pairs, for instruction and cache-miss counts that do not depend on the load
//! of the machine:
//!
//! ```sh
//! cargo build --release -p eiffel-bench --example sched_cost
//! valgrind --tool=callgrind target/release/examples/sched_cost qfq balanced 64 200000
//! ```
//!
//! Arguments: `none`, `fifo`, `drr`, `qfq` or `wf2q+`; a pattern (`small`,
//! `large`, `full`, `balanced`); the number of flows (weight 1); the number of
//! pairs. Run it with two pair counts: the difference of the totals divided by
//! the difference of the pairs it prints (`large` and `balanced` run whole
//! cycles of their pattern, so it may print more than asked) is the cost of
//! one pair, construction excluded. With `--cache-sim=yes --D1=49152,12,64
//! --LL=1048576,16,64` the same difference gives the misses a pair.

use eiffel_bench::sched::workload::{drive, fill, Generator, Load, Ring, Sched, Target};
use eiffel_sched::{Drr, Fifo, Qfq, Wf2qPlus};

fn run<T: Target>(mut t: T, load: Load, flows: u32, pairs: u64) -> u64 {
    let n = u64::from(flows);
    let mut g = Generator::new(flows, 0x9e37_79b9_7f4a_7c15 ^ n);
    let mut backlog = 0;
    if load == Load::Full {
        backlog = fill(&mut t, &mut g, n);
    }
    drive(&mut t, &mut g, load, n, pairs, &mut backlog)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: sched_cost none|fifo|drr|qfq|wf2q+ small|large|full|balanced FLOWS PAIRS";
    let (Some(name), Some(pattern), Some(flows), Some(pairs)) =
        (args.get(1), args.get(2), args.get(3), args.get(4))
    else {
        return Err(usage.into());
    };
    let load = Load::ALL
        .into_iter()
        .find(|l| l.name() == pattern)
        .ok_or(usage)?;
    let flows: u32 = flows.parse()?;
    let pairs: u64 = pairs.parse()?;
    let cap = load.max_backlog(u64::from(flows)) as usize + 16;
    let done = match name.as_str() {
        "none" => run(Ring::new(cap), load, flows, pairs),
        "fifo" => run(Sched(Fifo::new(cap)), load, flows, pairs),
        "drr" => run(
            Sched::equal_flows(Drr::new(flows, cap)?, flows)?,
            load,
            flows,
            pairs,
        ),
        "qfq" => run(
            Sched::equal_flows(Qfq::with_max_packet(flows, cap, 1500)?, flows)?,
            load,
            flows,
            pairs,
        ),
        "wf2q+" => run(
            Sched::equal_flows(Wf2qPlus::new(flows, cap)?, flows)?,
            load,
            flows,
            pairs,
        ),
        _ => return Err(usage.into()),
    };
    println!("{name} {pattern} {flows} flows: {done} pairs");
    Ok(())
}
