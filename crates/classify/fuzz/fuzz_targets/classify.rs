//! The classifier on a stream of arbitrary frames: never panics, stays within its
//! flow-table bounds, and accounts for every frame.
#![no_main]

use eiffel_classify::{Classifier, FlowTableConfig, MalformedAction, RuleSet};
use eiffel_sched::Duration;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let action = if control & 1 == 0 {
        MalformedAction::Forward
    } else {
        MalformedAction::Drop
    };
    let rules = RuleSet::default_only(0);
    let cfg = FlowTableConfig {
        max_flows: 8,
        idle_timeout: Duration::from_nanos(1 + u64::from(control >> 1)),
    };
    let mut c = Classifier::new(rules, cfg, action).expect("valid configuration");
    let mut ok = 0u64;
    // Frames are separated by a length byte.
    let mut input = rest;
    let mut now = 0;
    while let Some((&len, tail)) = input.split_first() {
        let (frame, next) = tail.split_at(usize::from(len).min(tail.len()));
        now += 1;
        if let Ok(p) = c.classify(frame, now) {
            assert!(p.flow < 8);
            ok += 1;
        }
        input = next;
    }
    let k = c.counters();
    assert_eq!(k.frames, ok + k.dropped);
    assert!(c.flows().len() <= 8);
});
