#!/usr/bin/env bash
# Model-checks the PSPAT mailbox, the client-list trim handshake, the sleep/notify
# handshake (client arrivals and commands), eiffel-net's frame pool hand-overs and
# the reload hand-off to the receive thread (no lost or reordered reload, every
# packet handed on once across a reload and a stop) with loom. Runs in well under
# a minute in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
cargo test -p eiffel-pspat --release --lib loom
cargo test -p eiffel-net --release --lib loom
