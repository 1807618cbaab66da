//! AF_PACKET rings on a real veth pair: what is transmitted on one end is received,
//! byte for byte (VLAN tags included), on the other.
//!
//! Runs as root in network namespaces of its own; see `eiffel_testbed`.

use std::time::{Duration, Instant};

use eiffel_net::afpacket::{
    Interest, NetError, PollSet, RxConfig, RxRing, TxConfig, TxError, TxRing,
};
use eiffel_testbed::{self as testbed, Role, Testbed, MIDDLE_IN, SENDER_IF};

/// IEEE local experimental EtherType: marks this test's frames among whatever else
/// the kernel may send.
const TEST_ETHERTYPE: [u8; 2] = [0x88, 0xb5];

fn frame(tags: &[[u8; 4]], payload_len: usize, seq: u8) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01];
    for t in tags {
        f.extend_from_slice(t);
    }
    f.extend_from_slice(&TEST_ETHERTYPE);
    f.push(seq);
    f.extend(std::iter::repeat_n(seq, payload_len));
    f
}

fn is_test_frame(f: &[u8]) -> bool {
    let mut at = 12;
    while let Some(t) = f.get(at..at + 2) {
        match t {
            [0x81, 0x00] | [0x88, 0xa8] => at += 4,
            _ => return t == TEST_ETHERTYPE,
        }
    }
    false
}

#[test]
fn transmitted_frames_arrive_intact_with_vlan_tags_restored() {
    if !testbed::preflight("transmitted_frames_arrive_intact", &["ip", "ethtool"]) {
        return;
    }
    let bed = Testbed::new("eiffel-ring").expect("test bed");
    let tag100 = [0x81, 0x00, 0x00, 100];
    let tag7 = [0x81, 0x00, 0x20, 7];
    let outer_ad = [0x88, 0xa8, 0x00, 42];
    let sent: Vec<Vec<u8>> = vec![
        frame(&[], 46, 1),
        frame(&[tag100], 100, 2),
        frame(&[outer_ad, tag7], 60, 3),
        frame(&[], 1500 - 1, 4),
        frame(&[tag100], 1500 - 1, 5),
    ];

    let (bed, sent) = (&bed, &sent);
    std::thread::scope(|s| {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let receiver = s.spawn(move || -> Result<Vec<Vec<u8>>, String> {
            bed.enter(Role::Middle).map_err(|e| e.to_string())?;
            let mut rx =
                RxRing::open(MIDDLE_IN, &RxConfig::default()).map_err(|e| e.to_string())?;
            let _ = ready_tx.send(());
            let mut got = Vec::new();
            let mut poll = PollSet::with_capacity(1);
            let deadline = Instant::now() + Duration::from_secs(5);
            while got.len() < sent.len() && Instant::now() < deadline {
                rx.recv(64, |f| {
                    let mut buf = vec![0; f.len()];
                    let n = f.copy_to(&mut buf).expect("buffer sized by len()").len;
                    assert_eq!(n, f.len());
                    assert!(!f.is_truncated());
                    if is_test_frame(&buf) {
                        got.push(buf);
                    }
                });
                poll.clear();
                poll.add(&rx, Interest::Readable);
                poll.wait(Some(Duration::from_millis(20)))
                    .map_err(|e| e.to_string())?;
            }
            let stats = rx.stats();
            assert!(stats.frames >= got.len() as u64);
            assert_eq!(stats.ring_errors, 0);
            Ok(got)
        });

        ready_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("receiver ready");
        let sender = s.spawn(|| -> Result<(), String> {
            bed.enter(Role::Sender).map_err(|e| e.to_string())?;
            let mut tx =
                TxRing::open(SENDER_IF, &TxConfig::default()).map_err(|e| e.to_string())?;
            // A receive ring on the transmitting interface must not see our own frames.
            let mut own =
                RxRing::open(SENDER_IF, &RxConfig::default()).map_err(|e| e.to_string())?;
            // Nor may a PACKET_FANOUT group's (a group does not apply its members'
            // own option: it needs the group flag).
            let grouped = RxConfig {
                fanout: Some(std::process::id() as u16),
                ..RxConfig::default()
            };
            let mut group = (0..2)
                .map(|_| RxRing::open(SENDER_IF, &grouped))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            for f in sent {
                tx.send(f).map_err(|e| e.to_string())?;
            }
            let too_big = frame(&[], 1500, 9);
            assert_eq!(
                tx.send(&too_big),
                Err(TxError::TooLarge {
                    len: 1515,
                    max: 1514
                }),
                "an untagged frame may not use the VLAN allowance"
            );
            assert_eq!(tx.pending(), sent.len() as u32);
            tx.flush().map_err(|e| e.to_string())?;
            let st = tx.stats();
            assert_eq!(
                (st.frames, st.too_large, st.kicks),
                (sent.len() as u64, 1, 1)
            );
            std::thread::sleep(Duration::from_millis(100));
            let mut echoed = 0;
            for rx in std::iter::once(&mut own).chain(&mut group) {
                rx.recv(usize::MAX, |f| {
                    echoed += usize::from(is_test_frame(f.data()))
                });
            }
            assert_eq!(
                echoed, 0,
                "PACKET_IGNORE_OUTGOING: own transmissions are not received"
            );
            Ok(())
        });
        sender.join().expect("sender thread").expect("sender");
        let got = receiver.join().expect("receiver thread").expect("receiver");
        assert_eq!(&got, sent, "frames differ after the veth round trip");
    });
}

#[test]
fn missing_interface_or_privilege_is_explained() {
    let err = RxRing::open("no-such-if0", &RxConfig::default()).unwrap_err();
    let msg = err.to_string();
    match err {
        NetError::NoSuchInterface { .. } => assert!(msg.contains("`ip link`"), "{msg}"),
        NetError::PermissionDenied { .. } => assert!(msg.contains("CAP_NET_RAW"), "{msg}"),
        other => panic!("unexpected error: {other}"),
    }
    let err = TxRing::open("this-name-is-far-too-long", &TxConfig::default()).unwrap_err();
    assert!(
        matches!(err, NetError::Config(_) | NetError::PermissionDenied { .. }),
        "{err}"
    );
}

#[test]
fn bad_ring_geometry_is_refused_before_any_system_call() {
    let cfg = RxConfig {
        block_size: 1000,
        ..RxConfig::default()
    };
    assert!(matches!(RxRing::open("lo", &cfg), Err(NetError::Config(_))));
    let cfg = TxConfig {
        frame_size: 2050,
        ..TxConfig::default()
    };
    assert!(matches!(TxRing::open("lo", &cfg), Err(NetError::Config(_))));
}
