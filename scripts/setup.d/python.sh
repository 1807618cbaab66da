#!/usr/bin/env bash
# The Python package's tests (python/tests, run by scripts/test-python.sh) need
# Python 3 with venv, and a virtual environment with maturin (to build the
# extension), pytest and pandas (the DataFrames), kept under target/python-venv
# between runs.
set -euo pipefail
source "$(dirname "$0")/../lib/apt.sh"
cd "$(dirname "$0")/../.."
need_tools python3:python3
if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    apt_install python3-venv
fi
VENV=target/python-venv
if [ ! -x "$VENV/bin/pytest" ] || [ ! -x "$VENV/bin/maturin" ] || ! "$VENV/bin/python" -c "import pandas" 2>/dev/null; then
    echo "==> creating $VENV (maturin, pytest, pandas)"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet "maturin>=1.7,<2" "pytest>=7" "pandas>=1.5"
fi
