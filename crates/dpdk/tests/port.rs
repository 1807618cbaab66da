//! rte_sched through the safe layer: EAL starts as a plain process, a port takes
//! and returns mbufs, accounts for them, frees what it holds, and strict
//! priority holds between traffic classes.
#![cfg(feature = "dpdk")]

use eiffel_dpdk::{
    eal, Burst, Mempool, PipeProfile, PortConfig, QueuePath, SchedPort, SubportProfile, BE_TC,
    TRAFFIC_CLASSES,
};

const RATE: u64 = 1_250_000_000; // 10 Gbit/s in bytes per second

fn config(pipes: u32) -> PortConfig {
    PortConfig {
        rate: RATE,
        mtu: 1500,
        frame_overhead: 0,
        subports: 1,
        pipes_per_subport: pipes,
        qsize: [64; TRAFFIC_CLASSES],
        subport: SubportProfile {
            tb_rate: RATE,
            tb_size: 1_000_000,
            tc_rate: [RATE; TRAFFIC_CLASSES],
            tc_period_ms: 10,
        },
        pipe_profiles: vec![PipeProfile {
            tb_rate: RATE,
            tb_size: 1_000_000,
            tc_rate: [RATE; TRAFFIC_CLASSES],
            tc_period_ms: 10,
            wrr_weights: [1, 2, 3, 4],
        }],
    }
}

#[test]
fn enqueue_dequeue_accounts_for_every_mbuf() {
    let eal = eal(256).expect("EAL starts without hugepages");
    let pool = Mempool::new(eal, 1024).expect("mempool");
    {
        let mut port = SchedPort::new(&pool, &config(4)).expect("port");
        // One packet in every class of pipe 1, lowest priority first.
        let mut burst = Burst::new();
        pool.alloc(&mut burst, TRAFFIC_CLASSES).expect("mbufs");
        for i in 0..TRAFFIC_CLASSES {
            let tc = (BE_TC - i) as u32;
            burst.set_len(i, 100 + i as u32);
            let path = QueuePath {
                subport: 0,
                pipe: 1,
                tc,
                queue: 0,
            };
            port.write(&mut burst, i, path);
            assert_eq!(port.path(&burst, i), path);
        }
        assert_eq!(port.enqueue(&mut burst), TRAFFIC_CLASSES);
        assert!(burst.is_empty());
        let mut out = Burst::new();
        let mut tcs = Vec::new();
        for _ in 0..100 {
            port.dequeue(&mut out, 32);
            for i in 0..out.len() {
                tcs.push(port.path(&out, i).tc);
            }
            out.free();
            if tcs.len() == TRAFFIC_CLASSES {
                break;
            }
        }
        // Strict priority: class 0 first, best effort last.
        assert_eq!(tcs, (0..TRAFFIC_CLASSES as u32).collect::<Vec<_>>());
        let stats = port
            .queue_stats(QueuePath {
                subport: 0,
                pipe: 1,
                tc: 0,
                queue: 0,
            })
            .expect("stats");
        assert_eq!((stats.packets, stats.dropped, stats.queued), (1, 0, 0));
        // A full queue drops, counted, and the dropped mbuf returns to the pool.
        let path = QueuePath {
            subport: 0,
            pipe: 2,
            tc: 3,
            queue: 0,
        };
        let mut queued = 0;
        for _ in 0..2 {
            let mut burst = Burst::new();
            pool.alloc(&mut burst, 40).expect("mbufs");
            for i in 0..40 {
                burst.set_len(i, 64);
                port.write(&mut burst, i, path);
            }
            queued += port.enqueue(&mut burst);
        }
        let stats = port.queue_stats(path).expect("stats");
        assert_eq!(stats.packets + stats.dropped, 80);
        assert_eq!(stats.packets, queued as u64);
        assert_eq!(
            (stats.packets, stats.queued),
            (64, 64),
            "the queue holds 64"
        );
        assert_eq!(pool.available() as u64, 1024 - stats.packets);
        assert!(port
            .queue_stats(QueuePath {
                tc: 3,
                queue: 1,
                ..path
            })
            .is_err());
        // Drain the full queue (rte_sched_port_free misses the mbufs of a queue
        // that is exactly full: its read and write indices then coincide).
        let mut drained = 0;
        for _ in 0..1000 {
            drained += port.dequeue(&mut out, 32);
            out.free();
        }
        assert_eq!(drained, 64);
        // Leave a few in a queue for the port's drop to free.
        let mut burst = Burst::new();
        pool.alloc(&mut burst, 5).expect("mbufs");
        for i in 0..5 {
            burst.set_len(i, 1500);
            port.write(
                &mut burst,
                i,
                QueuePath {
                    tc: BE_TC as u32,
                    queue: 2,
                    ..path
                },
            );
        }
        assert_eq!(port.enqueue(&mut burst), 5);
        assert_eq!(pool.available(), 1024 - 5);
    }
    // Dropping the port freed what it held.
    assert_eq!(pool.available(), 1024);
}

#[test]
fn refuses_bad_configurations_with_an_error() {
    let eal = eal(256).expect("EAL");
    let pool = Mempool::new(eal, 64).expect("mempool");
    let mut c = config(3);
    assert!(
        SchedPort::new(&pool, &c).is_err(),
        "3 pipes is not a power of two"
    );
    c = config(4);
    c.pipe_profiles[0].tc_rate[0] = RATE * 2;
    let err = SchedPort::new(&pool, &c).expect_err("class faster than its pipe");
    assert!(err.to_string().contains("rte_sched"), "{err}");
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_virtual_counter_answers_rdtsc_in_its_thread_only() {
    use eiffel_dpdk::VirtualTsc;
    #[allow(unsafe_code)]
    fn rdtsc() -> u64 {
        // SAFETY: `rdtsc` only reads the timestamp counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    std::thread::spawn(|| {
        let tsc = VirtualTsc::begin(1_000).expect("PR_SET_TSC traps rdtsc on x86-64 Linux");
        assert_eq!(rdtsc(), 1_000);
        tsc.set(5_000_000);
        assert_eq!(rdtsc(), 5_000_000);
        // A thread it creates (inheriting the trap) reads the hardware counter.
        let other = std::thread::spawn(rdtsc).join().expect("thread");
        assert_ne!(other, 5_000_000);
        drop(tsc);
        assert!(rdtsc() > 5_000_000, "the hardware counter is back");
    })
    .join()
    .expect("the virtual-counter thread");
}
