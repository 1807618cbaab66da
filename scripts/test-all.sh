#!/usr/bin/env bash
# Runs every test of the workspace: unit, property and integration tests (with debug
# assertions, optimised so the statistical tests finish quickly), doc tests, and the
# benches' compilation.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> cargo test (workspace, profile ci: optimised, debug assertions on)"
cargo test --workspace --profile ci

echo "==> doc tests"
cargo test --workspace --doc

echo "==> benches compile"
cargo bench --workspace --no-run --quiet
