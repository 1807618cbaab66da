#!/usr/bin/env bash
# Model-checks the PSPAT mailbox, the client-list trim handshake, the sleep/notify
# handshake (client arrivals and commands) and eiffel-net's frame pool hand-overs
# with loom. Runs in well under a minute in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
cargo test -p eiffel-pspat --release --lib loom
cargo test -p eiffel-net --release --lib loom
