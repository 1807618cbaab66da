#!/usr/bin/env bash
# Runs the unit tests of the modules with unsafe code or concurrency (mailbox,
# sleeper, client lists, tags, link, sinks) under miri. Needs the nightly toolchain
# with the miri component.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo +nightly miri setup
# Miri cannot call sched_setaffinity; the runtime's integration tests spin real
# threads for milliseconds and are left to the normal test run.
# Isolation off: proptest reads the working directory.
MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-strict-provenance -Zmiri-disable-isolation" \
  cargo +nightly miri test -p eiffel-pspat --lib -- \
  mailbox:: sleeper:: clist:: tags:: link:: transmit:: pad::
