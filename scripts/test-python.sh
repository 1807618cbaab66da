#!/usr/bin/env bash
# Builds the Python package into the cached virtual environment (made by
# scripts/setup.d/python.sh) with the tests' optimised profile, and runs its
# pytest tests from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/python-venv
[ -x "$VENV/bin/maturin" ] || bash scripts/setup.d/python.sh
# shellcheck disable=SC1091
source "$VENV/bin/activate"
maturin develop --quiet --manifest-path python/Cargo.toml --profile ci
# The CLI, to compare its JSON with the package's.
cargo build --quiet --profile ci -p eiffel-cli
EIFFEL_BIN="$PWD/target/ci/eiffel" python -m pytest -q python/tests
