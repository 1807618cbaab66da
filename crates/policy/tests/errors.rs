//! Every class of mistake in a policy or workload file gets an error naming the
//! file, the line and the key.

use eiffel_policy::{Policy, PolicyError, WorkloadFile};

const HEAD: &str = "[[node]]\nname = \"root\"\ndiscipline = \"wfq\"\n\n[[node]]\nname = \"a\"\nparent = \"root\"\n";

/// Parses `text` as `bad.toml` and checks the error's line, key and message.
#[track_caller]
fn refused(text: &str, line: usize, key: &str, needle: &str) {
    let err = Policy::parse(text, "bad.toml").expect_err("the policy should be refused");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("bad.toml:{line}:")),
        "wrong file or line: {msg}"
    );
    assert!(msg.contains(&format!("key `{key}`")), "wrong key: {msg}");
    assert_eq!(err.line(), Some(line));
    assert_eq!(err.key(), Some(key));
    assert!(msg.contains(needle), "message lacks {needle:?}: {msg}");
}

#[test]
fn a_valid_policy_parses() {
    let p = Policy::parse(HEAD, "ok.toml").unwrap();
    assert_eq!(p.spec().nodes.len(), 2);
    assert_eq!(p.leaf("a"), Some(1));
}

#[test]
fn unknown_key() {
    refused(
        &format!("{HEAD}wieght = 2\n"),
        8,
        "node[1].wieght",
        "unknown field `wieght`",
    );
    refused("capacty = 5\n", 1, "capacty", "unknown field");
    refused(
        &format!("{HEAD}[shaper]\nslot = 5\n"),
        9,
        "shaper.slot",
        "unknown field",
    );
    refused(
        &format!("{HEAD}[classify]\ndefault = \"a\"\n[[classify.rule]]\nleaf = \"a\"\nport = 5\n"),
        12,
        "classify.rule[0].port",
        "unknown field `port`",
    );
}

#[test]
fn unknown_discipline() {
    refused(
        "[[node]]\nname = \"root\"\ndiscipline = \"wf2q\"\n[[node]]\nname = \"a\"\nparent = \"root\"\n",
        3,
        "node[0].discipline",
        "unknown discipline `wf2q`",
    );
}

#[test]
fn unknown_queue_type() {
    refused(
        &HEAD.replace(
            "discipline = \"wfq\"",
            "discipline = \"wfq\"\nqueue = \"fibonacci\"",
        ),
        4,
        "node[0].queue",
        "unknown queue type",
    );
}

#[test]
fn duplicate_name() {
    refused(
        &format!("{HEAD}\n[[node]]\nname = \"a\"\nparent = \"root\"\n"),
        10,
        "node[2].name",
        "duplicate node name `a` (first defined at line 6)",
    );
}

#[test]
fn duplicate_key_is_a_syntax_error_with_its_key() {
    refused(
        &format!("{HEAD}parent = \"root\"\n"),
        8,
        "node.parent",
        "duplicate key",
    );
}

#[test]
fn weight_not_positive() {
    refused(
        &format!("{HEAD}weight = 0\n"),
        8,
        "node[1].weight",
        "weight must be in 1..=65536, got 0",
    );
    refused(
        &format!("{HEAD}weight = -3\n"),
        8,
        "node[1].weight",
        "got -3",
    );
    refused(
        &format!("{HEAD}weight = \"heavy\"\n"),
        8,
        "node[1].weight",
        "invalid type",
    );
}

#[test]
fn limit_without_units() {
    refused(
        &format!("{HEAD}limit = 7000000\n"),
        8,
        "node[1].limit",
        "a bare number (7000000) has no unit",
    );
    refused(
        &format!("{HEAD}limit = \"7\"\n"),
        8,
        "node[1].limit",
        "has no unit",
    );
    refused(
        &format!("{HEAD}limit = \"7MB\"\n"),
        8,
        "node[1].limit",
        "unknown rate unit `MB`",
    );
    refused(
        &format!("{HEAD}limit = \"7Mbit\"\nburst = 3000\n"),
        9,
        "node[1].burst",
        "bare number",
    );
    refused(
        "mtu = 1500\n[[node]]\nname = \"a\"\n",
        1,
        "mtu",
        "bare number",
    );
    refused(
        &format!("[shaper]\nhorizon = 2\n{HEAD}"),
        2,
        "shaper.horizon",
        "bare number",
    );
}

#[test]
fn burst_and_per_flow_keys_need_their_main_key() {
    refused(
        &format!("{HEAD}burst = \"3000B\"\n"),
        8,
        "node[1].burst",
        "a burst needs a rate",
    );
    refused(
        &format!("{HEAD}flow_limit = \"1Mbit\"\n"),
        8,
        "node[1].flow_limit",
        "need `flows = N`",
    );
    refused(
        &format!("{HEAD}limit = \"1Mbit\"\nburst = \"100B\"\n"),
        9,
        "node[1].burst",
        "smaller than the 1500 B mtu",
    );
}

#[test]
fn leaf_no_rule_reaches() {
    let text = format!(
        "{HEAD}\n[[node]]\nname = \"b\"\nparent = \"root\"\n\n[classify]\ndefault = \"a\"\n"
    );
    refused(
        &text,
        10,
        "node[2].name",
        "leaf `b` is reached by no classification rule",
    );
    // Once a rule names it, it is fine.
    let ok = format!("{text}[[classify.rule]]\nleaf = \"b\"\nclass = 1\n");
    assert!(Policy::parse(&ok, "ok.toml").is_ok());
    // Several leaves and no [classify] at all.
    refused(
        &format!("{HEAD}\n[[node]]\nname = \"b\"\nparent = \"root\"\n"),
        1,
        "classify",
        "a [classify] section",
    );
}

#[test]
fn rules_name_leaves() {
    let text = format!(
        "{HEAD}\n[classify]\ndefault = \"a\"\n[[classify.rule]]\nleaf = \"root\"\nclass = 1\n"
    );
    refused(
        &text,
        12,
        "classify.rule[0].leaf",
        "`root` is not a leaf of the policy (it has children",
    );
    refused(
        &format!("{HEAD}\n[classify]\ndefault = \"nope\"\n"),
        10,
        "classify.default",
        "`nope` is not a leaf",
    );
    let mixed = format!("{HEAD}\n[classify]\ndefault = \"a\"\n[[classify.rule]]\nleaf = \"a\"\nclass = 1\nprotocol = \"tcp\"\n");
    refused(&mixed, 11, "classify.rule[0]", "cannot have both");
}

#[test]
fn node_with_no_children() {
    refused(
        "[[node]]\nname = \"root\"\ndiscipline = \"strict\"\n",
        3,
        "node[0].discipline",
        "node `root` has no children",
    );
    refused(
        &format!("{HEAD}discipline = \"pfabric\"\n"),
        8,
        "node[1].discipline",
        "has no children",
    );
}

#[test]
fn tree_structure() {
    refused(
        &format!("{HEAD}\n[[node]]\nname = \"b\"\n"),
        10,
        "node[2].name",
        "a policy has one root",
    );
    refused(
        &HEAD.replace("parent = \"root\"", "parent = \"rot\""),
        7,
        "node[1].parent",
        "no node is called `rot`",
    );
    refused(
        "[[node]]\nname = \"x\"\nparent = \"y\"\n[[node]]\nname = \"y\"\nparent = \"x\"\n",
        3,
        "node[0].parent",
        "no root",
    );
    let cycle = format!(
        "{HEAD}\n[[node]]\nname = \"x\"\nparent = \"y\"\n[[node]]\nname = \"y\"\nparent = \"x\"\n"
    );
    refused(&cycle, 11, "node[2].parent", "cycle");
    // `flows` on a node with children gives each flow a copy of the subtree
    // (tests/subtrees.rs); a per-flow FIFO limit has no FIFO to limit there.
    refused(
        &format!("{HEAD}flows = 10\nflow_queue = 5\n[[node]]\nname = \"c\"\nparent = \"a\"\n"),
        9,
        "node[1].flow_queue",
        "flow_queue",
    );
    refused(
        &format!("{HEAD}reservation = \"1Mbit\"\n"),
        8,
        "node[1].reservation",
        "hclock parent",
    );
    refused(
        "[[node]]\nname = \"a\"\npriority = 99\n",
        3,
        "node[0].priority",
        "0..=63",
    );
    refused(
        "capacity = 0\n[[node]]\nname = \"a\"\n",
        1,
        "capacity",
        "1..=",
    );
    refused(
        "[shaper]\nhorizon = \"10ns\"\nslots = 100\n[[node]]\nname = \"a\"\n",
        2,
        "shaper.horizon",
        "cannot hold 100 slots",
    );
    refused("", 1, "node", "at least one [[node]]");
}

#[test]
fn workload_mistakes() {
    let bad = |text: &str, line: usize, key: &str, needle: &str| {
        let msg = WorkloadFile::parse(text, "w.toml").unwrap_err().to_string();
        assert!(msg.starts_with(&format!("w.toml:{line}:")), "{msg}");
        assert!(
            msg.contains(&format!("key `{key}`")) && msg.contains(needle),
            "{msg}"
        );
    };
    bad(
        "[[flow]]\nname = \"x\"\narrivals = \"poisson\"\nrate = 5\n",
        4,
        "flow[0].rate",
        "bare number",
    );
    bad(
        "[[flow]]\nname = \"x\"\narrivals = \"poisson\"\n",
        3,
        "flow[0].rate",
        "need a `rate`",
    );
    bad(
        "[[flow]]\nname = \"x\"\narrivals = \"bursty\"\n",
        3,
        "flow[0].arrivals",
        "unknown arrival process",
    );
    bad(
        "[[flow]]\nname = \"x\"\narrivals = \"greedy\"\nsize = 100\n",
        4,
        "flow[0].size",
        "no unit",
    );
    bad(
        "[[flow]]\nname = \"x\"\narrivals = \"greedy\"\nrate = \"1Mbit\"\n",
        4,
        "flow[0].rate",
        "applies to",
    );
    bad(
        "duration = \"1s\"\nlink = \"1Gbit\"\n",
        2,
        "link",
        "unknown field",
    );
    let ok = WorkloadFile::parse(
        "[[flow]]\nname = \"x\"\narrivals = \"greedy\"\nsize = [\"1kB\", \"2KiB\"]\n",
        "w.toml",
    )
    .unwrap();
    assert_eq!(ok.workload.groups[0].flow_sizes, [1000, 2048]);
}

#[test]
fn unreadable_file() {
    let err = Policy::load("/nonexistent/policy.toml").unwrap_err();
    assert!(matches!(err, PolicyError::Io { .. }));
    assert!(err.to_string().starts_with("/nonexistent/policy.toml: "));
}

#[test]
fn calendar_parameters() {
    const CQ: &str = "[[node]]\nname = \"root\"\ndiscipline = \"cq-wfq\"\n\n[[node]]\nname = \"a\"\nparent = \"root\"\n";
    // A size without units.
    refused(
        &format!("{CQ}[[node]]\nname = \"b\"\nparent = \"root\"\nquantum = 1500\n"),
        11,
        "node[2].quantum",
        "no unit",
    );
    refused(
        "[[node]]\nname = \"root\"\ndiscipline = \"cq-wfq\"\nquantum = 1500\n[[node]]\nname = \"a\"\nparent = \"root\"\n",
        4,
        "node[0].quantum",
        "no unit",
    );
    // A calendar parameter on a node that does not run a calendar.
    refused(
        &format!("{HEAD}[[node]]\nname = \"b\"\nparent = \"root\"\n[[node]]\nname = \"c\"\nparent = \"b\"\nperiod = \"10us\"\n"),
        14,
        "node[3].period",
        "calendar-queue parameter",
    );
    // A parameter the discipline does not read, on the calendar node itself.
    refused(
        "[[node]]\nname = \"root\"\ndiscipline = \"cq-wfq\"\nrate = \"10Mbit\"\n[[node]]\nname = \"a\"\nparent = \"root\"\n",
        4,
        "node[0].rate",
        "does not apply to cq-wfq",
    );
    refused(
        "[[node]]\nname = \"root\"\ndiscipline = \"cq-edf\"\nrotation = \"sideways\"\n[[node]]\nname = \"a\"\nparent = \"root\"\n",
        4,
        "node[0].rotation",
        "unknown rotation `sideways`",
    );
    refused(
        "[[node]]\nname = \"root\"\ndiscipline = \"cq-wfq\"\ndays = [16, 0]\n[[node]]\nname = \"a\"\nparent = \"root\"\n",
        4,
        "node[0].days",
        "days is a whole number",
    );
    refused(
        "[[node]]\nname = \"root\"\ndiscipline = \"cq-policer\"\nperiod = \"10us\"\n[[node]]\nname = \"a\"\nparent = \"root\"\n",
        2,
        "node[0].name",
        "needs a `rate`",
    );
    // The same checks on a per-flow leaf, naming the node and the discipline.
    let q = "[[node]]\nname = \"q\"\nflows = 4\n";
    for needle in ["\"q\"", "`burst_allowance` does not apply to cq-edf"] {
        refused(
            &format!("{q}discipline = \"cq-edf\"\nburst_allowance = \"3000B\"\n"),
            5,
            "node[0].burst_allowance",
            needle,
        );
    }
    for needle in [
        "`quantum`",
        "calendar-queue parameter, but the discipline is wfq",
    ] {
        refused(
            &format!("{q}discipline = \"wfq\"\nquantum = \"100B\"\n"),
            5,
            "node[0].quantum",
            needle,
        );
    }
}

#[test]
fn release_time_programs() {
    let flows = "[[node]]\nname = \"f\"\nflows = 4\n";
    // An unknown name, at its line and column inside the string.
    let text = format!("{flows}release_state = {{ tat = 0 }}\nrelease = \"max(tat, nowe)\"\n");
    refused(&text, 5, "node[0].release", "unknown name `nowe`");
    let err = Policy::parse(&text, "bad.toml").unwrap_err().to_string();
    assert!(err.starts_with("bad.toml:5:21:"), "{err}");
    assert!(
        !err.contains("vtime"),
        "ranking names are not offered: {err}"
    );
    // Ranking's names mean nothing to a release time.
    refused(
        &format!("{flows}release = \"vtime\"\n"),
        4,
        "node[0].release",
        "belongs to ranking",
    );
    // On a node without flows the program paces the node's own output: it
    // has one set of state and no units, and its errors are placed the same.
    let node = |keys: &str| {
        format!("[[node]]\nname = \"root\"\ndiscipline = \"wfq\"\n{keys}[[node]]\nname = \"a\"\nparent = \"root\"\n")
    };
    let text = node("release_state = { t = 0 }\nrelease = \"t + unit\"\n");
    refused(&text, 5, "node[0].release", "no units");
    let err = Policy::parse(&text, "bad.toml").unwrap_err().to_string();
    assert!(err.starts_with("bad.toml:5:16:"), "{err}");
    refused(
        &node("release = \"weight\"\n"),
        4,
        "node[0].release",
        "belongs to ranking",
    );
    refused(
        &node("release = \"max(now, lenn)\"\n"),
        4,
        "node[0].release",
        "unknown name `lenn`",
    );
    let root = Policy::parse(&node("release = \"now + 1000\"\n"), "ok.toml").unwrap();
    assert!(root.spec().nodes[0].release.is_some());
    let paced = Policy::parse(&format!("{HEAD}release = \"now + 1000\"\n"), "ok.toml").unwrap();
    assert!(paced.spec().nodes[1].release.is_some());
    assert!(paced.spec().nodes[1].flow_release.is_none());
    // Flows that hold sub-policies are paced by `flow_limit`.
    refused(
        "[[node]]\nname = \"t\"\nflows = 4\nrelease = \"now\"\n[[node]]\nname = \"x\"\nparent = \"t\"\n",
        4,
        "node[0].release",
        "sub-policies",
    );
    // The companion keys need `release`.
    refused(
        &format!("{flows}release_on_dequeue = \"now\"\n"),
        4,
        "node[0].release_on_dequeue",
        "set `release` too",
    );
    refused(
        &format!("{flows}release_state = {{ t = 0 }}\n"),
        4,
        "node[0].release_state",
        "set `release` too",
    );
    refused(
        &format!("{flows}constants = {{ rate = 1 }}\n"),
        4,
        "node[0].constants",
        "set one of them",
    );
    // Constants are not state, not negative, and a zero divisor is seen through them.
    refused(
        &format!("{flows}constants = {{ rate = 0 }}\nrelease_state = {{ t = 0 }}\nrelease = \"t = len / rate\"\n"),
        6,
        "node[0].release",
        "division by zero",
    );
    refused(
        &format!("{flows}constants = {{ rate = -1 }}\nrelease = \"now\"\n"),
        4,
        "node[0].constants.rate",
        "integer >= 0",
    );
    refused(
        &format!(
            "{flows}constants = {{ t = 1 }}\nrelease_state = {{ t = 0 }}\nrelease = \"now\"\n"
        ),
        5,
        "node[0].release_state.t",
        "already a name",
    );
    refused(
        &format!("{flows}constants = {{ r = 1 }}\nrelease = \"r = 2\"\n"),
        5,
        "node[0].release",
        "is a constant",
    );
}
