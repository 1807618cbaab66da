#!/usr/bin/env bash
# Runs every test of the workspace: unit, property and integration tests (optimised,
# with debug assertions), the network-namespace end-to-end tests (as root), doc
# tests, the loom models, the unsafe code under miri, and the benches' compilation.
set -euo pipefail
cd "$(dirname "$0")/.."

# The end-to-end tests build network namespaces and veth pairs and run iperf3
# through them: they need root, iproute2, iperf3, ethtool and ping.
need=()
for tool in ip:iproute2 iperf3:iperf3 ethtool:ethtool ping:iputils-ping; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool#*:}")
done
if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "==> installing ${need[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else
        echo "warning: ${need[*]} missing and cannot be installed here (needs root and apt-get)" >&2
    fi
fi
if [ "$(id -u)" -eq 0 ]; then
    # As root every namespace test must run: a missing tool is a failure, not a skip.
    export EIFFEL_REQUIRE_NETNS=1
fi

echo "==> cargo test (workspace, profile ci: optimised, debug assertions on)"
cargo test --workspace --profile ci

echo "==> doc tests"
cargo test --workspace --doc

echo "==> loom: mailbox, client lists, sleep/notify"
bash .ci/loom.sh

echo "==> miri: every module with unsafe code"
bash .ci/miri.sh

echo "==> benches compile"
cargo bench --workspace --no-run --quiet
