#!/usr/bin/env bash
# Model-checks with loom: the PSPAT mailbox, the client-list trim handshake, the
# sleep/notify handshake (client arrivals and commands), the runtime's command
# hand-off to the arbiter (a reload racing with the arbiter's rounds, sleeps and
# exit: run once or refused, every packet sent or dropped once), its shutdown
# hand-off (clients back, arbiter drains, dispatcher ends: every packet
# transmitted or dropped with a count), eiffel-net's frame pool hand-overs and the
# reload hand-off to the receive thread (no lost or reordered reload, every packet
# handed on once across a reload and a stop). The larger models run with
# preemption bounds; about a minute in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
cargo test -p eiffel-pspat --release --lib loom
cargo test -p eiffel-net --release --lib loom
