#!/usr/bin/env bash
# Runs every cargo-fuzz target of the project for a bounded time each, seeded
# with the example policies and workloads and a few hand-made frames:
#   policy, workload, rank  (crates/policy/fuzz: the TOML files, the run engine,
#                            rank expressions compiled and run)
#   dot                     (crates/policy/fuzz: policies written in DOT)
#   scenario                (crates/netsim/fuzz: scenario files)
#   parse, classify, checksum (crates/classify/fuzz: header parsing,
#                            classification, checksum completion)
# Usage: bash scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 25; CI runs 20)
#        FUZZ_RUNS=N bash scripts/fuzz.sh            (N executions per target instead)
#        FUZZ_TIMEOUT=S ...     (an input may take S seconds, default 10: more on a
#                                loaded machine, where a starved run is not a hang)
#        bash scripts/fuzz.sh 20 rank scenario     (only the targets named)
# A crash stops the script with the input's path; turn it into a regression test
# (crates/policy/tests/hostile.rs, crates/netsim/tests/hostile.rs,
# crates/classify/src/tests.rs).
#
# The classify crate's targets reach `etherparse`'s unchecked reads (unsafe
# code) and run under AddressSanitizer. The policy and scenario targets run only
# safe code apart from the queue slab, whose unchecked indexing is guarded by
# debug assertions: they build without a sanitizer and with debug assertions
# and overflow checks, about 30 times faster an input than under ASan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.d/fuzz.sh
secs="${1:-25}"
corpus="${CARGO_TARGET_DIR:-$PWD/target}/fuzz-corpus"
# One build directory for the crates built the same way: their common crates
# build once.
build="${CARGO_TARGET_DIR:-$PWD/target}"
mkdir -p "$corpus"

seed() { # seed TARGET FILES...
    local dir="$corpus/$1"
    shift
    mkdir -p "$dir"
    for f in "$@"; do cp -n "$f" "$dir/" 2>/dev/null || true; done
}

# Frames as hex: IPv4/UDP with DSCP EF, 802.1Q + IPv4/TCP, IPv6/TCP, a fragment.
hex2bin() { printf "$(printf '%s' "$1" | sed 's/../\\x&/g')"; }
frames="$corpus/frames"
mkdir -p "$frames"
eth="020000000002020000000001"
hex2bin "${eth}080045b8001c00004000401100000a0000010a0000021f90003500080000" >"$frames/udp4"
hex2bin "${eth}8100006408004500002800004000400600000a0000010a000002c350005000000000000000005002200000000000" >"$frames/vlan-tcp4"
hex2bin "${eth}86dd6000000000140640fe800000000000000000000000000001fe800000000000000000000000000002c350005000000000000000005002200000000000" >"$frames/tcp6"
hex2bin "${eth}08004500001c00002001401100000a0000010a0000020000000000000000" >"$frames/frag4"

seed policy examples/policies/*.toml crates/policy/builtin/fig6-policy.toml
seed dot examples/policies/*.dot
seed workload examples/workloads/*.toml crates/policy/builtin/fig6-workload.toml
seed parse "$frames"/*
seed checksum "$frames"/*
seed scenario examples/scenarios/*.toml
# rank: a `rank` program, a newline, a `rank_on_dequeue` program; one seed per
# example policy's programs.
mkdir -p "$corpus/rank"
for f in examples/policies/*-expr.toml; do
    r=$(sed -n 's/^rank = "\(.*\)"$/\1/p' "$f" | head -1)
    d=$(sed -n 's/^rank_on_dequeue = "\(.*\)"$/\1/p' "$f" | head -1)
    if [ -n "$r" ]; then printf '%s\n%s' "$r" "$d" >"$corpus/rank/$(basename "$f" .toml)"; fi
done
# classify: a control byte, then frames each behind a length byte.
mkdir -p "$corpus/classify"
for f in "$frames"/*; do
    { printf '\x01'; printf "\\x$(printf %02x "$(stat -c %s "$f")")"; cat "$f"; } >"$corpus/classify/$(basename "$f")"
done

if [ -n "${FUZZ_RUNS:-}" ]; then
    limit=(-runs="$FUZZ_RUNS")
else
    limit=(-max_total_time="$secs")
fi
run() { # run CRATE_DIR TARGET
    local log="$corpus/$2.log" how=(--sanitizer none --debug-assertions) dir="$build/fuzz-safe"
    if [ "$1" = crates/classify/fuzz ]; then how=(--sanitizer address) dir="$build/fuzz"; fi
    echo "==> fuzz $2 (${FUZZ_RUNS:+$FUZZ_RUNS runs}${FUZZ_RUNS:-$secs s})"
    if ! (cd "$1" && CARGO_TARGET_DIR="$dir" cargo +nightly fuzz run --release "${how[@]}" "$2" "$corpus/$2" -- \
        "${limit[@]}" -rss_limit_mb=2048 -timeout="${FUZZ_TIMEOUT:-10}" -print_final_stats=1) >"$log" 2>&1; then
        tail -n 60 "$log"
        echo "error: fuzz target $2 failed (full output: $log)" >&2
        exit 1
    fi
    grep -E "^stat::(number_of_executed_units|peak_rss_mb)" "$log" || true
}
shift || true
want=("$@")
for t in policy:crates/policy/fuzz workload:crates/policy/fuzz rank:crates/policy/fuzz dot:crates/policy/fuzz \
    scenario:crates/netsim/fuzz parse:crates/classify/fuzz classify:crates/classify/fuzz \
    checksum:crates/classify/fuzz; do
    name=${t%%:*}
    if [ ${#want[@]} -eq 0 ] || [[ " ${want[*]} " == *" $name "* ]]; then
        run "${t#*:}" "$name"
    fi
done
