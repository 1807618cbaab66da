//! `wire::parse` on arbitrary bytes: never panics, agrees with etherparse's
//! slicing alone (`parse_general`: the direct reading of common frames must give
//! the same result), and a parsed frame reports its own length and consistent
//! fields.
#![no_main]

use eiffel_classify::wire::{parse, parse_general, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = parse(data);
    assert_eq!(parsed, parse_general(data));
    if let Ok(h) = parsed {
        assert_eq!(h.len as usize, data.len());
        if let Some(ip) = h.key.ip {
            assert!(ip.dscp < 64);
            assert!(matches!(h.key.ether_type, ETHERTYPE_IPV4 | ETHERTYPE_IPV6));
            assert_eq!(ip.src.is_ipv4(), ip.dst.is_ipv4());
            if h.fragment {
                assert!(ip.ports.is_none());
            }
        }
        assert!(h.key.vlan.is_none_or(|v| v < 4096));
        assert!(h.key.inner_vlan.is_none_or(|v| v < 4096));
    }
});
