#!/usr/bin/env bash
# Runs every test of the workspace: unit, property and integration tests (optimised,
# with debug assertions), the network-namespace end-to-end tests (as root), doc
# tests, the loom models, the unsafe code under miri, and the benches' compilation.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the tests need from the system (apt packages, toolchain components).
bash scripts/setup.sh
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
