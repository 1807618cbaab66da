//! `checksum::complete` on arbitrary bytes: never panics, touches only the two
//! checksum bytes, and what it completes verifies; a frame it refuses is left
//! unchanged. Also checks the offsets `wire::parse` reports stay inside the frame.
#![no_main]

use eiffel_classify::checksum::{complete, verify};
use eiffel_classify::wire::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = parse(data) {
        assert!(h.udp_payload.is_none_or(|o| o as usize <= data.len()));
        assert!(h
            .ipv4_options
            .is_none_or(|(s, l)| (s + l) as usize <= data.len()));
    }
    let mut frame = data.to_vec();
    match complete(&mut frame) {
        Ok(_) => {
            assert_eq!(verify(&frame), Ok(true));
            let changed = frame.iter().zip(data).filter(|(a, b)| a != b).count();
            assert!(changed <= 2, "{changed} bytes changed");
        }
        Err(_) => assert_eq!(frame, data),
    }
});
