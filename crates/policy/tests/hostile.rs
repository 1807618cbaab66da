//! Hostile inputs: each is refused with a clear error (file, line, key) or runs,
//! and none panics, aborts or takes long.

use eiffel_policy::run::check_fits;
use eiffel_policy::{Limits, Policy, WorkloadFile};

/// Parses `text` as `bad.toml` and checks the error's line, key and message.
#[track_caller]
fn refused(text: &str, line: usize, key: &str, needle: &str) {
    let err = Policy::parse(text, "bad.toml").expect_err("the policy should be refused");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("bad.toml:{line}:")),
        "wrong file or line: {msg}"
    );
    assert_eq!(err.key(), Some(key), "{msg}");
    assert!(msg.contains(needle), "message lacks {needle:?}: {msg}");
}

/// A root with one leaf named `name`.
fn named(name: &str) -> String {
    format!("[[node]]\nname = \"root\"\ndiscipline = \"wfq\"\n[[node]]\nname = \"{name}\"\nparent = \"root\"\n")
}

#[test]
fn invisible_and_control_characters_in_names_are_refused() {
    for code in ["200B", "0000", "007F", "00AD", "FEFF", "202E", "0009"] {
        refused(
            &named(&format!("a\\u{code}b")),
            5,
            "node[1].name",
            &format!("it contains U+{code}"),
        );
    }
    refused(&named("a b"), 5, "node[1].name", "U+0020");
    refused(&named("a/b"), 5, "node[1].name", "`/`");
    refused(&named(""), 5, "node[1].name", "empty");
    refused(&named(&"x".repeat(65)), 5, "node[1].name", "at most 64");
    assert!(Policy::parse(&named("vidéo-1_a.b:c"), "ok.toml").is_ok());
}

#[test]
fn the_largest_capacity_is_refused_with_its_range() {
    refused(
        &format!("capacity = 4294967295\n{}", named("a")),
        1,
        "capacity",
        "must be in 1..=4294967294",
    );
}

/// A chain of `n` nodes, each the parent of the next.
fn chain(n: usize) -> String {
    let mut s = String::from("[[node]]\nname = \"n0\"\n");
    for i in 1..n {
        s.push_str(&format!(
            "[[node]]\nname = \"n{i}\"\nparent = \"n{}\"\n",
            i - 1
        ));
    }
    s
}

#[test]
fn a_long_chain_is_refused_at_the_depth_limit() {
    // 100,000 levels: refused at the 32nd (one pass over the nodes; the time
    // is the TOML parser's).
    let text = chain(100_000);
    let err = Policy::parse(&text, "chain.toml").unwrap_err().to_string();
    assert!(
        err.contains("key `node[32].parent`") && err.contains("at most 31 levels"),
        "{err}"
    );
    assert!(Policy::parse(&chain(32), "ok.toml").is_ok());
}

#[test]
fn a_long_cycle_is_found() {
    // A root, and 50,000 nodes in one cycle hanging off nothing.
    let mut s = String::from("[[node]]\nname = \"root\"\n");
    let n = 50_000;
    for i in 0..n {
        s.push_str(&format!(
            "[[node]]\nname = \"c{i}\"\nparent = \"c{}\"\n",
            (i + 1) % n
        ));
    }
    let err = Policy::parse(&s, "cycle.toml").unwrap_err().to_string();
    assert!(err.contains("its own ancestor"), "{err}");
}

#[test]
fn memory_beyond_the_limit_is_refused_before_allocating() {
    // A packet pool of hundreds of GiB: refused at once, naming the key and the
    // estimate (68 bytes a packet: the descriptor, its links and its place on
    // the free-slot stack).
    refused(
        &format!("capacity = 4294967294\n{}", named("a")),
        1,
        "capacity",
        "would need about 272 GiB of memory, above the limit of 4 GiB",
    );
    // Per-flow leaves: the flows' state is charged to `flows`.
    let flows = "[[node]]\nname = \"root\"\ndiscipline = \"wfq\"\n[[node]]\nname = \"a\"\nparent = \"root\"\ndiscipline = \"pfabric\"\nflows = 16000000\n";
    let limits = Limits {
        max_memory: 256 << 20,
    };
    let err = Policy::parse_with(flows, "f.toml", &limits).unwrap_err();
    assert_eq!(err.key(), Some("node[1].flows"), "{err}");
    assert!(err.to_string().contains("the flows of node `a`"), "{err}");
    // The same file fits a larger limit, and its estimate covers what it uses.
    let big = Limits {
        max_memory: 64 << 30,
    };
    let p = Policy::parse_with(flows, "f.toml", &big).unwrap();
    assert!(p.estimate().total() > 16_000_000 * 32);
}

#[test]
fn a_wide_tree_of_a_hundred_thousand_nodes_is_estimated_whole() {
    // 4,000 branches of 24 levels: 96,001 nodes, each internal one with its
    // own bucketed queue; refused within the default limit, naming the queues.
    let mut s = String::from("[[node]]\nname = \"root\"\ndiscipline = \"wfq\"\n");
    for i in 0..4000 {
        let mut prev = "root".to_string();
        for j in 0..24 {
            let name = format!("b{i}_{j}");
            s.push_str(&format!(
                "[[node]]\nname = \"{name}\"\nparent = \"{prev}\"\n"
            ));
            if j < 23 {
                s.push_str("discipline = \"wfq\"\n");
            }
            prev = name;
        }
    }
    s.push_str("[classify]\ndefault = \"b0_23\"\n");
    for i in 1..4000 {
        s.push_str(&format!(
            "[[classify.rule]]\nleaf = \"b{i}_23\"\nflow = {i}\n"
        ));
    }
    let err = Policy::parse(&s, "wide.toml").unwrap_err().to_string();
    assert!(
        err.contains("the queue of 92001 nodes") && err.contains("above the limit of 4 GiB"),
        "{err}"
    );
}

#[test]
fn meaningless_settings_are_refused_at_their_key() {
    let strict = "[[node]]\nname = \"root\"\ndiscipline = \"strict\"\n[[node]]\nname = \"a\"\nparent = \"root\"\nweight = 3\n";
    refused(strict, 7, "node[1].weight", "does not share by weight");
    let wfq = "[[node]]\nname = \"root\"\ndiscipline = \"wfq\"\n[[node]]\nname = \"a\"\nparent = \"root\"\npriority = 2\n";
    refused(wfq, 7, "node[1].priority", "is neither `strict` nor `ets`");
    let ets = "[[node]]\nname = \"root\"\ndiscipline = \"ets\"\n[[node]]\nname = \"a\"\nparent = \"root\"\npriority = 1\nweight = 2\n[[node]]\nname = \"b\"\nparent = \"root\"\n";
    refused(ets, 8, "node[1].weight", "a strict level of its own");
    let deep = "[[node]]\nname = \"root\"\ndiscipline = \"ets\"\n[[node]]\nname = \"a\"\nparent = \"root\"\npriority = 64\n";
    refused(deep, 7, "node[1].priority", "must be in 0..=63, got 64");
    let leaf = "[[node]]\nname = \"root\"\ndiscipline = \"ets\"\n";
    refused(
        leaf,
        3,
        "node[0].discipline",
        "ets orders children by their priorities",
    );
    let hclock = "[[node]]\nname = \"root\"\ndiscipline = \"hclock\"\nlimit = \"10Mbit\"\n[[node]]\nname = \"a\"\nparent = \"root\"\nreservation = \"6Mbit\"\n[[node]]\nname = \"b\"\nparent = \"root\"\nreservation = \"6Mbit\"\n[classify]\ndefault = \"a\"\n[[classify.rule]]\nleaf = \"b\"\nclass = 1\n";
    refused(
        hclock,
        12,
        "node[2].reservation",
        "add up to 12000000 bit/s, above its limit of 10000000 bit/s",
    );
}

#[test]
fn workloads_that_cannot_mean_anything_are_refused() {
    let err = WorkloadFile::parse(
        "[[flow]]\nname = \"f\"\narrivals = \"greedy\"\nstart = \"2s\"\nstop = \"1s\"\n",
        "w.toml",
    )
    .unwrap_err();
    assert_eq!(err.key(), Some("flow[0].stop"), "{err}");
    assert!(err.to_string().contains("not after `start`"), "{err}");
    let policy = Policy::parse(&format!("mtu = \"1000B\"\n{}", named("a")), "p.toml").unwrap();
    let big = WorkloadFile::parse(
        "[[flow]]\nname = \"f\"\narrivals = \"greedy\"\npacket = \"1500B\"\n",
        "w.toml",
    )
    .unwrap();
    let err = check_fits(&policy, &big).unwrap_err().to_string();
    assert!(
        err.starts_with("w.toml:4:10: key `flow[0].packet`") && err.contains("every one"),
        "{err}"
    );
    let some = WorkloadFile::parse(
        "[[flow]]\nname = \"f\"\narrivals = \"greedy\"\npacket = [\"64B\", \"1500B\"]\n",
        "w.toml",
    )
    .unwrap();
    let warnings = check_fits(&policy, &some).unwrap();
    assert_eq!(warnings.len(), 1);
}

#[test]
fn a_100k_node_tree_is_refused_at_its_key() {
    // A root with 99,999 leaves: more leaves than classification rules can
    // reach (4096 at most), refused at the first unreachable leaf, with file,
    // line and key (one parse of the file; the key index comes from the same
    // document).
    let mut s = String::from("[[node]]\nname = \"root\"\ndiscipline = \"wfq\"\n");
    for i in 1..100_000 {
        s.push_str(&format!(
            "[[node]]\nname = \"l{i}\"\nparent = \"root\"\nweight = {}\n",
            1 + i % 4
        ));
    }
    s.push_str("[classify]\ndefault = \"l1\"\n");
    for i in 2..4097 {
        s.push_str(&format!(
            "[[classify.rule]]\nleaf = \"l{i}\"\nclass = {i}\n"
        ));
    }
    let err = Policy::parse(&s, "wide.toml").unwrap_err();
    assert_eq!(err.key(), Some("node[4097].name"), "{err}");
    assert_eq!(err.line(), Some(4 * 4097 + 1), "{err}");
    assert!(
        err.to_string()
            .contains("reached by no classification rule"),
        "{err}"
    );
}

/// A root over `branches` chains of `depth` strict nodes each ending in a leaf,
/// with one rule per leaf but the first (the default).
fn branches(branches: usize, depth: usize) -> String {
    let mut s = String::from("[[node]]\nname = \"root\"\ndiscipline = \"wfq\"\n");
    for b in 0..branches {
        let mut parent = "root".to_string();
        for d in 0..depth {
            let name = format!("b{b}_{d}");
            s.push_str(&format!(
                "[[node]]\nname = \"{name}\"\nparent = \"{parent}\"\n"
            ));
            if d + 1 < depth {
                s.push_str("discipline = \"strict\"\nqueue = \"binary_heap\"\n");
            }
            parent = name;
        }
    }
    s.push_str(&format!("[classify]\ndefault = \"b0_{}\"\n", depth - 1));
    for b in 1..branches {
        s.push_str(&format!(
            "[[classify.rule]]\nleaf = \"b{b}_{}\"\nclass = {b}\n",
            depth - 1
        ));
    }
    s
}

#[test]
fn a_98k_node_tree_with_4096_rules_is_accepted() {
    // 4,096 chains of 24 levels: 98,305 nodes, every leaf reached by a rule
    // (rules are resolved through a map of names, not a scan of the nodes).
    let p = Policy::parse(&branches(4096, 24), "deep.toml").unwrap();
    assert_eq!(p.spec().nodes.len(), 98_305);
    assert_eq!(p.classify_spec().rules.len(), 4095);
    let last = p.leaf("b4095_23").expect("a leaf");
    assert_eq!(p.spec().nodes[last as usize].name, "b4095_23");
    assert_eq!(p.leaf("b4095_22"), None, "not a leaf");
    assert_eq!(p.rule_sources().len(), 4095);
}

#[test]
fn more_rules_than_the_classifier_holds_are_refused_before_the_tree() {
    // 100,000 rules under a tree with a mistake of its own: the rule count, a
    // bound on the whole file, is what is reported.
    let mut s = branches(5, 2);
    s = s.replace("parent = \"b4_0\"", "parent = \"nowhere\"");
    for i in 0..100_000 {
        s.push_str(&format!(
            "[[classify.rule]]\nleaf = \"b1_1\"\nclass = {i}\n"
        ));
    }
    let err = Policy::parse(&s, "rules.toml").unwrap_err();
    assert_eq!(err.key(), Some("classify"), "{err}");
    assert!(
        err.to_string()
            .contains("100004 rules given, at most 4096 are supported"),
        "{err}"
    );
}

/// Found by the `workload` fuzz target: 80 greedy flows into a per-flow leaf of
/// 64 flows. The 16 flows the leaf does not know were refused (`unknown_flow`)
/// and retried every packet time, 10^8 drops where the estimate said 80
/// arrivals. A refusal no retry can change now ends a greedy flow: each of the
/// 16 is dropped once, and the run stays within its estimate.
#[test]
fn greedy_flows_refused_for_good_stop_retrying() {
    let policy = Policy::parse(
        "capacity = 1000\n[[node]]\nname = \"root\"\ndiscipline = \"wfq\"\nlimit = \"1Gbit\"\n\
         [[node]]\nname = \"a\"\nparent = \"root\"\ndiscipline = \"edf\"\nflows = 64\n\
         [[node]]\nname = \"b\"\nparent = \"root\"\ncapacity = 100\n\
         [classify]\ndefault = \"b\"\n[[classify.rule]]\nleaf = \"a\"\nclass = 1\n",
        "policy.toml",
    )
    .unwrap();
    let w = WorkloadFile::parse(
        "duration = \"1s\"\n[[flow]]\nname = \"transfers\"\nclass = 1\ncount = 80\n\
         packet = \"1500B\"\narrivals = \"greedy\"\nstagger = \"0s\"\nsize = \"20B\"\n",
        "w.toml",
    )
    .unwrap();
    let opts = eiffel_policy::run::RunOptions::from_workload(&w);
    let cost = eiffel_policy::run::estimate(&policy, &w, &opts);
    let report = eiffel_policy::run(&policy, &w, opts, |_| {});
    let t = &report.totals;
    assert_eq!(t.enqueued, t.dequeued + t.dropped + t.queued);
    assert_eq!(t.enqueued, 80, "one packet per flow");
    assert_eq!(t.dropped, 16, "the flows beyond the leaf's 64, once each");
    assert!(
        t.enqueued <= cost.run.events(),
        "{} packets against an estimate of {} events",
        t.enqueued,
        cost.run.events()
    );
}
