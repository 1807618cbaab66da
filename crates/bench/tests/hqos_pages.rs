//! `eiffel bench hqos --pages 2m`: both schedulers timed with their memory
//! rebuilt on 2 MB pages keep every packet, and EAL's memory, moved from its
//! memfd to private memory under DPDK, still works. One test in a process of
//! its own: the move must not race another thread using that memory.

use std::path::PathBuf;

use eiffel_bench::hqos::{load, throughput_on, Arch, Pages};

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/policies/hqos.toml")
}

#[test]
fn runs_on_huge_pages_keep_every_packet() {
    let h = load(&example()).expect("example");
    for arch in [Arch::RteSched, Arch::Eiffel, Arch::RteSched] {
        let Some(o) = throughput_on(arch, &h, 16, 20_000, 2, Pages::Huge).expect("run") else {
            continue; // rte_sched without the `dpdk` feature
        };
        assert_eq!(o.drops, 0, "{arch:?}");
        assert_eq!(o.ns_per_packet.len(), 2);
    }
}
