#!/usr/bin/env bash
# Runs every test of the workspace: unit, property and integration tests (optimised,
# with debug assertions), the network-namespace end-to-end tests (as root; every
# `eiffel shape` scenario under AF_PACKET and AF_XDP), doc tests, the Python
# package's pytest tests, the tests against DPDK's rte_sched
# (feature dpdk), the loom models, the unsafe code under miri, every fuzz target
# for a bounded time, and the benches'
# compilation.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the tests need from the system (apt packages, toolchain components).
bash scripts/setup.sh
if [ "$(id -u)" -eq 0 ]; then
    # As root every namespace test must run: a missing tool is a failure, not a skip.
    export EIFFEL_REQUIRE_NETNS=1
fi

echo "==> cargo test (workspace, profile ci: optimised, debug assertions on)"
if [ "$(id -u)" -eq 0 ] && ! pkg-config --exists libxdp libbpf 2>/dev/null; then
    # eiffel-net builds its AF_XDP path when libxdp is found; every `eiffel
    # shape` scenario runs under AF_XDP too, so a build without it must not pass.
    echo "error: libxdp-dev/libbpf-dev missing although scripts/setup.d/xdp.sh ran as root" >&2
    exit 1
fi
cargo test --workspace --profile ci

echo "==> Python package: built into target/python-venv, pytest"
bash scripts/test-python.sh

echo "==> DPDK: rte_sched through eiffel-dpdk, bench hqos against it (feature dpdk)"
if pkg-config --exists libdpdk 2>/dev/null; then
    cargo test -p eiffel-dpdk -p eiffel-bench --profile ci --features dpdk
elif [ "$(id -u)" -eq 0 ]; then
    echo "error: DPDK is missing although scripts/setup.d/dpdk.sh ran as root" >&2
    exit 1
else
    echo "warning: libdpdk-dev missing (run scripts/setup.sh as root): the dpdk feature's tests are skipped" >&2
fi

echo "==> doc tests"
cargo test --workspace --doc

echo "==> loom: mailbox, client lists, sleep/notify, command and shutdown hand-offs, frame pool, reload"
bash .ci/loom.sh

echo "==> miri: every module with unsafe code"
bash .ci/miri.sh

echo "==> fuzz: every cargo-fuzz target for 20 s (policy, workload and scenario files, rank expressions, header parsing, classification, checksums)"
bash scripts/fuzz.sh 20

echo "==> benches compile"
cargo bench --workspace --no-run --quiet
