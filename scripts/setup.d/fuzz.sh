#!/usr/bin/env bash
# The fuzz targets (scripts/fuzz.sh) build with cargo-fuzz on the nightly
# toolchain (libFuzzer needs -Zsanitizer). Installs the nightly toolchain (as
# .ci/miri.sh does) and cargo-fuzz when they are missing.
set -euo pipefail
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
