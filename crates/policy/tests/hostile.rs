//! Hostile inputs: each is refused with a clear error (file, line, key) or runs,
//! and none panics, aborts or takes long.

use eiffel_policy::Policy;

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
