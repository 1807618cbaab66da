//! `wire::parse` on arbitrary bytes: never panics, and a parsed frame reports its
//! own length and consistent fields.
#![no_main]

use eiffel_classify::wire::{parse, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = parse(data) {
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
